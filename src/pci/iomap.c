// SPDX-License-Identifier: MIT
/*
 * Unmanaged mapping of a BAR, through the register window the scan
 * registered for it.
 */
#include <devres/io.h>
#include "pci.h"

void __iomem *pci_iomap(struct pci_dev *dev, int bar, unsigned long maxlen)
{
	resource_size_t len;

	if (!dev || bar < 0 || bar >= PCI_STD_NUM_BARS ||
	    resource_type(&dev->resource[bar]) != IORESOURCE_MEM)
		return NULL;
	len = pci_resource_len(dev, bar);
	if (!len)
		return NULL;
	if (maxlen && maxlen < len)
		len = maxlen;
	return ioremap(pci_resource_start(dev, bar), len);
}

void pci_iounmap(struct pci_dev *dev, void __iomem *addr)
{
	(void)dev;
	iounmap(addr);
}
