/* SPDX-License-Identifier: MIT */
/*
 * User copies: a driver built in a process shares its address space with
 * its caller, so a copy is a copy. The pointers the library can tell bad
 * (NULL, the first page, an ERR_PTR(): devres_ptr_bad()) are answered as
 * the kernel answers them. A bad user pointer is the caller's mistake,
 * which the kernel meets with a short copy and no WARN: nothing copied,
 * every byte left (copy_*_user()), -EFAULT and a zero value (get_user(),
 * put_user()). A bad kernel-side pointer is the driver's, where the kernel
 * would oops: a WARN, and nothing copied. Any other wild pointer faults,
 * as memcpy() does.
 */
#ifndef KCOMPAT_LINUX_UACCESS_H
#define KCOMPAT_LINUX_UACCESS_H

#include <errno.h>
#include <string.h>
#include <linux/compiler.h>
#include <linux/kcompat_check.h>

/* Whether a user pointer is one the kernel would fault on (no WARN). */
static inline bool kcompat_user_bad(const void __user *p)
{
	return devres_ptr_bad((const void *)p);
}

/* Return: the number of bytes not copied: 0, or @n when refused. */
static inline unsigned long copy_to_user(void __user *to, const void *from,
					 unsigned long n)
{
	if (!n)
		return 0;
	if (kcompat_bad(from, "copy_to_user", "source") || kcompat_user_bad(to))
		return n;
	memcpy((void *)to, from, n);
	return 0;
}

/*
 * Return: the number of bytes not copied: 0, or @n when refused. The
 * kernel zeroes what it could not copy: so does this, into a good @to.
 */
static inline unsigned long copy_from_user(void *to, const void __user *from,
					   unsigned long n)
{
	if (!n)
		return 0;
	if (kcompat_bad(to, "copy_from_user", "destination"))
		return n;
	if (kcompat_user_bad(from)) {
		memset(to, 0, n);
		return n;
	}
	memcpy(to, (const void *)from, n);
	return 0;
}

/* 0, or -EFAULT with @x set to 0; @ptr evaluated once. */
#define get_user(x, ptr)                                                       \
	({                                                                     \
		__typeof__(ptr) kc_gu_p_ = (ptr);                              \
		int kc_gu_e_ = kcompat_user_bad(kc_gu_p_) ? -EFAULT : 0;       \
		(x) = kc_gu_e_ ? (__typeof__(*kc_gu_p_))0 : *kc_gu_p_;         \
		kc_gu_e_;                                                      \
	})

/* 0, or -EFAULT with nothing written; each argument evaluated once. */
#define put_user(x, ptr)                                                       \
	({                                                                     \
		__typeof__(*(ptr)) kc_pu_v_ = (x);                             \
		__typeof__(ptr) kc_pu_p_ = (ptr);                              \
		int kc_pu_e_ = kcompat_user_bad(kc_pu_p_) ? -EFAULT : 0;       \
		if (!kc_pu_e_)                                                 \
			*kc_pu_p_ = kc_pu_v_;                                  \
		kc_pu_e_;                                                      \
	})

#endif /* KCOMPAT_LINUX_UACCESS_H */
