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
	struct devres__hand hand;
	bool owned = false;
	int ret;

	/* As iounmap(): NULL is nothing to do; the device may be NULL. */
	if (!addr || devres__opt_bad(NULL, dev, __func__, "device") ||
	    devres__arg_bad(NULL, addr, __func__, "address"))
		return;
	ret = pci__bar_unmap(addr, NULL, &hand, &owned);
	if (ret == -ECHILD) {
		devres__warn(NULL, __func__,
			     "mapping %p belongs to process %d: not unmapped",
			     addr, hand.pid);
		return;
	}
	if (!ret) {
		/* Caught here: unmapped once, now, and off the device. */
		if (owned)
			devres__warn_hand(&hand, __func__, "a mapping");
		return;
	}
	/* Not a BAR: a mapping of ioremap(), as the kernel's accepts. */
	iounmap(addr);
}
