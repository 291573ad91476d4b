// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan white-box */
/*
 * The devres lock wakes its sleepers one release after another, without
 * waiting for the one it woke to be scheduled (src/base/lock.c): three
 * threads sleep on the word while this thread holds the lock, then this
 * thread lets it go and takes it again twice. The sleepers run at
 * SCHED_IDLE on this thread's CPU, so none of them runs meanwhile: a lock
 * that woke the next sleeper only once the woken one had taken the lock
 * and let it go left two of them asleep, as it left threads asleep for a
 * whole run on a loaded machine. Only states are asserted, no timing.
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
	SLEEPERS = 3,
	TRIES = 5
};

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

struct sleeper {
	pthread_t t;
	struct device *dev;
	int cpu;
	pid_t tid;
	int got;
};

static struct sleeper s[SLEEPERS];

static void take(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	*(int *)data = 1;
}

static void *sleeper(void *arg)
{
	struct sleeper *me = arg;
	pid_t tid = pin_to_cpu(me->cpu, true);

	assert_true(tid > 0);
	__atomic_store_n(&me->tid, tid, __ATOMIC_RELEASE);
	devres_for_each_res(me->dev, rec, NULL, NULL, take, &me->got);
	return NULL;
}

/* With the lock held: start the sleepers, wait until all three sleep. */
static void start_sleepers(struct device *dev, void *res, void *data)
{
	int cpu = *(int *)data;

	(void)res;
	for (int i = 0; i < SLEEPERS; i++) {
		s[i] = (struct sleeper){ .dev = dev, .cpu = cpu };
		assert_int_equal(pthread_create(&s[i].t, NULL, sleeper, &s[i]),
				 0);
	}
	for (int i = 0; i < SLEEPERS; i++)
		while (!(__atomic_load_n(lock_word(dev), __ATOMIC_ACQUIRE) &
			 DR_PARKED) ||
		       !tid_asleep(
			       __atomic_load_n(&s[i].tid, __ATOMIC_ACQUIRE)))
			usleep(1000);
	/* Asleep in FUTEX_WAIT, not just on the way: settle. */
	usleep(20000);
}

static void nothing(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
}

static void *first_taker(void *arg)
{
	devres_add(arg, devres_alloc(rec, 8, GFP_KERNEL));
	return NULL;
}

static void test_releases_wake_one_sleeper_each(void **state)
{
	struct device *dev = *state;
	int cpu = sched_getcpu();
	int woken = 0;
	cpu_set_t old;
	pthread_t t;

	assert_true(cpu >= 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(old), &old), 0);
	assert_true(pin_to_cpu(cpu, false) > 0);
	/* The bias goes to another thread and is revoked: the word is used. */
	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
	/*
	 * A sleeper woken may still get to run (a CPU otherwise idle runs
	 * even SCHED_IDLE threads), and then sleep again: a few tries.
	 */
	for (int k = 0; k < TRIES && woken != SLEEPERS; k++) {
		devres_for_each_res(dev, rec, NULL, NULL, start_sleepers, &cpu);
		/* Released once; twice more, without sleeping in between. */
		for (int i = 1; i < SLEEPERS; i++)
			devres_for_each_res(dev, rec, NULL, NULL, nothing,
					    NULL);
		woken = 0;
		for (int i = 0; i < SLEEPERS; i++)
			woken += !tid_asleep(s[i].tid);
		print_message("try %d: %d of %d sleepers woken by %d "
			      "releases\n",
			      k + 1, woken, SLEEPERS, SLEEPERS);
		for (int i = 0; i < SLEEPERS; i++) {
			pthread_join(s[i].t, NULL);
			assert_int_equal(s[i].got, 1);
		}
	}
	assert_int_equal(woken, SLEEPERS);
	assert_int_equal(
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old), 0);
	assert_int_equal(__atomic_load_n(lock_word(dev), __ATOMIC_RELAXED) &
				 (DR_LOCKED | DR_HANDOFF | DR_STARVING),
			 0);
	assert_int_equal(devres_check(dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_releases_wake_one_sleeper_each, dev_setup,
			dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
