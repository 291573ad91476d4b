/* SPDX-License-Identifier: MIT */
/*
 * No wait of the compat headers is a cancellation point, as no call of the
 * library is one (docs/posix.md): a thread cancelled in a condition wait
 * takes the wait's mutex back before it ends, so it would end holding an
 * item's, a completion's or the workqueue table's lock, and every later
 * call on that object would wait for ever. Each such wait runs with
 * cancellation disabled; a request made meanwhile acts at the thread's
 * next cancellation point after the call. Plain sleeps (<linux/delay.h>)
 * hold no lock and stay cancellation points.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_CANCEL_H
#define KCOMPAT_LINUX_KCOMPAT_CANCEL_H

#include <pthread.h>

/* Cancellation off; returns the state to give back. */
static inline int kcompat_cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void kcompat_cancel_restore(int old)
{
	int cur;

	if (old != PTHREAD_CANCEL_DISABLE)
		pthread_setcancelstate(old, &cur);
}

#endif /* KCOMPAT_LINUX_KCOMPAT_CANCEL_H */
