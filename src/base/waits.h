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
 *
 * A wait for all of a set of threads (every item of a queue, every call
 * in progress) names the set by a key (an object's address or handle)
 * instead of its members: a thread is a member while it holds a
 * membership (devres__wait_join() to devres__wait_leave()), and a walk
 * through the set reaches every member of the moment, those that joined
 * after the wait began too. So a member that then waits for the waiter
 * is refused, however large the set.
 */
#ifndef DEVRES_BASE_WAITS_H
#define DEVRES_BASE_WAITS_H

#include <stdint.h>
#include "subsys.h"

/*
 * The most threads or sets one wait may name: a target more is not
 * recorded, with a WARN (a wait for more names a set).
 */
#define DEVRES_WAIT_TARGETS 8

/* A thread waited for, by its wait id, or all of a set (@set), by key. */
struct devres__wait_target {
	uint64_t id;
	bool set;
	bool others; /* of a set: not the waiter, when it is a member */
};

/* A thread's membership of a set, in its thread-local storage. */
struct devres__wait_member {
	struct devres__wait_member *next, *prev;
	uint64_t set;
	uint64_t thread;
	int pid; /* the process whose list it is on */
	bool on;
};

/*
 * A thread's stack of keys, in its thread-local storage, published once
 * (devres__wait_keys_publish()) and then changed by its thread alone with
 * relaxed atomic stores and no lock: the thread is a member of set @any
 * while *@depth > 0, and of set @keys[i] for each i < *@depth. A walk
 * reads it under the records' lock; the thread's stores before its own
 * next wait begins are seen by every walk after that begin, so of a
 * member about to wait and a waiter for its set one sees the other.
 */
struct devres__wait_keys {
	struct devres__wait_keys *next, *prev;
	uint64_t thread;
	uintptr_t any;
	void *const *keys;
	const unsigned int *depth;
	bool on;
};

struct devres__wait {
	struct devres__wait *next, *prev;
	struct devres__wait *walk_next;
	uint64_t walk_via; /* the walk's first thread on the way here */
	const char *what;  /* the call that waits, for a loop's WARN */
	uint64_t waiter;
	struct devres__wait_target target[DEVRES_WAIT_TARGETS];
	int nr;
	uint64_t gen; /* walks; under the records' lock */
	int pid;      /* the process whose list it is on */
	bool on;
	/* A refused wait: the loop it would close, for the caller's WARN. */
	char loop[123];
	/* And the first thread of that loop after the caller (a member). */
	uint64_t via;
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
/* Every member of set @key (0: none, ignored) as those it waits for. */
HIDDEN void devres__wait_target_set(struct devres__wait *w, uint64_t key);
/*
 * As _target_set(), but the waiter is not among the members it waits
 * for: a member that waits for the others of its set (an unmask callback
 * of a line waiting for the line's other callbacks).
 */
HIDDEN void devres__wait_target_others(struct devres__wait *w, uint64_t key);
/*
 * The calling thread is a member of set @key from now until
 * devres__wait_leave(@m) (which it calls before @m's storage ends).
 * @key 0: nothing recorded.
 */
HIDDEN void devres__wait_join(struct devres__wait_member *m, uint64_t key);
HIDDEN void devres__wait_leave(struct devres__wait_member *m);
/*
 * Records @w, unless a target is the caller or waits, through the waits
 * recorded, for the caller: then -EDEADLK, nothing recorded, and
 * @w->loop names the loop ("free_irq -> devm_thread_stop -> this thread").
 * The check and the record are one hold of one lock, a leaf: of two
 * threads about to wait for each other, exactly one is refused. Not under
 * a device's lock. A record without targets is not recorded: 0.
 */
HIDDEN int devres__wait_begin(struct devres__wait *w);
/*
 * As devres__wait_begin(), but @w is never recorded: 0 when no loop is
 * found now. For a wait that polls and has another way out (it gives
 * up when something else happens): such a wait is no edge another
 * thread's walk may refuse itself on, and it looks again at each poll,
 * so that a loop closed after its first look is still found.
 */
HIDDEN int devres__wait_check(struct devres__wait *w);
/* The wait is over: @w off the record (nothing if it was not on). */
HIDDEN void devres__wait_end(struct devres__wait *w);
/*
 * devres__wait_begin() of one target: 0 when recorded (or @id is 0),
 * -EDEADLK as above.
 */
HIDDEN int devres__wait_for(struct devres__wait *w, const char *what,
			    uint64_t id);
/*
 * How many waits of thread @id are on the record now: for a white-box
 * test, which sees a thread in its wait, recorded, without a timed look.
 */
HIDDEN int devres__wait_records(uint64_t id);

/*
 * @k (its fields but the links set) on the record until
 * devres__wait_keys_withdraw(@k), which its thread calls before @k's
 * storage ends. Takes the records' lock: once per thread, not per change.
 */
HIDDEN void devres__wait_keys_publish(struct devres__wait_keys *k);
HIDDEN void devres__wait_keys_withdraw(struct devres__wait_keys *k);
/*
 * Calls @fn(@k, @arg) under the records' lock for the published stack @k
 * of thread @thread, which cannot be withdrawn meanwhile. Returns whether
 * there was one.
 */
HIDDEN bool devres__wait_keys_call(uint64_t thread,
				   void (*fn)(struct devres__wait_keys *k,
					      void *arg),
				   void *arg);
/*
 * In a child of fork(), on the thread that forked: the other threads'
 * stacks are gone; the forking thread's published ones are kept (its
 * revocable accesses, its drivers' pins). Any module's fork handler may
 * call it: it is the same at a second call.
 */
HIDDEN void devres__wait_keys_forked(void);

#endif /* DEVRES_BASE_WAITS_H */
