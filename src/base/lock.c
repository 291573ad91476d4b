// SPDX-License-Identifier: MIT
/*
 * The device's devres lock, beyond its inline fast paths (node.h).
 *
 * A word taken with a compare-and-swap. A thread that finds it held
 * spins a little (a critical section is a few pointer moves: the holder
 * is done within a microsecond unless it was preempted), then sleeps on
 * the word with a private futex. Releases let the lock go and wake one
 * sleeper, which competes with whoever arrives meanwhile (barging: the
 * lock never sits idle while a woken thread is scheduled). A waiter that
 * has been woken STARVE_WAKES times, or has waited STARVE_NS, without
 * getting the lock sets STARVING in the word; from then on a release
 * hands the lock over, still held, to the thread the kernel wakes (the
 * longest asleep), until a starving thread gets it and clears STARVING
 * (another sets it again when it wakes and still starves). So a waiter gets
 * the lock within a bounded number of other acquisitions, as in
 * parking_lot's "eventual fairness", while the common case keeps the
 * throughput of barging.
 *
 * No wake-up is lost: a waiter sets PARKED before it sleeps, and sleeps
 * only while the word still holds the value it saw (FUTEX_WAIT compares
 * it under the kernel's lock); a release that finds PARKED clears it and
 * wakes one, and a thread woken from the futex takes the lock with PARKED
 * set again, as others may still sleep. A hand-over that finds nobody
 * asleep (the sleepers are between waking and looking) is taken back
 * unless one of them took it first.
 *
 * The lock is biased to the first thread that takes it: a device is
 * nearly always used by one thread (the one that probes it, then the one
 * that unbinds it), and the compare-and-swap is a third of the cost of a
 * managed allocation. The owner of the bias takes the lock with a plain
 * store of devres_bias_held and a plain load of devres_bias_revoking (an
 * asymmetric Dekker); any other thread first revokes the bias, once for
 * the device's life: it sets revoking, makes every running thread of the
 * process execute a full barrier (membarrier(MEMBARRIER_CMD_PRIVATE_
 * EXPEDITED)), waits for the owner to leave its critical section, and
 * marks the bias revoked. From then on every thread, the owner too, takes
 * the atomic lock. The bias is granted only while holding the atomic
 * lock, and a thread that finds it granted to another after taking the
 * atomic lock lets go and revokes.
 *
 * Without membarrier (an old kernel, a seccomp filter) no bias is granted.
 * ThreadSanitizer builds never grant one (node.h).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <time.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include "node.h"

TLS_FAST char devres__self;

#define REVOKED DR_BIAS_REVOKED

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void spin(unsigned int *spins)
{
	if (++*spins < 64)
		cpu_relax();
	else
		sched_yield();
}

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

#ifndef DR_NO_BIAS
/*
 * Registered by the process: once, without a system call per device. A
 * child of fork() has a new address space, not registered: it forgets
 * (and one that forks by other means registers in revoke_bias()).
 */
static bool registered;

static void forget_registration(void)
{
	__atomic_store_n(&registered, false, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void lock_atfork(void)
{
	devres__pthread_atfork(NULL, NULL, forget_registration);
}

static int bias_ok(void)
{
	if (__atomic_load_n(&registered, __ATOMIC_ACQUIRE))
		return 1;
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return 0;
	__atomic_store_n(&registered, true, __ATOMIC_RELEASE);
	return 1;
}
#endif

static void revoke_bias(struct device *dev)
{
	unsigned int spins = 0;
	int err = errno;

	if (__atomic_exchange_n(&dev->devres_bias_revoking, 1,
				__ATOMIC_SEQ_CST)) {
		/* Another thread revokes: wait for it to finish. */
		while (__atomic_load_n(&dev->devres_bias, __ATOMIC_ACQUIRE) !=
		       REVOKED)
			spin(&spins);
		return;
	}
	/*
	 * After the barrier the owner either saw revoking (and takes the
	 * atomic lock from now on) or its held = 1 is visible here.
	 * bias_ok() succeeded in this process when the bias was granted;
	 * a child of fork() registers again. Failing both, nothing else
	 * is safe: hold on until it works.
	 */
	while (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
		(void)membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
		spin(&spins);
	}
	while (__atomic_load_n(&dev->devres_bias_held, __ATOMIC_ACQUIRE))
		spin(&spins);
	__atomic_store_n(&dev->devres_bias, REVOKED, __ATOMIC_RELEASE);
	errno = err;
}

/*
 * Spin: the word is looked at after 1, 2, 4, ... 32 pauses, 63 in all,
 * about a microsecond, which a critical section not preempted never
 * exceeds; longer only burns the CPU that a preempted holder needs. The
 * looks are spaced out because each one pulls the line away from the
 * holder, which writes it again to let go: eight looks a wait instead of
 * sixty-four.
 */
#define SPIN_LOOKS 6
#define STARVE_WAKES 4
#define STARVE_NS 1000000L

HIDDEN unsigned long devres__lock_parks;
HIDDEN unsigned long devres__lock_handoffs;

static long futex(unsigned int *word, int op, unsigned int val)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, NULL,
		       NULL, 0);
}

static long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static bool cas(unsigned int *l, unsigned int *v, unsigned int nv)
{
	return __atomic_compare_exchange_n(l, v, nv, true, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static bool starving(unsigned int wakes, long since)
{
	return wakes >= STARVE_WAKES || mono_ns() - since >= STARVE_NS;
}

/*
 * Takes the word if it is free, or handed over to a thread that slept
 * (@slept); clears @end (STARVING, for a starving thread). A thread that
 * slept takes it with PARKED, as others may sleep still: its unlock wakes
 * one.
 */
static bool try_take(unsigned int *l, bool slept, unsigned int end)
{
	unsigned int v = __atomic_load_n(l, __ATOMIC_RELAXED);

	for (;;) {
		if ((v & DR_HANDOFF) && slept) {
			if (cas(l, &v, v & ~(DR_HANDOFF | end))) {
				__atomic_add_fetch(&devres__lock_handoffs, 1,
						   __ATOMIC_RELAXED);
				return true;
			}
			continue;
		}
		if (v & DR_LOCKED)
			return false;
		if (cas(l, &v,
			(v & ~end) | DR_LOCKED | (slept ? DR_PARKED : 0)))
			return true;
	}
}

/* The spin: false if the word is still held after it. */
static bool spin_take(unsigned int *l, bool slept, unsigned int end)
{
	for (int k = 0; k < SPIN_LOOKS; k++) {
		if (try_take(l, slept, end))
			return true;
		for (int i = 0; i < 1 << k; i++)
			cpu_relax();
	}
	return try_take(l, slept, end);
}

/*
 * Takes the atomic lock: spin, then sleep on the word (see the top). A
 * thread woken spins again before it sleeps again: the holder that took
 * the lock while it was being scheduled lets it go within the spin, and
 * a thread that slept at once would lose its place to every newcomer.
 */
static void word_lock(struct device *dev)
{
	unsigned int *l = lock_word(dev), v, nv;
	unsigned int wakes = 0;
	bool slept = false; /* called FUTEX_WAIT: may take a hand-over */
	long since;
	int err = errno;

	if (spin_take(l, false, 0))
		return;
	since = mono_ns();
	for (;;) {
		/* A starving thread that gets the lock ends the hand-overs. */
		bool starved = slept && starving(wakes, since);
		unsigned int end = starved ? DR_STARVING : 0;

		if (slept ? spin_take(l, true, end) : try_take(l, false, 0))
			break;
		v = __atomic_load_n(l, __ATOMIC_RELAXED);
		if (!(v & DR_LOCKED) || ((v & DR_HANDOFF) && slept))
			continue;
		nv = v | DR_PARKED;
		if (starved)
			nv |= DR_STARVING;
		if (nv != v && !__atomic_compare_exchange_n(l, &v, nv, true,
							    __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED))
			continue;
		if (futex(l, FUTEX_WAIT, nv) == 0)
			wakes++;
		slept = true;
		__atomic_add_fetch(&devres__lock_parks, 1, __ATOMIC_RELAXED);
	}
	errno = err;
}

void devres__unlock_slow(struct device *dev)
{
	unsigned int *l = lock_word(dev);
	unsigned int v = __atomic_load_n(l, __ATOMIC_RELAXED);
	bool handing = false;
	int err = errno;

	if ((v & (DR_STARVING | DR_PARKED)) == (DR_STARVING | DR_PARKED)) {
		/* Only the holder clears LOCKED; others add PARKED, STARVING. */
		while (!__atomic_compare_exchange_n(l, &v, v | DR_HANDOFF, true,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED))
			;
		if (futex(l, FUTEX_WAKE, 1) > 0) {
			errno = err;
			return;
		}
		/* Nobody asleep: let it go, unless a waiter took it. */
		handing = true;
		v = __atomic_load_n(l, __ATOMIC_RELAXED);
	}
	for (;;) {
		if (handing && !(v & DR_HANDOFF))
			break;
		if (__atomic_compare_exchange_n(
			    l, &v, v & ~(DR_LOCKED | DR_PARKED | DR_HANDOFF),
			    true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
			if (v & DR_PARKED)
				futex(l, FUTEX_WAKE, 1);
			break;
		}
	}
	errno = err;
}

static bool biased_elsewhere(struct device *dev)
{
	void *b = __atomic_load_n(&dev->devres_bias, __ATOMIC_ACQUIRE);

	return b && b != REVOKED && b != devres__me();
}

bool devres__lock_slow(struct device *dev, const char *func)
{
	if (__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
	    devres__me()) {
		devres__warn(dev, func,
			     "devres called on this device from a match or "
			     "for-each callback");
		return false;
	}
	for (;;) {
		if (biased_elsewhere(dev))
			revoke_bias(dev);
		word_lock(dev);
		/* Granted to another while we waited: let go, revoke. */
		if (!biased_elsewhere(dev))
			break;
		word_unlock(dev);
	}
#ifndef DR_NO_BIAS
	/*
	 * The first taker gets the bias; it holds the atomic lock this time
	 * (unlock_dev() sees held == 0 and releases it).
	 */
	if (!__atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&dev->devres_bias_revoking, __ATOMIC_RELAXED) &&
	    bias_ok())
		__atomic_store_n(&dev->devres_bias, devres__me(),
				 __ATOMIC_RELEASE);
#endif
	__atomic_store_n(&dev->devres_owner, devres__me(), __ATOMIC_RELAXED);
	return true;
}
