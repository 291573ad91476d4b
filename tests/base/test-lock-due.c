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
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "gate.h"
#include "../src/base/node.h"

enum {
	MAX_WAITERS = 2,
	HOG_MAX = 200000,
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

static void test_due_waiter_gets_lock_off_its_cpu(void **state)
{
	struct device *dev = *state;
	int cpu = sched_getcpu();
	int failed = 0;
	unsigned int v;
	cpu_set_t old;
	pthread_t t;

	assert_true(cpu >= 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(old), &old), 0);
	assert_true(pin_to_cpu(cpu, false) > 0);
	/* The bias goes to another thread and is revoked: the word is used. */
	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
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
	assert_int_equal(
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old), 0);
	assert_int_equal(failed, 0);
	/* Nothing left held, handed over or due. */
	v = __atomic_load_n(lock_word(dev), __ATOMIC_RELAXED);
	assert_int_equal(v & (DR_LOCKED | DR_HANDOFF | DR_STARVING), 0);
	assert_int_equal(DR_DUE_COUNT(v), 0);
	assert_int_equal(devres_check(dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_due_waiter_gets_lock_off_its_cpu, dev_setup,
			dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
