// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A managed thread, descriptor and stream seen from the wrong device and
 * from a deleted one. devm_thread_stop(), devm_close() and devm_fclose()
 * with a device that does not own the object (a thread running, or one
 * whose function has finished its work, not yet stopped): one WARN, -EINVAL where the call
 * returns, and the object is untouched (still open, still stopped once
 * by its owner with its result). device_del() releases the device's
 * resources: the same calls after it WARN once and touch nothing, and
 * what is acquired after it (devm_thread_run(), devm_open(),
 * devm_fopen()) is released by the device's last put, which the ledger
 * shows.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

static int runs_until_stopped(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 7;
}

static int returns_at_once(void *arg)
{
	int *done = arg;

	__atomic_store_n(done, 1, __ATOMIC_RELEASE);
	return 5;
}

static void thread_of_another_device(void **state)
{
	struct devres_thread *t;
	int done = 0;

	(void)state;
	/* Running. */
	t = devm_thread_run(&tdev, runs_until_stopped, NULL, "t");
	assert_false(IS_ERR(t));
	start_capture();
	assert_int_equal(devm_thread_stop(&other, t), -EINVAL);
	expect_warn_on("other-dev", "devm_thread_stop",
		       "is not managed by this device");
	assert_int_equal(devm_thread_stop(&tdev, t), 7);
	/* Returned, not yet stopped. */
	t = devm_thread_run(&tdev, returns_at_once, &done, "q");
	assert_false(IS_ERR(t));
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		usleep(1000);
	start_capture();
	assert_int_equal(devm_thread_stop(&other, t), -EINVAL);
	expect_warn_on("other-dev", "devm_thread_stop",
		       "is not managed by this device");
	assert_int_equal(devm_thread_stop(&tdev, t), 5);
}

static void fd_and_stream_of_another_device(void **state)
{
	FILE *f;
	int fd;

	(void)state;
	fd = devm_open(&tdev, "/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	start_capture();
	devm_close(&other, fd);
	expect_warn_on("other-dev", "devm_close",
		       "is not managed by this device");
	assert_true(fcntl(fd, F_GETFD) >= 0);
	devm_close(&tdev, fd);
	f = devm_fopen(&tdev, "/dev/null", "re");
	assert_non_null(f);
	start_capture();
	assert_int_equal(devm_fclose(&other, f), -EINVAL);
	expect_warn_on("other-dev", "devm_fclose",
		       "is not managed by this device");
	assert_int_equal(fgetc(f), EOF); /* still open, at its end */
	assert_int_equal(devm_fclose(&tdev, f), 0);
}

static void calls_after_device_del(void **state)
{
	struct devres_ledger before, now;
	struct devres_thread *t, *late;
	struct device *dev;
	int fd, late_fd, released;
	FILE *f, *late_f;

	(void)state;
	devres_ledger_snapshot(&before);
	released = __atomic_load_n(&heap_released, __ATOMIC_ACQUIRE);
	dev = heap_dev(NULL, "deleted");
	assert_non_null(dev);
	assert_int_equal(device_add(dev), 0);
	t = devm_thread_run(dev, runs_until_stopped, NULL, "t");
	assert_false(IS_ERR(t));
	fd = devm_open(dev, "/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	f = devm_fopen(dev, "/dev/null", "re");
	assert_non_null(f);
	device_del(dev);
	/* Released by the deletion: the thread stopped, the fd closed. */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	start_capture();
	assert_int_equal(devm_thread_stop(dev, t), -EINVAL);
	expect_warn_on("deleted", "devm_thread_stop",
		       "is not managed by this device");
	start_capture();
	devm_close(dev, fd);
	expect_warn_on("deleted", "devm_close",
		       "is not managed by this device");
	/* Acquired after the deletion: given back by the last put. */
	start_capture();
	late = devm_thread_run(dev, runs_until_stopped, NULL, "late");
	assert_false(IS_ERR(late));
	late_fd = devm_open(dev, "/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(late_fd >= 0);
	late_f = devm_fopen(dev, "/dev/null", "re");
	assert_non_null(late_f);
	assert_int_equal(devm_fclose(dev, late_f), 0);
	expect_no_warn();
	put_device(dev);
	assert_int_equal(__atomic_load_n(&heap_released, __ATOMIC_ACQUIRE),
			 released + 1);
	assert_int_equal(fcntl(late_fd, F_GETFD), -1);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(thread_of_another_device,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(fd_and_stream_of_another_device,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(calls_after_device_del,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: the backtraces would be captured with them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
