// SPDX-License-Identifier: MIT
/* ctest-labels: stress timeout=120 */
/*
 * The biased devres lock (src/base/lock.c): the first thread to take a
 * device's lock holds it with plain stores until another thread revokes
 * the bias. Mutual exclusion must hold across the revocation: two threads
 * increment a plain counter inside the lock (a for-each callback runs with
 * it held), with a window between load and store, while the revocation
 * happens; no increment may be lost. Also: the owner thread gone and a
 * child of fork() taking the lock. Not a TSan test: TSan builds do not
 * bias the lock at all.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

enum {
	ITERS = 20000
};

static long counter;
static int window = 20; /* iterations between the load and the store */
static pthread_barrier_t start;

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Runs with the device's devres lock held. */
static void bump(struct device *dev, void *res, void *data)
{
	volatile long *c = data;
	long v = *c;

	(void)dev;
	(void)res;
	for (volatile int i = 0; i < window; i++)
		;
	*c = v + 1;
}

static void *worker(void *arg)
{
	struct device *dev = arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < ITERS; i++) {
		void *p = devm_kmalloc(dev, 16, GFP_KERNEL);

		devres_for_each_res(dev, rec, NULL, NULL, bump, &counter);
		devm_kfree(dev, p);
	}
	return NULL;
}

/* The owner (this thread) and another, at once, from the first lock on. */
static void test_no_lost_update_across_revocation(void **state)
{
	struct device *dev = *state;
	pthread_t t;

	counter = 0;
	devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL)); /* bias: us */
	pthread_barrier_init(&start, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, worker, dev), 0);
	worker(dev);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&start);
	assert_int_equal(counter, 2 * ITERS);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, 1, 8);
}

static void *first_taker(void *arg)
{
	struct device *dev = arg;

	assert_non_null(devm_kmalloc(dev, 32, GFP_KERNEL));
	return NULL;
}

/*
 * A thread takes the bias and exits; this thread then uses the device,
 * revoking a bias whose owner is gone. A child of fork() does not: the
 * device is its parent's, refused with a WARN before any lock is touched.
 */
static void test_owner_gone_and_fork(void **state)
{
	struct device *dev = *state;
	pthread_t t;
	pid_t pid;
	int status;

	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
	assert_non_null(devm_kmalloc(dev, 32, GFP_KERNEL));
	expect_stats(dev, 2, 64);

	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int warns = devres_warn_count();
		void *p = devm_kmalloc(dev, 8, GFP_KERNEL);

		_exit(!p && devres_warn_count() == warns + 1 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	devres_release_all(dev);
}

/*
 * The revocation window itself, many times over: for each of many fresh
 * devices, this thread takes the bias and both threads then race into the
 * lock at once, so that the other thread's revocation meets the owner
 * inside or entering its critical section.
 */
enum {
	DEVS = 500,
	EACH = 4
};
static struct device *devs[DEVS];
static long counts[DEVS];

static void race_all(void)
{
	for (int d = 0; d < DEVS; d++) {
		pthread_barrier_wait(&start);
		for (int i = 0; i < EACH; i++)
			devres_for_each_res(devs[d], rec, NULL, NULL, bump,
					    &counts[d]);
	}
}

static void *racer(void *arg)
{
	(void)arg;
	race_all();
	return NULL;
}

static void test_many_revocations(void **state)
{
	pthread_t t;

	(void)state;
	window = 20000; /* longer than a membarrier() */
	for (int d = 0; d < DEVS; d++) {
		devs[d] = heap_dev(NULL, "bias%d", d);
		assert_non_null(devs[d]);
		/* The first lock: the bias goes to this thread. */
		devres_add(devs[d], devres_alloc(rec, 8, GFP_KERNEL));
		counts[d] = 0;
	}
	pthread_barrier_init(&start, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, racer, NULL), 0);
	race_all();
	pthread_join(t, NULL);
	pthread_barrier_destroy(&start);
	window = 20;
	for (int d = 0; d < DEVS; d++) {
		assert_int_equal(counts[d], 2 * EACH);
		assert_int_equal(devres_check(devs[d]), 0);
		put_device(devs[d]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_no_lost_update_across_revocation, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(test_owner_gone_and_fork,
						dev_setup, dev_teardown),
		cmocka_unit_test(test_many_revocations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
