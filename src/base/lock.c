// SPDX-License-Identifier: MIT
/*
 * The device's devres lock, beyond its inline fast paths (node.h).
 *
 * A word taken with a compare-and-swap. A thread that finds it held
 * spins a little (a critical section is a few pointer moves: the holder
 * is done within a microsecond unless it was preempted), then sleeps on
 * the word with a private futex. Releases let the lock go and wake one
 * sleeper each, which competes with whoever arrives meanwhile (barging: the
 * lock never sits idle while a woken thread is scheduled). A waiter that
 * has been woken STARVE_WAKES times, or has waited STARVE_NS, without
 * getting the lock is starving: once woken, it spins with STARVING set
 * in the word, looking at it often, and a release that finds STARVING
 * hands the lock over, still held, to it, waiting a moment for it to
 * take it. Only a thread on a CPU can: a starving thread whose spin ends
 * (the holder was preempted) sleeps again and clears STARVING, and a
 * release whose hand-over is not taken in time (the starving thread was
 * preempted) takes the lock back, clears STARVING (which a starving
 * thread still spinning sets again) and lets it go.
 * Handing the lock to a thread asleep, to be taken once it was woken and
 * scheduled, held every thread for as long as the scheduler took: up to
 * 36 ms a hand-over on a loaded machine. So a starving thread gets the
 * lock at the first release while it runs, as in parking_lot's "eventual
 * fairness", while the common case keeps the throughput of barging.
 *
 * That alone left a waiter off its CPU without the lock for as long as
 * the scheduler kept it off: a preempted starving thread is handed
 * nothing. So the fairness is bounded against the lock itself as well: a
 * waiter that has waited DUE_NS, or been woken DUE_WAKES times, without
 * the lock is due. It takes a ticket in the word (the next due ticket)
 * while the word is held, and from then on every release hands the lock
 * over, still held, to the due waiter whose ticket is served, in the order
 * they came due, and wakes it if it sleeps (on a bitset of its ticket),
 * with no taking back: it gets the lock when it next runs, even if it was
 * preempted, and the others wait meanwhile. A waiter asleep sleeps
 * no longer than until it would be due, so one that nobody wakes counts
 * itself all the same. The cost is one wait for the scheduler a due
 * waiter, at most one every DUE_NS a thread.
 *
 * A due hand-over alone bounds a wait, not a share: the due waiter took
 * the lock once, and its next take found the lock with a thread that had
 * taken it back to back meanwhile, lost its spin again, slept again, and
 * waited until it was due again, one operation every DUE_NS: pinned, 8
 * threads on 2 CPUs, a thread that ran 0.80 of its CPU share got 0.16 of
 * the operations. So a thread that took the lock as due keeps its
 * priority on that lock for its next GRACE_TAKES takes that find it held
 * (its grace), as parking_lot gives the thread it woke the lock and its
 * next turn: such a take whose first spin fails spins as starving at
 * once, and again each time it is woken: a release hands it the lock
 * while it runs. A grace does not make a take due: one whose spin fails
 * (the holder was preempted) sleeps, and comes due by its wait as any
 * waiter does. Due at once, it was handed the lock asleep or off its CPU
 * at nearly every take on a loaded machine, and every other thread
 * waited for the scheduler to run it (a convoy): pinned, 8 threads on 2
 * CPUs beside 4 busy loops (bench/lock-loaded.sh, load 18 to 22), 1 400
 * to 3 200 hand-overs to a due waiter in a run of 3 s (three windows of
 * both sides), the lock handed over and not yet taken for 1.2 to 2.7 s
 * of it (DR_LOCK_LAT), above 2 x the baseline in 15 of 21 windows and
 * below half its share in 14; due by its wait only, 220 to 460
 * hand-overs, 0.5 to 1.4 s, none of 21 above 2 x and 6 below half.
 * The priority is bounded: GRACE_TAKES takes a wait of DUE_NS.
 *
 * Why a starving thread whose spin ends sleeps, rather than yield: on a
 * loaded machine, a woken thread's spin fails because the holder is off
 * its CPU on the woken thread's own CPU, preempted at the end of its time
 * slice inside its critical section (not by the wake: a thread that runs
 * at once after the wake finds the holder on a CPU). A yield does not give
 * that CPU to the holder (the scheduler runs whichever task is due next)
 * and costs the yielding thread its place: starving threads that yielded,
 * with releases yielding to a starving thread on their own CPU, left a
 * thread of eight with no operation at all in 6 to 10 of 12 loaded runs
 * (3 of 12 without). Handing the lock to a starving thread woken for it
 * (a wake on its own bitset), taken from it by a waiter after 50 or
 * 500 us, changed nothing measured.
 *
 * No wake-up is lost: a waiter sets PARKED before it sleeps, and sleeps
 * only while the word still holds the value it saw (FUTEX_WAIT compares
 * it under the kernel's lock); a release that finds PARKED clears it as it
 * lets go and wakes one, and sets it again if the wake found a sleeper,
 * as others may sleep still; a thread back from the futex takes the lock
 * with PARKED set again. A wake that found nobody leaves it clear: nobody
 * slept then, and a waiter on its way to sleep finds the word changed.
 *
 * The lock is biased to the first thread that takes it: a device is
 * nearly always used by one thread (the one that probes it, then the one
 * that unbinds it), and the compare-and-swap is a third of the cost of a
 * managed allocation. The owner of the bias takes the lock with a plain
 * store of devres_bias_held and a plain load of devres_bias_revoking (an
 * asymmetric Dekker). The bias is granted and revoked only with the atomic
 * lock held: a thread that takes it and finds the bias granted to another
 * revokes it, once for the device's life, before its critical section:
 * it sets revoking, makes every running thread of the process execute a
 * full barrier (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)), waits
 * (asleep once a short spin is over: the owner wakes it) for the owner to
 * leave its critical section, and marks the bias revoked. Threads that
 * come meanwhile wait for the atomic lock as for any holder. From then on
 * every thread, the owner too, takes the atomic lock: inline when its word
 * is free (node.h, word_take_free()), here otherwise. Taking a free word
 * here cost a shared device's threads about 20 ns of CPU an operation
 * (the call, errno kept, the checks of a take that waits): twice the
 * hand-written baseline's CPU, pinned to one CPU where they never wait.
 *
 * Without membarrier (an old kernel, a seccomp filter) no bias is granted.
 * ThreadSanitizer builds never grant one (node.h).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <time.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include "node.h"

TLS_FAST char devres__self;

static long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/*
 * Per-thread counts of the slow paths: built with -DDR_LOCK_TRACE only,
 * read by bench-contention (BENCH_TRACE=1) linked with the static library.
 */
#ifdef DR_LOCK_TRACE
struct devres__lock_trace {
	unsigned long slow, spin_fail, waits, woken, starved, handoffs, hand,
		hand_back, revokes, wakes, wakes_none;
	/*
	 * Of the spins that failed (first, after a wake, as starving), those
	 * that found the holder on this thread's CPU: preempted there. Wakes
	 * run within WAKE_QUICK_NS of the last wake sent, and of them, those
	 * whose spin failed so (the woken thread preempting the holder).
	 */
	unsigned long spin_same, woken_fail, woken_same, starve_fail,
		starve_same, woken_quick, quick_same;
	bool quick;
	/*
	 * Time spent revoking the bias; of it, in membarrier() and waiting
	 * for the owner to leave its critical section.
	 */
	unsigned long revoke_ns, barrier_ns, owner_ns;
	/*
	 * Waits past the bound of eventual fairness, hand-overs given to a
	 * due waiter, and taken by this thread as due.
	 */
	unsigned long due, due_hand, due_taken;
	/* Takes in a grace after a due take; of them, handed over. */
	unsigned long grace, grace_taken;
};
HIDDEN __thread struct devres__lock_trace devres__lock_trace;
#define LOCK_TRACE(f) (devres__lock_trace.f++)
/*
 * The CPU of the last thread to take a lock word, and when the last wake
 * was sent: one device in the benchmark, so one place does.
 */
static int holder_cpu = -1;
static long last_wake;
#define WAKE_QUICK_NS 50000L
static bool holder_here(void)
{
	return __atomic_load_n(&holder_cpu, __ATOMIC_RELAXED) == sched_getcpu();
}
#define LOCK_TRACE_HOLDER()                                                    \
	__atomic_store_n(&holder_cpu, sched_getcpu(), __ATOMIC_RELAXED)
#define LOCK_TRACE_NS(f, t0)                                                   \
	(devres__lock_trace.f += (unsigned long)(mono_ns() - (t0)))
/* A take in a grace that was handed over (@h0: handoffs before it). */
#define LOCK_TRACE_GRACE(graced, h0)                                           \
	do {                                                                   \
		if ((graced) && devres__lock_trace.handoffs != (h0))           \
			LOCK_TRACE(grace_taken);                               \
	} while (0)
#define LOCK_TRACE_H0() (devres__lock_trace.handoffs)
#define LOCK_TRACE_FAIL(f, same)                                               \
	do {                                                                   \
		LOCK_TRACE(f);                                                 \
		if (holder_here())                                             \
			LOCK_TRACE(same);                                      \
	} while (0)
#else
#define LOCK_TRACE(f) ((void)0)
#define LOCK_TRACE_HOLDER() ((void)0)
#define LOCK_TRACE_FAIL(f, same) ((void)0)
#define LOCK_TRACE_NS(f, t0) ((void)(t0))
#define LOCK_TRACE_GRACE(graced, h0) ((void)(h0))
#define LOCK_TRACE_H0() 0UL
#endif

#define REVOKED DR_BIAS_REVOKED

/*
 * Built with -DDR_LOCK_LAT: process-wide counts of the hand-overs and
 * wakes, and how long each hand-over to a due waiter, and each wake,
 * waited for the thread it went to to run, printed at exit (one device
 * in the benchmarks, so one place for the last of each does).
 */
#ifdef DR_LOCK_LAT
#include <stdio.h>
/* Count, total ns, max ns, then how many within 10 us, 100 us, 1, 10 ms. */
enum {
	LAT_N,
	LAT_SUM,
	LAT_MAX,
	LAT_BUCKETS,
	LAT_LEN = LAT_BUCKETS + 5
};
static unsigned long lat_due[LAT_LEN], lat_wake[LAT_LEN];
static unsigned long lat_due_made, lat_hand, lat_hand_back;
static long due_at, wake_at;

static void lat_add(unsigned long *c, long t0)
{
	unsigned long d = (unsigned long)(mono_ns() - t0);
	int b = 0;

	for (unsigned long top = 10000; b < 4 && d > top; top *= 10)
		b++;
	__atomic_add_fetch(&c[LAT_N], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c[LAT_SUM], d, __ATOMIC_RELAXED);
	if (d > __atomic_load_n(&c[LAT_MAX], __ATOMIC_RELAXED))
		__atomic_store_n(&c[LAT_MAX], d, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c[LAT_BUCKETS + b], 1, __ATOMIC_RELAXED);
}

static void lat_show(const char *what, const unsigned long *c)
{
	char line[256];

	snprintf(line, sizeof(line),
		 "lock-lat %s: %lu, total %.1f ms, max %.2f ms, <=10us %lu "
		 "<=100us %lu <=1ms %lu <=10ms %lu more %lu",
		 what, c[LAT_N], (double)c[LAT_SUM] / 1e6,
		 (double)c[LAT_MAX] / 1e6, c[LAT_BUCKETS], c[LAT_BUCKETS + 1],
		 c[LAT_BUCKETS + 2], c[LAT_BUCKETS + 3], c[LAT_BUCKETS + 4]);
	devres__log_raw(line);
}

__attribute__((destructor)) static void lat_print(void)
{
	char line[160];

	lat_show("due hand-over to taken", lat_due);
	lat_show("wake to woken running", lat_wake);
	snprintf(line, sizeof(line),
		 "lock-lat made due %lu, starving hand-overs %lu, taken back "
		 "%lu",
		 lat_due_made, lat_hand, lat_hand_back);
	devres__log_raw(line);
}
#define LAT_MARK(at) __atomic_store_n(&(at), mono_ns(), __ATOMIC_RELAXED)
#define LAT_ADD(c, at) lat_add(c, __atomic_load_n(&(at), __ATOMIC_RELAXED))
#define LAT_COUNT(c) __atomic_add_fetch(&(c), 1, __ATOMIC_RELAXED)
#else
#define LAT_MARK(at) ((void)0)
#define LAT_ADD(c, at) ((void)0)
#define LAT_COUNT(c) ((void)0)
#endif

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

static long futex(unsigned int *word, int op, unsigned int val)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, NULL,
		       NULL, 0);
}

/*
 * The lock word's sleepers wait on bitsets: a due waiter on that of its
 * ticket, which only an unlock handing the lock to that ticket wakes, the
 * others on WAIT_ANY, until @deadline (CLOCK_MONOTONIC, ns) if not 0.
 */
#define WAIT_ANY 1u
#define WAIT_DUE(ticket) (2u << ((ticket) % 31))

static long futex_wait(unsigned int *word, unsigned int val,
		       unsigned int bitset, long deadline)
{
	struct timespec ts = { deadline / 1000000000L, deadline % 1000000000L };

	return syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
		       val, deadline ? &ts : NULL, NULL, bitset);
}

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

#ifndef DR_NO_BIAS
/*
 * Registered by the process: once, without a system call per device.
 * Whether a child of fork() is registered depends on the kernel: Linux
 * 6.18 copies the registration with the address space, a kernel that
 * does not leaves the child unregistered. The child forgets the flag
 * either way and registers at its first grant, one system call that
 * succeeds whether or not the registration was inherited (and one that
 * forks by other means registers in revoke_bias()).
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

/*
 * The looks before a revoker sleeps: a critical section not preempted
 * ends within them.
 */
#define REVOKE_LOOKS 64

/*
 * The revoker waits for the owner of the bias to leave its critical
 * section: spins a little, then sleeps on devres_bias_held, which the
 * owner wakes when it lets the lock go and finds a revocation under way
 * (devres__bias_left()). No wake is lost: after the barrier, an owner
 * whose held = 1 is seen here reads revoking when it clears held (it
 * takes the atomic lock from then on), and FUTEX_WAIT sleeps only while
 * held is still 1.
 */
static void await_owner(struct device *dev)
{
	unsigned int *h = (unsigned int *)&dev->devres_bias_held;

	for (int k = 0; k < REVOKE_LOOKS; k++) {
		if (!__atomic_load_n(h, __ATOMIC_ACQUIRE))
			return;
		cpu_relax();
	}
	while (__atomic_load_n(h, __ATOMIC_ACQUIRE))
		(void)futex(h, FUTEX_WAIT, 1);
}

void devres__bias_left(struct device *dev)
{
	int err = errno;

	(void)futex((unsigned int *)&dev->devres_bias_held, FUTEX_WAKE, 1);
	errno = err;
}

/*
 * With the atomic lock held: the threads that come meanwhile wait for it
 * as for any holder, asleep on the word, and find the bias revoked when
 * they get it. Waiting for the revocation apart from the lock, spinning
 * with sched_yield() or asleep until a wake-all, stalled every thread
 * 8 to 72 ms in loaded runs: the thread they waited for (the owner, the
 * revoker, or the revoker in the middle of its wake-all, preempted by the
 * first thread it woke) was off its CPU, and the yielding threads took
 * the CPU share of the process that it needed.
 */
static void revoke_bias(struct device *dev)
{
	unsigned int spins = 0;
	int err = errno;
	long t0 = 0;

	LOCK_TRACE(revokes);
	__atomic_store_n(&dev->devres_bias_revoking, 1, __ATOMIC_SEQ_CST);
	/*
	 * After the barrier the owner either saw revoking (and takes the
	 * atomic lock from now on) or its held = 1 is visible here.
	 * bias_ok() succeeded in this process when the bias was granted;
	 * a child of fork() registers again. Failing both, nothing else
	 * is safe: hold on until it works.
	 */
#ifdef DR_LOCK_TRACE
	t0 = mono_ns();
#endif
	while (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
		(void)membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
		spin(&spins);
	}
	LOCK_TRACE_NS(barrier_ns, t0);
#ifdef DR_LOCK_TRACE
	t0 = mono_ns();
#endif
	await_owner(dev);
	LOCK_TRACE_NS(owner_ns, t0);
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
#define STARVE_LOOKS 64
#define STARVE_PAUSES 2
#define HAND_LOOKS 64
/*
 * The bound of eventual fairness: a waiter that has waited this long, or
 * been woken this many times, without the lock is due (the top).
 */
#define DUE_WAKES 16
#define DUE_NS 4000000L
/*
 * After a due take, the thread's next takes of that lock that find it held
 * and are first (the top).
 */
#define GRACE_TAKES 16u

/*
 * The grace of this thread (the top): the lock word it is on and how many
 * of its takes are left. A thread waits for one lock at a time; a signal
 * handler that takes a lock while its thread waits for another may spend
 * the grace or end it, no more.
 */
static TLS_FAST struct {
	const unsigned int *word;
	unsigned int left;
} grace;

HIDDEN unsigned long devres__lock_parks;
HIDDEN unsigned long devres__lock_handoffs;
HIDDEN unsigned long devres__lock_due_handoffs;

static bool cas(unsigned int *l, unsigned int *v, unsigned int nv)
{
	return __atomic_compare_exchange_n(l, v, nv, true, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static bool starving(unsigned int wakes, long since)
{
	return wakes >= STARVE_WAKES || mono_ns() - since >= STARVE_NS;
}

static bool overdue(unsigned int wakes, long since)
{
	return wakes >= DUE_WAKES || mono_ns() - since >= DUE_NS;
}

/* Whether this take of @l is in a grace (the top): it spends one if so. */
static bool in_grace(const unsigned int *l)
{
	if (grace.word != l || !grace.left)
		return false;
	grace.left--;
	LOCK_TRACE(grace);
	return true;
}

/* No due waiter: a ticket for none. */
#define NOT_DUE 0x1000u

/*
 * The word with the next due ticket served; both tickets 0 once none is
 * due, so that the inline unlock (a word of LOCKED alone) works again.
 */
static unsigned int served(unsigned int v)
{
	unsigned int head = (DR_DUE_HEAD(v) + 1) & 0xfffu;

	if (head == DR_DUE_TAIL(v))
		return v & 0xffu;
	return (v & 0xfffffu) | head << 20;
}

/*
 * Takes the word if it is free, or handed over: to the due thread whose
 * ticket is served (@ticket) while one is due, which takes its ticket out
 * of the word as it takes the lock, else to the starving thread
 * (@starver), which clears STARVING when it gets the lock. One that slept
 * (@slept) takes it with PARKED, as others may sleep still: its unlock
 * wakes one. A starver that finds the word held sets STARVING again: a
 * release that waited in vain for it to take a hand-over clears it.
 */
static bool try_take(unsigned int *l, bool slept, bool starver,
		     unsigned int ticket)
{
	unsigned int v = __atomic_load_n(l, __ATOMIC_RELAXED);
	unsigned int end = starver ? DR_STARVING : 0;
	bool due = ticket != NOT_DUE;

	for (;;) {
		if (v & DR_HANDOFF) {
			if (!(DR_DUE_COUNT(v) ? due && DR_DUE_HEAD(v) == ticket
					      : starver))
				return false;
			if (cas(l, &v,
				(due ? served(v) : v) &
					~(DR_HANDOFF | DR_STARVING))) {
				__atomic_add_fetch(&devres__lock_handoffs, 1,
						   __ATOMIC_RELAXED);
				LOCK_TRACE(handoffs);
				if (due) {
					__atomic_add_fetch(
						&devres__lock_due_handoffs, 1,
						__ATOMIC_RELAXED);
					LOCK_TRACE(due_taken);
					LAT_ADD(lat_due, due_at);
				}
				return true;
			}
			continue;
		}
		if (v & DR_LOCKED) {
			if (starver && !(v & DR_STARVING) &&
			    !cas(l, &v, v | DR_STARVING))
				continue;
			return false;
		}
		/* A word with a due waiter is never free: nobody is due. */
		if (cas(l, &v,
			(v & ~end) | DR_LOCKED | (slept ? DR_PARKED : 0)))
			return true;
	}
}

/* The spin: false if the word is still held after it. */
static bool spin_take(unsigned int *l, bool slept, unsigned int ticket)
{
	for (int k = 0; k < SPIN_LOOKS; k++) {
		if (try_take(l, slept, false, ticket))
			return true;
		for (int i = 0; i < 1 << k; i++)
			cpu_relax();
	}
	return try_take(l, slept, false, ticket);
}

/*
 * Takes the next due ticket: only while the word is held (a word with a
 * due waiter is never let go, only handed over). NOT_DUE if the word is
 * free, to be taken, or if 4095 waiters are due already (this one waits
 * as before, and comes due again later).
 */
static unsigned int make_due(unsigned int *l)
{
	unsigned int v = __atomic_load_n(l, __ATOMIC_RELAXED), t;

	do {
		if (!(v & DR_LOCKED) || DR_DUE_COUNT(v) == 0xfffu)
			return NOT_DUE;
		t = DR_DUE_TAIL(v);
	} while (!__atomic_compare_exchange_n(
		l, &v, (v & ~0xfff00u) | (((t + 1) & 0xfffu) << 8), true,
		__ATOMIC_RELAXED, __ATOMIC_RELAXED));
	LOCK_TRACE(due);
	LAT_COUNT(lat_due_made);
	return t;
}

/*
 * A starving thread looks at the word every STARVE_PAUSES pauses, more
 * often than a release waits for it to take a hand-over (HAND_LOOKS), with
 * STARVING set; false if it is still held after STARVE_LOOKS looks (the
 * holder was preempted): it sleeps then, and clears STARVING. One that
 * slept (@slept) takes the lock with PARKED (try_take()).
 */
static bool starve(unsigned int *l, bool slept)
{
	for (int k = 0; k < STARVE_LOOKS; k++) {
		if (try_take(l, slept, true, NOT_DUE))
			return true;
		for (int i = 0; i < STARVE_PAUSES; i++)
			cpu_relax();
	}
	return try_take(l, slept, true, NOT_DUE);
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
	bool slept = false; /* called FUTEX_WAIT: takes the lock with PARKED */
	unsigned int ticket = NOT_DUE; /* due: its place in the word */
	bool graced; /* in a grace: spins as starving at once */
	unsigned long h0 = LOCK_TRACE_H0();
	long since;
	int err = errno;

	LOCK_TRACE(slow);
	if (spin_take(l, false, NOT_DUE))
		return;
	LOCK_TRACE_FAIL(spin_fail, spin_same);
	since = mono_ns();
	graced = in_grace(l);
	if (graced && starve(l, false)) {
		LOCK_TRACE_GRACE(graced, h0);
		errno = err;
		return;
	}
	for (;;) {
		if (slept ? spin_take(l, true, ticket)
			  : try_take(l, false, false, ticket))
			break;
#ifdef DR_LOCK_TRACE
		if (slept) {
			LOCK_TRACE_FAIL(woken_fail, woken_same);
			if (devres__lock_trace.quick && holder_here())
				LOCK_TRACE(quick_same);
			devres__lock_trace.quick = false;
		}
#endif
		if (ticket == NOT_DUE && overdue(wakes, since)) {
			ticket = make_due(l);
			if (ticket != NOT_DUE ||
			    !(__atomic_load_n(l, __ATOMIC_RELAXED) & DR_LOCKED))
				continue;
		}
		if (ticket == NOT_DUE && slept &&
		    (graced || starving(wakes, since))) {
			LOCK_TRACE(starved);
			if (starve(l, true))
				break;
			LOCK_TRACE_FAIL(starve_fail, starve_same);
		}
		v = __atomic_load_n(l, __ATOMIC_RELAXED);
		if (!(v & DR_LOCKED))
			continue;
		if (ticket != NOT_DUE) {
			/* Handed over to this ticket: taken above. */
			if ((v & DR_HANDOFF) && DR_DUE_HEAD(v) == ticket)
				continue;
			nv = v;
		} else {
			nv = (v | DR_PARKED) & ~DR_STARVING;
			if (nv != v &&
			    !__atomic_compare_exchange_n(l, &v, nv, true,
							 __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
				continue;
		}
		LOCK_TRACE(waits);
		/*
		 * Not yet due, it sleeps no longer than until it is: a
		 * waiter nobody wakes becomes due all the same.
		 */
		if (futex_wait(l, nv,
			       ticket != NOT_DUE ? WAIT_DUE(ticket) : WAIT_ANY,
			       ticket != NOT_DUE ? 0 : since + DUE_NS) == 0) {
			wakes++;
			LOCK_TRACE(woken);
			LAT_ADD(lat_wake, wake_at);
#ifdef DR_LOCK_TRACE
			devres__lock_trace.quick =
				mono_ns() - __atomic_load_n(&last_wake,
							    __ATOMIC_RELAXED) <
				WAKE_QUICK_NS;
			if (devres__lock_trace.quick)
				LOCK_TRACE(woken_quick);
#endif
		}
		slept = true;
		__atomic_add_fetch(&devres__lock_parks, 1, __ATOMIC_RELAXED);
	}
	if (ticket != NOT_DUE) {
		/* Taken as due: a grace begins (the top). */
		grace.word = l;
		grace.left = GRACE_TAKES;
	}
	LOCK_TRACE_GRACE(graced, h0);
	errno = err;
}

/*
 * With a due waiter counted in the word (@v as last seen), a release hands
 * the lock over, still held, and wakes one due sleeper: the due waiter
 * takes it when it runs, however long that is (it may be preempted, or
 * asleep), and nobody else does meanwhile. The word is never let go while
 * a due waiter is counted, so one always comes for it: running, it takes
 * the hand-over; asleep, it is woken here; on its way to sleep, its
 * FUTEX_WAIT finds the word changed.
 */
static void hand_due(unsigned int *l, unsigned int v)
{
	while (!(v & DR_HANDOFF) &&
	       !__atomic_compare_exchange_n(l, &v, v | DR_HANDOFF, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	LOCK_TRACE(due_hand);
	LAT_MARK(due_at);
	LAT_MARK(wake_at);
	(void)syscall(SYS_futex, l, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG,
		      INT_MAX, NULL, NULL, WAIT_DUE(DR_DUE_HEAD(v)));
}

/*
 * With STARVING set, a release hands the lock, still held, to the
 * starving thread, and waits HAND_LOOKS pauses for it to take it. A
 * starving thread preempted or yielding meanwhile does not get it: the
 * release takes it back and lets it go rather than hold every thread
 * until the scheduler runs the one it was handed to.
 */
void devres__unlock_slow(struct device *dev)
{
	unsigned int *l = lock_word(dev);
	unsigned int v = __atomic_load_n(l, __ATOMIC_RELAXED), nv;
	bool handing = false;
	int err = errno;

	if (DR_DUE_COUNT(v)) {
		hand_due(l, v);
		errno = err;
		return;
	}
	if (v & DR_STARVING) {
		/* Only the holder clears LOCKED; others add PARKED, STARVING. */
		while (!__atomic_compare_exchange_n(l, &v, v | DR_HANDOFF, true,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED))
			;
		LOCK_TRACE(hand);
		LAT_COUNT(lat_hand);
		for (int k = 0; k < HAND_LOOKS; k++) {
			if (!(__atomic_load_n(l, __ATOMIC_RELAXED) &
			      DR_HANDOFF)) {
				errno = err;
				return;
			}
			cpu_relax();
		}
		LOCK_TRACE(hand_back);
		LAT_COUNT(lat_hand_back);
		handing = true;
		v = __atomic_load_n(l, __ATOMIC_RELAXED);
	}
	for (;;) {
		/* Taken at the last moment. */
		if (handing && !(v & DR_HANDOFF)) {
			errno = err;
			return;
		}
		/* A waiter became due meanwhile: the lock is its. */
		if (DR_DUE_COUNT(v)) {
			hand_due(l, v);
			errno = err;
			return;
		}
		nv = v & ~(DR_LOCKED | DR_HANDOFF | DR_PARKED);
		if (handing)
			nv &= ~DR_STARVING;
		if (__atomic_compare_exchange_n(l, &v, nv, true,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			break;
	}
	/*
	 * A wake that found a sleeper sets PARKED again, so that the next
	 * release wakes the next one: one woken at a time, each waiting to be
	 * scheduled before it set PARKED again, left threads asleep for a
	 * whole 300 ms run on a loaded machine. A wake that found nobody
	 * leaves it clear. Kept set until a release found the word as it had
	 * left it, which a thread taking the lock meanwhile prevented, PARKED
	 * cost a FUTEX_WAKE for nobody at most releases while two threads
	 * took turns on a quiet machine.
	 */
	if (v & DR_PARKED) {
		LOCK_TRACE(wakes);
#ifdef DR_LOCK_TRACE
		__atomic_store_n(&last_wake, mono_ns(), __ATOMIC_RELAXED);
#endif
		LAT_MARK(wake_at);
		if (futex(l, FUTEX_WAKE, 1) > 0)
			__atomic_or_fetch(l, DR_PARKED, __ATOMIC_RELAXED);
		else
			LOCK_TRACE(wakes_none);
	}
	errno = err;
}

static bool biased_elsewhere(struct device *dev)
{
	void *b = __atomic_load_n(&dev->devres_bias, __ATOMIC_ACQUIRE);

	return b && b != REVOKED && b != devres__me();
}

TLS_FAST struct device *devres__lock_busy;

/*
 * Whether this thread is half way into or out of the device's lock: only
 * a signal handler can run here then. The owner of the bias sets held
 * before it records itself and clears it after its record (node.h); a
 * thread of the atomic lock has the device in devres__lock_busy from
 * before it takes the word until it has recorded itself, and from before
 * it clears its record until the word is free.
 */
static bool half_way(struct device *dev)
{
	if (__atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED) ==
		    devres__me() &&
	    __atomic_load_n(&dev->devres_bias_held, __ATOMIC_RELAXED))
		return true;
	return devres__lock_busy == dev;
}

bool devres__dev_locked_here(const struct device *dev, const char *func)
{
	struct device *d = (struct device *)dev;

	/* In devres__lock_slow()'s order, with its WARNs. */
	if (unlikely(__atomic_load_n(&d->devres_owner, __ATOMIC_RELAXED) ==
		     devres__me())) {
		devres__warn(dev, func,
			     "devres called on this device from a match or "
			     "for-each callback");
		return true;
	}
	if (likely(!half_way(d)))
		return false;
	devres__warn_async(dev, func,
			   "called from a signal handler while its thread "
			   "takes or lets go of the device's devres lock: "
			   "refused");
	return true;
}

bool devres__lock_slow(struct device *dev, const char *func)
{
	struct device *was;
#ifndef DR_NO_BIAS
	void *bias;
#endif

	if (__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
	    devres__me()) {
		devres__warn(dev, func,
			     "devres called on this device from a match or "
			     "for-each callback");
		return false;
	}
	if (unlikely(half_way(dev))) {
		devres__warn_async(dev, func,
				   "called from a signal handler while its "
				   "thread takes or lets go of the device's "
				   "devres lock: refused");
		return false;
	}
	/*
	 * The slow path may sleep, revoke a bias and call membarrier()
	 * before it records the owner.
	 */
	was = devres__lock_busy;
	devres__lock_busy = dev;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	word_lock(dev);
	LOCK_TRACE_HOLDER();
	/*
	 * The bias is granted, and revoked, only with the atomic lock held:
	 * what is seen here stays so until this thread lets it go.
	 */
	if (biased_elsewhere(dev)) {
#ifdef DR_LOCK_TRACE
		long t0 = mono_ns();

		revoke_bias(dev);
		LOCK_TRACE_NS(revoke_ns, t0);
#else
		revoke_bias(dev);
#endif
	}
#ifndef DR_NO_BIAS
	/*
	 * The first taker gets the bias, and holds the lock through it from
	 * here, as its fast path would: held first, then the bias, then the
	 * atomic lock goes. Holding the atomic lock with the bias granted
	 * and held clear, a signal handler on this thread took the fast path
	 * (the bias is its thread's, held is clear) into the critical
	 * section its thread was in. The same holds for a bias this thread
	 * has already: a signal handler that came after this thread found
	 * the device without a bias (lock_dev()) and before it got here took
	 * the device's first lock, and the bias with it, for this thread. No
	 * revoker can be at work: revoking is set only with the atomic lock
	 * held; one that comes later finds held set after its barrier and
	 * waits for unlock_dev().
	 */
	bias = __atomic_load_n(&dev->devres_bias, __ATOMIC_RELAXED);
	if (bias == devres__me() ||
	    (!bias &&
	     !__atomic_load_n(&dev->devres_bias_revoking, __ATOMIC_RELAXED) &&
	     bias_ok())) {
		__atomic_store_n(&dev->devres_bias_held, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (!bias)
			__atomic_store_n(&dev->devres_bias, devres__me(),
					 __ATOMIC_RELEASE);
		__atomic_store_n(&dev->devres_owner, devres__me(),
				 __ATOMIC_RELAXED);
		word_unlock(dev);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		devres__lock_busy = was;
		return true;
	}
#endif
	__atomic_store_n(&dev->devres_owner, devres__me(), __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	devres__lock_busy = was;
	return true;
}

bool devres__lock_try(struct device *dev, const char *func)
{
	if (__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
		    devres__me() ||
	    half_way(dev))
		return false;
#ifndef DR_NO_BIAS
	{
		void *b = __atomic_load_n(&dev->devres_bias, __ATOMIC_ACQUIRE);

		/*
		 * This thread's bias: the fast path, as any call of this
		 * thread on the device takes it. Another thread's: taking it
		 * would revoke the bias and wait for that thread.
		 */
		if (b == devres__me())
			return !__atomic_load_n(&dev->devres_bias_revoking,
						__ATOMIC_RELAXED) &&
			       lock_dev(dev, func);
		if (b && b != REVOKED)
			return false;
	}
#endif
	/*
	 * No bias, or revoked: the word if it is free, with no bias granted
	 * (the slow path's first taker gets it; this one takes nothing more
	 * than the word, which unlock_dev() lets go).
	 */
	if (!word_take_free(dev))
		return false;
	devres__hold_begin(func);
	return true;
}

bool devres__lock_released(struct device *dev, const char *func)
{
	unlock_dev(dev);
	/* The WARN of every call given a released device. */
	(void)devres__dev_bad(dev, func);
	return false;
}
