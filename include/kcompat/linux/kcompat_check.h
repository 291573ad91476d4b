/* SPDX-License-Identifier: MIT */
/*
 * The check of an object pointer given to a compat inline function: NULL,
 * the first page or an ERR_PTR(), where the kernel would oops. One compare
 * inline (devres_ptr_bad()); the WARN, "(no device): <func>: NULL <what>",
 * out of line (devres_warn_bad_arg()). True: the caller returns what it
 * returns for nothing.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_CHECK_H
#define KCOMPAT_LINUX_KCOMPAT_CHECK_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/devres.h>
#include <devres/types.h>
#include <linux/kcompat_cancel.h>
#include <linux/kcompat_lock.h>
#include <linux/slab.h>

static inline bool kcompat_bad(const void *p, const char *func,
			       const char *what)
{
	if (!devres_ptr_bad(p))
		return false;
	devres_warn_bad_arg(func, what, p);
	return true;
}

#endif /* KCOMPAT_LINUX_KCOMPAT_CHECK_H */
