// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan white-box timeout=120 */
/*
 * The devres lock's eventual fairness holds against the lock itself
 * (src/base/lock.c): a waiter that has waited past the bound gets the lock
 * at the next release, even when it is off its CPU then. One or two
 * waiters run at SCHED_IDLE on this thread's CPU, so none runs while this
 * thread does; this thread holds the lock until they have waited past the
 * bound (they run meanwhile: the CPU is theirs while this thread sleeps),
 * then lets it go and takes it again and again by one of the calls that
 * take the lock. A lock that handed nothing to a thread off its CPU let
 * this thread take it HOG_MAX times while the waiters, woken, waited to
 * be scheduled; now each waiter gets it before this thread's next take
 * completes. Only counts are asserted, no timing.
 *
 * And a due waiter's priority (its grace, its next GRACE_TAKES takes
 * after a due take) holds only while it runs: a graced take whose spin
 * fails sleeps without a ticket, and is not handed the lock asleep. A
 * waiter on the other CPU (at SCHED_IDLE it would wait for a CPU as long
 * as the machine is loaded), once it took the lock as due, takes it
 * again, GRACE_TAKES + 1 times, each time while this thread holds it and,
 * once the waiter sleeps, lets it go and takes it again at once. Each
 * time the waiter sleeps with no ticket in the word, and gets the lock
 * within a bound of this thread's takes made while it runs (woken, it
 * spins as starving and is handed the lock while it runs); those made
 * while the scheduler keeps it off a CPU are not the lock's to bound, and
 * are not counted (hog_until()). A lock whose grace made a take due
 * at once counted the waiter due asleep, and handed it the lock off its
 * CPU: on a loaded machine every other thread waited for the scheduler.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "gate.h"
#include "../src/base/node.h"

enum {
	/* lock.c: the takes of a grace. */
	GRACE_TAKES = 16,
	MAX_WAITERS = 2,
	HOG_MAX = 200000,
	/* The grace cells: this thread's takes between looks at the waiter. */
	HOG_BATCH = 64,
	/* How long this thread holds the lock for the waiters, at most. */
	HOLD_MS = 5000
};

/* The calls this thread takes the lock by, again and again. */
enum hog_call {
	CALL_FOR_EACH, /* devres_for_each_res() */
	CALL_KMALLOC,  /* devm_kmalloc() + devm_kfree() */
	CALL_ADD       /* devres_alloc() + devres_add() + devres_release() */
};

static const struct cell {
	const char *name;
	enum hog_call call;
	int waiters;
} cells[] = {
	{ "for_each_res, one waiter", CALL_FOR_EACH, 1 },
	{ "for_each_res, two waiters", CALL_FOR_EACH, 2 },
	{ "kmalloc + kfree, one waiter", CALL_KMALLOC, 1 },
	{ "kmalloc + kfree, two waiters", CALL_KMALLOC, 2 },
	{ "add + release, one waiter", CALL_ADD, 1 },
	{ "add + release, two waiters", CALL_ADD, 2 },
};

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void rec_hog(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void nothing(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
}

/* This thread's completed takes: read by the waiters under the lock. */
static long hogged;

struct waiter {
	pthread_t t;
	struct device *dev;
	int cpu;
	pid_t tid;
	long stamp; /* this thread's takes when the waiter got the lock */
	int got;
};

static struct waiter w[MAX_WAITERS];

static void stamp(struct device *dev, void *res, void *data)
{
	struct waiter *me = data;

	(void)dev;
	(void)res;
	me->stamp = __atomic_load_n(&hogged, __ATOMIC_RELAXED);
	__atomic_store_n(&me->got, 1, __ATOMIC_RELEASE);
}

static void *waiter(void *arg)
{
	struct waiter *me = arg;
	pid_t tid = pin_to_cpu(me->cpu, true);

	assert_true(tid > 0);
	__atomic_store_n(&me->tid, tid, __ATOMIC_RELEASE);
	devres_for_each_res(me->dev, rec, NULL, NULL, stamp, me);
	return NULL;
}

struct hold {
	int cpu;
	int waiters;
};

/*
 * With the lock held: start the waiters and sleep until they have waited
 * past the bound and counted themselves due, asleep (at most HOLD_MS: a
 * lock without the bound never counts them).
 */
static void hold_for_waiters(struct device *dev, void *res, void *data)
{
	struct hold *h = data;

	(void)res;
	for (int i = 0; i < h->waiters; i++) {
		w[i] = (struct waiter){ .dev = dev,
					.cpu = h->cpu,
					.stamp = -1 };
		assert_int_equal(pthread_create(&w[i].t, NULL, waiter, &w[i]),
				 0);
	}
	for (int ms = 0; ms < HOLD_MS; ms++) {
		int asleep = 0;

		for (int i = 0; i < h->waiters; i++)
			asleep += tid_asleep(
				__atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE));
		if (asleep == h->waiters &&
		    DR_DUE_COUNT(__atomic_load_n(lock_word(dev),
						 __ATOMIC_ACQUIRE)) ==
			    (unsigned int)h->waiters)
			break;
		usleep(1000);
	}
}

static void hog_call(struct device *dev, enum hog_call call)
{
	void *p;

	switch (call) {
	case CALL_FOR_EACH:
		devres_for_each_res(dev, rec, NULL, NULL, nothing, NULL);
		break;
	case CALL_KMALLOC:
		p = devm_kmalloc(dev, 64, GFP_KERNEL);
		assert_non_null(p);
		devm_kfree(dev, p);
		break;
	case CALL_ADD:
		p = devres_alloc(rec_hog, 8, GFP_KERNEL);
		assert_non_null(p);
		devres_add(dev, p);
		assert_int_equal(devres_release(dev, rec_hog, NULL, NULL), 0);
		break;
	}
}

static int got_all(int n)
{
	int got = 0;

	for (int i = 0; i < n; i++)
		got += __atomic_load_n(&w[i].got, __ATOMIC_ACQUIRE);
	return got == n;
}

static void *first_taker(void *arg)
{
	devres_add(arg, devres_alloc(rec, 8, GFP_KERNEL));
	return NULL;
}

/*
 * Pins this thread to the CPU it is on (its CPU), keeping its affinity in
 * @old; the bias goes to another thread and is revoked: the word is used.
 */
static int pin_here(struct device *dev, cpu_set_t *old)
{
	int cpu = sched_getcpu();
	pthread_t t;

	assert_true(cpu >= 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(*old), old), 0);
	assert_true(pin_to_cpu(cpu, false) > 0);
	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
	return cpu;
}

/* Back to @old; no cell failed, nothing left held, handed over or due. */
static void unpin_check(struct device *dev, const cpu_set_t *old, int failed)
{
	unsigned int v;

	assert_int_equal(
		pthread_setaffinity_np(pthread_self(), sizeof(*old), old), 0);
	assert_int_equal(failed, 0);
	v = __atomic_load_n(lock_word(dev), __ATOMIC_RELAXED);
	assert_int_equal(v & (DR_LOCKED | DR_HANDOFF | DR_STARVING), 0);
	assert_int_equal(DR_DUE_COUNT(v), 0);
	assert_int_equal(devres_check(dev), 0);
}

static void test_due_waiter_gets_lock_off_its_cpu(void **state)
{
	struct device *dev = *state;
	cpu_set_t old;
	int cpu = pin_here(dev, &old);
	int failed = 0;

	for (size_t c = 0; c < sizeof(cells) / sizeof(cells[0]); c++) {
		const struct cell *cl = &cells[c];
		struct hold h = { .cpu = cpu, .waiters = cl->waiters };
		int ok = 1;

		__atomic_store_n(&hogged, 0, __ATOMIC_RELAXED);
		devres_for_each_res(dev, rec, NULL, NULL, hold_for_waiters, &h);
		while (!got_all(cl->waiters) &&
		       __atomic_load_n(&hogged, __ATOMIC_RELAXED) < HOG_MAX) {
			hog_call(dev, cl->call);
			__atomic_add_fetch(&hogged, 1, __ATOMIC_RELAXED);
		}
		/* Lets the waiters run, if they have not yet. */
		for (int i = 0; i < cl->waiters; i++) {
			pthread_join(w[i].t, NULL);
			/* Before this thread's first take after the release. */
			ok &= w[i].got && w[i].stamp == 0;
		}
		print_message("%-30s waiters got the lock after %ld / %ld "
			      "takes of this thread: %s\n",
			      cl->name, w[0].stamp,
			      cl->waiters > 1 ? w[1].stamp : w[0].stamp,
			      ok ? "ok" : "FAIL");
		failed += !ok;
	}
	unpin_check(dev, &old, failed);
}

/* The grace cells: this thread's call, the waiter's takes after its due one. */
static const struct grace_cell {
	const char *name;
	enum hog_call call;
	int takes;
} grace_cells[] = {
	{ "for_each_res, first take", CALL_FOR_EACH, 1 },
	{ "for_each_res, whole grace", CALL_FOR_EACH, GRACE_TAKES + 1 },
	{ "kmalloc + kfree, first take", CALL_KMALLOC, 1 },
	{ "kmalloc + kfree, whole grace", CALL_KMALLOC, GRACE_TAKES + 1 },
	{ "add + release, first take", CALL_ADD, 1 },
	{ "add + release, whole grace", CALL_ADD, GRACE_TAKES + 1 },
};

/* The waiter of a grace cell: its takes, round by round. */
static struct {
	pthread_t t;
	struct device *dev;
	int cpu;
	pid_t tid;
	int rounds; /* the takes after the due one */
	int turn;   /* set by this thread, holding the lock: take round @turn */
	int asking; /* the round the waiter is taking */
	long csw;   /* its context switches as it began to */
	long stamp[GRACE_TAKES + 2]; /* this thread's takes at each take */
	int got[GRACE_TAKES + 2];
} gw;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void grace_stamp(struct device *dev, void *res, void *data)
{
	int k = (int)(intptr_t)data;

	(void)dev;
	(void)res;
	gw.stamp[k] = __atomic_load_n(&hogged, __ATOMIC_RELAXED);
	__atomic_store_n(&gw.got[k], 1, __ATOMIC_RELEASE);
}

static void *grace_waiter(void *arg)
{
	pid_t tid = pin_to_cpu(gw.cpu, false);

	(void)arg;
	assert_true(tid > 0);
	__atomic_store_n(&gw.tid, tid, __ATOMIC_RELEASE);
	for (int k = 0; k <= gw.rounds; k++) {
		struct rusage ru;

		while (__atomic_load_n(&gw.turn, __ATOMIC_ACQUIRE) < k)
			usleep(50);
		assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
		__atomic_store_n(&gw.csw, ru.ru_nvcsw + ru.ru_nivcsw,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&gw.asking, k, __ATOMIC_RELEASE);
		devres_for_each_res(gw.dev, rec, NULL, NULL, grace_stamp,
				    (void *)(intptr_t)k);
	}
	return NULL;
}

/*
 * With the lock held: lets the waiter take round @data, and waits until it
 * sleeps on the lock (round 0: until it is due, as hold_for_waiters()).
 * Records in *data whether it was seen asleep with a ticket taken since
 * @tail, and how many times it had left its CPU in the round then.
 */
struct grace_hold {
	int round;
	unsigned int tail; /* the next due ticket before the round */
	bool ticket;	   /* it took one */
	long switches;	   /* its context switches in the round */
};

/*
 * The context switches of thread @tid, voluntary (a sleep begun) and not
 * (preempted), -1 if unknown. Raw calls, as tid_asleep().
 */
static long tid_switches(int tid)
{
	static const char key[] = "\nvoluntary_ctxt_switches:";
	static const char key2[] = "\nnonvoluntary_ctxt_switches:";
	char path[64], buf[4096], *p, *q;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	(void)syscall(SYS_close, fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, key);
	q = strstr(buf, key2);
	if (!p || !q)
		return -1;
	return strtol(p + sizeof(key) - 1, NULL, 10) +
	       strtol(q + sizeof(key2) - 1, NULL, 10);
}

/*
 * Whether the waiter sleeps on the word @v, taking @round: due, or parked.
 * Asleep alone is not enough: a sanitizer's runtime may put it to sleep on
 * a lock of its own on its way; so it is seen so twice, a poll apart.
 */
static bool waiting_on(unsigned int v, int round)
{
	return __atomic_load_n(&gw.asking, __ATOMIC_ACQUIRE) == round &&
	       tid_asleep(__atomic_load_n(&gw.tid, __ATOMIC_ACQUIRE)) &&
	       (round ? DR_DUE_COUNT(v) || (v & DR_PARKED)
		      : DR_DUE_COUNT(v) == 1);
}

static void hold_for_grace(struct device *dev, void *res, void *data)
{
	struct grace_hold *h = data;
	long end = now_ns() + HOLD_MS * 1000000L;
	int settled = 0;

	(void)res;
	/*
	 * Nobody sleeps on the word now (the waiter waits for its turn
	 * apart from it), but a wake that found this thread asleep in the
	 * round before may have left it parked: cleared, so that parked
	 * below is the waiter's. A wake lost so would cost a sleeper no
	 * more than DUE_NS.
	 */
	__atomic_and_fetch(lock_word(dev), ~DR_PARKED, __ATOMIC_RELAXED);
	__atomic_store_n(&gw.turn, h->round, __ATOMIC_RELEASE);
	while (now_ns() < end) {
		unsigned int v =
			__atomic_load_n(lock_word(dev), __ATOMIC_ACQUIRE);

		if (!waiting_on(v, h->round)) {
			settled = 0;
		} else if (settled++) {
			h->ticket = DR_DUE_TAIL(v) != h->tail;
			h->switches =
				tid_switches(__atomic_load_n(
					&gw.tid, __ATOMIC_ACQUIRE)) -
				__atomic_load_n(&gw.csw, __ATOMIC_RELAXED);
			return;
		}
		usleep(200);
	}
}

/* The CPU time (ns) of the thread of @cid, -1 once it ended. */
static long cpu_ns(clockid_t cid)
{
	struct timespec ts;

	if (clock_gettime(cid, &ts))
		return -1;
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/*
 * This thread's takes after a release until the waiter got round @k,
 * counted only while the waiter ran: 0 if it got the lock first; -1 if it
 * did not run for HOLD_MS, runnable all along (the machine kept it off a
 * CPU: nothing to tell); HOG_MAX if it slept that long (a lost wake: a
 * sleep on the lock ends by DUE_NS).
 *
 * The release wakes the waiter, which takes the lock when it next runs:
 * woken, it spins as starving and is handed the lock, or it sleeps again
 * and comes due. When it runs is the scheduler's: on a loaded machine a
 * woken thread may wait for its CPU for tens of milliseconds, while this
 * thread, on its own CPU, takes the lock a few hundred thousand times.
 * Takes counted with no regard to that bounded the scheduler's delay, not
 * the lock. So they are counted in batches of HOG_BATCH, each counted only
 * when the waiter's CPU clock moved across it: the takes made while the
 * waiter had a CPU, which the lock answers for.
 */
static long hog_until(struct device *dev, enum hog_call call, int k)
{
	long end = now_ns() + HOLD_MS * 1000000L, counted = 0, ran, last;
	clockid_t cid;
	int i;

	assert_int_equal(pthread_getcpuclockid(gw.t, &cid), 0);
	last = cpu_ns(cid);
	while (!__atomic_load_n(&gw.got[k], __ATOMIC_ACQUIRE) &&
	       counted < HOG_MAX && now_ns() < end) {
		for (i = 0; i < HOG_BATCH &&
			    !__atomic_load_n(&gw.got[k], __ATOMIC_ACQUIRE);
		     i++) {
			hog_call(dev, call);
			__atomic_add_fetch(&hogged, 1, __ATOMIC_RELAXED);
		}
		ran = cpu_ns(cid);
		if (ran != last)
			counted += i;
		last = ran;
	}
	if (!__atomic_load_n(&gw.got[k], __ATOMIC_ACQUIRE) && counted < HOG_MAX)
		counted = tid_asleep(__atomic_load_n(&gw.tid, __ATOMIC_ACQUIRE))
				  ? HOG_MAX
				  : -1;
	/* Lets the waiter run, if it has not yet. */
	while (!__atomic_load_n(&gw.got[k], __ATOMIC_ACQUIRE))
		usleep(100);
	return counted;
}

/*
 * One grace cell: 1 if it holds, 0 if it fails, -1 if it cannot tell: the
 * waiter was not seen due in the first round within HOLD_MS, or was kept
 * off a CPU for HOLD_MS in a later round (the machine did).
 */
static int grace_cell(struct device *dev, int cpu, const struct grace_cell *cl)
{
	struct grace_hold h = { 0 };
	long most = 0;
	int ok = 1, due = 0, late = 0, off = 0;
	bool due0 = true;

	memset(&gw, 0, sizeof(gw));
	gw.dev = dev;
	gw.cpu = cpu;
	gw.rounds = cl->takes;
	/*
	 * No round yet: the waiter begins round 0 once this thread holds
	 * the lock (hold_for_grace()). Before, it could run first on a
	 * loaded machine and take the lock free, not due, and this thread
	 * then held it HOLD_MS in vain and could not tell.
	 */
	gw.turn = -1;
	__atomic_store_n(&hogged, 0, __ATOMIC_RELAXED);
	assert_int_equal(pthread_create(&gw.t, NULL, grace_waiter, NULL), 0);
	for (int k = 0; k <= cl->takes; k++) {
		long ahead;

		h = (struct grace_hold){
			.round = k,
			.tail = DR_DUE_TAIL(__atomic_load_n(lock_word(dev),
							    __ATOMIC_ACQUIRE))
		};
		devres_for_each_res(dev, rec, NULL, NULL, hold_for_grace, &h);
		/* Not seen due within HOLD_MS: no grace to look at. */
		if (k == 0 && !h.ticket)
			due0 = false;
		ahead = hog_until(dev, cl->call, k);
		if (k == 0)
			continue;
		/* Off a CPU all along: nothing to tell of this round. */
		if (ahead < 0) {
			off++;
			continue;
		}
		/*
		 * Asleep in its grace: no ticket, unless by its wait. That
		 * wait left the CPU once before the sleep it is seen in:
		 * a sleep not yet due, which ends by DUE_NS (lock.c), or a
		 * preemption that outlasted DUE_NS before it slept. When
		 * this thread looks is the scheduler's, not how long the
		 * waiter waited: a ticket seen with the waiter off its CPU
		 * for the first time in the round was taken at once.
		 */
		if (h.ticket && h.switches >= 2)
			late++;
		else
			due += h.ticket;
		/* And the lock within a bound of this thread's takes. */
		ok &= ahead < HOG_MAX;
		if (ahead > most)
			most = ahead;
	}
	pthread_join(gw.t, NULL);
	ok &= !due;
	/* A round the machine kept the waiter off a CPU: again. */
	if (!due0 || (ok && off))
		ok = -1;
	print_message("%-30s rounds of its grace seen due asleep: %d of %d "
		      "at once, %d by its wait; this thread's takes while "
		      "the waiter ran, before its take, at most %ld: %s\n",
		      cl->name, due, cl->takes, late, most,
		      ok > 0   ? "ok"
		      : ok < 0 ? "cannot tell, again"
			       : "FAIL");
	return ok;
}

static void test_grace_not_handed_asleep(void **state)
{
	struct device *dev = *state;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t old;
	int cpu = pin_here(dev, &old);
	int failed = 0;

	for (size_t c = 0; c < sizeof(grace_cells) / sizeof(grace_cells[0]);
	     c++) {
		int far = ncpu > 1 ? (cpu + 1) % (int)ncpu : cpu;
		int ok = grace_cell(dev, far, &grace_cells[c]);

		for (int again = 0; ok < 0 && again < 3; again++)
			ok = grace_cell(dev, far, &grace_cells[c]);
		failed += ok <= 0;
	}
	unpin_check(dev, &old, failed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_due_waiter_gets_lock_off_its_cpu, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(test_grace_not_handed_asleep,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
