/* SPDX-License-Identifier: MIT */
/*
 * Work items, each run by a thread of its own: schedule_work() starts
 * the item's thread when none runs (it runs the work, and again while it
 * was queued meanwhile, then ends), cancel_work_sync() takes a queued run
 * back and waits for a running one. Delayed work waits in that thread
 * until it is due. A workqueue counts the items queued on it while a
 * thread serves them, so that destroy_workqueue() and drain_workqueue()
 * wait for them; system_wq is no queue (NULL). devm_work_autocancel()
 * cancels at unbind. Each item's thread counts in the ledger's threads
 * while it serves the item: a work still running after its driver let go
 * of everything is a leak the sweep reports.
 *
 * Work must be initialized (INIT_WORK(), INIT_DELAYED_WORK(), or
 * DECLARE_WORK() for static storage) before it is scheduled, and not
 * freed while queued or running: cancel it first, as in the kernel.
 */
#ifndef KCOMPAT_LINUX_WORKQUEUE_H
#define KCOMPAT_LINUX_WORKQUEUE_H

#include <linux/kcompat_site.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include <linux/compiler.h>
#include <linux/jiffies.h>
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
	struct timespec due; /* CLOCK_REALTIME; zero: now */
	pthread_t worker;
	struct workqueue_struct *wq;   /* where the serving thread counts */
	struct work_struct *live_next; /* on kcompat_live while served */
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
	((void)sizeof(&(dw)->work), /* only a delayed work: not evaluated */   \
	 (struct work_struct *)(void *)(dw))

/*
 * A workqueue is a name, and the count of its items a thread serves, so
 * that destroy_workqueue() can wait for them as the kernel's drains.
 */
struct workqueue_struct {
	char name[32];
	pthread_mutex_t lock;
	pthread_cond_t idle; /* busy fell to 0 */
	int busy;	     /* items queued on it that a thread serves */
};

#define KCOMPAT_WORK_INIT(f)                                                   \
	{                                                                      \
		.func = (f), .lock = PTHREAD_MUTEX_INITIALIZER,                \
		.cond = PTHREAD_COND_INITIALIZER                               \
	}
#define DECLARE_WORK(n, f) struct work_struct n = KCOMPAT_WORK_INIT(f)
#define DECLARE_DELAYED_WORK(n, f)                                             \
	struct delayed_work n = { .work = KCOMPAT_WORK_INIT(f) }

/*
 * Threads that let go of their item and have not yet freed what its
 * function kfree()d or left the ledger: a cancel or flush waits for them,
 * so that what it returns to sees memory and ledger as the work left them.
 * One per program, whichever file includes this first.
 */
__attribute__((weak))
pthread_mutex_t kcompat_fin_lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((weak))
pthread_cond_t kcompat_fin_cond = PTHREAD_COND_INITIALIZER;
__attribute__((weak)) int kcompat_finishing;
/* The items a thread serves, under kcompat_fin_lock: INIT_WORK() looks. */
__attribute__((weak)) struct work_struct *kcompat_live;

static inline void kcompat_live_add(struct work_struct *w)
{
	pthread_mutex_lock(&kcompat_fin_lock);
	w->live_next = kcompat_live;
	kcompat_live = w;
	pthread_mutex_unlock(&kcompat_fin_lock);
}

static inline void kcompat_live_del(struct work_struct *w)
{
	pthread_mutex_lock(&kcompat_fin_lock);
	for (struct work_struct **p = &kcompat_live; *p; p = &(*p)->live_next)
		if (*p == w) {
			*p = w->live_next;
			break;
		}
	pthread_mutex_unlock(&kcompat_fin_lock);
}

/* Compares addresses only: @w's memory is not read. */
static inline bool kcompat_live_has(const struct work_struct *w)
{
	bool found = false;

	pthread_mutex_lock(&kcompat_fin_lock);
	for (struct work_struct *p = kcompat_live; p && !found;
	     p = p->live_next)
		found = p == w;
	pthread_mutex_unlock(&kcompat_fin_lock);
	return found;
}

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
 * As the kernel's; of an item a thread serves (queued or running), it
 * would wipe the lock that thread holds: a WARN, as the kernel's object
 * debugging gives, and the item left as it is.
 */
static inline void INIT_WORK(struct work_struct *w, work_func_t f)
{
	if (kcompat_work_arg_bad(w, false, "INIT_WORK"))
		return;
	if (kcompat_live_has(w)) {
		devres_warn(NULL, "INIT_WORK",
			    "work %p is queued or running: cancel it first; "
			    "left as it is",
			    (void *)w);
		return;
	}
	memset(w, 0, sizeof(*w));
	w->func = f;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
}

#define INIT_DELAYED_WORK(dw, f) INIT_WORK(kcompat_dwork(dw), (f))
#define INIT_WORK_ONSTACK INIT_WORK
#define INIT_DEFERRABLE_WORK INIT_DELAYED_WORK
#define to_delayed_work(w) container_of((w), struct delayed_work, work)

/*
 * The thread of one item: waits until due, runs, again while re-queued.
 * What the function kfree()s is held until the thread has let go of @w
 * (the function may free @w itself, as the kernel allows); after that
 * the thread touches nothing of @w.
 */
static inline void *kcompat_work_thread(void *arg)
{
	struct work_struct *w = arg;
	struct workqueue_struct *wq;
	bool outer;

	kcompat_defer.depth++;
	pthread_mutex_lock(&w->lock);
	while (w->pending && !w->cancel) {
		if (w->due.tv_sec &&
		    pthread_cond_timedwait(&w->cond, &w->lock, &w->due) !=
			    ETIMEDOUT)
			continue; /* woken: cancelled, or due again */
		w->due.tv_sec = 0;
		w->pending = false;
		w->running = true;
		pthread_mutex_unlock(&w->lock);
		w->func(w);
		pthread_mutex_lock(&w->lock);
		w->running = false;
	}
	w->pending = false;
	w->thread = false;
	wq = w->wq;
	w->wq = NULL;
	kcompat_live_del(w);
	pthread_mutex_lock(&kcompat_fin_lock);
	kcompat_finishing++;
	pthread_mutex_unlock(&kcompat_fin_lock);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	/* Run in a caller that is a work's thread itself: that one frees. */
	outer = --kcompat_defer.depth == 0;
	if (outer)
		kcompat_defer_flush();
	/* The queue outlives its busy items: destroy_workqueue() waits. */
	if (wq) {
		pthread_mutex_lock(&wq->lock);
		if (--wq->busy == 0)
			pthread_cond_broadcast(&wq->idle);
		pthread_mutex_unlock(&wq->lock);
	}
	if (outer)
		devres_thread_spawn_done();
	pthread_mutex_lock(&kcompat_fin_lock);
	if (--kcompat_finishing == 0)
		pthread_cond_broadcast(&kcompat_fin_cond);
	pthread_mutex_unlock(&kcompat_fin_lock);
	return NULL;
}

/* Waits until no thread is between letting go of its item and its end. */
static inline void kcompat_work_wait_finishing(void)
{
	pthread_mutex_lock(&kcompat_fin_lock);
	while (kcompat_finishing)
		pthread_cond_wait(&kcompat_fin_cond, &kcompat_fin_lock);
	pthread_mutex_unlock(&kcompat_fin_lock);
}

/* Queues @w on @wq (NULL: the system's) to run @delay jiffies from now. */
static inline bool kcompat_work_queue(struct work_struct *w,
				      unsigned long delay,
				      struct workqueue_struct *wq)
{
	bool started;

	if (kcompat_work_arg_bad(w, false, "queue_work") ||
	    kcompat_work_arg_bad(wq, true, "queue_work"))
		return false;
	pthread_mutex_lock(&w->lock);
	if (w->pending) {
		pthread_mutex_unlock(&w->lock);
		return false;
	}
	w->pending = true;
	w->due.tv_sec = 0;
	if (delay) {
		clock_gettime(CLOCK_REALTIME, &w->due);
		w->due.tv_sec += (time_t)(delay / 1000);
		w->due.tv_nsec += (long)(delay % 1000) * 1000000L;
		if (w->due.tv_nsec >= 1000000000L) {
			w->due.tv_sec++;
			w->due.tv_nsec -= 1000000000L;
		}
	}
	if (w->thread) {
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		return true;
	}
	if (wq) {
		pthread_mutex_lock(&wq->lock);
		wq->busy++;
		pthread_mutex_unlock(&wq->lock);
	}
	w->wq = wq;
	kcompat_live_add(w);
	/* The thread counts in the ledger while it serves the item. */
	started = devres_thread_spawn(kcompat_work_thread, w) == 0;
	w->thread = started;
	pthread_mutex_unlock(&w->lock);
	/* No thread to be had: the work runs now, in the caller. */
	if (!started)
		(void)kcompat_work_thread(w);
	return true;
}

static inline bool schedule_work(struct work_struct *w)
{
	return kcompat_work_queue(w, 0, NULL);
}

static inline bool schedule_delayed_work(struct delayed_work *dw,
					 unsigned long delay)
{
	return kcompat_work_queue(kcompat_dwork(dw), delay, NULL);
}

#define queue_work(wq, w) kcompat_work_queue((w), 0, (wq))
#define queue_delayed_work(wq, dw, d)                                          \
	kcompat_work_queue(kcompat_dwork(dw), (d), (wq))
#define system_wq ((struct workqueue_struct *)0)
#define system_long_wq system_wq
#define system_unbound_wq system_wq
#define system_freezable_wq system_wq
#define system_power_efficient_wq system_wq

/*
 * Waits until no thread serves @w; with @cancel, a queued run is taken
 * back first. Returns, as the kernel's calls do, whether a run was
 * pending (cancel) or whether there was anything to wait for (flush).
 */
static inline bool kcompat_work_wait(struct work_struct *w, bool cancel)
{
	bool was;

	if (kcompat_work_arg_bad(w, false,
				 cancel ? "cancel_work_sync" : "flush_work"))
		return false;
	pthread_mutex_lock(&w->lock);
	was = cancel ? w->pending : w->thread;
	if (cancel && w->thread) {
		w->cancel = true;
		pthread_cond_broadcast(&w->cond);
	}
	/* A work that waits for itself would never end. */
	while (w->thread && !pthread_equal(w->worker, pthread_self()))
		pthread_cond_wait(&w->cond, &w->lock);
	if (cancel) {
		w->cancel = false;
		w->pending = false;
	}
	pthread_mutex_unlock(&w->lock);
	/* Not from a work's thread: it may be among those finishing. */
	if (!kcompat_defer.depth)
		kcompat_work_wait_finishing();
	return was;
}

static inline bool cancel_work_sync(struct work_struct *w)
{
	return kcompat_work_wait(w, true);
}

static inline bool cancel_delayed_work_sync(struct delayed_work *dw)
{
	return kcompat_work_wait(kcompat_dwork(dw), true);
}

#define cancel_delayed_work cancel_delayed_work_sync
#define cancel_work cancel_work_sync

static inline bool flush_work(struct work_struct *w)
{
	return kcompat_work_wait(w, false);
}

static inline bool flush_delayed_work(struct delayed_work *dw)
{
	bool busy;

	if (kcompat_work_arg_bad(dw, false, "flush_delayed_work"))
		return false;
	pthread_mutex_lock(&dw->work.lock);
	busy = dw->work.thread;
	/* Due now: flushing a delayed work runs it without its delay. */
	dw->work.due.tv_sec = 0;
	pthread_cond_broadcast(&dw->work.cond);
	pthread_mutex_unlock(&dw->work.lock);
	(void)kcompat_work_wait(&dw->work, false);
	return busy;
}

/* Pending again with a new delay, whether it was pending or not. */
static inline bool mod_delayed_work(struct workqueue_struct *wq,
				    struct delayed_work *dw,
				    unsigned long delay)
{
	bool was = cancel_delayed_work_sync(dw);

	(void)wq;
	schedule_delayed_work(dw, delay);
	return was;
}

static inline bool work_pending(struct work_struct *w)
{
	bool p;

	if (kcompat_work_arg_bad(w, false, "work_pending"))
		return false;
	pthread_mutex_lock(&w->lock);
	p = w->pending;
	pthread_mutex_unlock(&w->lock);
	return p;
}

#define delayed_work_pending(dw) work_pending(kcompat_dwork(dw))

/* A workqueue: a kmalloc() record of its name, nothing else. */
__attribute__((format(printf, 1, 4))) static inline struct workqueue_struct *
alloc_workqueue(const char *fmt, unsigned int flags, int max_active, ...)
{
	struct workqueue_struct *wq = kzalloc(sizeof(*wq), GFP_KERNEL);
	va_list ap;

	(void)flags;
	(void)max_active;
	if (wq) {
		pthread_mutex_init(&wq->lock, NULL);
		pthread_cond_init(&wq->idle, NULL);
		va_start(ap, max_active);
		vsnprintf(wq->name, sizeof(wq->name), fmt, ap);
		va_end(ap);
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
 * As the kernel's, waits until every item queued on @wq has run (those
 * they queue on it meanwhile too) before it is freed: a driver's remove
 * that destroys its queue and then frees what the work uses is right.
 */
static inline void destroy_workqueue(struct workqueue_struct *wq)
{
	if (!wq || kcompat_work_arg_bad(wq, true, "destroy_workqueue"))
		return;
	pthread_mutex_lock(&wq->lock);
	while (wq->busy)
		pthread_cond_wait(&wq->idle, &wq->lock);
	pthread_mutex_unlock(&wq->lock);
	if (!kcompat_defer.depth)
		kcompat_work_wait_finishing();
	pthread_mutex_destroy(&wq->lock);
	pthread_cond_destroy(&wq->idle);
	kfree(wq);
}

/* Waits as destroy_workqueue() does, and keeps the queue. */
static inline void drain_workqueue(struct workqueue_struct *wq)
{
	if (!wq || kcompat_work_arg_bad(wq, true, "drain_workqueue"))
		return;
	pthread_mutex_lock(&wq->lock);
	while (wq->busy)
		pthread_cond_wait(&wq->idle, &wq->lock);
	pthread_mutex_unlock(&wq->lock);
}

static inline void kcompat_work_cancel_action(void *w)
{
	cancel_work_sync(w);
}

/*
 * devm_work_autocancel() - INIT_WORK(), and cancel_work_sync() at unbind
 * Context: probe. Return: 0, or -ENOMEM (a fault point; nothing left).
 */
static inline int devm_work_autocancel(struct device *dev,
				       struct work_struct *w, work_func_t f)
{
	INIT_WORK(w, f);
	return devm_add_action_or_reset(dev, kcompat_work_cancel_action, w);
}

#define devm_delayed_work_autocancel(dev, dw, f)                               \
	devm_work_autocancel((dev), &(dw)->work, (f))

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_work_autocancel(dev, w, f)                                        \
	KCOMPAT_AT(devm_work_autocancel, devm_work_autocancel(dev, w, f))

#endif /* KCOMPAT_LINUX_WORKQUEUE_H */
