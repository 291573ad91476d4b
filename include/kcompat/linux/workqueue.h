/* SPDX-License-Identifier: MIT */
/*
 * Work items, each run by a thread of its own: schedule_work() starts
 * the item's thread when none runs (it runs the work, and again while it
 * was queued meanwhile, then ends), cancel_work_sync() takes a queued run
 * back and waits for a running one. Delayed work waits in that thread
 * until it is due. A workqueue counts the items queued on it while a
 * thread serves them, so that destroy_workqueue() and drain_workqueue()
 * wait for them; system_wq is no queue of the table, but is flushed as
 * one. An item that gets no
 * thread (none to be had) stays pending and runs later, never in the
 * caller of queue_work() (<linux/kcompat_wq.h> says when). A queue is a handle
 * (<linux/kcompat_wq.h>): a call on a destroyed one WARNs and does
 * nothing. In a child of fork(), the parent's items and queues are
 * refused at once, with a WARN. devm_work_autocancel()
 * cancels at unbind. Each item's thread counts in the ledger's threads
 * while it serves the item: a work still running after its driver let go
 * of everything is a leak the sweep reports.
 *
 * Work must be initialized (INIT_WORK(), INIT_DELAYED_WORK(), or
 * DECLARE_WORK() for static storage) before it is scheduled, and not
 * freed while queued or running: cancel it first, as in the kernel. An
 * item is a live object of the library while a thread serves it
 * (<devres/liveobj.h>): a free of the managed memory (kmalloc(), devm_*)
 * it lives in WARNs and cancels it, and waits, before the memory goes.
 */
#ifndef KCOMPAT_LINUX_WORKQUEUE_H
#define KCOMPAT_LINUX_WORKQUEUE_H

#include <linux/kcompat_cancel.h>
#include <linux/kcompat_site.h>
#include <linux/kcompat_wq.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <devres/devres.h>
#include <devres/liveobj.h>
#include <devres/posix.h>
#include <linux/compiler.h>
#include <linux/jiffies.h>
#include <linux/kcompat_held.h>
#include <linux/kernel.h>
#include <linux/slab.h>

struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);

struct work_struct {
	work_func_t func;

	/* private: */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a change of state, or of the due time */
	bool pending;	     /* queued, not yet started */
	bool running;	     /* func is being called */
	bool thread;	     /* a thread serves the item */
	bool cancel;	     /* a cancel is waiting for the thread */
	/*
	 * Runs counted, so that a flush waits for the run queued when it
	 * was called, not for those queued after: queueings so far (the
	 * n-th is run n), the one the running call serves, and those over
	 * (run, or taken back). 64 bits (the library builds for 64-bit
	 * only: src/base/handle.c), one a queueing: 2^64 are out of reach,
	 * so a flush's compare never sees them wrap.
	 */
	unsigned long queued, run, done;
	struct timespec due;	    /* CLOCK_REALTIME; zero: now */
	bool stranded;		    /* pending, waiting for a thread */
	struct kcompat_strand link; /* on the strand list while stranded */
	pthread_t worker;
	/*
	 * The wait id (devres_wait_id()) of the thread serving the item, set
	 * before it runs, so that a wait for it is recorded from the start;
	 * 0 when none serves it.
	 */
	uint64_t wid;
	struct workqueue_struct *wq; /* where the serving thread counts */
	/*
	 * The queue and flush color (<linux/kcompat_wq.h>) of the pending
	 * queueing (a color of 0: a delay not over, not yet on its queue)
	 * and of the running one, each counted on its queue until over.
	 */
	struct workqueue_struct *pwq, *rwq;
	unsigned long ptag, rtag;
	struct work_struct *outer; /* what its thread served when it began */
	pid_t pid; /* whose: INIT_WORK()'s, or the first queue's; no lock */
};

struct delayed_work {
	struct work_struct work;
};

/*
 * The work of a delayed work, by a cast rather than a member access, so
 * that a bad pointer reaches the checks below as it is; the unevaluated
 * sizeof keeps the kernel's type check.
 */
_Static_assert(offsetof(struct delayed_work, work) == 0, "the work is the "
							 "delayed work's first "
							 "member");
#define kcompat_dwork(dw)                                                      \
	((void)sizeof((dw)->work), /* only a delayed work: not evaluated */    \
	 (struct work_struct *)(void *)(dw))

#define KCOMPAT_WORK_INIT(f)                                                   \
	{                                                                      \
		.func = (f), .lock = PTHREAD_MUTEX_INITIALIZER,                \
		.cond = PTHREAD_COND_INITIALIZER                               \
	}
#define DECLARE_WORK(n, f) struct work_struct n = KCOMPAT_WORK_INIT(f)
#define DECLARE_DELAYED_WORK(n, f)                                             \
	struct delayed_work n = { .work = KCOMPAT_WORK_INIT(f) }

/*
 * kcompat_finishing (<linux/kcompat_wq.h>) counts the threads that let go
 * of their item and have not yet left the ledger: a cancel or flush waits
 * for them, so that what it returns to sees the ledger as the work left
 * it. The items a thread serves are the library's live objects
 * (<devres/liveobj.h>): INIT_WORK() asks, and every free of managed
 * memory checks.
 *
 * Per thread: how deep it is in work items' threads (a waiting item a
 * flush runs in its caller nests), the item it serves now
 * (and through each item's outer, those it nests in), and the item whose
 * own function freed the memory it lives in, which the thread then never
 * touches again: what that item's thread still needs of it is copied
 * here first. One per program, whichever file includes this first.
 */
struct kcompat_worker {
	int depth; /* > 0: in a work item's thread */
	struct work_struct *cur;
	const struct work_struct *gone;
	struct work_struct *gone_outer;
	struct workqueue_struct *gone_wq;
	struct workqueue_struct *gone_rwq;
	unsigned long gone_rtag;
};
__attribute__((weak)) __thread struct kcompat_worker kcompat_worker;

static inline bool kcompat_work_wait(struct work_struct *w, bool own,
				     const char *func);

/*
 * What a work item is doing, asked by a free of the memory it lives in:
 * queued (delayed or not, or re-queued by its own function), running in
 * another thread, or running in this one and not queued (its function
 * frees it, as the kernel allows).
 */
static inline enum devres_liveobj_state kcompat_work_state(void *obj)
{
	struct work_struct *w = (struct work_struct *)obj;
	enum devres_liveobj_state st = DEVRES_LIVEOBJ_IDLE;

	pthread_mutex_lock(&w->lock);
	if (w->pending)
		st = DEVRES_LIVEOBJ_PENDING;
	else if (w->running && pthread_equal(w->worker, pthread_self()))
		st = DEVRES_LIVEOBJ_SELF;
	else if (w->thread || w->running)
		st = DEVRES_LIVEOBJ_RUNNING;
	pthread_mutex_unlock(&w->lock);
	return st;
}

/*
 * Before the memory goes: cancelled and waited for (but not by its own
 * thread, which would wait for itself); when the freeing thread runs the
 * item's function, that thread is told to touch the item no more.
 */
static inline void kcompat_work_fixup_free(void *obj,
					   enum devres_liveobj_state st)
{
	struct work_struct *w = (struct work_struct *)obj;
	bool self;

	pthread_mutex_lock(&w->lock);
	self = w->running && pthread_equal(w->worker, pthread_self());
	pthread_mutex_unlock(&w->lock);
	/* Its own thread may free it: that thread is told below. */
	if (st != DEVRES_LIVEOBJ_SELF)
		(void)kcompat_work_wait(w, true, "cancel_work_sync");
	if (self) {
		/* Its own thread: nobody else writes these while it serves. */
		kcompat_worker.gone = w;
		kcompat_worker.gone_outer = w->outer;
		kcompat_worker.gone_wq = w->wq;
		kcompat_worker.gone_rwq = w->rwq;
		kcompat_worker.gone_rtag = w->rtag;
	}
}

static const struct devres_liveobj_descr kcompat_work_descr = {
	.name = "work_struct",
	.hint = "cancel_work_sync() or devm_work_autocancel()",
	.state = kcompat_work_state,
	.fixup_free = kcompat_work_fixup_free,
};

/*
 * A work or queue argument no object can be at (NULL, the first page, an
 * ERR_PTR()): the kernel would oops; here one WARN, and the call does
 * nothing. @opt: NULL means "none" (a queue: the system's).
 */
static inline bool kcompat_work_arg_bad(const void *p, bool opt,
					const char *func)
{
	if ((opt && !p) ||
	    (unsigned long)p - 4096 < (unsigned long)0 - 4096 - 4095)
		return false;
	devres_warn(NULL, func, "bad work or workqueue pointer %p", p);
	return true;
}

/*
 * Whether @w is another process's (initialized or first queued there): in
 * a child of fork(), an item of the parent, whose lock a thread of the
 * parent may have held at the fork and whose thread is not in the child. One WARN; the call does
 * nothing and does not wait (docs/fork.md). The record is read before the
 * item's lock, and only by the process that wrote it, or by its child.
 */
static inline bool kcompat_work_foreign(const struct work_struct *w,
					const char *func)
{
	pid_t pid = __atomic_load_n(&w->pid, __ATOMIC_RELAXED);

	if (!pid || pid == kcompat_lock_pid())
		return false;
	devres_warn(NULL, func, "work %p belongs to process %d: nothing done",
		    (const void *)w, (int)pid);
	return true;
}

/* A work call's checks of its item: a bad pointer, or the parent's. */
static inline bool kcompat_work_bad(const struct work_struct *w,
				    const char *func)
{
	return kcompat_work_arg_bad(w, false, func) ||
	       kcompat_work_foreign(w, func);
}

/*
 * As the kernel's; of an item a thread serves (queued or running), it
 * would wipe the lock that thread holds: a WARN, as the kernel's object
 * debugging gives, and the item left as it is.
 */
static inline void INIT_WORK(struct work_struct *w, work_func_t f)
{
	if (kcompat_work_arg_bad(w, false, "INIT_WORK"))
		return;
	/* A work with no function would crash its thread: refused now. */
	if (devres_ptr_bad((const void *)f)) {
		devres_warn_bad_arg("INIT_WORK", "work function",
				    (const void *)f);
		return;
	}
	/* A parent's item in the child's copy: new, unless it was live. */
	if (devres_liveobj_active(w)) {
		devres_warn(NULL, "INIT_WORK",
			    "work %p is queued or running: cancel it first; "
			    "left as it is",
			    (void *)w);
		return;
	}
	memset(w, 0, sizeof(*w));
	w->func = f;
	__atomic_store_n(&w->pid, kcompat_lock_pid(), __ATOMIC_RELAXED);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
}

#define INIT_DELAYED_WORK(dw, f) INIT_WORK(kcompat_dwork(dw), (f))
#define INIT_WORK_ONSTACK INIT_WORK
#define INIT_DELAYED_WORK_ONSTACK INIT_DELAYED_WORK
#define INIT_DEFERRABLE_WORK INIT_DELAYED_WORK
#define to_delayed_work(w) container_of((w), struct delayed_work, work)

static inline struct work_struct *
kcompat_strand_take(struct workqueue_struct *wq, bool any, unsigned long upto);

/*
 * The pending queueing of @w (its lock held), if any, is taken back
 * unrun: over on its queue.
 */
static inline void kcompat_work_drop(struct work_struct *w)
{
	if (w->pending)
		kcompat_wq_over(w->pwq, w->ptag);
	w->pending = false;
	w->pwq = NULL;
	w->ptag = 0;
}

/*
 * The thread serving @w lets go of it: the item's lock is held unless the
 * item is @gone (its function freed it), whose memory is not touched; @wq
 * is where it counted. Whoever waits for the item or the queue may go on.
 * With @adopt, a work thread done with its last item takes over one that
 * waits for a thread, if any: returned with its lock held, already
 * marked as served, so that a flush of it waits for this thread; the
 * thread then still counts in the ledger. NULL otherwise.
 */
static inline struct work_struct *
kcompat_work_let_go(struct work_struct *w, struct workqueue_struct *wq,
		    bool gone, bool adopt)
{
	struct work_struct *next = NULL;
	bool outer;

	pthread_mutex_lock(&kcompat_fin_lock);
	kcompat_finishing++;
	pthread_mutex_unlock(&kcompat_fin_lock);
	if (!gone) {
		kcompat_work_drop(w);
		/* A function that ended its thread: its run is over too. */
		if (w->running)
			kcompat_wq_over(w->rwq, w->rtag);
		w->rwq = NULL;
		w->rtag = 0;
		w->running = false;
		w->done = w->queued;
		w->thread = false;
		w->wq = NULL;
		w->outer = NULL;
		/* No later thread with this one's id is taken for it. */
		memset(&w->worker, 0, sizeof(w->worker));
		w->wid = 0;
		devres_liveobj_deactivate(w);
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	outer = --kcompat_worker.depth == 0;
	/* The queue outlives its busy items: destroy_workqueue() waits. */
	if (wq)
		kcompat_wq_put(wq);
	/* Still finishing: a flush of @w never sees the adopter counted. */
	if (outer && adopt)
		next = kcompat_strand_take(NULL, true, 0);
	if (next)
		next->thread = true;
	else if (outer)
		devres_thread_spawn_done();
	pthread_mutex_lock(&kcompat_fin_lock);
	if (--kcompat_finishing == 0)
		pthread_cond_broadcast(&kcompat_fin_cond);
	pthread_mutex_unlock(&kcompat_fin_lock);
	return next;
}

/*
 * A work function that ends the thread it runs in (pthread_exit(), or a
 * cancellation acting in it) skips the rest of its item's thread: this
 * destructor of kcompat_work_key, whose value is set while a function
 * runs, lets go of the item as a return would, and of each item the
 * thread was serving it in (a work run in its caller nests), so that
 * nothing waits for the gone thread for ever. A run queued meanwhile is
 * dropped with it. One WARN. A cleanup handler would need setjmp() in
 * every item's thread; the frames are gone by now, so all that is read
 * here is the items and the thread's own record.
 */
__attribute__((weak)) pthread_key_t kcompat_work_key;
__attribute__((weak)) int kcompat_work_key_err = -1;
__attribute__((weak)) pthread_once_t kcompat_work_key_once = PTHREAD_ONCE_INIT;

static inline void kcompat_work_ended(void *p)
{
	struct work_struct *w = kcompat_worker.cur;

	devres_warn(NULL, "process_one_work",
		    "work %p: its function ended the thread it ran in "
		    "(pthread_exit() or cancellation): the item is let go",
		    p);
	while (w) {
		struct workqueue_struct *wq;
		struct work_struct *outer;
		bool gone = kcompat_worker.gone == w;

		if (gone) {
			kcompat_worker.gone = NULL;
			outer = kcompat_worker.gone_outer;
			wq = kcompat_worker.gone_wq;
			kcompat_wq_over(kcompat_worker.gone_rwq,
					kcompat_worker.gone_rtag);
		} else {
			pthread_mutex_lock(&w->lock);
			outer = w->outer;
			wq = w->wq;
		}
		kcompat_worker.cur = outer;
		(void)kcompat_work_let_go(w, wq, gone, false);
		w = outer;
	}
}

static inline void kcompat_work_key_init(void)
{
	kcompat_work_key_err =
		pthread_key_create(&kcompat_work_key, kcompat_work_ended);
}

/*
 * Calls the function of @w, which may end the thread (above), and may
 * free @w; @outer is the item this thread served before, @cancel the
 * cancellation state its function runs with. Whether @w is gone.
 */
static inline bool kcompat_work_call(struct work_struct *w,
				     struct work_struct *outer, int cancel)
{
	if (!kcompat_work_key_err)
		(void)pthread_setspecific(kcompat_work_key, w);
	kcompat_cancel_restore(cancel);
	w->func(w);
	(void)kcompat_cancel_off();
	if (!kcompat_work_key_err)
		(void)pthread_setspecific(kcompat_work_key, outer);
	if (kcompat_worker.gone != w)
		return false;
	/* Freed by its function: only the pointer is compared. */
	kcompat_worker.gone = NULL;
	return true;
}

static inline bool kcompat_work_spawn(struct work_struct *w);

/*
 * The function of @w (@fn, on queue @wq) called fork() and its child
 * returned: in the child, this thread of the items is the child's one
 * thread, and everything it serves is the parent's. Going on would run
 * the parent's items again in the child (a run queued meanwhile, a
 * re-armed poll) and take their locks, which another thread of the
 * parent may have held at the fork, with every signal blocked. So the
 * thread ends, touching nothing of the parent's, with one WARN: the
 * child's last thread, it ends the child with status 0.
 */
__attribute__((noreturn)) static inline void
kcompat_work_forked(struct work_struct *w, work_func_t fn,
		    struct workqueue_struct *wq)
{
	devres_warn(NULL, "process_one_work",
		    "work %p (function %p, workqueue %p) forked and returned "
		    "in the child: the thread is the parent's, it ends in the "
		    "child",
		    (void *)w, (void *)(uintptr_t)fn, (void *)wq);
	pthread_exit(NULL);
}

/*
 * A flush served @w (its lock held) in its caller as far as it waits;
 * the run queued since goes on in a thread of its own, or waits for one
 * as a queue_work() that got none does: still queued, still on its
 * queue, still live. The item's lock is let go. Another flush waiting
 * for that run was woken by the end of the last one, under this same
 * hold of the lock: it finds the item as left here.
 */
static inline void kcompat_work_hand_on(struct work_struct *w,
					struct work_struct *outer)
{
	kcompat_worker.cur = outer;
	kcompat_worker.depth--;
	w->thread = false;
	w->outer = NULL;
	memset(&w->worker, 0, sizeof(w->worker));
	w->wid = 0;
	(void)kcompat_work_spawn(w);
	pthread_mutex_unlock(&w->lock);
}

/*
 * The sleep of @w (its lock held) until its due time: true once due, by
 * the clock, or at once because a drain of its queue waits for it (the
 * kernel's drain waits for no timer; *@ret_drainer then names the drain
 * for its one WARN, kcompat_wq_drain_due()); false when woken before
 * (cancelled, queued again, a drain): the caller looks again. On a
 * queue, it sleeps on the queue's list (kcompat_wq_sleep_begin()), so
 * that a drain wakes it: nothing else does before its time. One due
 * within KCOMPAT_WQ_DRAIN_GRACE_MS is on no list: a drain waits for it.
 */
static inline bool kcompat_work_delay_over(struct work_struct *w,
					   const char **ret_drainer)
{
	struct kcompat_wq_sleeper s = { .lock = &w->lock, .cond = &w->cond };
	struct workqueue_struct *wq = w->pwq;
	struct timespec grace;
	bool near;
	int rc;

	/* Due within the grace: a drain waits for its time. */
	kcompat_ts_in_ms(&grace, CLOCK_REALTIME, KCOMPAT_WQ_DRAIN_GRACE_MS);
	near = w->due.tv_sec < grace.tv_sec ||
	       (w->due.tv_sec == grace.tv_sec &&
		w->due.tv_nsec <= grace.tv_nsec);
	if (wq && !near && kcompat_wq_sleep_begin(wq, &s, ret_drainer))
		return true;
	rc = pthread_cond_timedwait(&w->cond, &w->lock, &w->due);
	kcompat_wq_sleep_end(&s);
	/* Else woken: by a drain too, which the next look finds. */
	return rc == ETIMEDOUT;
}

/*
 * Serves @w, whose lock the caller holds and which is marked as served
 * (w->thread): waits until due, runs, again while re-queued. The function
 * may free the memory of @w, as the kernel allows: the free says so
 * (kcompat_work_fixup_free()), and the thread then touches nothing of @w;
 * otherwise it touches nothing of @w once it let go of it. Cancellation
 * acts only inside the function, where an end is caught
 * (kcompat_work_ended()); in the wait for the due time it would end the
 * thread holding the item's lock. @adopt: kcompat_work_let_go()'s, and
 * what it returns. @stop: the run a flush that serves @w in its caller
 * waits for (0: none); once it is over, a run queued after it is handed
 * on to a thread of its own (kcompat_work_hand_on()).
 */
static inline struct work_struct *
kcompat_work_serve(struct work_struct *w, bool adopt, unsigned long stop)
{
	struct work_struct *outer = kcompat_worker.cur;
	struct workqueue_struct *wq, *rq;
	struct work_struct *next;
	pid_t pid = kcompat_lock_pid();
	int cancel = kcompat_cancel_off();
	const char *drainer = NULL;
	work_func_t fn;
	bool gone = false;
	unsigned long rt;

	kcompat_worker.depth++;
	w->worker = pthread_self();
	w->wid = devres_wait_self();
	w->outer = outer;
	kcompat_worker.cur = w;
	/* Set before the thread began, for its life: kept for its end. */
	wq = w->wq;
	while (w->pending && !w->cancel) {
		if (w->due.tv_sec && !kcompat_work_delay_over(w, &drainer))
			continue; /* woken: cancelled, or due again */
		w->due.tv_sec = 0;
		w->pending = false;
		w->running = true;
		w->run = w->queued;
		/* A delayed queueing is on its queue from when it is due. */
		rq = w->pwq;
		rt = w->ptag ? w->ptag : kcompat_wq_tag_live(rq);
		w->rwq = rq;
		w->rtag = rt;
		w->pwq = NULL;
		w->ptag = 0;
		fn = w->func;
		pthread_mutex_unlock(&w->lock);
		if (drainer) {
			devres_warn(NULL, drainer,
				    "workqueue %p: delayed work %p (function "
				    "%p) is not due yet: run now (cancel "
				    "delayed work before the drain)",
				    (void *)rq, (void *)w,
				    (void *)(uintptr_t)fn);
			drainer = NULL;
		}
		/* A wait for its queue waits for this thread while it runs. */
		devres_wait_join(kcompat_wq_set(rq));
		gone = kcompat_work_call(w, outer, cancel);
		devres_wait_leave();
		/* A thread of the items' own (not a flush's caller's). */
		if (__builtin_expect(pid != kcompat_lock_pid(), 0) && adopt &&
		    !outer)
			kcompat_work_forked(w, fn, rq);
		if (gone) {
			kcompat_wq_over(rq, rt);
			break;
		}
		pthread_mutex_lock(&w->lock);
		w->running = false;
		w->rwq = NULL;
		w->rtag = 0;
		/* Over: this run, and every queueing when none is left. */
		w->done = w->pending ? w->run : w->queued;
		pthread_cond_broadcast(&w->cond);
		kcompat_wq_over(rq, rt);
		if (stop && w->done >= stop && w->pending && !w->cancel) {
			kcompat_work_hand_on(w, outer);
			kcompat_cancel_restore(cancel);
			return NULL;
		}
	}
	kcompat_worker.cur = outer;
	next = kcompat_work_let_go(w, wq, gone, adopt);
	kcompat_cancel_restore(cancel);
	return next;
}

/* The thread of an item, and of each waiting one it takes over after. */
static inline void *kcompat_work_thread(void *arg)
{
	struct work_struct *w = (struct work_struct *)arg;

	pthread_mutex_lock(&w->lock);
	/* Its waiters may have recorded it already: the id it was given. */
	devres_wait_adopt(w->wid);
	while (w)
		w = kcompat_work_serve(w, true, 0);
	return NULL;
}

/*
 * Serves @w (its lock held, marked as served) in this thread, which is
 * not one of its own: neither the ledger's count of a thread this is nor
 * a waiting item is taken on here. @stop: kcompat_work_serve()'s.
 */
static inline void kcompat_work_run_here(struct work_struct *w,
					 unsigned long stop)
{
	kcompat_worker.depth++;
	(void)kcompat_work_serve(w, false, stop);
	kcompat_worker.depth--;
}

/*
 * @w (its lock held) waits for a thread: on the strand list, and counted
 * as such on its queue (<linux/kcompat_wq.h>).
 */
static inline void kcompat_strand_kick(void);
static inline void kcompat_strand_exit_register(void);

/* One exit handler for the program, whichever file strands first. */
__attribute__((weak))
pthread_once_t kcompat_strand_exit_once = PTHREAD_ONCE_INIT;

static inline void kcompat_strand_add(struct work_struct *w)
{
	__atomic_store_n(&kcompat_strand_kick_hook, kcompat_strand_kick,
			 __ATOMIC_RELEASE);
	pthread_once(&kcompat_strand_exit_once, kcompat_strand_exit_register);
	pthread_mutex_lock(&kcompat_strand_lock);
	kcompat_strand_link(&w->link);
	pthread_mutex_unlock(&kcompat_strand_lock);
	w->stranded = true;
	if (w->wq)
		kcompat_wq_strand(w->wq, 1);
}

/* @w (its lock held) waits for a thread no more. */
static inline void kcompat_strand_del(struct work_struct *w)
{
	pthread_mutex_lock(&kcompat_strand_lock);
	kcompat_strand_unlink(&w->link);
	pthread_mutex_unlock(&kcompat_strand_lock);
	w->stranded = false;
	if (w->wq)
		kcompat_wq_strand(w->wq, -1);
}

/* Whether @w (its lock held) is queued with a delay not yet over. */
static inline bool kcompat_work_later(const struct work_struct *w)
{
	struct timespec now;

	if (!w->pending || !w->due.tv_sec)
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec < w->due.tv_sec ||
	       (now.tv_sec == w->due.tv_sec && now.tv_nsec < w->due.tv_nsec);
}

/*
 * Whether @c (its lock held), waiting for a thread, is one a wait for
 * @wq runs: counted on it, or queued on it; with @upto (a flush), only
 * one whose queueing on it took a flush color up to @upto, or is delayed
 * and due already, so on the queue by now (its color is taken as it
 * runs).
 */
static inline bool kcompat_strand_match(const struct work_struct *c,
					const struct workqueue_struct *wq,
					unsigned long upto)
{
	if (!upto)
		return c->wq == wq || c->pwq == wq;
	if (c->pwq != wq)
		return false;
	return c->ptag ? c->ptag <= upto : !kcompat_work_later(c);
}

/*
 * An item waiting for a thread, of @wq (kcompat_strand_match(), @upto)
 * or (@any) of any queue, taken off the list with its lock held; NULL
 * when there is none, or when the lock of each is held by another
 * thread, which may be about to take it: only tried, since the item's
 * lock comes before the list's.
 */
static inline struct work_struct *
kcompat_strand_take(struct workqueue_struct *wq, bool any, unsigned long upto)
{
	struct work_struct *w = NULL;

	if (!__atomic_load_n(&kcompat_stranded, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&kcompat_strand_lock);
	for (struct kcompat_strand *l = kcompat_strand_first; l; l = l->next) {
		struct work_struct *c =
			(struct work_struct
				 *)(void *)((char *)l -
					    offsetof(struct work_struct, link));

		if (pthread_mutex_trylock(&c->lock))
			continue;
		if (any || kcompat_strand_match(c, wq, upto)) {
			kcompat_strand_unlink(l);
			w = c;
			break;
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&kcompat_strand_lock);
	if (!w)
		return NULL;
	w->stranded = false;
	if (w->wq)
		kcompat_wq_strand(w->wq, -1);
	return w;
}

/*
 * A thread for @w, its lock held: whether one started. When none could
 * be had the item waits for one: a fault injected there is got over by
 * design (devres_fault_absorbed()), and a sweep judges the operation by
 * what it leaves, not by its success.
 */
static inline bool kcompat_work_spawn(struct work_struct *w)
{
	unsigned int armed = devres_fail_nth_get();

	w->wid = devres_wait_id();
	w->thread = devres_thread_spawn(kcompat_work_thread, w) == 0;
	if (w->thread)
		return true;
	w->wid = 0;
	kcompat_strand_add(w);
	if (armed && !devres_fail_nth_get())
		devres_fault_absorbed();
	return false;
}

/*
 * A thread could be had: one for each item still waiting, until one
 * cannot. An item whose thread fails again goes back on the list.
 */
static inline void kcompat_strand_kick(void)
{
	struct work_struct *w;

	while ((w = kcompat_strand_take(NULL, true, 0)) != NULL) {
		/* Read under the lock: the item's thread writes it after. */
		bool started = kcompat_work_spawn(w);

		pthread_mutex_unlock(&w->lock);
		if (!started)
			break;
	}
}

/*
 * @w (its lock held), off the strand list, is taken back before any
 * thread served it: it leaves its queue, and its lock is let go.
 */
static inline void kcompat_work_unqueue(struct work_struct *w)
{
	struct workqueue_struct *wq = w->wq;

	kcompat_work_drop(w);
	w->done = w->queued;
	w->wq = NULL;
	devres_liveobj_deactivate(w);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (wq)
		kcompat_wq_put(wq);
}

/*
 * At exit, the items still waiting for a thread: every spawn for them
 * failed, and nothing flushed, drained, destroyed or cancelled them (a
 * work item of the system's queue, which nobody destroys). Each is taken
 * back, as cancel_work_sync() would: its queue's reference put, its live
 * object record dropped, with one WARN naming it and its function, so
 * that a work queued and never run is seen, not lost without a word. It
 * is not run here: at exit, another thread may hold what it takes, and a
 * self-rearming item would keep the exit from ending.
 */
static inline void kcompat_strand_at_exit(void)
{
	struct work_struct *w;

	while ((w = kcompat_strand_take(NULL, true, 0)) != NULL) {
		work_func_t fn = w->func;

		kcompat_work_unqueue(w);
		devres_warn(NULL, "exit",
			    "work %p (function %p) was queued, but no thread "
			    "could be had for it and nothing flushed it: "
			    "taken back unrun",
			    (void *)w, (void *)(uintptr_t)fn);
	}
}

static inline void kcompat_strand_exit_register(void)
{
	(void)atexit(kcompat_strand_at_exit);
}

/* Waits until no thread is between letting go of its item and its end. */
static inline void kcompat_work_wait_finishing(void)
{
	pthread_mutex_lock(&kcompat_fin_lock);
	while (kcompat_finishing)
		pthread_cond_wait(&kcompat_fin_cond, &kcompat_fin_lock);
	pthread_mutex_unlock(&kcompat_fin_lock);
}

/*
 * Whether this thread serves an item counted on @wq, or runs one queued
 * on it (or runs one in its function, nested): a wait for the queue
 * would wait for itself, and a queueing on it is chained (the kernel's
 * is_chained_work()). Only this thread writes what it reads, while it
 * serves the items.
 */
static inline bool kcompat_work_serves(const struct workqueue_struct *wq)
{
	const struct work_struct *w = kcompat_worker.cur;

	while (w) {
		bool gone = w == kcompat_worker.gone;

		if ((gone ? kcompat_worker.gone_wq : w->wq) == wq ||
		    (gone ? kcompat_worker.gone_rwq : w->rwq) == wq)
			return true;
		w = gone ? kcompat_worker.gone_outer : w->outer;
	}
	return false;
}

/*
 * The kernel's WARN of a queueing from outside a queue that drains
 * (drain_workqueue(), destroy_workqueue()): @w is not queued.
 */
static inline void kcompat_wq_warn_draining(const struct workqueue_struct *wq,
					    const struct work_struct *w,
					    work_func_t fn, const char *func)
{
	devres_warn(NULL, func,
		    "workqueue %p is draining: work %p (function %p) is not "
		    "one of its items: not queued",
		    (const void *)wq, (const void *)w, (void *)(uintptr_t)fn);
}

/*
 * A drain's queue whose items have queued on it KCOMPAT_WQ_CHAIN_MAX
 * times since the drain began: @w is not queued, nor any after it in
 * this drain (without a word more).
 */
static inline void kcompat_wq_warn_chain(const struct workqueue_struct *wq,
					 const struct work_struct *w,
					 const char *func)
{
	devres_warn(NULL, func,
		    "workqueue %p is draining and its items have queued on "
		    "it %u times since: work %p (function %p) is not queued, "
		    "nor any more on it until the drain ends",
		    (const void *)wq, KCOMPAT_WQ_CHAIN_MAX, (const void *)w,
		    (void *)(uintptr_t)w->func);
}

/*
 * Queues @w on @wq (NULL: the system's) to run @delay jiffies from now;
 * @func names the call in a WARN.
 */
static inline bool kcompat_work_queue_held(struct work_struct *w,
					   unsigned long delay,
					   struct workqueue_struct *wq,
					   const char *func);

static inline bool kcompat_work_queue(struct work_struct *w,
				      unsigned long delay,
				      struct workqueue_struct *wq,
				      const char *func)
{
	if (kcompat_work_bad(w, func) || kcompat_work_arg_bad(wq, true, func))
		return false;
	/*
	 * Never initialized (zeroed memory; INIT_WORK() and DECLARE_WORK()
	 * give a function): its thread would call NULL. The kernel's object
	 * debugging reports the activation of an unknown object.
	 */
	if (__builtin_expect(!w->func, 0)) {
		devres_warn(NULL, func,
			    "work %p has no function: used before INIT_WORK(); "
			    "not queued",
			    (void *)w);
		return false;
	}
	/* A static item's first queue: the process's from now on. */
	if (!__atomic_load_n(&w->pid, __ATOMIC_RELAXED))
		__atomic_store_n(&w->pid, kcompat_lock_pid(), __ATOMIC_RELAXED);
	pthread_mutex_lock(&w->lock);
	return kcompat_work_queue_held(w, delay, wq, func);
}

/*
 * kcompat_work_queue() past its checks of @w, whose lock the caller
 * holds; it is let go.
 */
static inline bool kcompat_work_queue_held(struct work_struct *w,
					   unsigned long delay,
					   struct workqueue_struct *wq,
					   const char *func)
{
	bool started;

	/*
	 * A queue that is not a live one of this process: found by its
	 * handle, never read (its slot may serve another queue by now).
	 * The item's lock, then the table's: never the other way.
	 */
	if (wq) {
		struct kcompat_wq *q = kcompat_wq_get(wq, func);

		if (!q) {
			pthread_mutex_unlock(&w->lock);
			return false;
		}
		/* As the kernel's: only chained queueing while it drains. */
		if (!w->pending && q->draining && !kcompat_work_serves(wq)) {
			pthread_mutex_unlock(&kcompat_wq_lock);
			pthread_mutex_unlock(&w->lock);
			kcompat_wq_warn_draining(wq, w, w->func, func);
			return false;
		}
		/*
		 * With a delay, the kernel's timer would queue it on the
		 * draining queue from outside its items: refused then, with
		 * its WARN. Here at once, where the drain would make it due
		 * and run it again, and again.
		 */
		if (!w->pending && q->draining && delay) {
			pthread_mutex_unlock(&kcompat_wq_lock);
			pthread_mutex_unlock(&w->lock);
			devres_warn(NULL, func,
				    "workqueue %p is draining: work %p "
				    "(function %p) queued on it with a delay "
				    "would be due after the drain began: not "
				    "queued",
				    (const void *)wq, (const void *)w,
				    (void *)(uintptr_t)w->func);
			return false;
		}
		/* And not for ever: the drain would never end. */
		if (!w->pending && q->draining &&
		    q->chained++ >= KCOMPAT_WQ_CHAIN_MAX) {
			bool first = q->chained == KCOMPAT_WQ_CHAIN_MAX + 1;

			q->chained = KCOMPAT_WQ_CHAIN_MAX + 1;
			pthread_mutex_unlock(&kcompat_wq_lock);
			pthread_mutex_unlock(&w->lock);
			if (first)
				kcompat_wq_warn_chain(wq, w, func);
			return false;
		}
		/* Served already: it counts where its thread began. */
		if (!w->pending && !w->thread)
			q->busy++;
		/* On the queue now, or (delayed) when it is due. */
		if (!w->pending) {
			w->pwq = wq;
			w->ptag = delay ? 0 : kcompat_wq_tag(q);
		}
		pthread_mutex_unlock(&kcompat_wq_lock);
	} else if (!w->pending) {
		w->pwq = NULL;
		w->ptag = delay ? 0 : kcompat_wq_tag_live(NULL);
	}
	if (w->pending) {
		pthread_mutex_unlock(&w->lock);
		return false;
	}
	w->pending = true;
	w->queued++;
	w->due.tv_sec = 0;
	if (delay)
		kcompat_ts_in_ms(&w->due, CLOCK_REALTIME, delay);
	if (w->thread) {
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		return true;
	}
	w->wq = wq;
	/* The end of a function that ends its thread is caught. */
	pthread_once(&kcompat_work_key_once, kcompat_work_key_init);
	/*
	 * Live while a thread serves it. Not tracked when the record cannot
	 * grow: the item works, and a free of it is then not caught.
	 */
	(void)devres_liveobj_activate(w, &kcompat_work_descr);
	/*
	 * The thread counts in the ledger while it serves the item. None to
	 * be had: the item waits for one, and never runs here, where the
	 * caller may hold a lock its function takes.
	 */
	started = kcompat_work_spawn(w);
	pthread_mutex_unlock(&w->lock);
	/* One could be had: so may one for those still waiting. */
	if (started)
		kcompat_strand_kick();
	return true;
}

static inline bool schedule_work(struct work_struct *w)
{
	return kcompat_work_queue(w, 0, NULL, "schedule_work");
}

static inline bool schedule_delayed_work(struct delayed_work *dw,
					 unsigned long delay)
{
	return kcompat_work_queue(kcompat_dwork(dw), delay, NULL,
				  "schedule_delayed_work");
}

/*
 * The system's queues: no queue of the table (no handle is even), and not
 * NULL, which a queue call is given where the kernel would oops. Inside
 * these headers the system's queue is NULL; each call taking a queue
 * turns one into the other at its entry.
 */
#define system_wq ((struct workqueue_struct *)KCOMPAT_SYSTEM_WQ)

/*
 * A queue argument at a call's entry: NULL is one WARN naming the call
 * (the kernel oopses, or its __queue_delayed_work() WARNs), and the call
 * does nothing; system_wq is the NULL of these headers.
 */
static inline bool kcompat_wq_null(const struct workqueue_struct *wq,
				   const char *func)
{
	if (wq)
		return false;
	devres_warn(NULL, func,
		    "NULL workqueue (the kernel's oops; the system's queue "
		    "is system_wq): nothing done");
	return true;
}

static inline struct workqueue_struct *
kcompat_wq_in(struct workqueue_struct *wq)
{
	return wq == system_wq ? NULL : wq;
}

static inline bool kcompat_queue_on(struct workqueue_struct *wq,
				    struct work_struct *w, unsigned long delay,
				    const char *func)
{
	if (kcompat_wq_null(wq, func))
		return false;
	return kcompat_work_queue(w, delay, kcompat_wq_in(wq), func);
}

#define queue_work(wq, w) kcompat_queue_on((wq), (w), 0, "queue_work")
#define queue_delayed_work(wq, dw, d)                                          \
	kcompat_queue_on((wq), kcompat_dwork(dw), (d), "queue_delayed_work")
#define system_long_wq system_wq
#define system_unbound_wq system_wq
#define system_freezable_wq system_wq
#define system_power_efficient_wq system_wq

/*
 * @w (its lock held) waits for a thread: taken back, as above. Whether
 * it was pending (it was).
 */
static inline bool kcompat_work_unstrand(struct work_struct *w)
{
	kcompat_strand_del(w);
	kcompat_work_unqueue(w);
	return true;
}

/*
 * Before a wait for the thread serving @w (@w locked): 1, that wait
 * recorded in the library's record of waits (devres_wait_begin()), which
 * the caller ends with devres_wait_end(); or, when that thread waits,
 * through the waits recorded, for this one, -1 and one WARN naming the
 * loop: the wait would never end, and is not made. A thread that serves
 * @w while its delay runs, or before it started, waits for nobody yet,
 * but is waited for all the same, by its wait id: so that the function
 * it then runs is refused a wait for this caller.
 */
static inline int kcompat_work_loop(struct work_struct *w, const char *func)
{
	/* Its own function: the callers' concern (KS10), or no wait. */
	if (!w->wid || w->wid == devres_wait_self())
		return 0;
	if (!devres_wait_begin(w->wid, func))
		return 1;
	devres_warn(NULL, func,
		    "work %p: its function waits for this thread (%s): not "
		    "waited for",
		    (void *)w, devres_wait_loop());
	return -1;
}

/*
 * Takes a queued run of @w back and waits until no thread serves it; an
 * item waiting for a thread is taken back. Returns, as the kernel's
 * calls do, whether a run was pending. @func names the call in a WARN.
 * @own: a call the item's own function may make (cancel_work(), a cancel
 * before a free, mod_delayed_work()); of the others, that is a WARN.
 */
static inline bool kcompat_work_wait(struct work_struct *w, bool own,
				     const char *func)
{
	bool was;
	int old, rec = 0;

	if (kcompat_work_bad(w, func))
		return false;
	old = kcompat_cancel_off();
	pthread_mutex_lock(&w->lock);
	was = w->pending;
	if (w->stranded) {
		(void)kcompat_work_unstrand(w);
		kcompat_cancel_restore(old);
		return true;
	}
	if (w->thread) {
		w->cancel = true;
		pthread_cond_broadcast(&w->cond);
	}
	/*
	 * A work that waits for itself would never end (the kernel's does
	 * not; lockdep reports it): said, and not waited for.
	 */
	if (!own && w->thread && pthread_equal(w->worker, pthread_self()))
		devres_warn(NULL, func,
			    "work %p: called from its own function, which it "
			    "would wait for: not waited for",
			    (void *)w);
	else if (w->thread)
		rec = kcompat_work_loop(w, func);
	while (rec >= 0 && w->thread &&
	       !pthread_equal(w->worker, pthread_self()))
		pthread_cond_wait(&w->cond, &w->lock);
	if (rec > 0)
		devres_wait_end();
	w->cancel = false;
	kcompat_work_drop(w);
	pthread_mutex_unlock(&w->lock);
	/* Not from a work's thread: it may be among those finishing. */
	if (!kcompat_worker.depth)
		kcompat_work_wait_finishing();
	kcompat_cancel_restore(old);
	return was;
}

static inline bool cancel_work_sync(struct work_struct *w)
{
	kcompat_might_sleep(KCOMPAT_SLEEP_cancel_work_sync);
	return kcompat_work_wait(w, false, "cancel_work_sync");
}

static inline bool cancel_delayed_work_sync(struct delayed_work *dw)
{
	kcompat_might_sleep(KCOMPAT_SLEEP_cancel_delayed_work_sync);
	return kcompat_work_wait(kcompat_dwork(dw), false,
				 "cancel_delayed_work_sync");
}

/*
 * As the kernel's: takes a queued run of @w back (a delayed one before it
 * is due, a run queued while its function runs, one waiting for a
 * thread) and returns whether there was one; does not wait for a run in
 * progress, which goes on in its thread. Its own function may call it.
 */
static inline bool kcompat_work_cancel(struct work_struct *w, const char *func)
{
	bool was;

	if (kcompat_work_bad(w, func))
		return false;
	pthread_mutex_lock(&w->lock);
	if (w->stranded)
		return kcompat_work_unstrand(w);
	was = w->pending;
	/* Its thread, waiting until due or running, finds nothing queued. */
	kcompat_work_drop(w);
	/* A running call's end says when it is over. */
	if (!w->running)
		w->done = w->queued;
	if (was)
		pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return was;
}

static inline bool cancel_work(struct work_struct *w)
{
	return kcompat_work_cancel(w, "cancel_work");
}

static inline bool cancel_delayed_work(struct delayed_work *dw)
{
	return kcompat_work_cancel(kcompat_dwork(dw), "cancel_delayed_work");
}

/*
 * As the kernel's flush_work(): waits for the last queueing of @w when
 * it is called to be over, the run in progress before it too, and not
 * for a run queued meanwhile (by its own function or another thread),
 * so that a work that queues itself again does not keep it waiting.
 * A queueing whose delay is not over is not waited for; with @now
 * (flush_delayed_work()), it is due at once first. One waiting for a
 * thread is run here, as far as the flush waits. Whether there was
 * anything to wait for. @func names the call in a WARN.
 */
static inline bool kcompat_work_flush(struct work_struct *w, bool now,
				      const char *func)
{
	unsigned long target;
	int old, rec = 0;

	if (kcompat_work_bad(w, func))
		return false;
	old = kcompat_cancel_off();
	pthread_mutex_lock(&w->lock);
	if (now && w->pending && w->due.tv_sec) {
		w->due.tv_sec = 0;
		pthread_cond_broadcast(&w->cond);
	}
	target = w->queued - (unsigned long)kcompat_work_later(w);
	if (w->done >= target) {
		pthread_mutex_unlock(&w->lock);
		if (!kcompat_worker.depth)
			kcompat_work_wait_finishing();
		kcompat_cancel_restore(old);
		return false;
	}
	/* A work that waits for itself would never end: said, not waited. */
	if (w->thread && pthread_equal(w->worker, pthread_self()))
		devres_warn(NULL, func,
			    "work %p: called from its own function, which it "
			    "would wait for: not waited for",
			    (void *)w);
	else if (w->thread)
		rec = kcompat_work_loop(w, func);
	while (rec >= 0 && w->done < target) {
		if (w->stranded) {
			if (rec > 0)
				devres_wait_end();
			kcompat_strand_del(w);
			w->thread = true;
			/* Its function may free it: not touched after. */
			kcompat_work_run_here(w, target);
			kcompat_cancel_restore(old);
			return true;
		}
		if (!w->thread || pthread_equal(w->worker, pthread_self()))
			break;
		pthread_cond_wait(&w->cond, &w->lock);
	}
	if (rec > 0)
		devres_wait_end();
	pthread_mutex_unlock(&w->lock);
	/* Not from a work's thread: it may be among those finishing. */
	if (!kcompat_worker.depth)
		kcompat_work_wait_finishing();
	kcompat_cancel_restore(old);
	return true;
}

static inline bool flush_work(struct work_struct *w)
{
	kcompat_might_sleep(KCOMPAT_SLEEP_flush_work);
	return kcompat_work_flush(w, false, "flush_work");
}

/*
 * As the kernel's: a queueing whose delay is not over is due at once,
 * then flushed as flush_work() does.
 */
static inline bool flush_delayed_work(struct delayed_work *dw)
{
	kcompat_might_sleep(KCOMPAT_SLEEP_flush_delayed_work);
	return kcompat_work_flush(kcompat_dwork(dw), true,
				  "flush_delayed_work");
}

/*
 * The pending run of @w (its lock held, still pending) taken back and
 * queued again on @wq with @delay, in the same hold of its lock, as the
 * kernel's mod_delayed_work() grabs the pending bit and queues: no other
 * call sees it between the two. A thread that waits until it is due
 * waits for the new time; one that waits for a thread keeps waiting,
 * counted on the same queue.
 */
static inline void kcompat_work_requeue(struct work_struct *w,
					unsigned long delay,
					struct workqueue_struct *wq)
{
	kcompat_wq_over(w->pwq, w->ptag);
	/* The run it was is over, as a cancel makes it; one more queued. */
	if (!w->running)
		w->done = w->queued;
	w->queued++;
	w->pwq = wq;
	w->ptag = delay ? 0 : kcompat_wq_tag_live(wq);
	w->due.tv_sec = 0;
	w->due.tv_nsec = 0;
	if (delay)
		kcompat_ts_in_ms(&w->due, CLOCK_REALTIME, delay);
	pthread_cond_broadcast(&w->cond);
}

/*
 * As the kernel's: pending again on @wq with a new delay, whether it was
 * pending or not, and whether it was (true: only its delay changed).
 * Does not wait for a run in progress, which goes on in its thread and
 * is followed by the one queued here; its own function may call it. A
 * queue that is not a live one of this process: its WARN, and the item
 * left as it was.
 */
static inline bool kcompat_mod_delayed_work(struct workqueue_struct *wq,
					    struct delayed_work *dw,
					    unsigned long delay)
{
	struct work_struct *w = kcompat_dwork(dw);
	bool was;

	if (kcompat_work_bad(w, "mod_delayed_work") ||
	    kcompat_work_arg_bad(wq, true, "mod_delayed_work"))
		return false;
	if (__builtin_expect(!w->func, 0))
		return kcompat_work_queue(w, delay, wq, "mod_delayed_work");
	pthread_mutex_lock(&w->lock);
	if (wq) {
		struct kcompat_wq *q = kcompat_wq_get(wq, "mod_delayed_work");
		bool refused;

		if (!q) {
			pthread_mutex_unlock(&w->lock);
			return false;
		}
		/* Refused before the item is touched: it is left as it was. */
		refused = q->draining && !kcompat_work_serves(wq);
		pthread_mutex_unlock(&kcompat_wq_lock);
		if (refused) {
			pthread_mutex_unlock(&w->lock);
			kcompat_wq_warn_draining(wq, w, w->func,
						 "mod_delayed_work");
			return false;
		}
	}
	if (!w->pending) {
		(void)kcompat_work_queue_held(w, delay, wq, "mod_delayed_work");
		return false;
	}
	if (!w->stranded || w->wq == wq) {
		kcompat_work_requeue(w, delay, wq);
		pthread_mutex_unlock(&w->lock);
		return true;
	}
	/*
	 * Waiting for a thread, counted on another queue: taken back, then
	 * queued anew, not in one hold of its lock.
	 */
	pthread_mutex_unlock(&w->lock);
	was = kcompat_work_cancel(w, "mod_delayed_work");
	(void)kcompat_work_queue(w, delay, wq, "mod_delayed_work");
	return was;
}

/* The call itself: a NULL @wq WARNs (kcompat_wq_null()), as the kernel's. */
static inline bool mod_delayed_work(struct workqueue_struct *wq,
				    struct delayed_work *dw,
				    unsigned long delay)
{
	if (kcompat_wq_null(wq, "mod_delayed_work"))
		return false;
	return kcompat_mod_delayed_work(kcompat_wq_in(wq), dw, delay);
}

static inline bool work_pending(struct work_struct *w)
{
	bool p;

	if (kcompat_work_bad(w, "work_pending"))
		return false;
	pthread_mutex_lock(&w->lock);
	p = w->pending;
	pthread_mutex_unlock(&w->lock);
	return p;
}

#define delayed_work_pending(dw) work_pending(kcompat_dwork(dw))

/*
 * A workqueue: a slot of the table of <linux/kcompat_wq.h>, and a
 * kmalloc() block, so that making one is a failure point and a queue never
 * destroyed a leak the sweep reports. NULL when the block or a slot cannot
 * be had; all KCOMPAT_WQ_SLOTS slots in use is a WARN. A %n in the name's
 * format is a WARN, and NULL: nothing is written through its argument.
 */
__attribute__((format(printf, 1, 4))) static inline struct workqueue_struct *
alloc_workqueue(const char *fmt, unsigned int flags, int max_active, ...)
{
	struct workqueue_struct *wq;
	char name[32];
	va_list ap;
	void *rec;
	int len;

	(void)flags;
	(void)max_active;
	if (devres_ptr_bad(fmt)) {
		devres_warn_bad_arg("alloc_workqueue", "name format", fmt);
		return NULL;
	}
	if (devres_format_bad(NULL, "alloc_workqueue", fmt))
		return NULL;
	va_start(ap, max_active);
	len = vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	/* The kernel's WQ_NAME_LEN, and its warning when a name is cut. */
	if (len >= (int)sizeof(name))
		devres_warn(NULL, "alloc_workqueue",
			    "name of %d characters cut to %zu: '%s'", len,
			    sizeof(name) - 1, name);
	rec = kzalloc(1, GFP_KERNEL);
	if (!rec)
		return NULL;
	wq = kcompat_wq_new(name, rec);
	if (!wq) {
		/* A limit of this layer, not the kernel's: said, not silent. */
		devres_warn(NULL, "alloc_workqueue",
			    "all %d workqueues are in use: no queue '%s'",
			    KCOMPAT_WQ_SLOTS, name);
		kfree(rec);
	}
	return wq;
}

#define alloc_ordered_workqueue(fmt, flags, ...)                               \
	alloc_workqueue((fmt), (flags), 1, ##__VA_ARGS__)
#define create_singlethread_workqueue(name) alloc_workqueue("%s", 0, 1, (name))
#define create_workqueue(name) alloc_workqueue("%s", 0, 0, (name))
#define WQ_UNBOUND 0
#define WQ_FREEZABLE 0
#define WQ_MEM_RECLAIM 0
#define WQ_HIGHPRI 0
#define WQ_SYSFS 0

/*
 * The name a queue was given, or NULL (and its WARN) for a handle that is
 * not a live queue of this process. Not a kernel call: for programs and
 * tests that look.
 */
static inline const char *kcompat_workqueue_name(struct workqueue_struct *wq)
{
	struct kcompat_wq *q;
	const char *name;

	if (kcompat_work_arg_bad(wq, false, "kcompat_workqueue_name"))
		return NULL;
	q = kcompat_wq_get(wq, "kcompat_workqueue_name");
	if (!q)
		return NULL;
	name = q->name;
	pthread_mutex_unlock(&kcompat_wq_lock);
	return name;
}

/* What a wait for a queue waits for. */
enum kcompat_wq_until {
	KCOMPAT_WQ_FLUSH,   /* what was queued on it before the call */
	KCOMPAT_WQ_DRAIN,   /* nothing on it, chained queueings too */
	KCOMPAT_WQ_DESTROY, /* as drain, then the queue goes */
};

/*
 * Whether the wait of @until (@t: the color a flush found) is over. Under
 * kcompat_wq_lock.
 */
static inline bool kcompat_wq_done(struct kcompat_wq *q,
				   enum kcompat_wq_until until, unsigned long t)
{
	if (until == KCOMPAT_WQ_FLUSH)
		return kcompat_wq_flushed(q, t);
	return !q->busy && !q->nr[0] && !q->nr[1];
}

/*
 * Sleeps on @q's condition, under kcompat_wq_lock; only a while when an
 * item waits for a thread, which the caller may then run: one counted on
 * another queue but queued on this one is not told to this one; or when
 * a delayed item of a drain was not woken yet (@kick_left,
 * kcompat_wq_kick()).
 */
static inline void kcompat_wq_sleep(struct kcompat_wq *q, bool kick_left)
{
	struct timespec ts;

	if (!kick_left &&
	    !__atomic_load_n(&kcompat_stranded, __ATOMIC_ACQUIRE)) {
		pthread_cond_wait(&q->idle, &kcompat_wq_lock);
		return;
	}
	kcompat_ts_in_ms(&ts, CLOCK_REALTIME,
			 kick_left ? KCOMPAT_WQ_KICK_RETRY_MS
				   : KCOMPAT_STRAND_RETRY_MS);
	(void)pthread_cond_timedwait(&q->idle, &kcompat_wq_lock, &ts);
}

/*
 * Before a wait for @wq: 0, that wait recorded in the library's record of
 * waits as one for every thread running an item of @wq (each is a member
 * of the queue's set while its function runs, those that start later
 * too); or, when one of them waits, through the waits recorded, for this
 * thread, -1 and one WARN naming the loop: the wait would never end, and
 * is not made. A destroy refused so leaves the queue as it is: live, its
 * items not waited for, never freed under them.
 */
static inline int kcompat_wq_loop(struct workqueue_struct *wq,
				  enum kcompat_wq_until until, const char *func)
{
	if (!devres_wait_begin_set(kcompat_wq_set(wq), func))
		return 0;
	devres_warn(NULL, func,
		    "workqueue %p: a work item on it waits for this thread "
		    "(%s): %s",
		    (const void *)(wq ? wq : system_wq), devres_wait_loop(),
		    until == KCOMPAT_WQ_DESTROY ? "not destroyed"
						: "not waited for");
	return -1;
}

/*
 * Waits for @wq as @until says; @func names the call in a WARN. A drain
 * or destroy marks the queue as draining while it waits: a queueing on
 * it from outside its items is refused (kcompat_work_queue()).
 */
static inline void kcompat_wq_wait(struct workqueue_struct *wq,
				   enum kcompat_wq_until until,
				   const char *func, enum kcompat_sleeper id)
{
	bool drain = until != KCOMPAT_WQ_FLUSH;
	bool first = !drain;
	struct kcompat_wq *q;
	unsigned long t;
	uintptr_t gen;
	void *rec = NULL;
	int old;

	kcompat_might_sleep(id);
	/* The system's queue is only flushed: it is never drained nor goes. */
	if (!wq && until != KCOMPAT_WQ_FLUSH)
		return;
	if (wq && kcompat_work_arg_bad(wq, true, func))
		return;
	if (kcompat_work_serves(wq)) {
		devres_warn(NULL, func,
			    "workqueue %p: called from a work item on it, "
			    "which it would wait for: nothing done",
			    (const void *)(wq ? wq : system_wq));
		return;
	}
	if (kcompat_wq_loop(wq, until, func))
		return;
	if (wq) {
		q = kcompat_wq_get(wq, func);
	} else {
		pthread_mutex_lock(&kcompat_wq_lock);
		q = &kcompat_sysq;
	}
	if (!q) {
		devres_wait_end();
		return;
	}
	gen = q->gen;
	t = q->color;
	/* The first drain counts the chained queueings from none. */
	if (drain && !q->draining) {
		q->chained = 0;
		q->drainer = func;
		q->delay_said = false;
	}
	q->draining += drain;
	old = kcompat_cancel_off();
	/*
	 * Its items waiting for a thread run here, as each turns up: this
	 * caller waits for them anyway (a flush only for those queued
	 * before it, and only as far as it waits). One whose lock another
	 * thread holds is tried again.
	 */
	while (q->gen == gen && (!kcompat_wq_done(q, until, t) || first)) {
		/* Its delayed items asleep are due now: woken. */
		bool left = drain && kcompat_wq_kick(q, wq);
		struct work_struct *w;

		/*
		 * A flush first runs those due already: a delayed item with
		 * no thread has taken no color yet.
		 */
		if (!__atomic_load_n(&kcompat_stranded, __ATOMIC_ACQUIRE)) {
			if (first) {
				first = false;
				continue;
			}
			kcompat_wq_sleep(q, left);
			continue;
		}
		pthread_mutex_unlock(&kcompat_wq_lock);
		w = kcompat_strand_take(wq, false, drain ? 0 : t);
		if (w) {
			w->thread = true;
			kcompat_work_run_here(w, drain ? 0 : w->queued);
		}
		pthread_mutex_lock(&kcompat_wq_lock);
		if (!w && first)
			first = false;
		else if (!w && q->gen == gen && !kcompat_wq_done(q, until, t))
			kcompat_wq_sleep(q, left);
	}
	if (q->gen != gen) {
		/*
		 * Another thread destroyed it meanwhile, once drained: what
		 * a flush or drain waited for is over, but a second destroy
		 * did nothing.
		 */
		pthread_mutex_unlock(&kcompat_wq_lock);
		devres_wait_end();
		kcompat_cancel_restore(old);
		if (until == KCOMPAT_WQ_DESTROY)
			kcompat_wq_warn(wq, func, "was destroyed", 0);
		return;
	}
	devres_wait_end();
	q->draining -= drain;
	if (until == KCOMPAT_WQ_DESTROY) {
		kcompat_wq_retire(q);
		rec = q->rec;
		q->rec = NULL;
		/* Others waiting on it find it gone. */
		pthread_cond_broadcast(&q->idle);
	}
	pthread_mutex_unlock(&kcompat_wq_lock);
	if (!kcompat_worker.depth)
		kcompat_work_wait_finishing();
	kcompat_cancel_restore(old);
	kfree(rec);
}

/*
 * As the kernel's, waits until every item queued on @wq has run (those
 * they queue on it meanwhile too) before the queue goes: a driver's remove
 * that destroys its queue and then frees what the work uses is right.
 * While it waits, a queueing on @wq from outside its items is refused with
 * a WARN (drain_workqueue()), as are its items' queueings past
 * KCOMPAT_WQ_CHAIN_MAX, and a delayed item not yet due is made due with
 * one WARN. A queue destroyed already, or of another
 * process: one WARN, nothing done.
 */
static inline void destroy_workqueue(struct workqueue_struct *wq)
{
	if (kcompat_wq_null(wq, "destroy_workqueue"))
		return;
	kcompat_wq_wait(kcompat_wq_in(wq), KCOMPAT_WQ_DESTROY,
			"destroy_workqueue", KCOMPAT_SLEEP_destroy_workqueue);
}

/*
 * As the kernel's: waits until nothing is queued on @wq, what its items
 * queue on it meanwhile too (chained), and keeps the queue. While it
 * waits, only the items on @wq may queue on it: queue_work(),
 * queue_delayed_work() or mod_delayed_work() of an item on @wq from any
 * other thread or work item WARNs, as the kernel's does, and the item is
 * left as it was (false); and they only KCOMPAT_WQ_CHAIN_MAX times in
 * one drain: the next is refused with one WARN. A delayed item on @wq is
 * waited for until it has run: one whose delay is not over is made due,
 * with one WARN, where the kernel's drain waits for no timer.
 */
static inline void drain_workqueue(struct workqueue_struct *wq)
{
	if (kcompat_wq_null(wq, "drain_workqueue"))
		return;
	kcompat_wq_wait(kcompat_wq_in(wq), KCOMPAT_WQ_DRAIN, "drain_workqueue",
			KCOMPAT_SLEEP_drain_workqueue);
}

/*
 * As the kernel's: waits until every queueing on @wq made before the call
 * has run (or was taken back), and not for one made after it, by its
 * items or any other thread: an item that re-queues itself keeps no
 * flush waiting. A delayed queueing whose delay is not over is not yet
 * on the queue and is not waited for. While another flush of @wq waits
 * for what was queued before it, what is queued meanwhile is waited for
 * by the later flush as if queued before it (the kernel's flush colors,
 * when none is free, do the same). flush_workqueue(system_wq) waits so
 * for the system's queue (schedule_work() and the system_*_wq names),
 * as the kernel's does (new kernels warn at build time that a driver
 * should flush a queue of its own, or its items, instead); from one of
 * its items, which it would wait for, it WARNs and does nothing.
 */
static inline void flush_workqueue(struct workqueue_struct *wq)
{
	if (kcompat_wq_null(wq, "flush_workqueue"))
		return;
	kcompat_wq_wait(kcompat_wq_in(wq), KCOMPAT_WQ_FLUSH, "flush_workqueue",
			KCOMPAT_SLEEP_flush_workqueue);
}

/*
 * The end of an item's frame, as the kernel's: an item on the stack must
 * be idle when its function returns, and destroy_work_on_stack() says it
 * is. One queued or running (the kernel's DEBUG_OBJECTS_WORK: "free
 * active object") WARNs and is cancelled, and waited for, before the
 * frame goes (not by its own function, which cannot wait for itself).
 * The end of a frame without it is not seen: nothing marks it.
 */
static inline void kcompat_destroy_work(struct work_struct *w, const char *func)
{
	if (kcompat_work_bad(w, func) || !devres_liveobj_active(w))
		return;
	devres_warn(NULL, func,
		    "work %p is queued or running: cancelled and waited for",
		    (void *)w);
	(void)kcompat_work_wait(w, true, func);
}

static inline void destroy_work_on_stack(struct work_struct *w)
{
	kcompat_destroy_work(w, "destroy_work_on_stack");
}

static inline void destroy_delayed_work_on_stack(struct delayed_work *dw)
{
	kcompat_destroy_work(kcompat_dwork(dw), "destroy_delayed_work_on_"
						"stack");
}

static inline void kcompat_work_cancel_action(void *w)
{
	cancel_work_sync(w);
}

/*
 * devm_work_autocancel() - INIT_WORK(), and cancel_work_sync() at unbind
 * Context: probe; not a match or for-each callback of @dev. Return: 0,
 * -ENOMEM (a fault point; nothing left), or -EINVAL when INIT_WORK()
 * refused @w or @f (its WARN); -EDEADLK (a WARN, @w left as it is) from
 * a match or for-each callback of @dev; -EINVAL or -ECHILD for a bad
 * @dev or one of the parent process (a WARN).
 */
static inline int devm_work_autocancel(struct device *dev,
				       struct work_struct *w, work_func_t f)
{
	bool bad = devres_ptr_bad(w) || devres_ptr_bad((const void *)f);
	int ret = devres_may_add(dev, "devm_work_autocancel");

	/* Where its action would be refused, the item is left as it is. */
	if (ret)
		return ret;
	/* A bad item or function: INIT_WORK()'s WARN, and no action. */
	INIT_WORK(w, f);
	if (bad)
		return -EINVAL;
	return devm_add_action_or_reset(dev, kcompat_work_cancel_action, w);
}

#define devm_delayed_work_autocancel(dev, dw, f)                               \
	devm_work_autocancel((dev), &(dw)->work, (f))

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_work_autocancel(dev, w, f)                                        \
	KCOMPAT_AT(devm_work_autocancel, devm_work_autocancel(dev, w, f))

#endif /* KCOMPAT_LINUX_WORKQUEUE_H */
