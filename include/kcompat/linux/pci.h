/* SPDX-License-Identifier: MIT */
/* PCI drivers: libdevres's PCI bus with the kernel's helpers around it. */
#ifndef KCOMPAT_LINUX_PCI_H
#define KCOMPAT_LINUX_PCI_H

#include <devres/pci.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>

#define PCI_VENDOR_ID_INTEL 0x8086
#define PCI_VENDOR_ID_AMD 0x1022
#define PCI_VENDOR_ID_REDHAT 0x1b36
#define PCI_VENDOR_ID_REDHAT_QUMRANET 0x1af4

/* clang-format off */
#define PCI_VDEVICE(vend, dev)                                                 \
	.vendor = PCI_VENDOR_ID_##vend, .device = (dev),                       \
	.subvendor = PCI_ANY_ID, .subdevice = PCI_ANY_ID, 0, 0
/* clang-format on */

#define pci_name(pdev) dev_name(&(pdev)->dev)
#define pci_err(pdev, ...) dev_err(&(pdev)->dev, __VA_ARGS__)
#define pci_warn(pdev, ...) dev_warn(&(pdev)->dev, __VA_ARGS__)
#define pci_notice(pdev, ...) dev_info(&(pdev)->dev, __VA_ARGS__)
#define pci_info(pdev, ...) dev_info(&(pdev)->dev, __VA_ARGS__)
#define pci_dbg(pdev, ...) dev_dbg(&(pdev)->dev, __VA_ARGS__)

/* Requests and maps one BAR, managed: the mapping or an ERR_PTR. */
static inline void __iomem *pcim_iomap_region(struct pci_dev *pdev, int bar,
					      const char *name)
{
	void __iomem *p;
	int ret = pcim_request_region(pdev, bar, name);

	if (ret)
		return (void __iomem *)ERR_PTR(ret);
	p = pcim_iomap(pdev, bar, 0);
	return p ? p : (void __iomem *)ERR_PTR(-ENOMEM);
}

#define module_pci_driver(drv)                                                 \
	module_driver(drv, pci_register_driver, pci_unregister_driver)

#endif /* KCOMPAT_LINUX_PCI_H */
