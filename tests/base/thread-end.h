/* SPDX-License-Identifier: MIT */
/*
 * What the tests of a thread that ends inside the library share: the ends
 * a thread has besides returning, and a join that fails, rather than
 * hangs, when the thread has not ended in time (a lock it left held, a
 * wait for holds it never put). Include after cmocka.h.
 */
#ifndef DEVRES_TESTS_THREAD_END_H
#define DEVRES_TESTS_THREAD_END_H

#include <pthread.h>
#include <time.h>

enum ending {
	BY_RETURN,
	BY_EXIT,
	BY_CANCEL,
	NR_ENDING
};

static const char *const ending_name[] = { "return", "pthread_exit",
					   "cancelled" };

/*
 * Ends the calling thread by @e: pthread_exit(), or a cancellation of
 * itself met at once. BY_RETURN comes back, for the caller to return.
 */
static inline void end_thread_by(enum ending e)
{
	if (e == BY_EXIT)
		pthread_exit(NULL);
	if (e == BY_CANCEL) {
		pthread_cancel(pthread_self());
		pthread_testcancel();
	}
}

/* Joins @t; fails with @why when it has not ended within 2 s. */
static inline void *join_within(pthread_t t, const char *why)
{
	struct timespec when;
	void *ret = NULL;

	clock_gettime(CLOCK_REALTIME, &when);
	when.tv_sec += 2;
	if (pthread_timedjoin_np(t, &ret, &when))
		fail_msg("%s", why);
	return ret;
}

#endif
