// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci */
/*
 * A child of fork() and its parent's VFIO device (against the fake VFIO
 * kernel of vfiofake.h): the parent binds a driver that holds BAR 0
 * mapped, MSI-X vectors with a handler and a managed coherent buffer
 * (an IOMMU mapping of its group's container); the child makes one call
 * on what it inherited, or exits through exit() (the library's
 * destructors), or closes every descriptor first. The child never asks
 * the kernel to change the parent's device (no unmap, no SET_IRQS, no
 * reset from the child's process: the fake counts what other processes
 * ask), ends under its alarm, and leaves the parent's device as it was:
 * the mapping counted, BAR 0 readable, an interrupt on vector 0 reaching
 * the handler, config space read through the device fd. pci_dev_is_vfio()
 * and pci_dev_is_uio() of the parent's device WARN as every PCI call does
 * and answer false. The parent then
 * unbinds and removes the device, and the ledger and the fake kernel are
 * back where they started.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/uio.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "vfiofake.h"
#include "hostile/cell-child.h"

#define A "0000:00:05.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8

static struct pci_dev *bound;
static void __iomem *bar;
static void *buf;
static dma_addr_t handle;
static int vector, hits;

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	bar = pcim_iomap(pdev, 0, 0);
	if (!bar)
		return -ENOMEM;
	ret = pci_alloc_irq_vectors(pdev, 1, 4, PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	vector = pci_irq_vector(pdev, 0);
	ret = devm_request_irq(&pdev->dev, (unsigned int)vector, handler, 0,
			       "fork", pdev);
	if (ret)
		return ret;
	ret = dma_set_mask_and_coherent(&pdev->dev, UINT64_MAX >> 16);
	if (ret)
		return ret;
	buf = dmam_alloc_coherent(&pdev->dev, 8192, &handle, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	bound = pdev;
	return 0;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "vfio-fork",
	.id_table = ids,
	.probe = probe,
};

enum call {
	EXIT,
	CLOSE_ALL_EXIT,
	REMOVE_ALL,
	RELEASE_DRIVER,
	UNREGISTER_DRIVER,
	FREE_VECTORS,
	FREE_COHERENT,
	IOUNMAP,
	RESET,
	DISABLE,
	MAPPINGS,
	FREE_IRQ,
	PUT,
	IS_VFIO,
	IS_UIO,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"exit()",
	"close_range() then exit()",
	"pci_bus_remove_all()",
	"device_release_driver()",
	"pci_unregister_driver()",
	"pci_free_irq_vectors()",
	"dmam_free_coherent()",
	"pcim_iounmap()",
	"pci_reset_function()",
	"pci_disable_device()",
	"pci_vfio_dma_mappings()",
	"devm_free_irq()",
	"pci_dev_put()",
	"pci_dev_is_vfio()",
	"pci_dev_is_uio()",
};

/* glibc's, declared by <unistd.h> only under _GNU_SOURCE. */
int close_range(unsigned int first, unsigned int last, int flags);

static void child_call(enum call c)
{
	uint64_t bytes = 0;
	int warns;

	alarm(10);
	switch (c) {
	case EXIT:
		exit(0);
	case CLOSE_ALL_EXIT:
		(void)close_range(3, ~0u, 0);
		exit(0);
	case REMOVE_ALL:
		pci_bus_remove_all();
		break;
	case RELEASE_DRIVER:
		device_release_driver(&bound->dev);
		break;
	case UNREGISTER_DRIVER:
		pci_unregister_driver(&drv);
		break;
	case FREE_VECTORS:
		pci_free_irq_vectors(bound);
		break;
	case FREE_COHERENT:
		dmam_free_coherent(&bound->dev, 8192, buf, handle);
		break;
	case IOUNMAP:
		pcim_iounmap(bound, bar);
		break;
	case RESET:
		(void)pci_reset_function(bound);
		break;
	case DISABLE:
		pci_disable_device(bound);
		break;
	case MAPPINGS:
		if (pci_vfio_dma_mappings(bound, &bytes) != -ECHILD)
			_exit(3);
		break;
	/* The parent's device: its WARN, as for every PCI call. */
	case IS_VFIO:
		warns = devres_warn_count();
		if (pci_dev_is_vfio(bound) || devres_warn_count() != warns + 1)
			_exit(3);
		break;
	case IS_UIO:
		warns = devres_warn_count();
		if (pci_dev_is_uio(bound) || devres_warn_count() != warns + 1)
			_exit(3);
		break;
	case FREE_IRQ:
		devm_free_irq(&bound->dev, (unsigned int)vector, bound);
		break;
	case PUT:
		pci_dev_put(bound);
		break;
	case NR_CALLS:
		break;
	}
	_exit(0);
}

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s: %s:%d: %s\n", call_name[c],       \
				__FILE__, __LINE__, #cond);                    \
			return 1;                                              \
		}                                                              \
	} while (0)

/* Whether an interrupt raised on vector 0 reaches the handler. */
static bool fires(void)
{
	struct timespec tick = { 0, 1000000L };
	int before = __atomic_load_n(&hits, __ATOMIC_RELAXED);
	uint64_t one = 1;

	if (write(vf_read(trigger), &one, sizeof(one)) != sizeof(one))
		return false;
	for (int i = 0; i < 2000; i++) {
		if (__atomic_load_n(&hits, __ATOMIC_RELAXED) != before)
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}

static void discard_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static int one(int r, int col)
{
	struct vf_conf conf = { .vendor = VENDOR, .device = DEVICE };
	enum call c = (enum call)col;
	struct devres_ledger base, now;
	uint64_t bytes = 0;
	int st = 0, resets, set_irqs;
	uint16_t w = 0;
	pid_t pid;

	(void)r;
	alarm(30);
	conf.irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = 4;
	if (vf_conf_tree(&conf, A) || vf_start(&conf))
		return 2;
	devres_set_log_sink(discard_sink, NULL);
	devres_ledger_snapshot(&base);
	CHECK(pci_register_driver(&drv) == 0);
	CHECK(pci_bus_scan() == 1 && bound);
	CHECK(fires());
	resets = vf_read(resets);
	set_irqs = vf_read(set_irqs);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid)
		child_call(c);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Nothing of the parent's changed in the kernel by the child. */
	CHECK(vf_read(foreign) == 0);
	CHECK(vf_read(resets) == resets && vf_read(set_irqs) == set_irqs);
	CHECK(vf_read(maps) == 1);
	CHECK(pci_vfio_dma_mappings(bound, &bytes) == 1 && bytes == 8192);
	CHECK(pci_read_config_word(bound, PCI_VENDOR_ID, &w) == 0 &&
	      w == VENDOR);
	CHECK(ioread32(bar) == 0);
	CHECK(fires());
	pci_unregister_driver(&drv);
	pci_bus_remove_all();
	CHECK(vf_read(maps) == 0);
	devres_ledger_snapshot(&now);
	CHECK(!devres_ledger_diff(&base, &now, stderr));
	return 0;
}

static int try_start(int r, int c)
{
	const struct vf_conf conf = { .vendor = VENDOR };

	(void)r;
	(void)c;
	return vf_start(&conf) ? 77 : 0;
}

static void test_child_calls(void **state)
{
	struct pci_fake_dev a = fake_dev(A, VENDOR, DEVICE, 1);
	const char *const rows[] = { "bound: BAR, MSI-X, handler, DMA" };
	int st;

	(void)state;
	st = run_cell_in_child(try_start, 0, 0);
	if (under_valgrind() || !WIFEXITED(st) || WEXITSTATUS(st))
		skip();
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(vf_fake_device(A), 0);
	assert_int_equal(pci_vfio_enable(), 0);
	run_cells_in_children_wide(one, rows, 1, call_name, NR_CALLS, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_child_calls, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
