// SPDX-License-Identifier: MIT
/*
 * The thread watch of thread-watch.h. pthread_create() and the calls that
 * reap or give up a thread (pthread_join() and its trying, timed and
 * clock variants, pthread_detach()) are defined here, in the program, so
 * that every call of those names, the library's included, comes here
 * first; each goes on to the next definition (a sanitizer's runtime, the
 * library's own checks, libc). A started thread has a slot from before it
 * runs until it is reaped: joined, or detached and ended. Its end is seen
 * by a thread-specific value's destructor, which runs however the thread
 * ends.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <devres/fault.h>
#include "hostile/thread-watch.h"

/* More threads than any cell starts at once. */
#define WATCH_MAX 256

struct watched {
	pthread_t tid;
	void *(*fn)(void *);
	unsigned long gen; /* which thread has had the slot */
	bool used;
	bool ended;
	bool detached;
};

static struct watched slots[WATCH_MAX];
/* Threads started while every slot was taken: not watched, a failure. */
static int unwatched;
static unsigned long gens;
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t end_key;

struct start {
	void *(*fn)(void *);
	void *arg;
	struct watched *w;
};

typedef int create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *),
		      void *);
typedef int join_fn(pthread_t, void **);
typedef int timedjoin_fn(pthread_t, void **, const struct timespec *);
typedef int clockjoin_fn(pthread_t, void **, clockid_t,
			 const struct timespec *);
typedef int detach_fn(pthread_t);

/* The next definition of @name after the program's. */
static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "thread watch: no next %s\n", name);
		abort();
	}
	return f;
}

/* Reaped: the slot is free, the identifier may be given again. */
static void forget(struct watched *w)
{
	*w = (struct watched){ .used = false };
}

static void ended(void *v)
{
	struct watched *w = v;

	pthread_mutex_lock(&watch_lock);
	w->ended = true;
	if (w->detached)
		forget(w);
	pthread_mutex_unlock(&watch_lock);
}

static void *trampoline(void *v)
{
	struct start s = *(struct start *)v;

	free(v);
	pthread_mutex_lock(&watch_lock);
	s.w->tid = pthread_self();
	pthread_mutex_unlock(&watch_lock);
	pthread_setspecific(end_key, s.w);
	return s.fn(s.arg);
}

/* A child has only its own thread: the others' slots go. */
static void take(void)
{
	pthread_mutex_lock(&watch_lock);
}

static void give(void)
{
	pthread_mutex_unlock(&watch_lock);
}

static void child(void)
{
	for (int i = 0; i < WATCH_MAX; i++)
		if (slots[i].used &&
		    !pthread_equal(slots[i].tid, pthread_self()))
			forget(&slots[i]);
	pthread_mutex_unlock(&watch_lock);
}

__attribute__((constructor)) static void watch_init(void)
{
	if (pthread_key_create(&end_key, ended) ||
	    pthread_atfork(take, give, child)) {
		fprintf(stderr, "thread watch: cannot start\n");
		abort();
	}
}

/* @tid's slot, the lock held; NULL when it is not watched. */
static struct watched *find(pthread_t tid)
{
	for (int i = 0; i < WATCH_MAX; i++)
		if (slots[i].used && pthread_equal(slots[i].tid, tid))
			return &slots[i];
	return NULL;
}

int pthread_create(pthread_t *ret_tid, const pthread_attr_t *attr,
		   void *(*fn)(void *), void *arg)
{
	static create_fn *real;
	struct start *s = malloc(sizeof(*s));
	struct watched *w = NULL;
	int detached = PTHREAD_CREATE_JOINABLE, rc;
	unsigned long gen = 0;

	if (!real)
		real = (create_fn *)next("pthread_create");
	if (!s)
		return EAGAIN;
	if (attr)
		pthread_attr_getdetachstate(attr, &detached);
	pthread_mutex_lock(&watch_lock);
	for (int i = 0; i < WATCH_MAX && !w; i++)
		if (!slots[i].used)
			w = &slots[i];
	if (w)
		*w = (struct watched){
			.fn = fn,
			.gen = gen = ++gens,
			.used = true,
			.detached = detached == PTHREAD_CREATE_DETACHED,
		};
	else
		unwatched++;
	pthread_mutex_unlock(&watch_lock);
	if (!w) {
		free(s);
		return real(ret_tid, attr, fn, arg);
	}
	*s = (struct start){ .fn = fn, .arg = arg, .w = w };
	rc = real(ret_tid, attr, trampoline, s);
	pthread_mutex_lock(&watch_lock);
	/* Unless it ended detached already, and the slot went. */
	if (w->used && w->gen == gen) {
		if (rc)
			forget(w);
		else
			w->tid = *ret_tid;
	}
	pthread_mutex_unlock(&watch_lock);
	if (rc)
		free(s);
	return rc;
}

/* After a call that reaps @tid returned @rc. */
static int reaped(pthread_t tid, int rc)
{
	struct watched *w;

	if (rc)
		return rc;
	pthread_mutex_lock(&watch_lock);
	w = find(tid);
	if (w)
		forget(w);
	pthread_mutex_unlock(&watch_lock);
	return rc;
}

int pthread_join(pthread_t tid, void **ret)
{
	static join_fn *real;

	if (!real)
		real = (join_fn *)next("pthread_join");
	return reaped(tid, real(tid, ret));
}

int pthread_tryjoin_np(pthread_t tid, void **ret)
{
	static join_fn *real;

	if (!real)
		real = (join_fn *)next("pthread_tryjoin_np");
	return reaped(tid, real(tid, ret));
}

int pthread_timedjoin_np(pthread_t tid, void **ret,
			 const struct timespec *abstime)
{
	static timedjoin_fn *real;

	if (!real)
		real = (timedjoin_fn *)next("pthread_timedjoin_np");
	return reaped(tid, real(tid, ret, abstime));
}

int pthread_clockjoin_np(pthread_t tid, void **ret, clockid_t clock,
			 const struct timespec *abstime)
{
	static clockjoin_fn *real;

	if (!real)
		real = (clockjoin_fn *)next("pthread_clockjoin_np");
	return reaped(tid, real(tid, ret, clock, abstime));
}

int pthread_detach(pthread_t tid)
{
	static detach_fn *real;
	struct watched *w;
	int rc;

	if (!real)
		real = (detach_fn *)next("pthread_detach");
	/* Looked up first: once detached, an ended thread's id is free. */
	pthread_mutex_lock(&watch_lock);
	w = find(tid);
	pthread_mutex_unlock(&watch_lock);
	rc = real(tid);
	if (rc || !w)
		return rc;
	pthread_mutex_lock(&watch_lock);
	if (w->used && pthread_equal(w->tid, tid)) {
		w->detached = true;
		if (w->ended)
			forget(w);
	}
	pthread_mutex_unlock(&watch_lock);
	return rc;
}

static void describe(const char *what, const struct watched *w, const char *how)
{
	Dl_info info = { 0 };

	dladdr((void *)(uintptr_t)w->fn, &info);
	fprintf(stderr, "%s: thread %p (function %s in %s) %s\n", what,
		(void *)w->fn, info.dli_sname ? info.dli_sname : "?",
		info.dli_fname ? info.dli_fname : "?", how);
}

int thread_watch_leaks(const char *what)
{
	struct devres_ledger l;
	struct watched running[WATCH_MAX];
	int leaks = 0, nrunning = 0;

	devres_ledger_snapshot(&l);
	pthread_mutex_lock(&watch_lock);
	for (int i = 0; i < WATCH_MAX; i++) {
		const struct watched *w = &slots[i];

		if (!w->used || w->detached ||
		    pthread_equal(w->tid, pthread_self()))
			continue;
		if (w->ended) {
			describe(what, w, "ended, neither joined nor detached");
			leaks++;
		} else {
			running[nrunning++] = *w;
		}
	}
	if (unwatched) {
		fprintf(stderr, "%s: %d threads not watched (no slot)\n", what,
			unwatched);
		leaks += unwatched;
	}
	pthread_mutex_unlock(&watch_lock);
	/*
	 * A running joinable thread is the library's own while it counts an
	 * interrupt handler (the dispatcher, a handler's thread) or as many
	 * managed threads (joined by their device's release).
	 */
	if (!l.irq_handlers && nrunning > l.threads) {
		for (int i = 0; i < nrunning; i++)
			describe(what, &running[i],
				 "runs on, neither joined nor detached, and "
				 "the library counts no thread of its own");
		leaks += nrunning - (int)l.threads;
	}
	return leaks;
}

static void *returns(void *arg)
{
	return arg;
}

/* Starts a thread that ends at once; detached too if @detach. */
static int one_thread(bool detach)
{
	pthread_t t;
	struct watched *w;
	bool gone = false;

	if (pthread_create(&t, NULL, returns, NULL))
		return -1;
	if (detach && pthread_detach(t))
		return -1;
	/* Until its end is seen (a detached one's slot is then free). */
	for (int ms = 0; ms < 10000 && !gone; ms++) {
		pthread_mutex_lock(&watch_lock);
		w = find(t);
		gone = !w || w->ended;
		pthread_mutex_unlock(&watch_lock);
		if (!gone)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return gone ? 0 : -1;
}

int thread_watch_self_test(void)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (thread_watch_leaks("self-test, before") != 0 ||
		    one_thread(true) ||
		    thread_watch_leaks("self-test, detached") != 0 ||
		    one_thread(false) ||
		    thread_watch_leaks("self-test, a leaked thread "
				       "(expected)") != 1)
			_exit(1);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	return !WIFEXITED(status) || WEXITSTATUS(status);
}
