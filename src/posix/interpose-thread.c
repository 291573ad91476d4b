// SPDX-License-Identifier: MIT
/*
 * The libc entry points that would take a managed thread away from its
 * device: pthread_join() and its timed and trying variants, which reap
 * it, and pthread_detach(), after which nobody may join it. A thread of
 * devm_thread_run() is joined by its device's release (or by
 * devm_thread_stop()); one joined or detached by hand before would be
 * joined a second time there, which POSIX leaves undefined (glibc reads
 * the freed thread's descriptor, or waits on a thread that is gone).
 *
 * So the library defines those names, and one given a managed thread
 * WARNs, naming the device and devm_thread_stop(), and refuses with
 * EINVAL (what each returns for a thread that is not joinable): the
 * thread stays managed, and its release stops and joins it as before.
 * Unlike a descriptor or a mapping, the thread cannot be taken off its
 * device there and then: nothing would ask it to stop, and it would run
 * on with the device's resources released after it.
 *
 * The table holds the managed threads of this process by identifier, with
 * their device's name copied (the device may go while a WARN is printed).
 * It is kept under the handles' lock, a leaf held across fork() (its rank
 * in fork.c): a child's copy names its parent's threads, which it lets
 * through, as any identifier that is not its own. With no managed thread
 * each call costs one relaxed load before it goes on.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "thread-table.h"

/* Exported: they are libc's names, interposed. */
#define INTERPOSE __attribute__((visibility("default")))

struct listed {
	pthread_t tid;
	int pid;
	char dev[64];
	char name[16];
};

static struct listed *table;
static size_t nr, cap;
/* Written under the lock; read without it on the fast path. */
static size_t listed_nr;

int posix__thread_list(pthread_t tid, const char *dev, const char *name)
{
	struct listed *e;

	devres__handles_lock();
	if (nr == cap) {
		size_t c = cap ? 2 * cap : 8;
		struct listed *p = realloc(table, c * sizeof(*p));

		if (!p) {
			devres__handles_unlock();
			return -ENOMEM;
		}
		table = p;
		cap = c;
	}
	e = &table[nr++];
	memset(e, 0, sizeof(*e));
	e->tid = tid;
	e->pid = devres__pid_now();
	snprintf(e->dev, sizeof(e->dev), "%s", dev);
	snprintf(e->name, sizeof(e->name), "%s", name);
	__atomic_store_n(&listed_nr, nr, __ATOMIC_RELAXED);
	devres__handles_unlock();
	return 0;
}

void posix__thread_unlist(pthread_t tid)
{
	devres__handles_lock();
	for (size_t i = 0; i < nr; i++) {
		if (!pthread_equal(table[i].tid, tid) ||
		    table[i].pid != devres__pid_now())
			continue;
		table[i] = table[--nr];
		break;
	}
	__atomic_store_n(&listed_nr, nr, __ATOMIC_RELAXED);
	devres__handles_unlock();
}

/* True, with one WARN, when @tid is a managed thread of this process. */
static bool managed(const char *func, pthread_t tid)
{
	struct listed e = { .pid = 0 };
	bool found = false;
	int saved = errno;

	if (likely(!__atomic_load_n(&listed_nr, __ATOMIC_RELAXED)))
		return false;
	devres__handles_lock();
	for (size_t i = 0; i < nr && !found; i++) {
		if (pthread_equal(table[i].tid, tid) &&
		    table[i].pid == devres__pid_now()) {
			e = table[i];
			found = true;
		}
	}
	devres__handles_unlock();
	if (found)
		devres__warn_label(e.dev, func,
				   "thread '%s' started with "
				   "devm_thread_run(): "
				   "use devm_thread_stop(); refused, the "
				   "thread "
				   "stays managed",
				   e.name);
	errno = saved;
	return found;
}

typedef int join_fn(pthread_t, void **);
typedef int tryjoin_fn(pthread_t, void **);
typedef int timedjoin_fn(pthread_t, void **, const struct timespec *);
typedef int clockjoin_fn(pthread_t, void **, clockid_t,
			 const struct timespec *);
typedef int detach_fn(pthread_t);

/* A program with no dynamic linker has no next definition to call. */
static int no_join(pthread_t tid, void **ret)
{
	(void)tid;
	(void)ret;
	return ENOSYS;
}

static int no_timedjoin(pthread_t tid, void **ret,
			const struct timespec *abstime)
{
	(void)tid;
	(void)ret;
	(void)abstime;
	return ENOSYS;
}

static int no_clockjoin(pthread_t tid, void **ret, clockid_t clock,
			const struct timespec *abstime)
{
	(void)tid;
	(void)ret;
	(void)clock;
	(void)abstime;
	return ENOSYS;
}

static int no_detach(pthread_t tid)
{
	(void)tid;
	return ENOSYS;
}

DEVRES__NEXT(join_fn, pthread_join, no_join)
DEVRES__NEXT(tryjoin_fn, pthread_tryjoin_np, no_join)
DEVRES__NEXT(timedjoin_fn, pthread_timedjoin_np, no_timedjoin)
DEVRES__NEXT(clockjoin_fn, pthread_clockjoin_np, no_clockjoin)
DEVRES__NEXT(detach_fn, pthread_detach, no_detach)

INTERPOSE int pthread_join(pthread_t tid, void **ret)
{
	if (managed(__func__, tid))
		return EINVAL;
	return next_pthread_join()(tid, ret);
}

INTERPOSE int pthread_tryjoin_np(pthread_t tid, void **ret)
{
	if (managed(__func__, tid))
		return EINVAL;
	return next_pthread_tryjoin_np()(tid, ret);
}

INTERPOSE int pthread_timedjoin_np(pthread_t tid, void **ret,
				   const struct timespec *abstime)
{
	if (managed(__func__, tid))
		return EINVAL;
	return next_pthread_timedjoin_np()(tid, ret, abstime);
}

INTERPOSE int pthread_clockjoin_np(pthread_t tid, void **ret, clockid_t clock,
				   const struct timespec *abstime)
{
	if (managed(__func__, tid))
		return EINVAL;
	return next_pthread_clockjoin_np()(tid, ret, clock, abstime);
}

INTERPOSE int pthread_detach(pthread_t tid)
{
	if (managed(__func__, tid))
		return EINVAL;
	return next_pthread_detach()(tid);
}
