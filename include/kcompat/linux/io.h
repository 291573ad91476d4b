/* SPDX-License-Identifier: MIT */
/* Register access and mapping: libdevres's I/O windows, with a few more. */
#ifndef KCOMPAT_LINUX_IO_H
#define KCOMPAT_LINUX_IO_H

#include <linux/kcompat_site.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <linux/types.h>

static inline void lo_hi_writeq(u64 v, volatile void __iomem *addr)
{
	writel((u32)v, addr);
	writel((u32)(v >> 32), (volatile u8 *)addr + 4);
}

static inline u64 lo_hi_readq(const volatile void __iomem *addr)
{
	u64 lo = readl(addr);

	return lo | (u64)readl((const volatile u8 *)addr + 4) << 32;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define ioremap(offset, size) KCOMPAT_AT(ioremap, ioremap(offset, size))
#define ioremap_wc(offset, size)                                               \
	KCOMPAT_AT(ioremap_wc, ioremap_wc(offset, size))
#define devm_ioremap(dev, offset, size)                                        \
	KCOMPAT_AT(devm_ioremap, devm_ioremap(dev, offset, size))
#define devm_ioremap_wc(dev, offset, size)                                     \
	KCOMPAT_AT(devm_ioremap_wc, devm_ioremap_wc(dev, offset, size))
#define devm_ioremap_resource(dev, res)                                        \
	KCOMPAT_AT(devm_ioremap_resource, devm_ioremap_resource(dev, res))
#define devm_ioremap_resource_wc(dev, res)                                     \
	KCOMPAT_AT(devm_ioremap_resource_wc, devm_ioremap_resource_wc(dev, res))

#endif /* KCOMPAT_LINUX_IO_H */
