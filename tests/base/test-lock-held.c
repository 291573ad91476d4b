// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan white-box timeout=120 */
/*
 * A holder kept inside the device's devres lock (src/base/lock.c) for
 * HOLD_MS, as a holder preempted for that long is, with WAITERS threads
 * waiting for it: the waiters sleep (each spends less than CPU_MAX_MS of
 * CPU time from its call until it has the lock, far less than the hold),
 * and once the holder lets go each of them gets the lock before the holder,
 * which takes the lock again and again from then on, completes more than
 * WAITERS takes. The waiters run at SCHED_IDLE on the holder's CPU, so
 * that none runs while the holder does: a lock that let the holder take
 * it back while the woken waiters waited to be scheduled let it do so
 * HOG_MAX times. The holder holds the lock in a callback of
 * devres_for_each_res(), which runs with it held; the waiters wait in
 * devres_for_each_res() too, and record in its callback, with the lock
 * held, their CPU time and the holder's takes so far.
 *
 * Two cells: the device shared already (its bias revoked: every thread
 * takes the atomic word), and the holder the owner of the device's bias
 * (the first waiter revokes it and waits for the holder to leave its
 * critical section, the others wait for that waiter). ThreadSanitizer
 * builds have no bias: the two cells are alike there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "gate.h"
#include "../src/base/node.h"

enum {
	WAITERS = 4,
	/* How long the holder holds the lock once every waiter sleeps. */
	HOLD_MS = 200,
	/* A waiter's CPU time from its call to the lock, at most. */
	CPU_MAX_MS = 20,
	/* How long the waiters may take to fall asleep, at most. */
	SETTLE_MS = 5000,
	/* How long the holder looks for them all asleep at the end. */
	LOOK_MS = 1000,
	/* The holder's takes after the hold, at most (a failed cell). */
	HOG_MAX = 200000
};

static long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* The holder's completed takes after the hold: read under the lock. */
static long hogged;
/* Set by the holder as it is about to let go. */
static int released;

struct waiter {
	pthread_t t;
	struct device *dev;
	int cpu;
	int tid;
	long cpu0;  /* CPU time at the call */
	long spent; /* CPU time from the call until it had the lock */
	long stamp; /* the holder's takes when this waiter got the lock */
	int after;  /* the holder had let go then */
	int got;
};

static struct waiter w[WAITERS];

static void stamp(struct device *dev, void *res, void *data)
{
	struct waiter *me = data;

	(void)dev;
	(void)res;
	me->spent = thread_cpu_ns() - me->cpu0;
	me->stamp = __atomic_load_n(&hogged, __ATOMIC_RELAXED);
	me->after = __atomic_load_n(&released, __ATOMIC_ACQUIRE);
	__atomic_store_n(&me->got, 1, __ATOMIC_RELEASE);
}

static void *waiter(void *arg)
{
	struct waiter *me = arg;
	pid_t tid = pin_to_cpu(me->cpu, true);

	assert_true(tid > 0);
	me->cpu0 = thread_cpu_ns();
	__atomic_store_n(&me->tid, (int)tid, __ATOMIC_RELEASE);
	devres_for_each_res(me->dev, rec, NULL, NULL, stamp, me);
	return NULL;
}

static int count_asleep(void)
{
	int asleep = 0;

	for (int i = 0; i < WAITERS; i++)
		asleep += tid_asleep(
			__atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE));
	return asleep;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* How many waiters were asleep at once at the end of the hold. */
static int asleep_at_end;

/*
 * With the lock held: starts the waiters, waits until they all sleep,
 * holds the lock HOLD_MS more, and looks whether they sleep still.
 */
static void hold(struct device *dev, void *res, void *data)
{
	int cpu = *(int *)data;

	(void)res;
	for (int i = 0; i < WAITERS; i++) {
		w[i] = (struct waiter){ .dev = dev, .cpu = cpu, .stamp = -1 };
		assert_int_equal(pthread_create(&w[i].t, NULL, waiter, &w[i]),
				 0);
	}
	for (int ms = 0; ms < SETTLE_MS && count_asleep() < WAITERS; ms++)
		sleep_ms(1);
	sleep_ms(HOLD_MS);
	/*
	 * A waiter woken by its own deadline (it comes due) is runnable
	 * until it has run, which at SCHED_IDLE on a loaded CPU takes a
	 * while: all asleep at once within LOOK_MS will do. One that
	 * yields or spins is never seen asleep.
	 */
	for (int ms = 0; ms < LOOK_MS; ms++) {
		asleep_at_end = count_asleep();
		if (asleep_at_end == WAITERS)
			break;
		sleep_ms(1);
	}
	__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
}

static int got_all(void)
{
	int got = 0;

	for (int i = 0; i < WAITERS; i++)
		got += __atomic_load_n(&w[i].got, __ATOMIC_ACQUIRE);
	return got == WAITERS;
}

static void *first_taker(void *arg)
{
	devres_add(arg, devres_alloc(rec, 8, GFP_KERNEL));
	return NULL;
}

static void held_cell(struct device *dev, bool shared)
{
	int cpu = sched_getcpu();
	unsigned int v;
	int failed = 0;
	cpu_set_t old;

	if (shared) {
		pthread_t t;

		/* The bias goes to another thread; this thread revokes it. */
		assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
		pthread_join(t, NULL);
	} else {
		/* This thread is the first taker: the bias is its. */
		devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL));
	}
	hogged = 0;
	released = 0;
	assert_true(cpu >= 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(old), &old), 0);
	assert_true(pin_to_cpu(cpu, false) > 0);
	devres_for_each_res(dev, rec, NULL, NULL, hold, &cpu);
	while (!got_all() &&
	       __atomic_load_n(&hogged, __ATOMIC_RELAXED) < HOG_MAX) {
		void *p = devm_kmalloc(dev, 64, GFP_KERNEL);

		assert_non_null(p);
		devm_kfree(dev, p);
		__atomic_add_fetch(&hogged, 1, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < WAITERS; i++) {
		bool ok;

		pthread_join(w[i].t, NULL);
		ok = w[i].got && w[i].after &&
		     w[i].spent < CPU_MAX_MS * 1000000L && w[i].stamp >= 0 &&
		     w[i].stamp <= WAITERS;
		print_message("%s, waiter %d: CPU %.2f ms while it waited, got "
			      "the lock after %ld takes of the holder: %s\n",
			      shared ? "shared" : "biased", i,
			      (double)w[i].spent / 1e6, w[i].stamp,
			      ok ? "ok" : "FAIL");
		failed += !ok;
	}
	assert_int_equal(
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old), 0);
	print_message("%d of %d waiters asleep at the end of the hold\n",
		      asleep_at_end, WAITERS);
	assert_int_equal(asleep_at_end, WAITERS);
	assert_int_equal(failed, 0);
	v = __atomic_load_n(lock_word(dev), __ATOMIC_RELAXED);
	assert_int_equal(v & (DR_LOCKED | DR_HANDOFF | DR_STARVING), 0);
	assert_int_equal(DR_DUE_COUNT(v), 0);
	assert_int_equal(devres_check(dev), 0);
}

static void test_held_shared(void **state)
{
	held_cell(*state, true);
}

static void test_held_biased(void **state)
{
	held_cell(*state, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_held_shared, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_held_biased, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
