/* SPDX-License-Identifier: MIT */
/* preempt_disable() and friends: with the spinlocks, in <linux/spinlock.h>. */
#ifndef KCOMPAT_LINUX_PREEMPT_H
#define KCOMPAT_LINUX_PREEMPT_H

#include <linux/spinlock.h>

#endif /* KCOMPAT_LINUX_PREEMPT_H */
