// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A managed thread's handle kept past its thread: stopped by
 * devm_thread_stop(), by the device's release, or ended by itself and
 * then released. devres_thread_set_stop_timeout() of it WARNs once and
 * reads none of the freed handle (ASan saw the read it used to make);
 * devm_thread_stop() of it WARNs once and returns -EINVAL. Then a thread
 * setting a handle's timeout races the device's release of it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

static int until_stopped(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		(void)devres_thread_sleep(1000);
	return 0;
}

static int at_once(void *arg)
{
	(void)arg;
	return 7;
}

enum end {
	BY_STOP,
	BY_RELEASE,
	BY_ITSELF
};

static void stale(enum end how)
{
	struct devres_thread *t = devm_thread_run(
		&tdev, how == BY_ITSELF ? at_once : until_stopped, NULL,
		"stale");

	assert_false(IS_ERR_OR_NULL(t));
	if (how == BY_STOP)
		assert_int_equal(devm_thread_stop(&tdev, t), 0);
	else
		devres_release_all(&tdev);
	start_capture();
	devres_thread_set_stop_timeout(t, 5);
	expect_warn_on("(no device)", "devres_thread_set_stop_timeout",
		       "is not a managed thread");
	start_capture();
	assert_int_equal(devm_thread_stop(&tdev, t), -EINVAL);
	expect_warn("devm_thread_stop", "is not managed by this device");
}

static void stopped_by_devm_thread_stop(void **state)
{
	(void)state;
	stale(BY_STOP);
}

static void stopped_by_release(void **state)
{
	(void)state;
	stale(BY_RELEASE);
}

static void ended_by_itself_then_released(void **state)
{
	(void)state;
	stale(BY_ITSELF);
}

static struct devres_thread *race_t;
static int race_stop;

static void *setter(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE))
		devres_thread_set_stop_timeout(
			__atomic_load_n(&race_t, __ATOMIC_ACQUIRE), 1000);
	return NULL;
}

static void discard(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

static void set_timeout_races_release(void **state)
{
	pthread_t s;

	(void)state;
	devres_set_log_sink(discard, NULL);
	__atomic_store_n(&race_t,
			 devm_thread_run(&tdev, until_stopped, NULL, "race"),
			 __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&s, NULL, setter, NULL), 0);
	for (int i = 0; i < 50; i++) {
		struct devres_thread *t;

		devres_release_all(&tdev);
		t = devm_thread_run(&tdev, until_stopped, NULL, "race");
		assert_false(IS_ERR_OR_NULL(t));
		__atomic_store_n(&race_t, t, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELEASE);
	pthread_join(s, NULL);
	devres_set_log_sink(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(stopped_by_devm_thread_stop,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(stopped_by_release, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ended_by_itself_then_released,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(set_timeout_races_release,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
