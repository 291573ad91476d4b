/* SPDX-License-Identifier: MIT */
/*
 * The workqueues of <linux/workqueue.h>, kept in a table that is never
 * freed. A driver holds a struct workqueue_struct pointer that is no
 * address but a handle, the slot's index and its generation: a queue that
 * destroy_workqueue() took is a slot whose generation moved on, so a call
 * with a stale handle is found without reading freed memory, even when the
 * slot already serves a new queue. Each queue records the process that
 * made it, checked before any of its state is used: in a child of fork(),
 * a queue of the parent is refused, as the library refuses its parent's
 * objects (docs/fork.md). The table and the record of live work items are
 * given back in a known state in the child by handlers of their own.
 *
 * Nothing here calls the library while it holds kcompat_wq_lock, so that
 * the fork handlers that take it cannot deadlock with the library's.
 *
 * Why not the library's own generation-checked handles (src/base/handle.c,
 * which threads, DMA pools and revocables use): this header is compiled
 * into the driver and may call only the exported API, and those handles
 * are the library's hidden internals; exporting them would add ABI for
 * one user. Nor would they save anything here: every call that looks a
 * queue up (queue_work() among them) must take kcompat_wq_lock anyway to
 * count the item on the queue, so the lookup is a few loads under a lock
 * already held, where the library's lock-free lookup would add a call
 * into the shared library on queue_work()'s path. And a queue's slot
 * keeps the process that made it, which the library's slots do not.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_WQ_H
#define KCOMPAT_LINUX_KCOMPAT_WQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/devres.h>
#include <linux/kcompat_lock.h>

/* Never defined: a queue is a handle (above), never dereferenced. */
struct workqueue_struct;

#define KCOMPAT_WQ_SLOTS 256

/*
 * Chained queueings (an item of a queue queueing one on it from its
 * function) one drain lets through: past them, an item that queues
 * itself again on every run would keep drain_workqueue() and
 * destroy_workqueue() waiting for ever (the kernel's loop reports "isn't
 * complete after 1000 tries" and goes on). The next is refused, with
 * one WARN, and the drain ends.
 */
#define KCOMPAT_WQ_CHAIN_MAX 1000

/*
 * A delayed item of a queue due within this of a drain of its queue (or
 * of the drain's wake-up, kcompat_wq_kick()) runs at its time, without a
 * word: the drain waits that long for it. One due later is made due by
 * the drain, with one WARN (kcompat_wq_drain_due()).
 */
#define KCOMPAT_WQ_DRAIN_GRACE_MS 50

/*
 * How soon a drain tries again to wake a delayed item of its queue whose
 * lock was held when it tried (kcompat_wq_kick()): the item's thread was
 * between its look at the queue and its wait, a moment.
 */
#define KCOMPAT_WQ_KICK_RETRY_MS 1

/*
 * A delayed item of a queue asleep until its due time: on its queue's
 * list while it sleeps, so that a drain of the queue wakes it
 * (kcompat_wq_kick()), and nothing else does before its time. On the
 * stack of the item's thread; linked and unlinked under kcompat_wq_lock.
 */
struct kcompat_wq_sleeper {
	struct workqueue_struct *wq; /* the handle it is queued on */
	struct kcompat_wq *q;	     /* its slot; NULL: on no list */
	pthread_mutex_t *lock;	     /* the item's, let go only in the wait */
	pthread_cond_t *cond;	     /* the item's */
	bool kicked;		     /* a drain woke it */
	struct kcompat_wq_sleeper *next;
};

/*
 * A slot's generation is odd while a queue lives in it and even while it
 * is free: making a queue and destroying it each move it on by one, so
 * that whether the slot is live is never a second field to keep in step
 * with the handle's generation.
 */
struct kcompat_wq {
	pthread_cond_t idle; /* busy fell to 0, or the queue went */
	uintptr_t gen;	     /* of the handle that names it while live */
	pid_t pid;	     /* the process that made it */
	bool cond_made;
	int busy;     /* items queued on it that a thread serves */
	int stranded; /* of those, how many wait for a thread (below) */
	int draining; /* drain_workqueue() and destroy_workqueue() calls */
	unsigned int chained; /* queueings from its items since they began */
	const char *drainer;  /* the call of the first drain, for a WARN */
	bool delay_said;      /* a drain's delayed item was WARNed of */
	/*
	 * The flush colors, as the kernel's: each queueing on the queue
	 * takes the current color, and counts in nr[] by its parity until
	 * its run is over or it is taken back; a flush closes the color it
	 * found (new queueings take the next one) and waits until every
	 * color up to it is over (flushed). At most the current color and
	 * the one before it have queueings not over: a flush that finds two
	 * waits for the older one before it closes its own.
	 */
	unsigned long color;
	unsigned long flushed;
	int nr[2];
	void *rec; /* a kmalloc() block: a queue never destroyed leaks it */
	/* Its delayed items asleep until due (kcompat_wq_sleep_begin()). */
	struct kcompat_wq_sleeper *sleepers;
	char name[32];
};

/* One table per program, whichever file includes this first. */
__attribute__((weak))
pthread_mutex_t kcompat_wq_lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((weak)) struct kcompat_wq kcompat_wqs[KCOMPAT_WQ_SLOTS];

/* The value of system_wq (<linux/workqueue.h>): no handle, never NULL. */
#define KCOMPAT_SYSTEM_WQ ((uintptr_t)0x2000)

/*
 * The system's queue (system_wq; NULL inside these headers): no slot of
 * the table, for it is never made nor destroyed, but flush colors of its
 * own, so that flush_workqueue(system_wq) waits, as the kernel's does,
 * for what was queued on it before the call. Its generation is 0, the
 * NULL handle's. Its colors before kcompat_sysq_first are the parent's,
 * in a child of fork(): the ends of their runs are not counted.
 */
__attribute__((weak)) struct kcompat_wq kcompat_sysq = {
	.idle = PTHREAD_COND_INITIALIZER,
	.cond_made = true,
	.color = 1,
};
__attribute__((weak)) unsigned long kcompat_sysq_first = 1;

/*
 * A handle is odd (no object is at an odd address), at or above the first
 * page (the generation starts at 1), and below the ERR_PTR() range (the
 * generation wraps well before): (gen << 12) | (slot << 1) | 1. A slot
 * takes 2^49 queues before its generation comes round (64-bit only:
 * src/base/handle.c), one alloc_workqueue() and one destroy_workqueue()
 * each: out of reach, so a handle kept from a destroyed queue never
 * names a later one.
 */
#define KCOMPAT_WQ_GEN_MAX (UINTPTR_MAX >> 14)

/* Whether a queue lives in slot @q: its generation is odd. */
static inline bool kcompat_wq_live(const struct kcompat_wq *q)
{
	return q->gen & 1;
}

/*
 * The queue in slot @q goes: its generation turns even, so that every
 * handle naming it is stale. Under kcompat_wq_lock.
 */
static inline void kcompat_wq_retire(struct kcompat_wq *q)
{
	q->gen++;
}

static inline struct workqueue_struct *kcompat_wq_handle(unsigned int slot,
							 uintptr_t gen)
{
	return (struct workqueue_struct *)((gen << 12) |
					   ((uintptr_t)slot << 1) | 1);
}

/*
 * What was wrong with handle @wq, or NULL when it names a live queue of
 * this process, whose slot is then *@ret_q. Under kcompat_wq_lock.
 */
static inline const char *kcompat_wq_find(const struct workqueue_struct *wq,
					  struct kcompat_wq **ret_q,
					  pid_t *ret_pid)
{
	uintptr_t h = (uintptr_t)wq;
	unsigned int slot = (unsigned int)((h >> 1) & 2047);
	struct kcompat_wq *q;

	if (!(h & 1) || slot >= KCOMPAT_WQ_SLOTS)
		return "is not a workqueue";
	q = &kcompat_wqs[slot];
	/* A free slot's generation is even: no handle, forged or not, is it. */
	if (!kcompat_wq_live(q) || q->gen != h >> 12)
		return "was destroyed";
	if (q->pid != kcompat_lock_pid()) {
		*ret_pid = q->pid;
		return "belongs to another process";
	}
	*ret_q = q;
	return NULL;
}

/* The one WARN of a call on a queue that is not a live one of ours. */
static inline void kcompat_wq_warn(const struct workqueue_struct *wq,
				   const char *func, const char *why, pid_t pid)
{
	if (pid)
		devres_warn(NULL, func, "workqueue %p belongs to process %d",
			    (const void *)wq, (int)pid);
	else
		devres_warn(NULL, func, "workqueue %p %s: nothing done",
			    (const void *)wq, why);
}

/*
 * Takes kcompat_wq_lock and returns the slot of @wq, or WARNs, names the
 * call and returns NULL with the lock not held.
 */
static inline struct kcompat_wq *kcompat_wq_get(struct workqueue_struct *wq,
						const char *func)
{
	struct kcompat_wq *q = NULL;
	const char *why;
	pid_t pid = 0;

	pthread_mutex_lock(&kcompat_wq_lock);
	why = kcompat_wq_find(wq, &q, &pid);
	if (!why)
		return q;
	pthread_mutex_unlock(&kcompat_wq_lock);
	kcompat_wq_warn(wq, func, why, pid);
	return NULL;
}

/*
 * Whether a drain (drain_workqueue(), destroy_workqueue()) of @wq, a
 * handle of a live queue or anything else, waits for its items now; its
 * call in *@ret_func when this is the first delayed item of the drain
 * found waiting for its delay (its one WARN), else NULL.
 */
static inline bool kcompat_wq_drain_due(struct workqueue_struct *wq,
					const char **ret_func)
{
	struct kcompat_wq *q = NULL;
	pid_t pid = 0;
	bool draining;

	*ret_func = NULL;
	if (!wq)
		return false;
	pthread_mutex_lock(&kcompat_wq_lock);
	draining = !kcompat_wq_find(wq, &q, &pid) && q->draining;
	if (draining && !q->delay_said) {
		q->delay_said = true;
		*ret_func = q->drainer;
	}
	pthread_mutex_unlock(&kcompat_wq_lock);
	return draining;
}

/*
 * Before a delayed item's sleep until its due time, its lock held: true
 * when a drain of @wq waits for it now (*@ret_func as
 * kcompat_wq_drain_due() sets it), and it is due at once; else false,
 * and @s (its lock and condition set) is on the list of the queue's
 * sleepers until kcompat_wq_sleep_end(), in the same hold of the lock as
 * the look at the queue: a drain that begins later finds it there.
 */
static inline bool kcompat_wq_sleep_begin(struct workqueue_struct *wq,
					  struct kcompat_wq_sleeper *s,
					  const char **ret_func)
{
	struct kcompat_wq *q = NULL;
	pid_t pid = 0;
	bool draining;

	*ret_func = NULL;
	s->q = NULL;
	pthread_mutex_lock(&kcompat_wq_lock);
	if (kcompat_wq_find(wq, &q, &pid)) {
		/* No live queue of ours: no drain of it to wake it. */
		pthread_mutex_unlock(&kcompat_wq_lock);
		return false;
	}
	draining = q->draining;
	if (draining && !q->delay_said) {
		q->delay_said = true;
		*ret_func = q->drainer;
	}
	if (!draining) {
		s->wq = wq;
		s->q = q;
		s->kicked = false;
		s->next = q->sleepers;
		q->sleepers = s;
	}
	pthread_mutex_unlock(&kcompat_wq_lock);
	return draining;
}

/* After the sleep: @s off its list. */
static inline void kcompat_wq_sleep_end(struct kcompat_wq_sleeper *s)
{
	if (!s->q)
		return;
	pthread_mutex_lock(&kcompat_wq_lock);
	for (struct kcompat_wq_sleeper **pp = &s->q->sleepers; *pp;
	     pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&kcompat_wq_lock);
	s->q = NULL;
}

/*
 * A drain of @wq (slot @q), under kcompat_wq_lock: wakes each of its
 * delayed items asleep not woken yet, which then finds the drain and is
 * due. The order of the locks is the item's first, then this one: an
 * item's lock is only tried here. One held is not woken (its thread is
 * between its look at the queue and its wait, or a call on the item
 * holds it): true, and the caller tries again a moment later
 * (KCOMPAT_WQ_KICK_RETRY_MS). A sleeper on the list is alive: it takes
 * itself off under this lock before its thread goes on.
 */
static inline bool kcompat_wq_kick(struct kcompat_wq *q,
				   const struct workqueue_struct *wq)
{
	bool left = false;

	for (struct kcompat_wq_sleeper *s = q->sleepers; s; s = s->next) {
		if (s->kicked || s->wq != wq)
			continue;
		if (pthread_mutex_trylock(s->lock)) {
			left = true;
			continue;
		}
		s->kicked = true;
		pthread_cond_broadcast(s->cond);
		pthread_mutex_unlock(s->lock);
	}
	return left;
}

/* A queue for @rec, or NULL when all the slots are in use. */
static inline struct workqueue_struct *kcompat_wq_new(const char *name,
						      void *rec)
{
	struct workqueue_struct *wq = NULL;

	pthread_mutex_lock(&kcompat_wq_lock);
	for (unsigned int i = 0; i < KCOMPAT_WQ_SLOTS && !wq; i++) {
		struct kcompat_wq *q = &kcompat_wqs[i];

		if (kcompat_wq_live(q))
			continue;
		if (!q->cond_made) {
			pthread_cond_init(&q->idle, NULL);
			q->cond_made = true;
		}
		/* Even to odd: live. GEN_MAX is odd, so the wrap to 1 is too. */
		if (++q->gen > KCOMPAT_WQ_GEN_MAX)
			q->gen = 1;
		q->pid = kcompat_lock_pid();
		q->busy = 0;
		q->stranded = 0;
		q->draining = 0;
		q->chained = 0;
		q->drainer = NULL;
		q->delay_said = false;
		q->color = 1;
		q->flushed = 0;
		q->nr[0] = q->nr[1] = 0;
		q->rec = rec;
		snprintf(q->name, sizeof(q->name), "%s", name);
		wq = kcompat_wq_handle(i, q->gen);
	}
	pthread_mutex_unlock(&kcompat_wq_lock);
	return wq;
}

/* The slot of @wq, a live queue's handle or NULL (the system's). */
static inline struct kcompat_wq *
kcompat_wq_slot(const struct workqueue_struct *wq)
{
	uintptr_t h = (uintptr_t)wq;

	return wq ? &kcompat_wqs[(h >> 1) & 2047] : &kcompat_sysq;
}

/*
 * The set of the library's record of waits that a wait for @wq begins
 * and the threads running its items join: the handle, or system_wq's
 * value for the system's queue (NULL is no set).
 */
static inline uintptr_t kcompat_wq_set(const struct workqueue_struct *wq)
{
	return wq ? (uintptr_t)wq : KCOMPAT_SYSTEM_WQ;
}

/* An item a thread serves leaves the queue it counts on. */
static inline void kcompat_wq_put(struct workqueue_struct *wq)
{
	uintptr_t h = (uintptr_t)wq;
	struct kcompat_wq *q = &kcompat_wqs[(h >> 1) & 2047];

	/* Counted on it, so the queue waits for this: it is still live. */
	pthread_mutex_lock(&kcompat_wq_lock);
	if (--q->busy == 0)
		pthread_cond_broadcast(&q->idle);
	pthread_mutex_unlock(&kcompat_wq_lock);
}

/*
 * A queueing on @q: the color it takes, counted until it is over. Under
 * kcompat_wq_lock.
 */
static inline unsigned long kcompat_wq_tag(struct kcompat_wq *q)
{
	q->nr[q->color & 1]++;
	return q->color;
}

/*
 * A queueing on @wq (NULL: the system's) whose delay is over: the color
 * it takes on the queue, or 0 when there is none (the system's, or a
 * queue that went meanwhile).
 */
static inline unsigned long kcompat_wq_tag_live(struct workqueue_struct *wq)
{
	uintptr_t h = (uintptr_t)wq;
	unsigned long tag = 0;
	struct kcompat_wq *q = kcompat_wq_slot(wq);

	pthread_mutex_lock(&kcompat_wq_lock);
	if (q->gen == h >> 12)
		tag = kcompat_wq_tag(q);
	pthread_mutex_unlock(&kcompat_wq_lock);
	return tag;
}

/*
 * The queueing of color @tag on @wq (NULL: the system's, or none) is
 * over: run, or taken back. A queue that went meanwhile is not touched:
 * its handle's generation is not its slot's any more.
 */
static inline void kcompat_wq_over(struct workqueue_struct *wq,
				   unsigned long tag)
{
	uintptr_t h = (uintptr_t)wq;
	struct kcompat_wq *q = kcompat_wq_slot(wq);

	if (!tag)
		return;
	pthread_mutex_lock(&kcompat_wq_lock);
	/* A queueing of the parent's, ended in a child of fork(): not ours. */
	if (!wq && tag < kcompat_sysq_first) {
		pthread_mutex_unlock(&kcompat_wq_lock);
		return;
	}
	if (q->gen == h >> 12 && --q->nr[tag & 1] == 0) {
		/* A closed color over: every one up to it is. */
		if (tag < q->color && tag == q->flushed + 1)
			q->flushed = tag;
		pthread_cond_broadcast(&q->idle);
	}
	pthread_mutex_unlock(&kcompat_wq_lock);
}

/*
 * Whether every queueing on @q of color @t or before is over; if the
 * color before @t is, closes @t when it is still the current one, so
 * that what is queued from now on is not waited for. Under
 * kcompat_wq_lock.
 */
static inline bool kcompat_wq_flushed(struct kcompat_wq *q, unsigned long t)
{
	if (q->flushed >= t)
		return true;
	if (q->color == t && q->flushed + 1 == t) {
		q->color = t + 1;
		if (!q->nr[t & 1]) {
			q->flushed = t;
			pthread_cond_broadcast(&q->idle);
			return true;
		}
	}
	return false;
}

/*
 * Items queued when no thread could be had for them (the thread's record
 * or the thread itself failed): they stay pending on this list, never run
 * in the caller of queue_work(), which may hold a lock their function
 * takes. A work thread that finishes its item takes one over, the next
 * queue that gets a thread starts one for each it can, and a flush of the
 * item, or a flush, drain or destroy of its queue, runs it in its own
 * caller, which waits for it anyway. The kernel's rescuer thread does
 * this for WQ_MEM_RECLAIM queues; a hidden thread of the layer's own
 * would need the very resource that ran out.
 *
 * A link, in the item; kcompat_stranded counts the links, so that the
 * callers that look cost one load while the list is empty. The item's
 * lock, then kcompat_strand_lock, then kcompat_wq_lock: a taker that
 * holds kcompat_strand_lock only tries an item's lock.
 */
struct kcompat_strand {
	struct kcompat_strand *next, *prev;
};

__attribute__((weak))
pthread_mutex_t kcompat_strand_lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((weak)) struct kcompat_strand *kcompat_strand_first;
__attribute__((weak)) int kcompat_stranded;

/*
 * What starts threads for the waiting items (<linux/workqueue.h>), set
 * when the first one waits: a wait of a completion tries it before it
 * sleeps, and every few milliseconds while items wait, since what the
 * waiter waits for may be one of them (a probe that queues work and waits
 * for its first run).
 */
__attribute__((weak)) void (*kcompat_strand_kick_hook)(void);

#define KCOMPAT_STRAND_RETRY_MS 10

/* @ts, read from @clock now, moved on by @ms milliseconds. */
static inline void kcompat_ts_in_ms(struct timespec *ts, clockid_t clock,
				    unsigned long ms)
{
	clock_gettime(clock, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Whether items wait for a thread; if so, tries to start theirs. */
static inline bool kcompat_strand_poke(void)
{
	void (*kick)(void);

	if (!__atomic_load_n(&kcompat_stranded, __ATOMIC_ACQUIRE))
		return false;
	kick = __atomic_load_n(&kcompat_strand_kick_hook, __ATOMIC_ACQUIRE);
	if (kick)
		kick();
	return __atomic_load_n(&kcompat_stranded, __ATOMIC_ACQUIRE) != 0;
}

/* Puts @l on the list. Under kcompat_strand_lock. */
static inline void kcompat_strand_link(struct kcompat_strand *l)
{
	l->prev = NULL;
	l->next = kcompat_strand_first;
	if (l->next)
		l->next->prev = l;
	kcompat_strand_first = l;
	__atomic_add_fetch(&kcompat_stranded, 1, __ATOMIC_RELEASE);
}

/* Takes @l off the list. Under kcompat_strand_lock. */
static inline void kcompat_strand_unlink(struct kcompat_strand *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		kcompat_strand_first = l->next;
	if (l->next)
		l->next->prev = l->prev;
	l->next = l->prev = NULL;
	__atomic_sub_fetch(&kcompat_stranded, 1, __ATOMIC_RELEASE);
}

/*
 * One more (@delta 1) or one fewer (-1) item waiting for a thread on
 * @wq, which counts it among its busy ones and so still lives: a wait
 * for the queue is woken to run it.
 */
static inline void kcompat_wq_strand(struct workqueue_struct *wq, int delta)
{
	uintptr_t h = (uintptr_t)wq;
	struct kcompat_wq *q = &kcompat_wqs[(h >> 1) & 2047];

	pthread_mutex_lock(&kcompat_wq_lock);
	q->stranded += delta;
	if (delta > 0)
		pthread_cond_broadcast(&q->idle);
	pthread_mutex_unlock(&kcompat_wq_lock);
}

/*
 * The count of threads letting go of their items (<linux/workqueue.h>),
 * under kcompat_fin_lock.
 */
__attribute__((weak))
pthread_mutex_t kcompat_fin_lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((weak))
pthread_cond_t kcompat_fin_cond = PTHREAD_COND_INITIALIZER;
__attribute__((weak)) int kcompat_finishing;

/*
 * Across fork(): both locks held, so that the child's copy of the table is
 * whole; in the child the threads that were letting
 * go of their items are the parent's, and none of them is waited for.
 */
static inline void kcompat_wq_prepare(void)
{
	pthread_mutex_lock(&kcompat_strand_lock);
	pthread_mutex_lock(&kcompat_wq_lock);
	pthread_mutex_lock(&kcompat_fin_lock);
}

static inline void kcompat_wq_parent(void)
{
	pthread_mutex_unlock(&kcompat_fin_lock);
	pthread_mutex_unlock(&kcompat_wq_lock);
	pthread_mutex_unlock(&kcompat_strand_lock);
}

static inline void kcompat_wq_child(void)
{
	/* A thread of the parent may have been waking from a free slot's. */
	for (unsigned int i = 0; i < KCOMPAT_WQ_SLOTS; i++)
		if (kcompat_wqs[i].cond_made &&
		    !kcompat_wq_live(&kcompat_wqs[i]))
			pthread_cond_init(&kcompat_wqs[i].idle, NULL);
	kcompat_finishing = 0;
	pthread_cond_init(&kcompat_fin_cond, NULL);
	/*
	 * The system queue's queueings are the parent's: the child's colors
	 * begin past theirs, with none counted.
	 */
	kcompat_sysq_first = kcompat_sysq.color + 1;
	kcompat_sysq.color = kcompat_sysq_first;
	kcompat_sysq.flushed = kcompat_sysq_first - 1;
	kcompat_sysq.nr[0] = kcompat_sysq.nr[1] = 0;
	pthread_cond_init(&kcompat_sysq.idle, NULL);
	/* The items waiting for a thread are the parent's, as its queues. */
	kcompat_strand_first = NULL;
	kcompat_stranded = 0;
	pthread_mutex_unlock(&kcompat_fin_lock);
	pthread_mutex_unlock(&kcompat_wq_lock);
	pthread_mutex_unlock(&kcompat_strand_lock);
}

__attribute__((weak)) pthread_once_t kcompat_wq_once = PTHREAD_ONCE_INIT;

static inline void kcompat_wq_atfork(void)
{
	(void)pthread_atfork(kcompat_wq_prepare, kcompat_wq_parent,
			     kcompat_wq_child);
}

/* At start, before any thread: each file that includes this asks once. */
__attribute__((constructor)) static void kcompat_wq_ctor(void)
{
	pthread_once(&kcompat_wq_once, kcompat_wq_atfork);
}

#endif /* KCOMPAT_LINUX_KCOMPAT_WQ_H */
