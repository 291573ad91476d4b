// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci fault */
/*
 * A probe through the VFIO backend fails at each of its fault points in
 * turn (devres_sweep(), against the fake VFIO kernel of vfiofake.h): the
 * scan (the group, its container, the IOMMU's information, the device
 * fd, the regions), then a driver's pcim_enable_device(), pcim_iomap()
 * of BAR 0, pci_alloc_irq_vectors() with each kind (the eventfds, the
 * lines, VFIO_DEVICE_SET_IRQS), a handler, a managed coherent buffer (its
 * IOMMU mapping). After each run the ledger is back at its baseline, and
 * so is the kernel's side: no IOMMU mapping left in the container, the
 * vectors off. Each kind in a child of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "vfiofake.h"
#include "hostile/cell-child.h"

#define A "0000:00:05.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8

static unsigned int kind;
static int kernel_left; /* runs after which the fake kernel kept state */

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static int probe_steps(struct pci_dev *pdev)
{
	dma_addr_t handle;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	if (!pcim_iomap(pdev, 0, 0))
		return -ENOMEM;
	ret = pci_alloc_irq_vectors(pdev, 1, 4, kind);
	if (ret < 0)
		return ret;
	ret = devm_request_irq(&pdev->dev,
			       (unsigned int)pci_irq_vector(pdev, 0), handler,
			       0, "sweep", pdev);
	if (ret)
		return ret;
	ret = dma_set_mask_and_coherent(&pdev->dev, UINT64_MAX >> 16);
	if (ret)
		return ret;
	if (!dmam_alloc_coherent(&pdev->dev, 8192, &handle, GFP_KERNEL))
		return -ENOMEM;
	pci_set_drvdata(pdev, pdev);
	return 0;
}

static int probe_err;

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	probe_err = probe_steps(pdev);
	return probe_err;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "vfio-sweep",
	.id_table = ids,
	.probe = probe,
};

/* What the fake kernel still holds once the library gave all back. */
static void kernel_check(void)
{
	if (vf_read(maps) || (vf_read(set_irqs) && vf_read(irq_count))) {
		fprintf(stderr, "kernel: %d IOMMU mappings, %d vectors on\n",
			vf_read(maps), vf_read(irq_count));
		kernel_left++;
	}
}

static int scan_op(void *ctx)
{
	struct pci_dev *p;
	bool bound;
	int ret;

	(void)ctx;
	probe_err = 0;
	ret = pci_bus_scan();
	p = pci_get_device(VENDOR, DEVICE, NULL);
	bound = p && pci_get_drvdata(p);
	pci_dev_put(p);
	if (bound)
		return 0;
	/* The error of the step that failed, as far as it shows. */
	if (ret >= 0)
		ret = probe_err ? probe_err : p ? -EIO : -ENODEV;
	pci_bus_remove_all();
	kernel_check();
	return ret;
}

static void remove_op(void *ctx)
{
	(void)ctx;
	pci_bus_remove_all();
	kernel_check();
}

static int one(int r, int c)
{
	static const unsigned int kinds[] = { PCI_IRQ_MSIX, PCI_IRQ_MSI,
					      PCI_IRQ_INTX };
	struct vf_conf conf = { .vendor = VENDOR, .device = DEVICE };
	struct devres_sweep_result res;
	int ret;

	(void)c;
	alarm(60);
	kind = kinds[r];
	conf.irq_count[VFIO_PCI_INTX_IRQ_INDEX] = 1;
	conf.irq_count[VFIO_PCI_MSI_IRQ_INDEX] = 1;
	conf.irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = 4;
	if (vf_conf_tree(&conf, A) || vf_start(&conf) ||
	    pci_register_driver(&drv))
		return 2;
	ret = devres_sweep(scan_op, remove_op, NULL, &res);
	if (ret || res.leaks || res.points < 20 || kernel_left) {
		fprintf(stderr, "sweep %d: %u points, %u leaks, %d kernel\n",
			ret, res.points, res.leaks, kernel_left);
		return 1;
	}
	pci_unregister_driver(&drv);
	return 0;
}

static int try_start(int r, int c)
{
	const struct vf_conf conf = { .vendor = VENDOR };

	(void)r;
	(void)c;
	return vf_start(&conf) ? 77 : 0;
}

static void test_sweep(void **state)
{
	struct pci_fake_dev a = fake_dev(A, VENDOR, DEVICE, 1);
	const char *const rows[] = { "MSI-X", "MSI", "INTx" };
	const char *const cols[] = { "probe sweep" };
	int st;

	(void)state;
	st = run_cell_in_child(try_start, 0, 0);
	if (under_valgrind() || !WIFEXITED(st) || WEXITSTATUS(st))
		skip();
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(vf_fake_device(A), 0);
	assert_int_equal(pci_vfio_enable(), 0);
	devres_set_log_sink(NULL, NULL);
	run_cells_in_children_wide(one, rows, 3, cols, 1, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sweep, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
