/* SPDX-License-Identifier: MIT */
/* Bit searches and atomic bit operations on unsigned long arrays. */
#ifndef KCOMPAT_LINUX_BITOPS_H
#define KCOMPAT_LINUX_BITOPS_H

#include <linux/bits.h>

static inline int fls(unsigned int x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}

static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

/* A macro: the C library declares an ffs() of its own in <strings.h>. */
#define ffs(x) __builtin_ffs(x)

/* The lowest set bit of a non-zero word. */
static inline unsigned long __ffs(unsigned long x)
{
	return (unsigned long)__builtin_ctzl(x);
}

static inline unsigned long __fls(unsigned long x)
{
	return (unsigned long)(BITS_PER_LONG - 1 - __builtin_clzl(x));
}

static inline unsigned long ffz(unsigned long x)
{
	return __ffs(~x);
}

#define hweight8(x) ((unsigned int)__builtin_popcount((u8)(x)))
#define hweight16(x) ((unsigned int)__builtin_popcount((u16)(x)))
#define hweight32(x) ((unsigned int)__builtin_popcount((u32)(x)))
#define hweight64(x) ((unsigned int)__builtin_popcountll((u64)(x)))
#define hweight_long(x) ((unsigned int)__builtin_popcountl(x))

static inline void set_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_or(&addr[BIT_WORD(nr)], BIT_MASK(nr), __ATOMIC_SEQ_CST);
}

static inline void clear_bit(long nr, volatile unsigned long *addr)
{
	__atomic_fetch_and(&addr[BIT_WORD(nr)], ~BIT_MASK(nr),
			   __ATOMIC_SEQ_CST);
}

static inline bool test_bit(long nr, const volatile unsigned long *addr)
{
	return __atomic_load_n(&addr[BIT_WORD(nr)], __ATOMIC_RELAXED) &
	       BIT_MASK(nr);
}

static inline bool test_and_set_bit(long nr, volatile unsigned long *addr)
{
	return __atomic_fetch_or(&addr[BIT_WORD(nr)], BIT_MASK(nr),
				 __ATOMIC_SEQ_CST) &
	       BIT_MASK(nr);
}

static inline bool test_and_clear_bit(long nr, volatile unsigned long *addr)
{
	return __atomic_fetch_and(&addr[BIT_WORD(nr)], ~BIT_MASK(nr),
				  __ATOMIC_SEQ_CST) &
	       BIT_MASK(nr);
}

#define __set_bit(nr, addr) set_bit((nr), (addr))
#define __clear_bit(nr, addr) clear_bit((nr), (addr))

#define for_each_set_bit(bit, addr, size)                                      \
	for ((bit) = 0; (bit) < (size); (bit)++)                               \
		if (test_bit((long)(bit), (addr)))

#endif /* KCOMPAT_LINUX_BITOPS_H */
