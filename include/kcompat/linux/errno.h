/* SPDX-License-Identifier: MIT */
/*
 * errno values, with the kernel's own above the C library's. The C
 * library's <errno.h> includes <linux/errno.h> for its constants, and
 * finds this file: so it includes the system's own first.
 */
#ifndef KCOMPAT_LINUX_ERRNO_H
#define KCOMPAT_LINUX_ERRNO_H

#include_next <linux/errno.h>

#ifndef EPROBE_DEFER
#define EPROBE_DEFER 517
#endif
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

#endif /* KCOMPAT_LINUX_ERRNO_H */
