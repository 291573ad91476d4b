/* SPDX-License-Identifier: MIT */
/* Mutexes, with devm_mutex_init() managed. */
#ifndef KCOMPAT_LINUX_MUTEX_H
#define KCOMPAT_LINUX_MUTEX_H

#include <linux/kcompat_site.h>
#include <errno.h>
#include <pthread.h>
#include <devres/devres.h>

struct mutex {
	pthread_mutex_t m;
};

#define __MUTEX_INITIALIZER(x)                                                 \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER                                      \
	}
#define DEFINE_MUTEX(x) struct mutex x = __MUTEX_INITIALIZER(x)
#define mutex_init(l) pthread_mutex_init(&(l)->m, NULL)
#define mutex_destroy(l) pthread_mutex_destroy(&(l)->m)
#define mutex_lock(l) pthread_mutex_lock(&(l)->m)
#define mutex_unlock(l) pthread_mutex_unlock(&(l)->m)
#define mutex_trylock(l) (pthread_mutex_trylock(&(l)->m) == 0)
#define mutex_lock_interruptible(l) (mutex_lock(l), 0)
#define mutex_lock_killable mutex_lock_interruptible
#define mutex_lock_nested(l, c) ((void)(c), mutex_lock(l))

static inline void kcompat_mutex_destroy(void *lock)
{
	mutex_destroy((struct mutex *)lock);
}

static inline int devm_mutex_init(struct device *dev, struct mutex *lock)
{
	if (devres_ptr_bad(lock)) {
		devres_warn_bad_arg("devm_mutex_init", "mutex", lock);
		return -EINVAL;
	}
	mutex_init(lock);
	return devm_add_action_or_reset(dev, kcompat_mutex_destroy, lock);
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_mutex_init(dev, lock)                                             \
	KCOMPAT_AT(devm_mutex_init, devm_mutex_init(dev, lock))

#endif /* KCOMPAT_LINUX_MUTEX_H */
