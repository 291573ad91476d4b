/* SPDX-License-Identifier: MIT */
/*
 * One record of who waits for whom (waits.c): before a call of the
 * library sleeps until another thread has finished something (a managed
 * thread's stop, an interrupt thread's end, a handler's return), it
 * records "this thread waits for that one" and walks the waits from
 * there. If they lead back to the caller, the wait would never end: it is
 * refused, and the caller falls back in the way its API allows.
 *
 * Threads are named by a wait id, never reused in a process: a thread the
 * library starts to run callbacks is given one by its creator
 * (devres__wait_id_new()) and takes it first thing (devres__wait_adopt()),
 * so that a waiter knows it before the thread has run; any other thread
 * gets one at its first wait. A record lives in the waiter's stack frame
 * from devres__wait_begin() to devres__wait_end(), which the waiter calls
 * before that frame ends: the waits that record are no cancellation
 * points, so a record dies with its wait, never with its thread.
 */
#ifndef DEVRES_BASE_WAITS_H
#define DEVRES_BASE_WAITS_H

#include <stdint.h>
#include "subsys.h"

/* The most threads one wait may wait for: more go unrecorded. */
#define DEVRES_WAIT_TARGETS 8

/* A thread waited for: by its wait id, or by its pthread_t (@by_pt). */
struct devres__wait_target {
	uint64_t id;
	pthread_t pt;
	bool by_pt;
};

struct devres__wait {
	struct devres__wait *next, *prev;
	struct devres__wait *walk_next;
	const char *what; /* the call that waits, for a loop's WARN */
	uint64_t waiter;
	pthread_t waiter_pt;
	struct devres__wait_target target[DEVRES_WAIT_TARGETS];
	int nr;
	uint64_t gen; /* walks; under the records' lock */
	int pid;      /* the process whose list it is on */
	bool on;
	/* A refused wait: the loop it would close, for the caller's WARN. */
	char loop[123];
};

/* A fresh wait id, for a thread about to be started. */
HIDDEN uint64_t devres__wait_id_new(void);
/* The calling thread's wait id (given one now if it has none). */
HIDDEN uint64_t devres__wait_self(void);
/* The calling thread, just started, takes @id (devres__wait_id_new()). */
HIDDEN void devres__wait_adopt(uint64_t id);

/* An empty record of @what's wait; targets go in with _target(). */
HIDDEN void devres__wait_init(struct devres__wait *w, const char *what);
/* @id (0: none, ignored) as one of the threads @w waits for. */
HIDDEN void devres__wait_target(struct devres__wait *w, uint64_t id);
/*
 * Thread @pt as one of them: a thread the library did not start (a
 * compat work item's thread, named by the header that made it).
 */
HIDDEN void devres__wait_target_pt(struct devres__wait *w, pthread_t pt);
/*
 * Records @w, unless a target is the caller or waits, through the waits
 * recorded, for the caller: then -EDEADLK, nothing recorded, and
 * @w->loop names the loop ("free_irq -> devm_thread_stop -> this thread").
 * The check and the record are one hold of one lock, a leaf: of two
 * threads about to wait for each other, exactly one is refused. Not under
 * a device's lock. A record without targets is not recorded: 0.
 */
HIDDEN int devres__wait_begin(struct devres__wait *w);
/* The wait is over: @w off the record (nothing if it was not on). */
HIDDEN void devres__wait_end(struct devres__wait *w);
/*
 * devres__wait_begin() of one target: 0 when recorded (or @id is 0),
 * -EDEADLK as above.
 */
HIDDEN int devres__wait_for(struct devres__wait *w, const char *what,
			    uint64_t id);

#endif /* DEVRES_BASE_WAITS_H */
