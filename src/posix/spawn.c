// SPDX-License-Identifier: MIT
/*
 * Detached threads that count in the ledger: the kernel-compat layer's work
 * items each run in one, and a sweep must see a work still running after
 * its driver let go of everything. The count is dropped once, by
 * devres_thread_spawn_done() (which the thread calls before it tells
 * anyone it is finished, so that whoever waited for it sees the ledger
 * already back) or, at the latest, when the thread's function returns.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include "base/subsys.h"
#include <devres/posix.h>

struct spawn {
	void *(*fn)(void *);
	void *arg;
};

/* Whether this thread is a spawned one still counted. */
static TLS_FAST bool counted;

/*
 * However the function ends: a return drops the count below; a
 * pthread_exit() or a cancellation skips that, and this destructor of
 * end_key drops it instead (a cleanup handler would need setjmp() or C++
 * unwinding in every caller). Once in all: the call does nothing when the
 * count is already dropped.
 */
static pthread_key_t end_key;
static int end_key_err = -1;
static pthread_once_t end_once = PTHREAD_ONCE_INIT;

static void spawn_ended(void *p)
{
	(void)p;
	devres_thread_spawn_done();
}

static void end_key_init(void)
{
	end_key_err = pthread_key_create(&end_key, spawn_ended);
}

static void *trampoline(void *p)
{
	struct spawn s = *(struct spawn *)p;

	free(p);
	counted = true;
	/* Without memory for it, only a return is seen. */
	(void)pthread_setspecific(end_key, &end_key);
	s.fn(s.arg);
	(void)pthread_setspecific(end_key, NULL);
	devres_thread_spawn_done();
	return NULL;
}

int devres_thread_spawn(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	struct spawn *s;
	pthread_t t;
	int err;

	if (devres__arg_bad(NULL, (const void *)fn, __func__, "fn"))
		return -EINVAL;
	pthread_once(&end_once, end_key_init);
	if (end_key_err)
		return -end_key_err;
	/* Both acquisitions are fault points: a caller's fallback is tested. */
	s = devres__should_fail() ? NULL : malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->arg = arg;
	/* Counted before it can run, and so before it can end. */
	devres__ledger_add(DL_THREADS, 1);
	err = pthread_attr_init(&attr);
	if (!err) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/*
		 * Started with every signal blocked, as the kernel's workers
		 * take none: with the caller's mask, a thread started before
		 * the program blocked a signal to take it by signalfd or
		 * sigwait() was where the kernel sent it (its handler ran
		 * there, or its default action ended the process).
		 */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = devres__should_fail_thread()
			      ? EAGAIN
			      : pthread_create(&t, &attr, trampoline, s);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (err) {
		devres__ledger_add(DL_THREADS, -1);
		free(s);
		return -err;
	}
	return 0;
}

void devres_thread_spawn_done(void)
{
	if (!counted)
		return;
	counted = false;
	devres__ledger_add(DL_THREADS, -1);
}
