/* SPDX-License-Identifier: MIT */
/*
 * User copies: a driver built in a process shares its address space with
 * its caller, so a copy is a copy and never faults (0 bytes left).
 */
#ifndef KCOMPAT_LINUX_UACCESS_H
#define KCOMPAT_LINUX_UACCESS_H

#include <string.h>
#include <linux/compiler.h>

static inline unsigned long copy_to_user(void __user *to, const void *from,
					 unsigned long n)
{
	memcpy(to, from, n);
	return 0;
}

static inline unsigned long copy_from_user(void *to, const void __user *from,
					   unsigned long n)
{
	memcpy(to, from, n);
	return 0;
}

#define get_user(x, ptr) ((x) = *(ptr), 0)
#define put_user(x, ptr) (*(ptr) = (x), 0)

#endif /* KCOMPAT_LINUX_UACCESS_H */
