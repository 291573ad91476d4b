/* SPDX-License-Identifier: MIT */
/*
 * Mutexes, with devm_mutex_init() managed. In a child of fork(), a mutex
 * of the parent is refused (<linux/kcompat_lock.h>): mutex_lock() and
 * mutex_lock_nested() take nothing, mutex_trylock() returns 0,
 * mutex_lock_interruptible() and mutex_lock_killable() return -EINTR, as
 * for a signal, which their callers already handle; each with one WARN.
 * mutex_unlock() of it does nothing, silently; mutex_destroy() WARNs and
 * does nothing; mutex_init() makes it the child's.
 *
 * A mutex devm_mutex_init() made is destroyed when its device unbinds:
 * a mutex_destroy() of it by hand before that WARNs, naming the device,
 * destroys it, and drops the managed destroy, which would destroy it a
 * second time. The managed destroy destroys the mutex only while it is
 * still its device's: made again since (by mutex_init(), or by a
 * devm_mutex_init() on another device), it is the next owner's, left
 * alone. devm_mutex_init() names the device and marks the mutex
 * being added (as a framework's registration, <linux/kcompat_reg.h>)
 * in one hold of that header's kcompat_reg_lock, puts the node on the
 * device, then clears the mark: a mutex_destroy() on another thread that
 * finds the mark waits for it, so it finds the node on the device and
 * drops it, where it would leave a node that destroys nothing. That wait
 * is in the library's record of waits, for the adding thread: one whose
 * log sink (the node's ADD line) waits for the destroying thread would
 * close a loop, and the later wait is refused with one WARN (a refused
 * destroy does nothing; the node destroys the mutex at unbind).
 * From a match or for-each callback of the device, where the node would
 * be refused, devm_mutex_init() returns -EDEADLK with one WARN and leaves
 * the mutex as it is.
 *
 * A thread that ends holding a mutex lets it go, with one WARN
 * (<linux/kcompat_held.h>).
 *
 * What the kernel's mutex debugging and lockdep report is one WARN here,
 * and the mutex left whole: a lock by the thread that holds it already
 * (it would wait for itself: not taken; mutex_lock_interruptible() and
 * mutex_lock_killable() return -EINTR, and the unlock that follows a
 * refused mutex_lock() does nothing), an unlock of a mutex not locked or
 * held by another thread (nothing let go), mutex_init() or
 * mutex_destroy() of a held mutex (left as it is), any call on a mutex
 * never initialized (zeroed memory; initialized then) or destroyed
 * (initialized again: the kernel's destroy only marks it, and it still
 * works; a second mutex_destroy() says nothing, as the kernel's), a lock
 * taken holding a spinlock (it may sleep: taken all the same).
 */
#ifndef KCOMPAT_LINUX_MUTEX_H
#define KCOMPAT_LINUX_MUTEX_H

#include <linux/kcompat_reg.h>
#include <linux/kcompat_held.h>
#include <linux/kcompat_lock.h>
#include <linux/kcompat_site.h>
#include <errno.h>
#include <pthread.h>
#include <devres/devres.h>

struct mutex {
	/* private: */
	struct kcompat_lock k; /* the lock, its process, holder and name */
	struct device *dev;    /* devm_mutex_init()'s, until it is destroyed */
	bool adding;	 /* devm_mutex_init() is putting its node on dev */
	pthread_t adder; /* the thread that is */
};

/* clang-format off */
#define __MUTEX_INITIALIZER(x)						\
	{ .k = { .m = PTHREAD_MUTEX_INITIALIZER, .name = #x } }
/* clang-format on */
#define DEFINE_MUTEX(x) struct mutex x = __MUTEX_INITIALIZER(x)

/* A bad pointer, or (the WARN saying @refused) another process's mutex. */
static inline bool kcompat_mutex_bad(struct mutex *l, const char *func,
				     const char *refused)
{
	return kcompat_bad(l, func, "mutex") ||
	       kcompat_lock_refused(&l->k, l, func, "mutex", refused);
}

/*
 * The mutex made anew (unless @busy: held, left as it is), owned by @dev
 * (devm_mutex_init()'s, marked being added) or by none, in one hold of
 * kcompat_reg_lock: a mutex_destroy() that waited for the mark sees it
 * whole.
 */
static inline void kcompat_mutex_make(struct mutex *l, const char *name,
				      struct device *dev, bool busy)
{
	pthread_mutex_lock(&kcompat_reg_lock);
	l->dev = dev;
	l->adding = dev != NULL;
	l->adder = pthread_self();
	if (!busy)
		kcompat_lock_make(&l->k, name);
	pthread_mutex_unlock(&kcompat_reg_lock);
}

/* @name: the argument as written, which a WARN of the lock names. */
static inline void kcompat_mutex_init(struct mutex *l, const char *name)
{
	if (kcompat_bad(l, "mutex_init", "mutex") ||
	    kcompat_lock_busy(&l->k, "mutex_init", "mutex", "left as it is"))
		return;
	kcompat_mutex_make(l, name, NULL, false);
}

static inline void mutex_init(struct mutex *l)
{
	kcompat_mutex_init(l, NULL);
}

#define mutex_init(l) kcompat_mutex_init((l), #l)

static inline void kcompat_mutex_lock(struct mutex *l, const char *func,
				      enum kcompat_sleeper id)
{
	kcompat_might_sleep(id);
	if (kcompat_mutex_bad(l, func, "not taken"))
		return;
	kcompat_lock_take_void(&l->k, func, "mutex");
}

static inline void mutex_lock(struct mutex *l)
{
	kcompat_mutex_lock(l, "mutex_lock", KCOMPAT_SLEEP_mutex_lock);
}

static inline void mutex_lock_nested(struct mutex *l, unsigned int subclass)
{
	(void)subclass;
	kcompat_mutex_lock(l, "mutex_lock_nested",
			   KCOMPAT_SLEEP_mutex_lock_nested);
}

static inline int mutex_lock_interruptible(struct mutex *l)
{
	kcompat_might_sleep(KCOMPAT_SLEEP_mutex_lock_interruptible);
	if (kcompat_mutex_bad(l, "mutex_lock_interruptible", "not taken"))
		return -EINTR;
	/* Held by this thread already: refused, as for a signal. */
	return kcompat_lock_take(&l->k, "mutex_lock_interruptible", "mutex")
		       ? 0
		       : -EINTR;
}

static inline int mutex_lock_killable(struct mutex *l)
{
	kcompat_might_sleep(KCOMPAT_SLEEP_mutex_lock_killable);
	if (kcompat_mutex_bad(l, "mutex_lock_killable", "not taken"))
		return -EINTR;
	/* Held by this thread already: refused, as for a signal. */
	return kcompat_lock_take(&l->k, "mutex_lock_killable", "mutex")
		       ? 0
		       : -EINTR;
}

static inline int mutex_trylock(struct mutex *l)
{
	if (kcompat_mutex_bad(l, "mutex_trylock", "not taken"))
		return 0;
	return kcompat_lock_try(&l->k, "mutex_trylock", "mutex");
}

static inline void mutex_unlock(struct mutex *l)
{
	/* The lock before it was refused, and said so. */
	if (kcompat_mutex_bad(l, "mutex_unlock", NULL))
		return;
	kcompat_lock_drop(&l->k, "mutex_unlock", "mutex");
}

/*
 * The managed destroy of @dev's devm_mutex_init(), done now: only while
 * the mutex is still that device's. Nothing when a destroy by hand came
 * first, or when the mutex was made again since (by mutex_init(), or by
 * a devm_mutex_init() on another device): its address is the next
 * owner's mutex then, which this destroy must not touch.
 */
static inline void kcompat_mutex_destroy_now(struct mutex *l,
					     struct device *dev)
{
	bool mine;

	pthread_mutex_lock(&kcompat_reg_lock);
	mine = l->dev == dev;
	if (mine)
		l->dev = NULL;
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (mine && !kcompat_lock_busy(&l->k, "devm_mutex_init", "mutex",
				       "not destroyed"))
		kcompat_lock_unmake(&l->k);
}

/*
 * The release of devm_mutex_init()'s node, which holds the mutex's
 * address: weak, so that one program has one release function, whichever
 * file made the node, and a destroy by hand in another file finds it.
 */
void kcompat_mutex_destroy(struct device *dev, void *res);
__attribute__((weak)) void kcompat_mutex_destroy(struct device *dev, void *res)
{
	kcompat_mutex_destroy_now(*(struct mutex **)res, dev);
}

static inline int kcompat_mutex_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(struct mutex **)res == data;
}

/*
 * Whether a devm_mutex_init() on another thread of this process is
 * putting @l's node on. Under kcompat_reg_lock.
 */
static inline bool kcompat_mutex_being_added(const struct mutex *l)
{
	return l->dev && l->adding &&
	       !pthread_equal(l->adder, pthread_self()) &&
	       __atomic_load_n(&l->k.pid, __ATOMIC_RELAXED) ==
		       kcompat_lock_pid();
}

static inline void mutex_destroy(struct mutex *l)
{
	struct device *dev = NULL;
	bool waiting = false;
	int old;

	/* Destroyed already: nothing more, as the kernel's. */
	if (kcompat_bad(l, "mutex_destroy", "mutex") ||
	    kcompat_lock_dead(&l->k))
		return;
	pthread_mutex_lock(&kcompat_reg_lock);
	/*
	 * A devm_mutex_init() putting its node on: found on, after (not in
	 * a child of fork(), whose copy of a parent's mark nobody clears).
	 * On the record of waits, for the adding thread: a log sink of its
	 * devres_add() that waits for this thread would never return.
	 */
	old = kcompat_cancel_off();
	if (kcompat_mutex_being_added(l)) {
		waiting = !devres_wait_begin_set((uintptr_t)&l->adding, "mutex_"
									"destro"
									"y");
		dev = waiting ? NULL : l->dev;
	}
	while (waiting && kcompat_mutex_being_added(l))
		pthread_cond_wait(&kcompat_reg_cond, &kcompat_reg_lock);
	kcompat_cancel_restore(old);
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (waiting)
		devres_wait_end();
	if (dev) {
		devres_warn(dev, "mutex_destroy",
			    "mutex %p is being added by devm_mutex_init() on a "
			    "thread that waits for this one (%s): not "
			    "destroyed",
			    (void *)l, devres_wait_loop());
		return;
	}
	if (kcompat_lock_refused(&l->k, l, "mutex_destroy", "mutex",
				 "not destroyed") ||
	    kcompat_lock_busy(&l->k, "mutex_destroy", "mutex", "not destroyed"))
		return;
	pthread_mutex_lock(&kcompat_reg_lock);
	/* Whichever of this and the managed destroy comes first destroys. */
	dev = l->dev;
	l->dev = NULL;
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (dev) {
		devres_warn(dev, "mutex_destroy",
			    "mutex %p was made by devm_mutex_init(): destroyed "
			    "here, its managed destroy dropped",
			    (void *)l);
		/*
		 * Gone already when the device's release has taken it off
		 * (its destroy, which finds no device, does nothing): quiet.
		 */
		(void)devres_destroy(dev, kcompat_mutex_destroy,
				     kcompat_mutex_match, l);
	}
	kcompat_lock_unmake(&l->k);
}

static inline int kcompat_devm_mutex_init(struct device *dev,
					  struct mutex *lock, const char *name)
{
	struct mutex **node;
	int ret;

	if (devres_ptr_bad(lock)) {
		devres_warn_bad_arg("devm_mutex_init", "mutex", lock);
		return -EINVAL;
	}
	/* Where its node would be refused, the lock is left as it is. */
	ret = devres_may_add(dev, "devm_mutex_init");
	if (ret)
		return ret;
	/* Made, owned by @dev and being added in one hold; a destroy waits. */
	kcompat_mutex_make(lock, name, dev,
			   kcompat_lock_busy(&lock->k, "mutex_init", "mutex",
					     "left as it is"));
	/* A mutex_destroy() on another thread waits for this set. */
	devres_wait_join((uintptr_t)&lock->adding);
	node = devres_alloc(kcompat_mutex_destroy, sizeof(*node), GFP_KERNEL);
	if (node) {
		*node = lock;
		devres_add(dev, node);
		ret = 0;
	} else {
		/* As an _or_reset action. */
		kcompat_mutex_destroy_now(lock, dev);
		ret = -ENOMEM;
	}
	pthread_mutex_lock(&kcompat_reg_lock);
	lock->adding = false;
	pthread_cond_broadcast(&kcompat_reg_cond);
	pthread_mutex_unlock(&kcompat_reg_lock);
	devres_wait_leave();
	return ret;
}

static inline int devm_mutex_init(struct device *dev, struct mutex *lock)
{
	return kcompat_devm_mutex_init(dev, lock, NULL);
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_mutex_init(dev, lock)                                             \
	KCOMPAT_AT(devm_mutex_init, kcompat_devm_mutex_init(dev, lock, #lock))

#endif /* KCOMPAT_LINUX_MUTEX_H */
