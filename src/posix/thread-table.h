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
 * Records @tid, running for device @dev (its name) as @name, so that a
 * pthread_join() or pthread_detach() of it by hand is refused with a
 * WARN. Returns 0, or -ENOMEM (nothing recorded).
 */
HIDDEN int posix__thread_list(pthread_t tid, const char *dev, const char *name);
/* Forgets @tid, before the library joins or detaches it itself. */
HIDDEN void posix__thread_unlist(pthread_t tid);

#endif
