/* SPDX-License-Identifier: MIT */
/*
 * The compat locks (<linux/mutex.h>, <linux/spinlock.h>) a thread holds,
 * and what becomes of them when the thread ends holding some. The kernel's
 * lockdep reports a task that returns to user space with a lock held; a
 * pthread mutex whose holder ends stays locked, and its next lock waits
 * for ever, silently.
 *
 * So each thread keeps a record of the compat locks it holds (the newest
 * KCOMPAT_HELD_MAX of them, the count of the others), and arms, at its
 * first lock, a thread-specific destructor: when the thread ends (returns
 * from its start function, pthread_exit(), is cancelled) with a lock
 * still held, the destructor WARNs once for it, naming the lock and the
 * call that took it, and lets it go, so that its next locker proceeds.
 * A lock taken while the record is full WARNs there (the record's limit
 * is never silent); its holder's end is then seen by its next locker.
 *
 * A thread that ends without its destructors (a raw SYS_exit) leaves its
 * locks held. Each lock keeps its holder's thread id for that: a locker
 * that has waited KCOMPAT_HELD_WAIT_MS asks whether the holder is still
 * alive (tgkill() with no signal), and takes the lock over, with one
 * WARN, when it is gone. The uncontended lock never asks.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_HELD_H
#define KCOMPAT_LINUX_KCOMPAT_HELD_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <devres/devres.h>
#include <linux/kcompat_lock.h>

/* The part a mutex and a spinlock share. */
struct kcompat_lock {
	pthread_mutex_t m;
	pid_t pid;	      /* whose: the init's, or the first user's */
	pid_t owner;	      /* the holder's thread id; 0 while free */
	unsigned int refused; /* its holder's recursive locks refused */
	const char *name;     /* the init's argument as written, or NULL */
};

/* The record's size: a thread rarely holds more than a few at once. */
#define KCOMPAT_HELD_MAX 16
/* How long a locker waits before it asks whether the holder is alive. */
#define KCOMPAT_HELD_WAIT_MS 100

struct kcompat_held_entry {
	struct kcompat_lock *l;
	const char *func; /* the call that took it */
	const char *what; /* "mutex", "spinlock" */
};

/*
 * The calls that may sleep, each checked by kcompat_might_sleep(): a bit
 * each in a thread's record of those it WARNed for in its present atomic
 * section, so that a call made again and again there says so once.
 */
#define KCOMPAT_SLEEPERS(X)                                                    \
	X(might_sleep)                                                         \
	X(mutex_lock)                                                          \
	X(mutex_lock_nested)                                                   \
	X(mutex_lock_interruptible)                                            \
	X(mutex_lock_killable)                                                 \
	X(msleep)                                                              \
	X(ssleep)                                                              \
	X(usleep_range)                                                        \
	X(fsleep)                                                              \
	X(wait_for_completion)                                                 \
	X(wait_for_completion_timeout)                                         \
	X(cancel_work_sync)                                                    \
	X(cancel_delayed_work_sync)                                            \
	X(flush_work)                                                          \
	X(flush_delayed_work)                                                  \
	X(flush_workqueue)                                                     \
	X(drain_workqueue)                                                     \
	X(destroy_workqueue)                                                   \
	X(kmalloc)                                                             \
	X(kzalloc)                                                             \
	X(kmalloc_array)                                                       \
	X(kcalloc)                                                             \
	X(krealloc)                                                            \
	X(kstrdup)                                                             \
	X(kmemdup)                                                             \
	X(devm_kmalloc)                                                        \
	X(devm_kzalloc)                                                        \
	X(devm_kmalloc_array)                                                  \
	X(devm_kcalloc)                                                        \
	X(devm_krealloc)                                                       \
	X(devm_kstrdup)                                                        \
	X(devm_kmemdup)                                                        \
	X(request_irq)                                                         \
	X(request_threaded_irq)                                                \
	X(devm_request_irq)                                                    \
	X(devm_request_threaded_irq)                                           \
	X(free_irq)                                                            \
	X(devm_free_irq)                                                       \
	X(synchronize_irq)                                                     \
	X(disable_irq)

#define KCOMPAT_SLEEPER_ID(name) KCOMPAT_SLEEP_##name,
enum kcompat_sleeper {
	KCOMPAT_SLEEPERS(KCOMPAT_SLEEPER_ID) KCOMPAT_SLEEPERS_NR
};
_Static_assert(KCOMPAT_SLEEPERS_NR <= 64, "a bit each in a 64-bit record");

/* Per thread; one per program, whichever file includes this first. */
struct kcompat_held {
	pid_t tid;     /* this thread's id, once asked; 0 before */
	int n;	       /* entries in e[], oldest first */
	int over;      /* held beyond the record */
	int atomic;    /* spinlocks held + preempt + irqs_off + hardirq: a
			  sleeping call made while it is not 0 WARNs */
	int preempt;   /* preempt_disable() depth */
	int hardirq;   /* in a primary interrupt handler (kcompat_hardirq()) */
	bool irqs_off; /* local_irq_disable(), local_irq_save() */
	unsigned long long slept; /* a bit a sleeper WARNed in this section */
	struct kcompat_held_entry e[KCOMPAT_HELD_MAX];
};
__attribute__((weak)) __thread struct kcompat_held kcompat_held;

__attribute__((weak)) pthread_key_t kcompat_held_key;
__attribute__((weak)) int kcompat_held_key_err = -1;
__attribute__((weak)) pthread_once_t kcompat_held_once = PTHREAD_ONCE_INIT;

/* "mutex 'name' (0x...)", or "mutex 0x..." for a lock with no name. */
#define KCOMPAT_HELD_FMT "%s %s%s%s%p%s"
#define KCOMPAT_HELD_ARGS(what, l)                                             \
	(what), (l)->name ? "'" : "", (l)->name ? (l)->name : "",              \
		(l)->name ? "' (" : "", (void *)(l), (l)->name ? ")" : ""

/*
 * The destructor: the thread is ending. Its frames are gone; what is read
 * is its record and the locks, each checked to be still this thread's
 * (another thread may have let it go, and taken it since).
 */
static inline void kcompat_held_ended(void *p)
{
	struct kcompat_held *h = (struct kcompat_held *)p;

	while (h->n > 0) {
		struct kcompat_held_entry e = h->e[--h->n];

		if (__atomic_load_n(&e.l->owner, __ATOMIC_RELAXED) != h->tid)
			continue;
		devres_warn(NULL, e.func,
			    KCOMPAT_HELD_FMT " still held when its thread "
					     "ended: let go",
			    KCOMPAT_HELD_ARGS(e.what, e.l));
		__atomic_store_n(&e.l->refused, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&e.l->owner, 0, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&e.l->m);
	}
	if (h->over)
		devres_warn(NULL, "pthread_exit",
			    "%d more compat locks, beyond the thread's record, "
			    "still held when it ended: their next lockers "
			    "take them over",
			    h->over);
	h->over = 0;
	h->atomic = 0;
	h->preempt = 0;
	h->hardirq = 0;
	h->irqs_off = false;
	h->slept = 0;
	/* A lock taken by a later destructor arms this one again. */
	h->tid = 0;
}

/* In a child of fork(): the thread is new, the parent's locks not its. */
static inline void kcompat_held_child(void)
{
	memset(&kcompat_held, 0, sizeof(kcompat_held));
}

static inline void kcompat_held_init(void)
{
	kcompat_held_key_err =
		pthread_key_create(&kcompat_held_key, kcompat_held_ended);
	(void)pthread_atfork(NULL, NULL, kcompat_held_child);
}

/* A thread's first lock: its id, and its destructor armed. */
__attribute__((__noinline__, __cold__, __unused__)) static void
kcompat_held_arm(struct kcompat_held *h)
{
	int saved = errno;

	(void)pthread_once(&kcompat_held_once, kcompat_held_init);
	h->tid = (pid_t)syscall(SYS_gettid);
	if (!kcompat_held_key_err)
		(void)pthread_setspecific(kcompat_held_key, h);
	errno = saved;
}

static inline pid_t kcompat_held_tid(void)
{
	struct kcompat_held *h = &kcompat_held;

	if (__builtin_expect(!h->tid, 0))
		kcompat_held_arm(h);
	return h->tid;
}

/* @l is this thread's now, taken by @func. */
static inline void kcompat_held_add(struct kcompat_lock *l, const char *func,
				    const char *what)
{
	struct kcompat_held *h = &kcompat_held;

	__atomic_store_n(&l->owner, kcompat_held_tid(), __ATOMIC_RELAXED);
	if (__builtin_expect(h->n < KCOMPAT_HELD_MAX, 1)) {
		h->e[h->n].l = l;
		h->e[h->n].func = func;
		h->e[h->n].what = what;
		h->n++;
		return;
	}
	h->over++;
	devres_warn(NULL, func,
		    KCOMPAT_HELD_FMT ": this thread holds %d compat locks, "
				     "all its record keeps: if the thread "
				     "ends with it held, its next locker "
				     "takes it over",
		    KCOMPAT_HELD_ARGS(what, l), KCOMPAT_HELD_MAX + h->over - 1);
}

/*
 * @l, this thread's, is let go: off its record. The newest entry is the
 * usual one. False when a recursive lock of it was refused
 * (kcompat_held_refuse()): this unlock is that lock's, taken off, and the
 * lock kept.
 */
static inline bool kcompat_held_del(struct kcompat_lock *l)
{
	struct kcompat_held *h = &kcompat_held;
	int i = h->n;

	if (__builtin_expect(__atomic_load_n(&l->refused, __ATOMIC_RELAXED),
			     0)) {
		__atomic_sub_fetch(&l->refused, 1, __ATOMIC_RELAXED);
		return false;
	}
	while (i-- > 0 && h->e[i].l != l)
		;
	if (i >= 0) {
		for (; i + 1 < h->n; i++)
			h->e[i] = h->e[i + 1];
		h->n--;
	} else if (h->over) {
		h->over--;
	}
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
	return true;
}

/*
 * The lock is taken: wait for it, KCOMPAT_HELD_WAIT_MS at a time, and
 * after each wait ask whether its holder is still alive; take it over
 * from one that is gone (its pthread mutex stays locked, now for this
 * thread, whose unlock lets it go). No cancellation point on the way.
 * Held by this thread already, it would wait for itself for ever (the
 * kernel's lockdep reports the recursion): one WARN, false, not taken.
 */
__attribute__((__noinline__, __unused__)) static bool
kcompat_lock_wait(struct kcompat_lock *l, const char *func, const char *what)
{
	int saved = errno;

	if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) ==
	    kcompat_held_tid()) {
		devres_warn(NULL, func,
			    KCOMPAT_HELD_FMT ": held by this thread already, "
					     "which would wait for itself: "
					     "not taken",
			    KCOMPAT_HELD_ARGS(what, l));
		errno = saved;
		return false;
	}
	for (;;) {
		struct timespec t;
		pid_t owner;
		int rc;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += KCOMPAT_HELD_WAIT_MS * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		rc = pthread_mutex_timedlock(&l->m, &t);
		if (!rc)
			break;
		if (rc != ETIMEDOUT) {
			pthread_mutex_lock(&l->m);
			break;
		}
		owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
		if (!owner ||
		    syscall(SYS_tgkill, kcompat_lock_pid(), owner, 0) == 0 ||
		    errno != ESRCH)
			continue;
		/* One of the lockers takes it; the others wait for it. */
		if (!__atomic_compare_exchange_n(
			    &l->owner, &owner, kcompat_held_tid(), false,
			    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		devres_warn(NULL, func,
			    KCOMPAT_HELD_FMT ": its holder, thread %d, ended "
					     "without letting go of it: taken "
					     "over",
			    KCOMPAT_HELD_ARGS(what, l), (int)owner);
		/* The refused locks of the holder that ended are not ours. */
		__atomic_store_n(&l->refused, 0, __ATOMIC_RELAXED);
		break;
	}
	errno = saved;
	return true;
}

/*
 * Lock @l for @func. A lock with no holder recorded is taken as pthread
 * takes it (glibc's trylock costs about 5 ns more than its lock, which
 * would more than double an uncontended pair); one with a holder, by the
 * wait that asks after it. A locker that comes in the instant between
 * another's take and its record of the holder waits as pthread does.
 * False: held by this thread already, not taken (and said so).
 */
static inline bool kcompat_lock_take(struct kcompat_lock *l, const char *func,
				     const char *what)
{
	if (__builtin_expect(!__atomic_load_n(&l->owner, __ATOMIC_RELAXED), 1))
		pthread_mutex_lock(&l->m);
	else if (!kcompat_lock_wait(l, func, what))
		return false;
	kcompat_held_add(l, func, what);
	return true;
}

/*
 * A recursive lock refused by a call that returns nothing (mutex_lock(),
 * spin_lock()): its caller will unlock it, and that unlock must not let
 * go of the hold before it. Counted in the lock, which only its holder
 * writes while it holds it, not in the thread's record: the count has no
 * limit the record has, and the next unlock of the lock by its holder is
 * always the refused lock's (the locks of one lock nest).
 */
static inline void kcompat_held_refuse(struct kcompat_lock *l, const char *func,
				       const char *what)
{
	(void)func;
	(void)what;
	__atomic_add_fetch(&l->refused, 1, __ATOMIC_RELAXED);
}

/* As kcompat_lock_take(), for a call that returns nothing. */
static inline void kcompat_lock_take_void(struct kcompat_lock *l,
					  const char *func, const char *what)
{
	if (!kcompat_lock_take(l, func, what))
		kcompat_held_refuse(l, func, what);
}

static inline int kcompat_lock_try(struct kcompat_lock *l, const char *func,
				   const char *what)
{
	if (pthread_mutex_trylock(&l->m))
		return 0;
	kcompat_held_add(l, func, what);
	return 1;
}

/*
 * The unlock of a lock this thread does not hold, by @func: not locked,
 * or another thread's (the kernel's mutex and spinlock debugging report
 * both). One WARN; nothing let go.
 */
__attribute__((__noinline__, __cold__, __unused__)) static void
kcompat_lock_drop_bad(struct kcompat_lock *l, pid_t owner, const char *func,
		      const char *what)
{
	if (!owner)
		devres_warn(NULL, func,
			    KCOMPAT_HELD_FMT ": not locked: nothing done",
			    KCOMPAT_HELD_ARGS(what, l));
	else
		devres_warn(NULL, func,
			    KCOMPAT_HELD_FMT ": held by thread %d, not this "
					     "one: not unlocked",
			    KCOMPAT_HELD_ARGS(what, l), (int)owner);
}

/* Unlock @l for @func: only by its holder. True: let go. */
static inline bool kcompat_lock_drop(struct kcompat_lock *l, const char *func,
				     const char *what)
{
	pid_t owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);

	if (__builtin_expect(!owner || owner != kcompat_held.tid, 0)) {
		kcompat_lock_drop_bad(l, owner, func, what);
		return false;
	}
	if (!kcompat_held_del(l))
		return false;
	pthread_mutex_unlock(&l->m);
	return true;
}

/* The spinlocks this thread holds. */
static inline int kcompat_spins_held(void)
{
	struct kcompat_held *h = &kcompat_held;

	return h->atomic - h->preempt - (int)h->irqs_off - h->hardirq;
}

/*
 * A call that may sleep (@id), made in atomic context: holding a
 * spinlock, with preemption or interrupts disabled. The kernel's
 * DEBUG_ATOMIC_SLEEP reports "sleeping function called from invalid
 * context", ratelimited; here a spinlock is a mutex, nothing is disabled,
 * so the call goes on, with one WARN naming it and the context: one a
 * call in each atomic section, however often it is made there.
 */
__attribute__((__noinline__, __cold__, __unused__)) static void
kcompat_slept_in_atomic(enum kcompat_sleeper id)
{
#define KCOMPAT_SLEEPER_NAME(name) #name,
	static const char *const names[] = { KCOMPAT_SLEEPERS(
		KCOMPAT_SLEEPER_NAME) };
#undef KCOMPAT_SLEEPER_NAME
	struct kcompat_held *h = &kcompat_held;
	const char *func = names[id];
	int i = h->n;

	if (h->slept & (1ULL << id))
		return;
	h->slept |= 1ULL << id;
	if (!kcompat_spins_held() && h->hardirq) {
		devres_warn(NULL, func,
			    "called from a primary interrupt handler "
			    "(hard-irq context): it may sleep");
		return;
	}
	if (!kcompat_spins_held()) {
		devres_warn(NULL, func, "called with %s disabled: it may sleep",
			    h->preempt ? "preemption" : "interrupts");
		return;
	}
	while (i-- > 0 && strcmp(h->e[i].what, "spinlock"))
		;
	if (i < 0) {
		devres_warn(NULL, func,
			    "called holding a spinlock: it may sleep");
		return;
	}
	devres_warn(NULL, func,
		    "called holding " KCOMPAT_HELD_FMT " (taken by %s): it "
		    "may sleep",
		    KCOMPAT_HELD_ARGS("spinlock", h->e[i].l), h->e[i].func);
}

/* The check of a call that may sleep: one load and a compare. */
static inline void kcompat_might_sleep(enum kcompat_sleeper id)
{
	if (__builtin_expect(kcompat_held.atomic, 0))
		kcompat_slept_in_atomic(id);
}

/* Into one of the atomic contexts. */
static inline void kcompat_atomic_enter(void)
{
	kcompat_held.atomic++;
}

/* Out of one; out of the last, the next section says its sleepers again. */
static inline void kcompat_atomic_leave(void)
{
	struct kcompat_held *h = &kcompat_held;

	if (!--h->atomic && __builtin_expect(h->slept != 0, 0))
		h->slept = 0;
}

/*
 * The library's hook (devres_atomic_hook_set()): a primary interrupt
 * handler runs in hard-irq context, where the kernel's might_sleep()
 * reports a sleeping call; the dispatcher's thread counts it here around
 * its handlers, so that the check stays one load. A thread function is
 * not told of: it may sleep, as the kernel's.
 */
static inline void kcompat_hardirq(int delta)
{
	kcompat_held.hardirq += delta;
	if (delta > 0)
		kcompat_atomic_enter();
	else
		kcompat_atomic_leave();
}

/*
 * The record of a lock that mutex_destroy() destroyed: no process is -1.
 * The kernel's mutex debugging clears the lock's magic there, and WARNs
 * at its next use.
 */
#define KCOMPAT_LOCK_DESTROYED ((pid_t)-1)

/*
 * A call (@func) on a lock that is not live: never initialized, zeroed
 * memory (no process, no name; an init or DEFINE_MUTEX()/DEFINE_SPINLOCK()
 * gives both), or destroyed (KCOMPAT_LOCK_DESTROYED). The kernel's mutex
 * and spinlock debugging WARN on its bad magic; here one WARN, by the
 * thread that makes it this process's, when @said (an unlock says its
 * own), and the lock works as an initialized one, as the kernel's does.
 */
__attribute__((__noinline__, __cold__, __unused__)) static void
kcompat_lock_uninit(struct kcompat_lock *l, pid_t was, const char *func,
		    const char *what, bool said)
{
	if (!__atomic_compare_exchange_n(&l->pid, &was, kcompat_lock_pid(),
					 false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED) ||
	    !said)
		return;
	if (was == KCOMPAT_LOCK_DESTROYED)
		devres_warn(NULL, func,
			    KCOMPAT_HELD_FMT " used after its destroy: "
					     "initialized again",
			    KCOMPAT_HELD_ARGS(what, l));
	else
		devres_warn(NULL, func,
			    "%s %p used before its init: initialized now", what,
			    (void *)l);
}

/*
 * Whether a call (@func) must leave @l alone: a lock of another process
 * (kcompat_lock_foreign()), its WARN saying @refused. A lock never
 * initialized is made this process's first, with its WARN.
 */
static inline bool kcompat_lock_refused(struct kcompat_lock *l, const void *obj,
					const char *func, const char *what,
					const char *refused)
{
	if (__builtin_expect(__atomic_load_n(&l->pid, __ATOMIC_RELAXED) ==
				     kcompat_lock_pid(),
			     1))
		return false;
	pid_t was = __atomic_load_n(&l->pid, __ATOMIC_RELAXED);

	if ((!was && !l->name) || was == KCOMPAT_LOCK_DESTROYED)
		kcompat_lock_uninit(l, was, func, what, refused != NULL);
	return kcompat_lock_foreign(&l->pid, obj, func, what, refused);
}

/*
 * Whether @l, of this process, is held (@func: an init or destroy, which
 * would wipe the lock its holder is to unlock): one WARN, the lock left
 * as it is. The kernel's lock debugging reports a held lock freed or
 * destroyed.
 */
static inline bool kcompat_lock_busy(struct kcompat_lock *l, const char *func,
				     const char *what, const char *done)
{
	pid_t owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);

	if (!owner ||
	    __atomic_load_n(&l->pid, __ATOMIC_RELAXED) != kcompat_lock_pid())
		return false;
	devres_warn(NULL, func, KCOMPAT_HELD_FMT ": held by thread %d: %s",
		    KCOMPAT_HELD_ARGS(what, l), (int)owner, done);
	return true;
}

/* A lock made anew (its init): free, named @name; not held (as above). */
static inline void kcompat_lock_make(struct kcompat_lock *l, const char *name)
{
	pthread_mutex_init(&l->m, NULL);
	l->owner = 0;
	l->refused = 0;
	l->name = name;
	__atomic_store_n(&l->pid, kcompat_lock_pid(), __ATOMIC_RELAXED);
}

/*
 * A lock destroyed: not held (kcompat_lock_busy() said no). Marked, not
 * given to pthread_mutex_destroy(): a pthread mutex on Linux holds nothing
 * to give back, and one destroyed makes every later use undefined (glibc
 * fails its lock with EINVAL, and the caller would run unlocked). So a
 * use after the destroy is seen (kcompat_lock_refused()), and the lock
 * still excludes.
 */
static inline void kcompat_lock_unmake(struct kcompat_lock *l)
{
	__atomic_store_n(&l->pid, KCOMPAT_LOCK_DESTROYED, __ATOMIC_RELAXED);
}

/* Whether @l is destroyed (KCOMPAT_LOCK_DESTROYED): a destroy again. */
static inline bool kcompat_lock_dead(const struct kcompat_lock *l)
{
	return __atomic_load_n(&l->pid, __ATOMIC_RELAXED) ==
	       KCOMPAT_LOCK_DESTROYED;
}

#endif /* KCOMPAT_LINUX_KCOMPAT_HELD_H */
