// SPDX-License-Identifier: MIT
/*
 * The one door to a backend's operations. Each operation of struct
 * pci__backend has one row in ops[] saying what it does to the device,
 * and every call of an operation goes through op_begin() and op_end()
 * with its row: a read goes through; a write (it changes the device's
 * state, or maps it writable) is counted in flight and refused in
 * read-only mode; a release is counted and, in read-only mode, not made
 * (the library's record drops the resource all the same); a detach is
 * counted and always made (it frees what the backend holds).
 *
 * A new operation cannot skip its row: the struct's size is checked
 * against the rows' count at compile time, the rows' classes at run time
 * (tests/pci/test-pci-ro-ops.c), and no file of src/pci but this one
 * calls an operation (tests/check-layers.sh).
 */
#include <stddef.h>
#include "pci.h"

/* clang-format off */
static const struct {
	const char *name;
	enum pci__bk_class class;
} ops[PCI_BK_NR] = {
	[PCI_BK_ATTACH] = { "attach", PCI_BK_WRITE },
	[PCI_BK_DETACH] = { "detach", PCI_BK_DETACH_ALWAYS },
	[PCI_BK_BAR_WINDOW] = { "bar_window", PCI_BK_WRITE },
	[PCI_BK_CFG_READ] = { "cfg_read", PCI_BK_READ },
	[PCI_BK_CFG_WRITE] = { "cfg_write", PCI_BK_WRITE },
	[PCI_BK_ENABLE] = { "enable", PCI_BK_WRITE },
	[PCI_BK_DISABLE] = { "disable", PCI_BK_RELEASE },
	[PCI_BK_ALLOC_IRQ_VECTORS] = { "alloc_irq_vectors", PCI_BK_WRITE },
	[PCI_BK_FREE_IRQ_VECTORS] = { "free_irq_vectors", PCI_BK_RELEASE },
	[PCI_BK_RESET] = { "reset", PCI_BK_WRITE },
	[PCI_BK_QUIESCE] = { "quiesce", PCI_BK_RELEASE },
};
/* clang-format on */

/*
 * Every operation is a function pointer after @name; enable is two rows
 * (its enable and its last disable are not the same class).
 */
_Static_assert(sizeof(struct pci__backend) ==
		       offsetof(struct pci__backend, attach) +
			       (PCI_BK_NR - 1) * sizeof(void (*)(void)),
	       "an operation of struct pci__backend without its row in ops[]");

enum pci__bk_class pci__bk_class(enum pci__bk_op op)
{
	return (unsigned int)op < PCI_BK_NR ? ops[op].class : PCI_BK_UNKNOWN;
}

const char *pci__bk_name(enum pci__bk_op op)
{
	return (unsigned int)op < PCI_BK_NR ? ops[op].name : NULL;
}

/*
 * Whether the operation is to be made now; if so, op_end() follows it.
 * An operation without a row (none: see above) is refused as a write.
 */
static bool op_begin(enum pci__bk_op op)
{
	switch (pci__bk_class(op)) {
	case PCI_BK_READ:
		return true;
	case PCI_BK_DETACH_ALWAYS:
		pci__write_hold();
		return true;
	case PCI_BK_WRITE:
	case PCI_BK_RELEASE:
		return pci__write_begin();
	case PCI_BK_UNKNOWN:
	default:
		return false;
	}
}

static void op_end(enum pci__bk_op op)
{
	if (pci__bk_class(op) != PCI_BK_READ)
		pci__write_end();
}

#define BK(pdev) ((pdev)->p->backend)
#define BK_DATA(pdev) ((pdev)->p->backend_data)

int pci__bk_attach(const struct pci__backend *b, struct pci_dev *pdev)
{
	int ret;

	if (!op_begin(PCI_BK_ATTACH))
		return -EROFS;
	ret = b->attach(pdev, &pdev->p->backend_data);
	op_end(PCI_BK_ATTACH);
	return ret;
}

void pci__bk_detach(struct pci_dev *pdev)
{
	if (!op_begin(PCI_BK_DETACH))
		return;
	BK(pdev)->detach(pdev, BK_DATA(pdev));
	op_end(PCI_BK_DETACH);
}

int pci__bk_bar_window(struct pci_dev *pdev, int bar, int *ret_fd,
		       off_t *ret_off, uint64_t *ret_size)
{
	int ret;

	if (!op_begin(PCI_BK_BAR_WINDOW))
		return -EROFS;
	ret = BK(pdev)->bar_window(pdev, BK_DATA(pdev), bar, ret_fd, ret_off,
				   ret_size);
	op_end(PCI_BK_BAR_WINDOW);
	return ret;
}

int pci__bk_cfg_read(const struct pci_dev *pdev, int where, int size,
		     uint32_t *val)
{
	int ret;

	if (!op_begin(PCI_BK_CFG_READ))
		return PCIBIOS_DEVICE_NOT_FOUND;
	ret = BK(pdev)->cfg_read(pdev, BK_DATA(pdev), where, size, val);
	op_end(PCI_BK_CFG_READ);
	return ret;
}

int pci__bk_cfg_write(const struct pci_dev *pdev, int where, int size,
		      uint32_t val)
{
	int ret;

	if (!op_begin(PCI_BK_CFG_WRITE))
		return PCIBIOS_SET_FAILED;
	ret = BK(pdev)->cfg_write(pdev, BK_DATA(pdev), where, size, val);
	op_end(PCI_BK_CFG_WRITE);
	return ret;
}

int pci__bk_enable(struct pci_dev *pdev, bool on)
{
	enum pci__bk_op op = on ? PCI_BK_ENABLE : PCI_BK_DISABLE;
	int ret;

	if (!op_begin(op))
		return -EROFS;
	ret = BK(pdev)->enable(pdev, BK_DATA(pdev), on);
	op_end(op);
	return ret;
}

int pci__bk_alloc_irq_vectors(struct pci_dev *pdev, unsigned int min_vecs,
			      unsigned int max_vecs, unsigned int flags,
			      unsigned int *ret_type)
{
	int ret;

	if (!op_begin(PCI_BK_ALLOC_IRQ_VECTORS))
		return -EROFS;
	ret = BK(pdev)->alloc_irq_vectors(pdev, BK_DATA(pdev), min_vecs,
					  max_vecs, flags, ret_type);
	op_end(PCI_BK_ALLOC_IRQ_VECTORS);
	return ret;
}

void pci__bk_free_irq_vectors(struct pci_dev *pdev)
{
	if (!op_begin(PCI_BK_FREE_IRQ_VECTORS))
		return;
	BK(pdev)->free_irq_vectors(pdev, BK_DATA(pdev));
	op_end(PCI_BK_FREE_IRQ_VECTORS);
}

int pci__bk_reset(struct pci_dev *pdev)
{
	int ret;

	if (!op_begin(PCI_BK_RESET))
		return -EROFS;
	ret = BK(pdev)->reset(pdev, BK_DATA(pdev));
	op_end(PCI_BK_RESET);
	return ret;
}

void pci__bk_quiesce(struct pci_dev *pdev)
{
	if (!op_begin(PCI_BK_QUIESCE))
		return;
	BK(pdev)->quiesce(pdev, BK_DATA(pdev));
	op_end(PCI_BK_QUIESCE);
}
