/* SPDX-License-Identifier: MIT */
/*
 * The fake PCI function the misuse tables acquire PCI resources on: one
 * function, 0000:00:01.0, with one memory BAR, in a fake sysfs tree the
 * PCI subsystem is pointed at for the whole group of tests.
 */
#ifndef DEVRES_TESTS_ONE_PCI_FN_H
#define DEVRES_TESTS_ONE_PCI_FN_H

#include <devres/pci.h>
#include <devres/pci_fake.h>
#include "pci/fake-fn.h"

static struct pci_fake *ft;
static struct pci_dev *pdev;

/* Makes the tree and the function (its BAR @bar_size bytes): pdev. */
static inline int one_pci_fn_setup(resource_size_t bar_size)
{
	ft = fake_fn_tree(
		&(struct pci_fake_dev){ .name = "0000:00:01.0",
					.vendor = 0x1af4,
					.device = 0x1041,
					.bar_size = { bar_size },
					.bar_flags = { IORESOURCE_MEM } });
	if (!ft)
		return -1;
	pdev = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	if (!pdev)
		return -1;
	/* The bus holds it until one_pci_fn_teardown(). */
	pci_dev_put(pdev);
	return 0;
}

/* Removes the function and the tree. */
static inline void one_pci_fn_teardown(void)
{
	fake_fn_tree_remove(ft);
	ft = NULL;
}

#endif /* DEVRES_TESTS_ONE_PCI_FN_H */
