/* SPDX-License-Identifier: MIT */
/* Attributes and access helpers drivers take from <linux/compiler.h>. */
#ifndef KCOMPAT_LINUX_COMPILER_H
#define KCOMPAT_LINUX_COMPILER_H

#include <linux/kconfig.h>
#include <linux/types.h>

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#define __must_check __attribute__((warn_unused_result))
#define __maybe_unused __attribute__((unused))
#define __always_unused __attribute__((unused))
#define __used __attribute__((used))
#define __packed __attribute__((packed))
#define __aligned(x) __attribute__((aligned(x)))
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define noinline __attribute__((noinline))
#define __force
#define __user
#define __rcu
#define __percpu
#define __iomem
#define __init
#define __exit
#define __initconst
#define __devinitconst
#define __ro_after_init
#define fallthrough __attribute__((fallthrough))
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define barrier() __asm__ __volatile__("" ::: "memory")
#define BUILD_BUG_ON(c) ((void)sizeof(char[1 - 2 * !!(c)]))
#define __same_type(a, b)                                                      \
	__builtin_types_compatible_p(__typeof__(a), __typeof__(b))

#endif /* KCOMPAT_LINUX_COMPILER_H */
