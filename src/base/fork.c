// SPDX-License-Identifier: MIT
/*
 * fork(): the library's one set of pthread_atfork() handlers, so that the
 * order in which process-wide locks are taken before fork() is the lock
 * order (outer first: a subsystem's locks before the driver model's, the
 * WARN path's last), not the order in which constructors happened to run.
 *
 * A lock is either held across fork() (taken in prepare, given back in
 * the parent, made new in the child: the child has only the forking
 * thread, so a lock another thread held would never be given back), or,
 * for a lock held across callbacks, only made new in the child. What
 * each subsystem resets besides its locks is in its own child handler;
 * the policy is docs/fork.md.
 */
#include <pthread.h>
#include <unistd.h>
#include "subsys.h"

struct fork_ops {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
	pthread_mutex_t *mutex;	  /* held across fork() */
	pthread_rwlock_t *rwlock; /* read-held across, made new in the child */
};

static struct fork_ops ops[DEVRES_FORK_NR];
int devres__pid;

/* Only from constructors, before any other thread can exist. */
void devres__atfork(enum devres__fork_rank rank, void (*prepare)(void),
		    void (*parent)(void), void (*child)(void))
{
	ops[rank] = (struct fork_ops){ prepare, parent, child, NULL, NULL };
}

void devres__atfork_mutex(enum devres__fork_rank rank, pthread_mutex_t *m)
{
	ops[rank] = (struct fork_ops){ .mutex = m };
}

/*
 * Read-held: no writer (which adds or removes what the lock guards) is
 * half way then. Readers of other threads may hold it too, and are gone in
 * the child: there it is made new rather than given back.
 */
void devres__atfork_rwlock(enum devres__fork_rank rank, pthread_rwlock_t *l)
{
	ops[rank] = (struct fork_ops){ .rwlock = l };
}

static void fork_prepare(void)
{
	for (int i = 0; i < DEVRES_FORK_NR; i++) {
		if (ops[i].mutex)
			pthread_mutex_lock(ops[i].mutex);
		if (ops[i].rwlock)
			pthread_rwlock_rdlock(ops[i].rwlock);
		if (ops[i].prepare)
			ops[i].prepare();
	}
}

static void fork_parent(void)
{
	for (int i = DEVRES_FORK_NR - 1; i >= 0; i--) {
		if (ops[i].parent)
			ops[i].parent();
		if (ops[i].mutex)
			pthread_mutex_unlock(ops[i].mutex);
		if (ops[i].rwlock)
			pthread_rwlock_unlock(ops[i].rwlock);
	}
}

static void fork_child(void)
{
	__atomic_store_n(&devres__pid, (int)getpid(), __ATOMIC_RELAXED);
	devres__dev_stamp_set();
	for (int i = DEVRES_FORK_NR - 1; i >= 0; i--) {
		if (ops[i].child)
			ops[i].child();
		if (ops[i].mutex)
			pthread_mutex_unlock(ops[i].mutex);
		/*
		 * This thread's read-hold is given back first, so that a
		 * checker that follows locks (TSan's deadlock detector)
		 * does not count it held by the child for ever.
		 */
		if (ops[i].rwlock) {
			pthread_rwlock_unlock(ops[i].rwlock);
			pthread_rwlock_init(ops[i].rwlock, NULL);
		}
	}
}

#ifdef __GLIBC__
/*
 * pthread_atfork() as glibc's libc_nonshared.a defines it: the handlers
 * registered against this object, so dlclose() drops them. Written here
 * because that archive member is built without the CET property, and one
 * object without it takes the property off the whole library.
 */
extern void *__dso_handle; /* NOLINT(bugprone-reserved-identifier) */
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void),
			     void (*child)(void), void *dso);

int devres__pthread_atfork(void (*prepare)(void), void (*parent)(void),
			   void (*child)(void))
{
	return __register_atfork(prepare, parent, child, __dso_handle);
}
#else
int devres__pthread_atfork(void (*prepare)(void), void (*parent)(void),
			   void (*child)(void))
{
	return pthread_atfork(prepare, parent, child);
}
#endif

/*
 * Registered before any constructor of the default priority, the
 * program's own among them: glibc runs prepare handlers in the reverse
 * order of registration, so a program's (the kernel-compat headers' hold
 * their workqueue locks, under which they end a wait on the record of
 * waits, rank 27) run before the library's and take their locks outside
 * it. With the shared library the library's constructors run first
 * anyway; linked statically, the program's objects came first, and their
 * handlers ran after the library's, inside its locks: a fork() against a
 * destroy_workqueue() that ends its wait deadlocked.
 */
__attribute__((constructor(101))) static void fork_init(void)
{
	devres__pid = (int)getpid();
	devres__copies_find();
	devres__pthread_atfork(fork_prepare, fork_parent, fork_child);
}
