/* SPDX-License-Identifier: MIT */
/*
 * What the managed threads (thread.c) share with the libc entry points
 * that would join or detach one by hand (interpose-thread.c).
 */
#ifndef DEVRES_POSIX_THREAD_TABLE_H
#define DEVRES_POSIX_THREAD_TABLE_H

#include <pthread.h>
#include "base/subsys.h"

/*
 * Makes room for one more managed thread's record, before the thread is
 * started; a fault point. Returns 0, or -ENOMEM (nothing reserved). The
 * room is taken by posix__thread_list(), or given back by
 * posix__thread_unreserve() when the thread could not be started.
 */
HIDDEN int posix__thread_reserve(void);
HIDDEN void posix__thread_unreserve(void);
/*
 * Records @tid, running for device @dev (its name) as @name, in the room
 * a posix__thread_reserve() made, so that a pthread_join() or
 * pthread_detach() of it by hand is refused with a WARN.
 */
HIDDEN void posix__thread_list(pthread_t tid, const char *dev,
			       const char *name);
/*
 * @tid is being stopped and joined by @func (a static string): a hand
 * call on it is refused with a WARN naming @func, until it is reaped.
 */
HIDDEN void posix__thread_stopping(pthread_t tid, const char *func);
/*
 * Joins @tid, whose function has returned, and forgets it in one hold of
 * the table's lock; returns what the join returned.
 */
HIDDEN int posix__thread_reap(pthread_t tid);
/*
 * Detaches @tid (the calling thread, or one that cannot end before this
 * call returns) and forgets it in one hold of the lock.
 */
HIDDEN void posix__thread_detach(pthread_t tid);

#endif
