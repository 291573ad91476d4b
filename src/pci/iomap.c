// SPDX-License-Identifier: MIT
/*
 * Unmanaged mapping of a BAR, from the BAR's own resourceN file (bars.c).
 */
#include <errno.h>
#include <devres/io.h>
#include "pci.h"

void __iomem *pci_iomap(struct pci_dev *dev, int bar, unsigned long maxlen)
{
	void *addr;
	int ret = pci__bar_map(dev, bar, maxlen, false, &addr);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	return addr;
}

void pci_iounmap(struct pci_dev *dev, void __iomem *addr)
{
	bool managed = false;

	if (!addr)
		return;
	if (!pci__bar_unmap(addr, &managed))
		return;
	if (managed) {
		/* Caught here, and undone the managed way: not twice later. */
		devres__warn(dev ? &dev->dev : NULL, __func__,
			     "%p is a pcim_iomap() mapping: use pcim_iounmap()",
			     addr);
		if (dev)
			pcim_iounmap(dev, addr);
		return;
	}
	/* Not a BAR: a mapping of ioremap(), as the kernel's accepts. */
	iounmap(addr);
}
