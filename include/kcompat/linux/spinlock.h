/* SPDX-License-Identifier: MIT */
/*
 * Spinlocks are mutexes: an interrupt handler runs in the dispatcher's
 * thread, so "irqsave" needs no more than mutual exclusion.
 */
#ifndef KCOMPAT_LINUX_SPINLOCK_H
#define KCOMPAT_LINUX_SPINLOCK_H

#include <pthread.h>

typedef struct {
	pthread_mutex_t m;
} spinlock_t;
typedef spinlock_t raw_spinlock_t;

#define __SPIN_LOCK_UNLOCKED(x)                                                \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER                                      \
	}
#define DEFINE_SPINLOCK(x) spinlock_t x = __SPIN_LOCK_UNLOCKED(x)
#define DEFINE_RAW_SPINLOCK DEFINE_SPINLOCK
#define spin_lock_init(l) pthread_mutex_init(&(l)->m, NULL)
#define spin_lock(l) pthread_mutex_lock(&(l)->m)
#define spin_unlock(l) pthread_mutex_unlock(&(l)->m)
#define spin_trylock(l) (pthread_mutex_trylock(&(l)->m) == 0)
#define spin_lock_irq spin_lock
#define spin_unlock_irq spin_unlock
#define spin_lock_bh spin_lock
#define spin_unlock_bh spin_unlock
#define spin_lock_irqsave(l, flags) ((flags) = 0, spin_lock(l))
#define spin_unlock_irqrestore(l, flags) ((void)(flags), spin_unlock(l))
#define raw_spin_lock_init spin_lock_init
#define raw_spin_lock spin_lock
#define raw_spin_unlock spin_unlock
#define raw_spin_lock_irqsave spin_lock_irqsave
#define raw_spin_unlock_irqrestore spin_unlock_irqrestore
#define local_irq_save(flags) ((flags) = 0)
#define local_irq_restore(flags) ((void)(flags))

#endif /* KCOMPAT_LINUX_SPINLOCK_H */
