// SPDX-License-Identifier: MIT
/* ctest-labels: tsan */
/*
 * Every way a managed thread can end, each under a release that must
 * neither hang nor crash: its function returns, calls pthread_exit(), is
 * cancelled, releases its own device at once (before its creator has
 * returned), releases it and then exits. alarm() turns a hang into a
 * failure.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

/*
 * ThreadSanitizer loses track of a thread cancelled inside one of its
 * interceptors (here ppoll()): the locks its exit takes are not seen and
 * it reports races that are not there. Cancellation is tested elsewhere.
 */
static void skip_cancel_under_tsan(void)
{
#ifdef T_TSAN
	skip();
#endif
}

static long ledger_threads(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.threads;
}

/* The ledger counts a detached thread until it has given back its fd. */
static void wait_threads(long n)
{
	for (int i = 0; i < 5000 && ledger_threads() != n; i++)
		usleep(1000);
	assert_int_equal(ledger_threads(), n);
}

struct ender {
	struct device *dev;
	pthread_t self;
	int started;
	int released;
};

static void wait_started(struct ender *e)
{
	while (!__atomic_load_n(&e->started, __ATOMIC_ACQUIRE))
		usleep(100);
}

static int exit_fn(void *arg)
{
	struct ender *e = arg;

	__atomic_store_n(&e->started, 1, __ATOMIC_RELEASE);
	pthread_exit(NULL);
}

static int cancel_fn(void *arg)
{
	struct ender *e = arg;

	e->self = pthread_self();
	__atomic_store_n(&e->started, 1, __ATOMIC_RELEASE);
	for (;;)
		devres_thread_sleep(60000); /* a cancellation point */
	return 0;
}

static int self_release_fn(void *arg)
{
	struct ender *e = arg;

	__atomic_store_n(&e->released, devres_release_all(e->dev),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&e->started, 1, __ATOMIC_RELEASE);
	return 0;
}

static int self_release_exit_fn(void *arg)
{
	self_release_fn(arg);
	pthread_exit(NULL);
}

static void exit_then_stop(void **state)
{
	struct device *dev = *state;
	struct ender e = { .dev = dev };
	struct devres_thread *t;

	t = devm_thread_run(dev, exit_fn, &e, "exit");
	assert_false(IS_ERR(t));
	wait_started(&e);
	assert_int_equal(devm_thread_stop(dev, t), -ECANCELED);
	expect_stats(dev, 0, 0);
}

static void exit_then_release(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct ender e = { .dev = dev };

	assert_false(IS_ERR(devm_thread_run(dev, exit_fn, &e, "exit")));
	wait_started(&e);
	/* Before the fix this waited forever for a return that never came. */
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(ledger_threads(), threads);
}

static void cancelled_then_stop(void **state)
{
	struct device *dev = *state;
	struct ender e = { .dev = dev };
	struct devres_thread *t;

	skip_cancel_under_tsan();
	t = devm_thread_run(dev, cancel_fn, &e, "cancel");
	assert_false(IS_ERR(t));
	wait_started(&e);
	assert_int_equal(pthread_cancel(e.self), 0);
	assert_int_equal(devm_thread_stop(dev, t), -ECANCELED);
}

static void cancelled_then_release(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct ender e = { .dev = dev };

	skip_cancel_under_tsan();
	assert_false(IS_ERR(devm_thread_run(dev, cancel_fn, &e, "cancel")));
	wait_started(&e);
	assert_int_equal(pthread_cancel(e.self), 0);
	usleep(1000);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(ledger_threads(), threads);
}

/*
 * The thread's first act releases its device: its own node is already
 * listed, so it finds it (and is not left running unmanaged).
 */
static void releases_own_device_at_once(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();

	for (int i = 0; i < 200; i++) {
		struct ender e = { .dev = dev };

		start_capture();
		assert_false(IS_ERR(
			devm_thread_run(dev, self_release_fn, &e, "self")));
		wait_started(&e);
		assert_int_equal(__atomic_load_n(&e.released, __ATOMIC_ACQUIRE),
				 1);
		expect_stats(dev, 0, 0);
		wait_threads(threads);
	}
}

static void releases_own_device_then_exits(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct ender e = { .dev = dev };

	assert_true(devm_eventfd(dev, 0, 0) >= 0);
	start_capture();
	assert_false(IS_ERR(
		devm_thread_run(dev, self_release_exit_fn, &e, "self-exit")));
	wait_started(&e);
	assert_int_equal(e.released, 2);
	expect_stats(dev, 0, 0);
	wait_threads(threads);
	assert_int_equal(devres_release_all(dev), 0);
}

static int setup(void **state)
{
	alarm(60);
	return dev_setup(state);
}

static int teardown(void **state)
{
	alarm(0);
	return dev_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(exit_then_stop),
		T(exit_then_release),
		T(cancelled_then_stop),
		T(cancelled_then_release),
		T(releases_own_device_at_once),
		T(releases_own_device_then_exits),
#undef T
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
