/* SPDX-License-Identifier: MIT */
/*
 * The process a compat lock (<linux/mutex.h>, <linux/spinlock.h>) belongs
 * to. A lock is a pthread mutex: in a child of fork(), a lock a thread of
 * the parent held at the fork stays held for ever, its owner not being in
 * the child, and the data it guards may be half written. So a lock, as
 * the library's objects do (docs/fork.md), records the process that
 * initialized it (mutex_init(), spin_lock_init(); a lock of static
 * storage, DEFINE_MUTEX() or DEFINE_SPINLOCK(), the process of its first
 * use), and every call compares that record with this process first. In
 * the child, a lock of the parent is refused with one WARN and no lock
 * taken; its unlock, which follows in the driver's code, does nothing and
 * says nothing more; an init makes it the child's.
 *
 * getpid() is a system call: the id is kept here, and set again in the
 * child by a fork handler, so that the check on every lock call is two
 * loads and a compare.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_LOCK_H
#define KCOMPAT_LINUX_KCOMPAT_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/devres.h>

/* This process's id, once asked; one per program. */
__attribute__((weak)) pid_t kcompat_lock_self;

static inline void kcompat_lock_child(void)
{
	__atomic_store_n(&kcompat_lock_self, getpid(), __ATOMIC_RELAXED);
}

__attribute__((weak)) pthread_once_t kcompat_lock_once = PTHREAD_ONCE_INIT;

static inline void kcompat_lock_atfork(void)
{
	(void)pthread_atfork(NULL, NULL, kcompat_lock_child);
}

/* At start, before any thread: each file that includes this asks once. */
__attribute__((constructor)) static void kcompat_lock_ctor(void)
{
	pthread_once(&kcompat_lock_once, kcompat_lock_atfork);
}

static inline pid_t kcompat_lock_pid(void)
{
	pid_t self = __atomic_load_n(&kcompat_lock_self, __ATOMIC_RELAXED);

	if (__builtin_expect(!self, 0)) {
		self = getpid();
		__atomic_store_n(&kcompat_lock_self, self, __ATOMIC_RELAXED);
	}
	return self;
}

/*
 * Whether the lock @l, whose record is *@pidp, is another process's: one
 * WARN naming @func and @what, and saying @refused ("not taken"); none
 * when @refused is NULL (an unlock). A lock with no record yet becomes
 * this process's.
 */
static inline bool kcompat_lock_foreign(pid_t *pidp, const void *l,
					const char *func, const char *what,
					const char *refused)
{
	pid_t self = kcompat_lock_pid();
	pid_t pid = __atomic_load_n(pidp, __ATOMIC_RELAXED);

	if (__builtin_expect(pid == self, 1))
		return false;
	/* Static storage: its first use, here or in a racing thread. */
	if (!pid &&
	    (__atomic_compare_exchange_n(pidp, &pid, self, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED) ||
	     pid == self))
		return false;
	if (refused)
		devres_warn(NULL, func, "%s %p belongs to process %d: %s", what,
			    l, (int)pid, refused);
	return true;
}

#endif /* KCOMPAT_LINUX_KCOMPAT_LOCK_H */
