/* SPDX-License-Identifier: MIT */
/* BIT() and GENMASK(). */
#ifndef KCOMPAT_LINUX_BITS_H
#define KCOMPAT_LINUX_BITS_H

#include <linux/types.h>

#define BITS_PER_LONG ((int)(8 * sizeof(long)))
#define BITS_PER_LONG_LONG 64
#define BITS_PER_BYTE 8
#define BIT(n) (1UL << (n))
#define BIT_ULL(n) (1ULL << (n))
#define BIT_MASK(n) (1UL << ((n) % BITS_PER_LONG))
#define BIT_WORD(n) ((n) / BITS_PER_LONG)
/* Bits h down to l, both included. */
#define GENMASK(h, l) ((~0UL >> (BITS_PER_LONG - 1 - (h))) & (~0UL << (l)))
#define GENMASK_ULL(h, l) ((~0ULL >> (63 - (h))) & (~0ULL << (l)))
#define BITS_TO_LONGS(n) (((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)

#endif /* KCOMPAT_LINUX_BITS_H */
