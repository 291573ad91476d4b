// SPDX-License-Identifier: MIT
/*
 * pci-skeleton: runs the driver of skeleton.c against a fake sysfs tree
 * holding one edu device, the way a test of a real driver would.
 *
 *   pci-skeleton           bind, take an interrupt, unbind, and check that
 *                          the ledger is back where it started
 *   pci-skeleton --sweep   make the probe fail at each acquisition in turn
 *                          and check that nothing leaks
 *
 * The fake tree (devres/pci_fake.h) stands for /sys: its resource0 file is
 * the device's BAR 0, so writing it is the device setting a register. The
 * interrupt line is an eventfd line registered for the device, as a VFIO
 * backend would register its MSI eventfds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include "skeleton.h"

#define EDU_ADDR "0000:00:04.0"

/* The simulated device sets one of its registers: a write to resource0. */
static int set_reg(struct pci_fake *tree, unsigned int off, uint32_t v)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (pci_fake_path(tree, EDU_ADDR, "resource0", path, sizeof(path)))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pwrite(fd, &v, sizeof(v), off);
	close(fd);
	return n == sizeof(v) ? 0 : -1;
}

static int run(struct pci_dev *pdev, int irq, struct pci_fake *tree)
{
	struct timespec ts = { 0, 1000000 };
	int ret, tries;

	ret = pci_register_driver(&edu_driver);
	if (ret || !device_is_bound(&pdev->dev)) {
		fprintf(stderr, "pci-skeleton: the driver did not bind\n");
		return 1;
	}
	/* The device raises its interrupt; the handler acknowledges it. */
	if (set_reg(tree, EDU_REG_IRQ_STATUS, 1) || irq_line_raise(irq))
		return 1;
	for (tries = 0; !edu_interrupts() && tries < 5000; tries++)
		nanosleep(&ts, NULL);
	pci_unregister_driver(&edu_driver);
	if (!edu_interrupts()) {
		fprintf(stderr, "pci-skeleton: no interrupt handled\n");
		return 1;
	}
	printf("pci-skeleton: bound, %d interrupt handled, unbound\n",
	       edu_interrupts());
	return 0;
}

static int sweep(struct pci_dev *pdev)
{
	struct devres_sweep_result r;
	int ret;

	/* Registered for its bus, then unbound: the sweep binds it itself. */
	ret = pci_register_driver(&edu_driver);
	if (ret)
		return 1;
	device_release_driver(&pdev->dev);
	ret = driver_probe_sweep(&edu_driver.driver, &pdev->dev, &r);
	pci_unregister_driver(&edu_driver);
	printf("pci-skeleton: %u failure points, %u leaks\n", r.points,
	       r.leaks);
	return ret == 0 && r.leaks == 0 && r.points > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct pci_fake_dev desc = {
		.name = EDU_ADDR,
		.vendor = EDU_VENDOR,
		.device = EDU_DEVICE,
		.class = 0x00ff00,
		.revision = 0x10,
		.bar_size = { 1 << 20 },
		.bar_flags = { IORESOURCE_MEM },
	};
	bool do_sweep = argc > 1 && strcmp(argv[1], "--sweep") == 0;
	struct devres_ledger before, after;
	struct pci_fake *tree;
	struct pci_dev *pdev;
	int irq, ret = 1;

	tree = pci_fake_create();
	if (!tree || pci_fake_add(tree, &desc) ||
	    set_reg(tree, EDU_REG_IDENT, EDU_IDENT) ||
	    pci_sysfs_set_root(pci_fake_root(tree)) || pci_bus_scan() != 1) {
		fprintf(stderr, "pci-skeleton: cannot set up the fake tree\n");
		pci_fake_destroy(tree);
		return 1;
	}
	pdev = pci_get_device(EDU_VENDOR, EDU_DEVICE, NULL);
	irq = irq_line_create("edu");
	if (!pdev || irq < 0 || pci_dev_set_irq_lines(pdev, &irq, 1))
		goto out;

	devres_ledger_snapshot(&before);
	ret = do_sweep ? sweep(pdev) : run(pdev, irq, tree);
	devres_ledger_snapshot(&after);
	if (devres_ledger_diff(&before, &after, stderr)) {
		fprintf(stderr, "pci-skeleton: the driver leaked\n");
		ret = 1;
	}
out:
	pci_dev_put(pdev);
	pci_bus_remove_all();
	if (irq > 0)
		irq_line_destroy(irq);
	pci_sysfs_set_root(NULL);
	pci_fake_destroy(tree);
	return ret;
}
