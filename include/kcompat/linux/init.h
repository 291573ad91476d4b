/* SPDX-License-Identifier: MIT */
/* Section markers, which mean nothing in a process. */
#ifndef KCOMPAT_LINUX_INIT_H
#define KCOMPAT_LINUX_INIT_H

#include <linux/compiler.h>

#endif /* KCOMPAT_LINUX_INIT_H */
