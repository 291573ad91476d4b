/* SPDX-License-Identifier: MIT */
/* The catch-all of small helpers most drivers include. */
#ifndef KCOMPAT_LINUX_KERNEL_H
#define KCOMPAT_LINUX_KERNEL_H

#include <limits.h>
#include <string.h>
#include <linux/bitops.h>
#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/kcompat_held.h>
#include <linux/minmax.h>
#include <linux/printk.h>
#include <linux/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
#define DIV_ROUND_CLOSEST(x, d) (((x) + ((d) / 2)) / (d))
#define DIV_ROUND_UP_ULL(n, d) DIV_ROUND_UP((unsigned long long)(n), (d))
#define roundup(x, y) ((((x) + ((y)-1)) / (y)) * (y))
#define rounddown(x, y) ((x) - ((x) % (y)))
#define round_up(x, y) ((((x)-1) | ((__typeof__(x))((y)-1))) + 1)
#define round_down(x, y) ((x) & ~((__typeof__(x))((y)-1)))
#define ALIGN(x, a) (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))
#define IS_ALIGNED(x, a) (((x) & ((__typeof__(x))(a)-1)) == 0)
#define upper_32_bits(n) ((u32)(((n) >> 16) >> 16))
#define lower_32_bits(n) ((u32)((n)&0xffffffff))
#define U8_MAX ((u8)~0U)
#define U16_MAX ((u16)~0U)
#define U32_MAX ((u32)~0U)
#define U64_MAX ((u64)~0ULL)
#define S32_MAX ((s32)(U32_MAX >> 1))
/* As the kernel's with DEBUG_ATOMIC_SLEEP: <linux/kcompat_held.h>. */
#define might_sleep() kcompat_might_sleep(KCOMPAT_SLEEP_might_sleep)
#define cpu_relax() barrier()
#define do_div(n, base)                                                        \
	({                                                                     \
		u32 kc_rem_ = (u32)((n) % (base));                             \
		(n) /= (base);                                                 \
		kc_rem_;                                                       \
	})

/* The kernel's WARN_ON() prints and goes on; so does this one. */
#define WARN_ON(c)                                                             \
	({                                                                     \
		bool kc_c_ = !!(c);                                            \
		if (kc_c_)                                                     \
			fprintf(stderr, "WARNING: %s:%d: %s\n", __FILE__,      \
				__LINE__, #c);                                 \
		kc_c_;                                                         \
	})
#define WARN_ON_ONCE(c) WARN_ON(c)
#define WARN(c, fmt, ...)                                                      \
	({                                                                     \
		bool kc_c_ = !!(c);                                            \
		if (kc_c_)                                                     \
			kcompat_printk("WARN", "WARNING: " fmt,                \
				       ##__VA_ARGS__);                         \
		kc_c_;                                                         \
	})
#define WARN_ONCE WARN

#endif /* KCOMPAT_LINUX_KERNEL_H */
