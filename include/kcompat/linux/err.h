/* SPDX-License-Identifier: MIT */
/* Error pointers: ERR_PTR() and friends, from libdevres's types. */
#ifndef KCOMPAT_LINUX_ERR_H
#define KCOMPAT_LINUX_ERR_H

#include <linux/errno.h>
#include <linux/types.h>

static inline int PTR_ERR_OR_ZERO(const void *ptr)
{
	return IS_ERR(ptr) ? (int)PTR_ERR(ptr) : 0;
}

#define ERR_CAST(ptr) ((void *)(ptr))

#endif /* KCOMPAT_LINUX_ERR_H */
