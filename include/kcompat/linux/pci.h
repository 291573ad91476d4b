/* SPDX-License-Identifier: MIT */
/* PCI drivers: libdevres's PCI bus with the kernel's helpers around it. */
#ifndef KCOMPAT_LINUX_PCI_H
#define KCOMPAT_LINUX_PCI_H

#include <linux/kcompat_check.h>
#include <linux/kcompat_site.h>
#include <errno.h>
#include <devres/pci.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/pci_ids.h>

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

/*
 * Requests and maps one BAR, managed: the mapping or an ERR_PTR. The
 * kernel's can only run out of memory; here the mapping fails as
 * pcim_iomap() says in errno (out of fds, a file that changed...), and
 * that is the error given back, not -ENOMEM for all.
 */
static inline void __iomem *pcim_iomap_region(struct pci_dev *pdev, int bar,
					      const char *name)
{
	void __iomem *p;
	int ret;

	if (kcompat_bad(pdev, "pcim_iomap_region", "PCI device"))
		return (void __iomem *)ERR_PTR(-EINVAL);
	ret = pcim_request_region(pdev, bar, name);
	if (ret)
		return (void __iomem *)ERR_PTR(ret);
	errno = 0;
	p = pcim_iomap(pdev, bar, 0);
	ret = errno ? -errno : -ENOMEM;
	return p ? p : (void __iomem *)ERR_PTR(ret);
}

/*
 * pci_request_region(), pci_release_region() and their plural forms are
 * the library's (<devres/pci.h>): a claim inside the BAR the scan placed
 * in the resource tree. pci_ioremap_bar() maps the whole BAR as
 * pci_iomap() does, from the BAR's own resourceN file (or its backend's
 * window): never by its numbers, which a hostile `resource` may have set
 * to another device's BAR or to a window of the process, and not in
 * read-only mode (NULL). iounmap() gives it back, as the kernel's. A bad
 * device WARNs and is refused (NULL) where the kernel would oops on the
 * BAR's resource.
 */
static inline void __iomem *pci_ioremap_bar(struct pci_dev *pdev, int bar)
{
	if (kcompat_bad(pdev, "pci_ioremap_bar", "PCI device"))
		return NULL;
	return pci_iomap(pdev, bar, 0);
}

/* Every registered device, a reference held on the current one. */
#define for_each_pci_dev(d)                                                    \
	while (((d) = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, (d))) != NULL)

/*
 * No virtual functions here: as a kernel built without PCI_IOV says. A bad
 * device still WARNs: the driver would oops on a kernel that has them.
 */
static inline int pci_enable_sriov(struct pci_dev *pdev, int nr_virtfn)
{
	(void)nr_virtfn;
	if (kcompat_bad(pdev, "pci_enable_sriov", "PCI device"))
		return -EINVAL;
	return -ENODEV;
}

static inline void pci_disable_sriov(struct pci_dev *pdev)
{
	kcompat_bad(pdev, "pci_disable_sriov", "PCI device");
}

#define module_pci_driver(drv)                                                 \
	module_driver(drv, pci_register_driver, pci_unregister_driver)

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define pci_read_config_byte(dev, where, val)                                  \
	KCOMPAT_AT(pci_read_config_byte, pci_read_config_byte(dev, where, val))
#define pci_read_config_word(dev, where, val)                                  \
	KCOMPAT_AT(pci_read_config_word, pci_read_config_word(dev, where, val))
#define pci_read_config_dword(dev, where, val)                                 \
	KCOMPAT_AT(pci_read_config_dword,                                      \
		   pci_read_config_dword(dev, where, val))
#define pci_write_config_byte(dev, where, val)                                 \
	KCOMPAT_AT(pci_write_config_byte,                                      \
		   pci_write_config_byte(dev, where, val))
#define pci_write_config_word(dev, where, val)                                 \
	KCOMPAT_AT(pci_write_config_word,                                      \
		   pci_write_config_word(dev, where, val))
#define pci_write_config_dword(dev, where, val)                                \
	KCOMPAT_AT(pci_write_config_dword,                                     \
		   pci_write_config_dword(dev, where, val))
#define pcim_enable_device(pdev)                                               \
	KCOMPAT_AT(pcim_enable_device, pcim_enable_device(pdev))
#define pci_enable_device(pdev)                                                \
	KCOMPAT_AT(pci_enable_device, pci_enable_device(pdev))
#define pcim_iomap(pdev, bar, maxlen)                                          \
	KCOMPAT_AT(pcim_iomap, pcim_iomap(pdev, bar, maxlen))
#define pcim_iomap_regions(pdev, mask, name)                                   \
	KCOMPAT_AT(pcim_iomap_regions, pcim_iomap_regions(pdev, mask, name))
#define pci_iomap(pdev, bar, maxlen)                                           \
	KCOMPAT_AT(pci_iomap, pci_iomap(pdev, bar, maxlen))
#define pcim_request_region(pdev, bar, name)                                   \
	KCOMPAT_AT(pcim_request_region, pcim_request_region(pdev, bar, name))
#define pcim_request_all_regions(pdev, name)                                   \
	KCOMPAT_AT(pcim_request_all_regions,                                   \
		   pcim_request_all_regions(pdev, name))
#define pci_alloc_irq_vectors(pdev, min, max, flags)                           \
	KCOMPAT_AT(pci_alloc_irq_vectors,                                      \
		   pci_alloc_irq_vectors(pdev, min, max, flags))
#define pcim_iomap_region(pdev, bar, name)                                     \
	KCOMPAT_AT(pcim_iomap_region, pcim_iomap_region(pdev, bar, name))
#define pci_request_region(pdev, bar, name)                                    \
	KCOMPAT_AT(pci_request_region, pci_request_region(pdev, bar, name))
#define pci_request_regions(pdev, name)                                        \
	KCOMPAT_AT(pci_request_regions, pci_request_regions(pdev, name))
#define pci_ioremap_bar(pdev, bar)                                             \
	KCOMPAT_AT(pci_ioremap_bar, pci_ioremap_bar(pdev, bar))

#endif /* KCOMPAT_LINUX_PCI_H */
