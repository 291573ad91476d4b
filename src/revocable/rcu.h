/* SPDX-License-Identifier: MIT */
/*
 * The read side of revocable resources: begin and end a read-side critical
 * section, and wait until every section begun before now has ended. Two
 * backends sit behind it, chosen per handle when the handle is made:
 *
 *  - liburcu's bulletproof flavour (urcu-bp), when the library was built
 *    with it (DEVRES_HAVE_URCU). A reader registers itself on its first
 *    read lock and is unregistered when its thread exits, so an
 *    application thread needs no rcu_register_thread(); no signal is
 *    used. With sys_membarrier (Linux >= 4.14) the read side is a
 *    per-thread counter update and a compiler barrier; the writer pays.
 *    The function-call API is used, not _LGPL_SOURCE, so that no LGPL code
 *    is inlined into this MIT library.
 *  - the fallback (srcu-fallback.c): a count of the accesses in progress
 *    on each handle, which the revoker waits to see at zero on a futex.
 *    One locked instruction at each end of an access; the grace period is
 *    per handle, so it waits for the readers of that handle only.
 *
 * DEVRES_REVOCABLE=fallback in the environment forces the fallback for
 * the whole process (how the tests cover it in a build with liburcu).
 */
#ifndef DEVRES_REVOCABLE_RCU_H
#define DEVRES_REVOCABLE_RCU_H

#include <stdbool.h>
#include "base/subsys.h"

#ifdef DEVRES_HAVE_URCU
#include <urcu/urcu-bp.h>
#endif

/*
 * ThreadSanitizer does not see liburcu's grace period (the library is not
 * instrumented and the read side is ordered by membarrier()): each
 * reader's end of section releases, and the end of the grace period
 * acquires, the handle's readers word, which is what urcu guarantees.
 */
#if defined(__SANITIZE_THREAD__)
#define DEVRES_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEVRES_TSAN 1
#endif
#endif
#ifdef DEVRES_TSAN
#include <sanitizer/tsan_interface.h>
#define tsan_release(addr) __tsan_release(addr)
#define tsan_acquire(addr) __tsan_acquire(addr)
#else
#define tsan_release(addr) ((void)(addr))
#define tsan_acquire(addr) ((void)(addr))
#endif

/* The fallback's state, in every handle. */
struct rcu_readers {
	/* Accesses in progress on this handle, | RCU_WAITING. */
	int count;
};

/* Whether new handles use urcu-bp; fixed when the library is loaded. */
extern HIDDEN bool devres__rcu_urcu;
/* The backend's name, for the log. */
HIDDEN const char *devres__rcu_name(bool urcu);

/*
 * revocable.c, in a child of fork(), in the thread that forked (process
 * @parent): its accesses and queued revocations are its parent's.
 */
HIDDEN void devres__revocable_forked(int parent);

HIDDEN void devres__srcu_wake(struct rcu_readers *r);
HIDDEN void devres__srcu_sync(struct rcu_readers *r);
HIDDEN void devres__urcu_sync(struct rcu_readers *r);

/*
 * In the count: a revoker may sleep on it. One word with the count, so
 * that the reader whose end lets the revoker go reads nothing of the
 * handle after that end: the revoker may free it at once (a flag of its
 * own, read after the decrement, was read from freed memory). Only the
 * wake's address is used after, and a futex wake on an address nobody
 * waits on any more is harmless.
 */
#define RCU_WAITING (1 << 30)

static inline void rcu_enter(bool urcu, struct rcu_readers *r)
{
#ifdef DEVRES_HAVE_URCU
	if (likely(urcu)) {
		urcu_bp_read_lock();
		return;
	}
#else
	(void)urcu;
#endif
	/* Ordered before the load of the resource (Dekker with revoke). */
	__atomic_add_fetch(&r->count, 1, __ATOMIC_SEQ_CST);
}

static inline void rcu_exit(bool urcu, struct rcu_readers *r)
{
#ifdef DEVRES_HAVE_URCU
	if (likely(urcu)) {
		tsan_release(r);
		urcu_bp_read_unlock();
		return;
	}
#else
	(void)urcu;
#endif
	if (__atomic_sub_fetch(&r->count, 1, __ATOMIC_SEQ_CST) == RCU_WAITING)
		devres__srcu_wake(r);
}

/* Waits until every section begun on @r before this call has ended. */
static inline void rcu_sync(bool urcu, struct rcu_readers *r)
{
	if (urcu)
		devres__urcu_sync(r);
	else
		devres__srcu_sync(r);
}

#endif /* DEVRES_REVOCABLE_RCU_H */
