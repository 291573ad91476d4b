/* SPDX-License-Identifier: MIT */
/*
 * A fake sysfs tree holding one PCI function, for the tests outside
 * tests/pci that need one device and no fixture of their own (the misuse
 * tables through one-pci-fn.h, the hostile tests): made, the PCI
 * subsystem pointed at it and the bus scanned; and removed.
 */
#ifndef DEVRES_TESTS_FAKE_FN_H
#define DEVRES_TESTS_FAKE_FN_H

#include <devres/pci.h>
#include <devres/pci_fake.h>

/*
 * The tree with @d in it, the PCI subsystem pointed at it, and a scan
 * that found @d alone; NULL if any of these failed.
 */
static inline struct pci_fake *fake_fn_tree(const struct pci_fake_dev *d)
{
	struct pci_fake *t = pci_fake_create();

	if (!t)
		return NULL;
	if (pci_sysfs_set_root(pci_fake_root(t)) || pci_fake_add(t, d) ||
	    pci_bus_scan() != 1) {
		pci_sysfs_set_root(NULL);
		pci_fake_destroy(t);
		return NULL;
	}
	return t;
}

/*
 * Removes every device, points the PCI subsystem back at the default
 * root and removes @t; returns what pci_sysfs_set_root() did.
 */
static inline int fake_fn_tree_remove(struct pci_fake *t)
{
	int ret;

	pci_bus_remove_all();
	ret = pci_sysfs_set_root(NULL);
	pci_fake_destroy(t);
	return ret;
}

/* @name as a network function, 1af4:1000, a 4 KiB memory BAR, INTx 11. */
static inline struct pci_fake_dev fake_fn_nic(const char *name)
{
	struct pci_fake_dev d = {
		.name = name,
		.vendor = 0x1af4,
		.device = 0x1000,
		.class = 0x020000,
		.irq = 11,
	};

	d.bar_size[0] = 4096;
	d.bar_flags[0] = IORESOURCE_MEM;
	return d;
}

#endif /* DEVRES_TESTS_FAKE_FN_H */
