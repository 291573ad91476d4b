// SPDX-License-Identifier: MIT
/*
 * A device's BARs in the process: inserted into the resource tree, and
 * memory BARs with a resourceN file registered as register windows.
 */
#include "pci.h"

int pci__bars_claim(struct pci_dev *pdev)
{
	(void)pdev;
	return 0;
}

void pci__bars_release(struct pci_dev *pdev)
{
	(void)pdev;
}
