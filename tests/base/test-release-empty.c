// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * devres_release_all() of a device with nothing listed (src/base/devres.c)
 * returns 0 without taking the device's lock, so that a thread releasing
 * in a loop does not take the lock from the threads that fill the device:
 * it returns while another thread holds the lock. What another thread
 * added before the call is released by it, and a device that has
 * something is still released under the lock.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "../src/base/node.h"

static int held, go_on;

static void *holder(void *arg)
{
	struct device *dev = arg;

	devres__lock_slow(dev, __func__);
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&go_on, __ATOMIC_ACQUIRE))
		sched_yield();
	unlock_dev(dev);
	return NULL;
}

static void test_empty_device_not_locked(void **state)
{
	struct device *dev = *state;
	pthread_t t;

	held = go_on = 0;
	assert_int_equal(pthread_create(&t, NULL, holder, dev), 0);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		sched_yield();
	/* A deadlock ends the test by its alarm, which fails it. */
	alarm(60);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(devres_release_all(dev), 0);
	alarm(0);
	__atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(devres_check(dev), 0);
}

static void *filler(void *arg)
{
	struct device *dev = arg;

	for (int i = 0; i < 100; i++)
		if (!devm_kmalloc(dev, 300, GFP_KERNEL))
			return NULL;
	return arg;
}

static void test_added_before_is_released(void **state)
{
	struct device *dev = *state;
	void *ret;
	pthread_t t;

	for (int round = 0; round < 50; round++) {
		assert_int_equal(pthread_create(&t, NULL, filler, dev), 0);
		assert_int_equal(pthread_join(t, &ret), 0);
		assert_ptr_equal(ret, dev);
		assert_int_equal(devres_release_all(dev), 100);
		assert_int_equal(devres_release_all(dev), 0);
		expect_stats(dev, 0, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty_device_not_locked,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_added_before_is_released,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
