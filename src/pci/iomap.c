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
	int ret;

	if (!pci__dev_ok(dev, __func__)) {
		errno = EINVAL;
		return NULL;
	}
	ret = pci__bar_map(dev, bar, maxlen, NULL, &addr);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return addr;
}

void pci_iounmap(struct pci_dev *dev, void __iomem *addr)
{
	/* As iounmap(): NULL is nothing to do; the device may be NULL. */
	if (!addr || devres__opt_bad(NULL, dev, __func__, "device") ||
	    devres__arg_bad(NULL, addr, __func__, "address"))
		return;
	/* A BAR, or a mapping of ioremap(), as the kernel's accepts. */
	if (devres__unmap_plain(addr, __func__) == -ENOENT)
		devres__warn(NULL, __func__,
			     "%p is not a mapping from pci_iomap or ioremap",
			     addr);
}
