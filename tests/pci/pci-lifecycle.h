/* SPDX-License-Identifier: MIT */
/*
 * The lifecycle of a PCI function of a fake tree, as the states and pairs
 * tests drive it: its states (what a driver does to it), the calls made
 * on it, and the function made and removed around them. Include after
 * cmocka.h, testlib.h and pcitest.h.
 */
#ifndef DEVRES_TESTS_PCI_LIFECYCLE_H
#define DEVRES_TESTS_PCI_LIFECYCLE_H

#include <devres/irq.h>

#define NAME "0000:00:09.0"

enum state {
	IDLE,
	ENABLED,
	MANAGED,
	VECTORS,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"idle",
	"enabled",
	"managed, BAR 0 mapped and claimed",
	"vectors",
};

enum call {
	ENABLE,
	DISABLE,
	PCIM_ENABLE,
	PIN,
	IOMAP,
	IOUNMAP,
	REQUEST,
	RELEASE_REGION,
	ALLOC_VECTORS,
	FREE_VECTORS,
	RELEASE,
	IOMAP_REGIONS,
	REQUEST_ALL,
	/* The calls after the pairs' (tests/pci/test-pci-pairs.c): questions. */
	NR_PAIR_CALLS,
	IOMAP_TABLE = NR_PAIR_CALLS,
	REQUEST_IRQ,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"pci_enable_device",
	"pci_disable_device",
	"pcim_enable_device",
	"pcim_pin_device",
	"pcim_iomap",
	"pcim_iounmap",
	"pcim_request_region",
	"pcim_release_region",
	"pci_alloc_irq_vectors",
	"pci_free_irq_vectors",
	"devres_release_all",
	"pcim_iomap_regions",
	"pcim_request_all_regions",
	"pcim_iomap_table",
	"devm_request_irq",
};

static struct pci_dev *pdev;
static void __iomem *bar0; /* the state's mapping, or the first made */
static int lines[2];

static inline irqreturn_t none_handled(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_NONE;
}

static inline void reach(unsigned int s)
{
	bar0 = NULL;
	switch (s) {
	case IDLE:
		break;
	case ENABLED:
		assert_int_equal(pci_enable_device(pdev), 0);
		break;
	case MANAGED:
		assert_int_equal(pcim_enable_device(pdev), 0);
		bar0 = pcim_iomap(pdev, 0, 0);
		assert_non_null(bar0);
		assert_int_equal(pcim_request_region(pdev, 0, "pairs"), 0);
		break;
	case VECTORS:
		assert_int_equal(
			pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_MSIX), 2);
		break;
	default:
		fail();
	}
}

static inline int make(unsigned int c)
{
	void __iomem *p, *none = NULL;

	switch (c) {
	case ENABLE:
		return pci_enable_device(pdev);
	case DISABLE:
		pci_disable_device(pdev);
		return 0;
	case PCIM_ENABLE:
		return pcim_enable_device(pdev);
	case PIN:
		pcim_pin_device(pdev);
		return 0;
	case IOMAP:
		p = pcim_iomap(pdev, 0, 0);
		if (p)
			__atomic_compare_exchange_n(&bar0, &none, p, false,
						    __ATOMIC_ACQ_REL,
						    __ATOMIC_ACQUIRE);
		return p ? 1 : -errno;
	case IOUNMAP:
		p = __atomic_load_n(&bar0, __ATOMIC_ACQUIRE);
		if (!p)
			return 2;
		pcim_iounmap(pdev, p);
		return 0;
	case REQUEST:
		return pcim_request_region(pdev, 0, "pairs");
	case RELEASE_REGION:
		pcim_release_region(pdev, 0);
		return 0;
	case ALLOC_VECTORS:
		return pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_MSIX);
	case FREE_VECTORS:
		pci_free_irq_vectors(pdev);
		return 0;
	case RELEASE:
		return devres_release_all(&pdev->dev);
	case IOMAP_REGIONS:
		return pcim_iomap_regions(pdev, 1 << 0, "pairs");
	case REQUEST_ALL:
		return pcim_request_all_regions(pdev, "pairs");
	case IOMAP_TABLE:
		/* 1: BAR 0 mapped in the table; 0: not; 2: no table. */
		if (!pcim_iomap_table(pdev))
			return 2;
		return pcim_iomap_table(pdev)[0] != NULL;
	case REQUEST_IRQ:
		/* The function's line: the first of the lines set. */
		return devm_request_irq(&pdev->dev, pdev->irq, none_handled, 0,
					"pairs", NULL);
	default:
		fail();
	}
	return 0;
}

/* The function of the fake tree, with two lines for its vectors. */
static inline void function_up(void)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 1);

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(pdev);
	for (int i = 0; i < 2; i++) {
		lines[i] = irq_line_create("pairs");
		assert_true(lines[i] > 0);
	}
	assert_int_equal(pci_dev_set_irq_lines(pdev, lines, 2), 0);
}

static inline void function_down(void)
{
	pci_dev_put(pdev);
	pci_bus_remove_all();
	for (int i = 0; i < 2; i++)
		assert_int_equal(irq_line_destroy(lines[i]), 0);
}

/*
 * Gives back whatever a call left: the device's managed resources, the
 * enables (each disable WARN-free), the vectors. Returns how many
 * disables it took; -1 when the function is still enabled after 8.
 */
static inline int give_back(int *ret_released)
{
	int disables = 0;

	*ret_released = devres_release_all(&pdev->dev);
	while (pci_is_enabled(pdev)) {
		if (++disables > 8)
			return -1;
		pci_disable_device(pdev);
	}
	/* No vectors: no misuse, nothing done. */
	pci_free_irq_vectors(pdev);
	return disables;
}

/* The claims (busy ranges) at and under @r; the tree is not changing. */
static inline int busy_under(const struct resource *r)
{
	int n = (r->flags & IORESOURCE_BUSY) != 0;

	for (const struct resource *c = r->child; c; c = c->sibling)
		n += busy_under(c);
	return n;
}

/* The claims left in the physical address space: BAR 0's, or none. */
static inline int iomem_busy(void)
{
	return busy_under(&iomem_resource);
}

#endif /* DEVRES_TESTS_PCI_LIFECYCLE_H */
