// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=120 */
/*
 * Revoking the lock's bias while its owner holds it (src/base/lock.c):
 * the owner of the bias sits in a for-each callback, inside its critical
 * section, while three other threads want the lock. The first revokes,
 * the others wait for the lock it holds meanwhile; every one of them
 * must sleep (state S in /proc) rather than spin or yield until the
 * owner leaves, none may get in before it leaves, and the owner's
 * leaving must wake the revoker (or the test hangs). In a TSan build,
 * which never biases the lock, the three wait on the atomic lock that the
 * owner's callback holds: the same must hold.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

enum {
	WAITERS = 3,
	POLL_MS = 10,
	SETTLE_MS = 5000, /* for every waiter to be seen asleep */
	ASLEEP_POLLS = 3  /* in a row, every waiter asleep */
};

static int inside, let_go, left, started;
static pid_t tids[WAITERS];
static int got_in_before_left[WAITERS];

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* With the device's lock held, until the test lets it go. */
static void hold(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	__atomic_store_n(&inside, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&let_go, __ATOMIC_ACQUIRE))
		nap_ms(1);
	__atomic_store_n(&left, 1, __ATOMIC_RELEASE);
}

static void *owner(void *arg)
{
	struct device *dev = arg;

	/* The first lock of the device: the bias is this thread's. */
	devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL));
	devres_for_each_res(dev, rec, NULL, NULL, hold, NULL);
	return NULL;
}

struct waiter {
	struct device *dev;
	int i;
};

static void *waiter(void *arg)
{
	struct waiter *w = arg;
	void *p;

	__atomic_store_n(&tids[w->i], (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	__atomic_add_fetch(&started, 1, __ATOMIC_ACQ_REL);
	p = devm_kmalloc(w->dev, 16, GFP_KERNEL);
	got_in_before_left[w->i] = !__atomic_load_n(&left, __ATOMIC_ACQUIRE);
	return p; /* freed by the test once joined */
}

/* The state letter of thread @tid in /proc, or 0. */
static char state_of(pid_t tid)
{
	char path[64], buf[256], *rp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "tid (comm) S ...": the comm may hold spaces and parentheses. */
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

static bool all_asleep(void)
{
	for (int i = 0; i < WAITERS; i++)
		if (state_of(tids[i]) != 'S')
			return false;
	return true;
}

static void test_waiters_sleep_while_owner_holds(void **state)
{
	struct device *dev = *state;
	struct waiter w[WAITERS];
	pthread_t o, t[WAITERS];
	int streak = 0, waited = 0;
	void *ret[WAITERS];

	inside = let_go = left = started = 0;
	assert_int_equal(pthread_create(&o, NULL, owner, dev), 0);
	while (!__atomic_load_n(&inside, __ATOMIC_ACQUIRE))
		nap_ms(1);
	for (int i = 0; i < WAITERS; i++) {
		w[i] = (struct waiter){ dev, i };
		assert_int_equal(pthread_create(&t[i], NULL, waiter, &w[i]), 0);
	}
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < WAITERS)
		nap_ms(1);
	/*
	 * A waiter that spins or yields is runnable (R) at every look; one
	 * asleep on a futex is S. On a loaded machine a waiter may wait
	 * for a CPU before it gets to sleep: looked at until all three are
	 * asleep at several looks in a row.
	 */
	while (streak < ASLEEP_POLLS && waited < SETTLE_MS) {
		streak = all_asleep() ? streak + 1 : 0;
		nap_ms(POLL_MS);
		waited += POLL_MS;
	}
	for (int i = 0; i < WAITERS; i++)
		if (streak < ASLEEP_POLLS)
			print_message("waiter %d: state %c\n", i,
				      state_of(tids[i]));
	/* Every thread joined before an assertion can end the test. */
	__atomic_store_n(&let_go, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(o, NULL), 0);
	for (int i = 0; i < WAITERS; i++) {
		assert_int_equal(pthread_join(t[i], &ret[i]), 0);
		devm_kfree(dev, ret[i]);
	}
	assert_int_equal(streak, ASLEEP_POLLS);
	for (int i = 0; i < WAITERS; i++) {
		assert_non_null(ret[i]);
		assert_int_equal(got_in_before_left[i], 0);
	}
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, 1, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_waiters_sleep_while_owner_holds, dev_setup,
			dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
