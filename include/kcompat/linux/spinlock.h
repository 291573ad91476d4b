/* SPDX-License-Identifier: MIT */
/*
 * Spinlocks are mutexes: an interrupt handler runs in the dispatcher's
 * thread, so "irqsave" needs no more than mutual exclusion. In a child of
 * fork(), a spinlock of the parent is refused as its mutexes are
 * (<linux/kcompat_lock.h>): every lock call takes nothing, with one
 * WARN, spin_trylock() returns 0, the unlocks do nothing, silently;
 * spin_lock_init() makes it the child's. A thread that ends holding a
 * spinlock lets it go, with one WARN (<linux/kcompat_held.h>).
 *
 * As for a mutex (<linux/mutex.h>), what the kernel's spinlock debugging
 * reports is one WARN and the lock left whole: a recursive lock (not
 * taken, its unlock void), an unlock of a spinlock not locked or held by
 * another thread, spin_lock_init() of a held one, a call on one never
 * initialized. A call that may sleep made holding a spinlock, or with
 * interrupts or preemption disabled (below), WARNs, as the kernel's
 * DEBUG_ATOMIC_SLEEP does, and goes on (<linux/kcompat_held.h>).
 */
#ifndef KCOMPAT_LINUX_SPINLOCK_H
#define KCOMPAT_LINUX_SPINLOCK_H

#include <linux/kcompat_check.h>
#include <linux/kcompat_held.h>
#include <linux/kcompat_lock.h>
#include <pthread.h>

typedef struct {
	/* private: */
	struct kcompat_lock k; /* the lock, its process, holder and name */
} spinlock_t;
typedef spinlock_t raw_spinlock_t;

/* clang-format off */
#define __SPIN_LOCK_UNLOCKED(x)						\
	{ .k = { .m = PTHREAD_MUTEX_INITIALIZER, .name = #x } }
/* clang-format on */
#define DEFINE_SPINLOCK(x) spinlock_t x = __SPIN_LOCK_UNLOCKED(x)
#define DEFINE_RAW_SPINLOCK DEFINE_SPINLOCK

static inline bool kcompat_spin_bad(spinlock_t *l, const char *func,
				    const char *refused)
{
	return kcompat_bad(l, func, "spinlock") ||
	       kcompat_lock_refused(&l->k, l, func, "spinlock", refused);
}

/* @name: the argument as written, which a WARN of the lock names. */
static inline void kcompat_spin_lock_init(spinlock_t *l, const char *name)
{
	if (kcompat_bad(l, "spin_lock_init", "spinlock") ||
	    kcompat_lock_busy(&l->k, "spin_lock_init", "spinlock",
			      "left as it is"))
		return;
	kcompat_lock_make(&l->k, name);
}

static inline void spin_lock_init(spinlock_t *l)
{
	kcompat_spin_lock_init(l, NULL);
}

#define spin_lock_init(l) kcompat_spin_lock_init((l), #l)

static inline void kcompat_spin_lock(spinlock_t *l, const char *func)
{
	if (kcompat_spin_bad(l, func, "not taken"))
		return;
	if (kcompat_lock_take(&l->k, func, "spinlock"))
		kcompat_atomic_enter();
	else
		kcompat_held_refuse(&l->k, func, "spinlock");
}

static inline void kcompat_spin_unlock(spinlock_t *l, const char *func)
{
	/* The lock before it was refused, and said so. */
	if (kcompat_spin_bad(l, func, NULL))
		return;
	if (kcompat_lock_drop(&l->k, func, "spinlock"))
		kcompat_atomic_leave();
}

static inline void spin_lock(spinlock_t *l)
{
	kcompat_spin_lock(l, "spin_lock");
}

static inline void spin_unlock(spinlock_t *l)
{
	kcompat_spin_unlock(l, "spin_unlock");
}

static inline int spin_trylock(spinlock_t *l)
{
	if (kcompat_spin_bad(l, "spin_trylock", "not taken") ||
	    !kcompat_lock_try(&l->k, "spin_trylock", "spinlock"))
		return 0;
	kcompat_atomic_enter();
	return 1;
}

/* The variants, each named in its WARN. */
#define spin_lock_irq(l) kcompat_spin_lock((l), "spin_lock_irq")
#define spin_unlock_irq(l) kcompat_spin_unlock((l), "spin_unlock_irq")
#define spin_lock_bh(l) kcompat_spin_lock((l), "spin_lock_bh")
#define spin_unlock_bh(l) kcompat_spin_unlock((l), "spin_unlock_bh")
#define spin_lock_irqsave(l, flags)                                            \
	((flags) = 0, kcompat_spin_lock((l), "spin_lock_irqsave"))
#define spin_unlock_irqrestore(l, flags)                                       \
	((void)(flags), kcompat_spin_unlock((l), "spin_unlock_irqrestore"))
#define raw_spin_lock_init spin_lock_init
#define raw_spin_lock(l) kcompat_spin_lock((l), "raw_spin_lock")
#define raw_spin_unlock(l) kcompat_spin_unlock((l), "raw_spin_unlock")
#define raw_spin_lock_irqsave(l, flags)                                        \
	((flags) = 0, kcompat_spin_lock((l), "raw_spin_lock_irqsave"))
#define raw_spin_unlock_irqrestore(l, flags)                                   \
	((void)(flags), kcompat_spin_unlock((l), "raw_spin_unlock_"            \
						 "irqrestore"))

/*
 * Nothing is disabled in a process: these only mark the thread's atomic
 * sections, in which a call that may sleep WARNs (<linux/kcompat_held.h>),
 * as the kernel's DEBUG_ATOMIC_SLEEP reports. Interrupts are off or on,
 * as the kernel's flag is (a second disable adds nothing, an enable ends
 * both); preemption and bottom halves are disabled by a count, whose
 * enable without a disable WARNs (the kernel's DEBUG_PREEMPT reports the
 * underflow) and does nothing.
 */
static inline void kcompat_irqs_set(bool off)
{
	if (kcompat_held.irqs_off == off)
		return;
	kcompat_held.irqs_off = off;
	if (off)
		kcompat_atomic_enter();
	else
		kcompat_atomic_leave();
}

static inline void kcompat_preempt_enable(const char *func)
{
	struct kcompat_held *h = &kcompat_held;

	if (__builtin_expect(h->preempt <= 0, 0)) {
		devres_warn(NULL, func,
			    "preemption is not disabled: nothing "
			    "done");
		return;
	}
	h->preempt--;
	kcompat_atomic_leave();
}

#define local_irq_disable() kcompat_irqs_set(true)
#define local_irq_enable() kcompat_irqs_set(false)
#define local_irq_save(flags)                                                  \
	((flags) = kcompat_held.irqs_off, kcompat_irqs_set(true))
#define local_irq_restore(flags) kcompat_irqs_set(!!(flags))
#define irqs_disabled() (kcompat_held.irqs_off)
/*
 * The kernel's preemption count has 8 bits (PREEMPT_MASK): a 256th nested
 * disable runs into the bits of the next count, which DEBUG_PREEMPT
 * reports. Here the 256th is refused with one WARN and counted nowhere,
 * so that a leak of disables in a loop cannot run the int past INT_MAX;
 * the enable paired with it is then one too many (KS12's WARN, at the
 * outermost).
 */
#define KCOMPAT_PREEMPT_MAX 255

static inline void kcompat_preempt_disable(const char *func)
{
	struct kcompat_held *h = &kcompat_held;

	if (__builtin_expect(h->preempt >= KCOMPAT_PREEMPT_MAX, 0)) {
		devres_warn(NULL, func,
			    "preemption disabled %d times without an enable: "
			    "refused",
			    KCOMPAT_PREEMPT_MAX);
		return;
	}
	h->preempt++;
	kcompat_atomic_enter();
}

#define preempt_disable() kcompat_preempt_disable("preempt_disable")
#define preempt_enable() kcompat_preempt_enable("preempt_enable")
#define preempt_enable_no_resched()                                            \
	kcompat_preempt_enable("preempt_enable_no_resched")
#define local_bh_disable() kcompat_preempt_disable("local_bh_disable")
#define local_bh_enable() kcompat_preempt_enable("local_bh_enable")

#endif /* KCOMPAT_LINUX_SPINLOCK_H */
