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
#include <stdlib.h>
#include "base/subsys.h"
#include <devres/posix.h>

struct spawn {
	void *(*fn)(void *);
	void *arg;
};

/* Whether this thread is a spawned one still counted. */
static TLS_FAST bool counted;

static void *trampoline(void *p)
{
	struct spawn s = *(struct spawn *)p;

	free(p);
	counted = true;
	s.fn(s.arg);
	devres_thread_spawn_done();
	return NULL;
}

int devres_thread_spawn(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	struct spawn *s;
	pthread_t t;
	int err;

	if (devres__arg_bad(NULL, (const void *)fn, __func__, "fn"))
		return -EINVAL;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->arg = arg;
	/* Counted before it can run, and so before it can end. */
	devres__ledger_add(DL_THREADS, 1);
	err = pthread_attr_init(&attr);
	if (!err) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&t, &attr, trampoline, s);
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
