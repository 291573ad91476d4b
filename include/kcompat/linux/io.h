/* SPDX-License-Identifier: MIT */
/* Register access and mapping: libdevres's I/O windows, with a few more. */
#ifndef KCOMPAT_LINUX_IO_H
#define KCOMPAT_LINUX_IO_H

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

#endif /* KCOMPAT_LINUX_IO_H */
