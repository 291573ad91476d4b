// SPDX-License-Identifier: MIT
/*
 * The libc entry points that would take a managed thread away from its
 * device: pthread_join() and its timed and trying variants, which reap
 * it, and pthread_detach(), after which nobody may join it; and C11's
 * thrd_join() and thrd_detach(), which glibc makes with its own join and
 * detach inside, past these. A thread of
 * devm_thread_run() is joined by its device's release (or by
 * devm_thread_stop()); one joined or detached by hand before would be
 * joined a second time there, which POSIX leaves undefined (glibc reads
 * the freed thread's descriptor, or waits on a thread that is gone).
 *
 * So the library defines those names, and one given a managed thread
 * WARNs, naming the device and devm_thread_stop(), and refuses with
 * EINVAL (what each returns for a thread that is not joinable; thrd_error
 * for the C11 calls): the
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include "thread-table.h"

/* Exported: they are libc's names, interposed. */
#define INTERPOSE __attribute__((visibility("default")))

struct listed {
	pthread_t tid;
	int pid;
	char dev[64];
	char name[16];
	/* Being stopped and joined by this call (its name), else NULL. */
	const char *stopping;
};

static struct listed *table;
/* Entries, room, and room promised to threads not yet listed. */
static size_t nr, cap, reserved;
/* Written under the lock; read without it on the fast path. */
static size_t listed_nr;

/*
 * The room is made before the thread starts, behind the fault point: a
 * thread that could not be recorded would run with a join or detach of
 * it by hand unseen, so devm_thread_run() fails instead, with nothing
 * started.
 */
int posix__thread_reserve(void)
{
	int ret = 0;

	if (devres__should_fail())
		return -ENOMEM;
	devres__handles_lock();
	if (nr + reserved == cap) {
		size_t c = cap ? 2 * cap : 8;
		struct listed *p = realloc(table, c * sizeof(*p));

		if (p) {
			table = p;
			cap = c;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		reserved++;
	devres__handles_unlock();
	return ret;
}

void posix__thread_unreserve(void)
{
	devres__handles_lock();
	reserved--;
	devres__handles_unlock();
}

void posix__thread_list(pthread_t tid, const char *dev, const char *name)
{
	struct listed *e;

	devres__handles_lock();
	reserved--;
	e = &table[nr++];
	memset(e, 0, sizeof(*e));
	e->tid = tid;
	e->pid = devres__pid_now();
	snprintf(e->dev, sizeof(e->dev), "%s", dev);
	snprintf(e->name, sizeof(e->name), "%s", name);
	__atomic_store_n(&listed_nr, nr, __ATOMIC_RELAXED);
	devres__handles_unlock();
}

/* @tid's entry, the lock held; NULL when it has none in this process. */
static struct listed *find(pthread_t tid)
{
	for (size_t i = 0; i < nr; i++)
		if (pthread_equal(table[i].tid, tid) &&
		    table[i].pid == devres__pid_now())
			return &table[i];
	return NULL;
}

/* Forgets @e, the lock held. */
static void unlist(struct listed *e)
{
	*e = table[--nr];
	__atomic_store_n(&listed_nr, nr, __ATOMIC_RELAXED);
}

void posix__thread_stopping(pthread_t tid, const char *func)
{
	struct listed *e;

	devres__handles_lock();
	e = find(tid);
	if (e)
		e->stopping = func;
	devres__handles_unlock();
}

/* The library's own join or detach: let through its interposed name. */
static __thread bool reaping;

void posix__thread_detach(pthread_t tid)
{
	struct listed *e;

	devres__handles_lock();
	reaping = true;
	pthread_detach(tid);
	reaping = false;
	e = find(tid);
	if (e)
		unlist(e);
	devres__handles_unlock();
}

/*
 * True, with one WARN, when @tid is a managed thread of this process,
 * running or being stopped and joined: its entry goes only once the
 * library's own join has reaped it (posix__thread_reap()).
 */
static bool managed(const char *func, pthread_t tid)
{
	struct listed e = { .pid = 0 }, *found;
	int saved = errno;

	if (likely(!__atomic_load_n(&listed_nr, __ATOMIC_RELAXED)) || reaping)
		return false;
	devres__handles_lock();
	found = find(tid);
	if (found)
		e = *found;
	devres__handles_unlock();
	if (found && e.stopping)
		devres__warn_label(e.dev, func,
				   "thread '%s' is being stopped and joined "
				   "by %s: refused",
				   e.name,
				   strcmp(e.stopping, "devm_thread_stop")
					   ? "its device's release "
					     "(devm_thread_run())"
					   : "devm_thread_stop()");
	else if (found)
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
typedef int thrd_join_fn(thrd_t, int *);
typedef int thrd_detach_fn(thrd_t);

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

static int no_thrd_join(thrd_t thr, int *res)
{
	(void)thr;
	(void)res;
	return thrd_error;
}

static int no_thrd_detach(thrd_t thr)
{
	(void)thr;
	return thrd_error;
}

DEVRES__NEXT(join_fn, pthread_join, no_join)
DEVRES__NEXT(tryjoin_fn, pthread_tryjoin_np, no_join)
DEVRES__NEXT(timedjoin_fn, pthread_timedjoin_np, no_timedjoin)
DEVRES__NEXT(clockjoin_fn, pthread_clockjoin_np, no_clockjoin)
DEVRES__NEXT(detach_fn, pthread_detach, no_detach)
DEVRES__NEXT(thrd_join_fn, thrd_join, no_thrd_join)
DEVRES__NEXT(thrd_detach_fn, thrd_detach, no_thrd_detach)

/*
 * The thread's function has returned: the join is a try, repeated while
 * the thread finishes exiting (the program's thread-specific data
 * destructors run after the function). Each try and the entry's removal
 * are one hold of the lock a hand call looks the thread up under, so that
 * the entry names this thread until it is reaped, never a new one glibc
 * gave the same identifier: a hand call meanwhile is refused, one after
 * it names whatever thread then has the identifier. Through the
 * interposed name, which a sanitizer's runtime may intercept first.
 */
int posix__thread_reap(pthread_t tid)
{
	struct timespec pause = { 0, 0 };
	struct listed *e;
	int err;

	for (unsigned int n = 0;; n++) {
		devres__handles_lock();
		reaping = true;
		err = pthread_tryjoin_np(tid, NULL);
		reaping = false;
		if (err != EBUSY) {
			e = find(tid);
			if (e)
				unlist(e);
		}
		devres__handles_unlock();
		if (err != EBUSY)
			return err;
		if (n < 16) {
			sched_yield();
			continue;
		}
		/* 10 us, doubling to 1 ms. */
		pause.tv_nsec = pause.tv_nsec ? pause.tv_nsec * 2 : 10000;
		if (pause.tv_nsec > 1000000)
			pause.tv_nsec = 1000000;
		nanosleep(&pause, NULL);
	}
}

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

/*
 * glibc's thrd_join() and thrd_detach() call its pthread join and detach
 * inside libc, past the definitions above: a managed thread given to them
 * was joined or detached by hand unseen, and its release joined it again
 * (a detached thread's join fails at once, and the release freed what the
 * thread was still using; or the identifier was a new thread's by then,
 * and the release reaped that one). A thrd_t is a pthread_t in glibc.
 */
INTERPOSE int thrd_join(thrd_t thr, int *res)
{
	if (managed(__func__, (pthread_t)thr))
		return thrd_error;
	return next_thrd_join()(thr, res);
}

INTERPOSE int thrd_detach(thrd_t thr)
{
	if (managed(__func__, (pthread_t)thr))
		return thrd_error;
	return next_thrd_detach()(thr);
}
