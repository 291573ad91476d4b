/* SPDX-License-Identifier: MIT */
/*
 * Completions: a counted event, on a mutex and a monotonic condition. The
 * waits are no cancellation points (<linux/kcompat_cancel.h>).
 *
 * reinit_completion() while waiters that a complete() or complete_all()
 * woke have not yet returned (the kernel's documented misuse: they must
 * have woken and finished first) WARNs once: its reset would take back
 * their wake-up and put them to sleep again, for ever. The wake-ups are
 * kept for them instead (owed), so that they return completed, as many
 * as the signal woke; the completion is reset for the waits that come
 * after.
 */
#ifndef KCOMPAT_LINUX_COMPLETION_H
#define KCOMPAT_LINUX_COMPLETION_H

#include <limits.h>
#include <pthread.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/devres.h>
#include <devres/liveobj.h>
#include <devres/types.h>
#include <linux/jiffies.h>
#include <linux/kcompat_cancel.h>
#include <linux/kcompat_wq.h>
#include <linux/kcompat_held.h>
#include <linux/kcompat_lock.h>

struct completion {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int done;
	pid_t pid;	      /* whose: init_completion()'s; 0: never made */
	unsigned int waiters; /* threads in a wait on it */
	unsigned int owed;    /* wake-ups a reinit kept for its waiters */
	unsigned int gen;     /* reinits that kept any: a waiter's era */
};

/*
 * A completion no object can be at (NULL, the first page, an ERR_PTR()),
 * or another process's: the kernel would oops; here one WARN, and the
 * call does nothing (a wait returns at once, as timed out).
 */
static inline bool kcompat_completion_bad(const struct completion *x,
					  const char *func)
{
	pid_t pid;

	if (devres_ptr_bad(x)) {
		devres_warn_bad_arg(func, "completion", x);
		return true;
	}
	/*
	 * In a child of fork(), a completion the parent made: a thread of
	 * the parent may have held its lock at the fork, and what would
	 * complete it runs in the parent. Refused before its lock, as the
	 * parent's work items are (docs/fork.md); init_completion() makes
	 * it the child's.
	 */
	pid = x->pid;
	if (__builtin_expect(pid == kcompat_lock_pid(), 1))
		return false;
	/*
	 * Never made (zeroed memory): its condition would time a wait on
	 * the wrong clock, and the kernel's lockdep reports the unknown
	 * lock. Refused as the parent's are.
	 */
	if (!pid) {
		devres_warn(NULL, func,
			    "completion %p used before init_completion(): "
			    "nothing done",
			    (const void *)x);
		return true;
	}
	devres_warn(NULL, func,
		    "completion %p belongs to process %d: "
		    "nothing done",
		    (const void *)x, (int)pid);
	return true;
}

static inline void init_completion(struct completion *x)
{
	pthread_condattr_t a;

	/* Only the pointer: its memory may be anything, the parent's too. */
	if (devres_ptr_bad(x)) {
		devres_warn_bad_arg("init_completion", "completion", x);
		return;
	}
	/* Threads wait on it: a new lock and condition would strand them. */
	if (x->pid == kcompat_lock_pid() &&
	    __atomic_load_n(&x->waiters, __ATOMIC_RELAXED)) {
		devres_warn(NULL, "init_completion",
			    "completion %p has %u waiters: left as it is",
			    (void *)x,
			    __atomic_load_n(&x->waiters, __ATOMIC_RELAXED));
		return;
	}
	x->pid = kcompat_lock_pid();
	x->waiters = 0;
	x->owed = 0;
	x->gen = 0;
	pthread_mutex_init(&x->lock, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cond, &a);
	pthread_condattr_destroy(&a);
	x->done = 0;
}

static inline void reinit_completion(struct completion *x)
{
	unsigned int woken = 0, free_waiters;

	if (kcompat_completion_bad(x, "reinit_completion"))
		return;
	pthread_mutex_lock(&x->lock);
	/*
	 * A waiter counted while done is set was woken by it and has not yet
	 * taken it: as many as done covers, less those owed already, are
	 * owed it; the waiters present now (the era before gen's step) may
	 * take what is owed.
	 */
	free_waiters = x->waiters - x->owed;
	if (x->done && free_waiters) {
		woken = x->done < free_waiters ? x->done : free_waiters;
		x->owed += woken;
		x->gen++;
	}
	x->done = 0;
	pthread_mutex_unlock(&x->lock);
	if (woken)
		devres_warn(NULL, "reinit_completion",
			    "completion %p has %u waiters woken and not yet "
			    "returned: they return completed",
			    (void *)x, woken);
}

static inline void complete(struct completion *x)
{
	if (kcompat_completion_bad(x, "complete"))
		return;
	pthread_mutex_lock(&x->lock);
	if (x->done != UINT_MAX)
		x->done++;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

static inline void complete_all(struct completion *x)
{
	if (kcompat_completion_bad(x, "complete_all"))
		return;
	pthread_mutex_lock(&x->lock);
	x->done = UINT_MAX;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/*
 * Whether a waiter that began in era @gen may return: @x is done, or a
 * reinit since kept a wake-up for the waiters it found.
 */
static inline bool kcompat_completion_ready(const struct completion *x,
					    unsigned int gen)
{
	return x->done || (x->owed && x->gen != gen);
}

/*
 * Takes what kcompat_completion_ready() found, a kept wake-up first (the
 * older): whether there was one.
 */
static inline bool kcompat_completion_take(struct completion *x,
					   unsigned int gen)
{
	if (x->owed && x->gen != gen) {
		x->owed--;
		return true;
	}
	if (!x->done)
		return false;
	if (x->done != UINT_MAX)
		x->done--;
	return true;
}

/*
 * Waits on @x (its lock held) until it is ready for a waiter of era @gen
 * or @end (CLOCK_MONOTONIC, NULL: none) passes. While work items wait for a thread, what completes
 * @x may be one of them: their threads are tried again every
 * KCOMPAT_STRAND_RETRY_MS (<linux/kcompat_wq.h>).
 */
static inline void kcompat_completion_sleep(struct completion *x,
					    const struct timespec *end,
					    unsigned int gen)
{
	while (!kcompat_completion_ready(x, gen)) {
		struct timespec ts;
		bool retry;

		pthread_mutex_unlock(&x->lock);
		retry = kcompat_strand_poke();
		pthread_mutex_lock(&x->lock);
		if (kcompat_completion_ready(x, gen))
			break;
		if (!retry) {
			if (!end)
				pthread_cond_wait(&x->cond, &x->lock);
			else if (pthread_cond_timedwait(&x->cond, &x->lock,
							end) != 0)
				break;
			continue;
		}
		kcompat_ts_in_ms(&ts, CLOCK_MONOTONIC, KCOMPAT_STRAND_RETRY_MS);
		if (end &&
		    (ts.tv_sec > end->tv_sec ||
		     (ts.tv_sec == end->tv_sec && ts.tv_nsec > end->tv_nsec)))
			ts = *end;
		if (pthread_cond_timedwait(&x->cond, &x->lock, &ts) != 0 &&
		    end && ts.tv_sec == end->tv_sec &&
		    ts.tv_nsec == end->tv_nsec)
			break;
	}
}

/* What a completion is doing, asked by a free of the memory it is in. */
static inline enum devres_liveobj_state kcompat_completion_state(void *obj)
{
	struct completion *x = (struct completion *)obj;
	unsigned int n;

	pthread_mutex_lock(&x->lock);
	n = x->waiters;
	pthread_mutex_unlock(&x->lock);
	return n ? DEVRES_LIVEOBJ_RUNNING : DEVRES_LIVEOBJ_IDLE;
}

/*
 * Before the memory goes: its waiters woken, as by complete_all(), and
 * waited for until the last has let go of its lock; none of them reads
 * the completion after.
 */
static inline void kcompat_completion_fixup_free(void *obj,
						 enum devres_liveobj_state st)
{
	struct completion *x = (struct completion *)obj;
	int old = kcompat_cancel_off();

	(void)st;
	pthread_mutex_lock(&x->lock);
	x->done = UINT_MAX;
	pthread_cond_broadcast(&x->cond);
	while (x->waiters)
		pthread_cond_wait(&x->cond, &x->lock);
	pthread_mutex_unlock(&x->lock);
	kcompat_cancel_restore(old);
}

static const struct devres_liveobj_descr kcompat_completion_descr = {
	.name = "completion",
	.hint = "complete_all() and the waiters' return",
	.state = kcompat_completion_state,
	.fixup_free = kcompat_completion_fixup_free,
};

/*
 * The same, counted, for an init_completion() while it waits, and what
 * woke it taken: whether it completed (false: @end passed). A wait
 * that sleeps makes the completion live (<devres/liveobj.h>) while it has
 * waiters: a free of the managed memory it is in then WARNs, wakes them
 * and waits for them, where they would wait in freed memory (the
 * kernel's object debugging reports a free of an active object).
 */
static inline bool kcompat_completion_wait(struct completion *x,
					   const struct timespec *end)
{
	unsigned int gen = x->gen;
	bool done;

	if (x->done)
		return kcompat_completion_take(x, gen);
	/*
	 * Live before it is seen waited on: whoever reads a waiter (a free's
	 * check reads under the lock; a program may peek) finds it live.
	 */
	if (!__atomic_load_n(&x->waiters, __ATOMIC_RELAXED))
		(void)devres_liveobj_activate(x, &kcompat_completion_descr);
	__atomic_add_fetch(&x->waiters, 1, __ATOMIC_RELEASE);
	kcompat_completion_sleep(x, end, gen);
	done = kcompat_completion_take(x, gen);
	if (!__atomic_sub_fetch(&x->waiters, 1, __ATOMIC_RELAXED)) {
		/* Kept for waiters that timed out: nobody left to take it. */
		x->owed = 0;
		devres_liveobj_deactivate(x);
		/* A free's fixup may wait for the last waiter. */
		pthread_cond_broadcast(&x->cond);
	}
	return done;
}

/*
 * Waits at most @timeout jiffies (milliseconds): the jiffies left (at
 * least 1) when it completed, 0 when it timed out.
 */
static inline unsigned long wait_for_completion_timeout(struct completion *x,
							unsigned long timeout)
{
	/* MAX_SCHEDULE_TIMEOUT and the like: no limit, as the kernel's. */
	ktime_t end =
		kcompat_ktime_add_sat(ktime_get(), timeout, NSEC_PER_MSEC);
	struct timespec ts = { (time_t)(end / NSEC_PER_SEC),
			       (long)(end % NSEC_PER_SEC) };
	unsigned long left = 0;
	int old;

	kcompat_might_sleep(KCOMPAT_SLEEP_wait_for_completion_timeout);
	if (kcompat_completion_bad(x, "wait_for_completion_timeout"))
		return 0;
	old = kcompat_cancel_off();
	pthread_mutex_lock(&x->lock);
	if (kcompat_completion_wait(x, &ts)) {
		left = (unsigned long)ktime_ms_delta(end, ktime_get());
		if (!left || left > timeout)
			left = 1;
	}
	pthread_mutex_unlock(&x->lock);
	kcompat_cancel_restore(old);
	return left;
}

static inline void wait_for_completion(struct completion *x)
{
	int old;

	kcompat_might_sleep(KCOMPAT_SLEEP_wait_for_completion);
	if (kcompat_completion_bad(x, "wait_for_completion"))
		return;
	old = kcompat_cancel_off();
	pthread_mutex_lock(&x->lock);
	(void)kcompat_completion_wait(x, NULL);
	pthread_mutex_unlock(&x->lock);
	kcompat_cancel_restore(old);
}

static inline bool completion_done(struct completion *x)
{
	bool done;

	if (kcompat_completion_bad(x, "completion_done"))
		return false;
	pthread_mutex_lock(&x->lock);
	done = x->done != 0;
	pthread_mutex_unlock(&x->lock);
	return done;
}

static inline bool try_wait_for_completion(struct completion *x)
{
	bool done;

	if (kcompat_completion_bad(x, "try_wait_for_completion"))
		return false;
	pthread_mutex_lock(&x->lock);
	done = x->done != 0;
	if (done && x->done != UINT_MAX)
		x->done--;
	pthread_mutex_unlock(&x->lock);
	return done;
}

#define wait_for_completion_interruptible(x) (wait_for_completion(x), 0)
#define wait_for_completion_interruptible_timeout(x, t)                        \
	((long)wait_for_completion_timeout((x), (t)))
#define wait_for_completion_killable_timeout                                   \
	wait_for_completion_interruptible_timeout
#define DECLARE_COMPLETION_ONSTACK(x)                                          \
	struct completion x;                                                   \
	init_completion(&x)

#endif /* KCOMPAT_LINUX_COMPLETION_H */
