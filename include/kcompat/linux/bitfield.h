/* SPDX-License-Identifier: MIT */
/* FIELD_GET() and FIELD_PREP(): register fields by their mask. */
#ifndef KCOMPAT_LINUX_BITFIELD_H
#define KCOMPAT_LINUX_BITFIELD_H

#include <linux/bits.h>

/* The shift of a mask is the index of its lowest set bit. */
#define KCOMPAT_FIELD_SHIFT(mask) __builtin_ctzll((unsigned long long)(mask))
#define FIELD_MAX(mask) ((mask) >> KCOMPAT_FIELD_SHIFT(mask))
#define FIELD_FIT(mask, val)                                                   \
	(!((((unsigned long long)(val)) << KCOMPAT_FIELD_SHIFT(mask)) &        \
	   ~(unsigned long long)(mask)))
#define FIELD_PREP(mask, val)                                                  \
	((__typeof__(mask))(((unsigned long long)(val)                         \
			     << KCOMPAT_FIELD_SHIFT(mask)) &                   \
			    (mask)))
#define FIELD_GET(mask, reg)                                                   \
	((__typeof__(mask))(((reg) & (mask)) >> KCOMPAT_FIELD_SHIFT(mask)))

#endif /* KCOMPAT_LINUX_BITFIELD_H */
