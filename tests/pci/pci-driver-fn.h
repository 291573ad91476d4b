/* SPDX-License-Identifier: MIT */
/*
 * The function and the driver of tests/pci/test-pci-driver-states.c and
 * tests/pci/test-pci-driver-pairs.c: one function of a fake tree, a
 * driver whose table matches it and whose probe enables it managed, its
 * probes and removes counted (from any thread), and the function the bus
 * has now. Include after pcitest.h.
 */
#ifndef DEVRES_TESTS_PCI_DRIVER_FN_H
#define DEVRES_TESTS_PCI_DRIVER_FN_H

#include <devres/pci.h>

#define NAME "0000:00:01.0"
#define VENDOR 0x1af4
#define DEVICE 0x1000

static int probes, removes;

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	__atomic_add_fetch(&probes, 1, __ATOMIC_RELAXED);
	return pcim_enable_device(pdev);
}

static void remove_fn(struct pci_dev *pdev)
{
	(void)pdev;
	__atomic_add_fetch(&removes, 1, __ATOMIC_RELAXED);
}

static const struct pci_device_id fn_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "fn",
	.id_table = fn_ids,
	.probe = probe,
	.remove = remove_fn,
};

/* The function the bus has now, if any: the bus's reference keeps it. */
static inline struct pci_dev *on_bus(void)
{
	struct pci_dev *p = pci_get_device(VENDOR, DEVICE, NULL);

	pci_dev_put(p);
	return p;
}

#endif /* DEVRES_TESTS_PCI_DRIVER_FN_H */
