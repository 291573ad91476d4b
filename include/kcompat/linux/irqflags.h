/* SPDX-License-Identifier: MIT */
/* local_irq_save() and friends: with the spinlocks, in <linux/spinlock.h>. */
#ifndef KCOMPAT_LINUX_IRQFLAGS_H
#define KCOMPAT_LINUX_IRQFLAGS_H

#include <linux/spinlock.h>

#endif /* KCOMPAT_LINUX_IRQFLAGS_H */
