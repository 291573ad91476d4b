// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * What close(2) reports reaches the log, and close is never retried. No
 * local file system fails a close, so this binary puts its own close() in
 * front of libc's (the executable comes first in symbol lookup, also for
 * the library's calls): it really closes, then reports an error for the
 * descriptor a test names.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

static int fail_fd = -1, fail_errno, fail_calls;

int close(int fd)
{
	static int (*real_close)(int);
	int ret;

	if (!real_close)
		*(void **)&real_close = dlsym(RTLD_NEXT, "close");
	ret = real_close(fd);
	if (fd != fail_fd)
		return ret;
	fail_calls++;
	if (ret)
		return ret;
	errno = fail_errno;
	return -1;
}

static void arm(int fd, int err)
{
	fail_fd = fd;
	fail_errno = err;
	fail_calls = 0;
}

static void test_close_error_is_logged(void **state)
{
	struct device *dev = *state;
	char want[128];
	int fd;

	fd = devm_open(dev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	arm(fd, EIO);
	start_log_capture();
	devm_close(dev, fd);
	devres_set_log_sink(NULL, NULL);
	arm(-1, 0);
	snprintf(want, sizeof(want),
		 "test-dev: devm_open: close(%d): Input/output error", fd);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	/* An I/O error, not a misuse: no WARN. */
	assert_int_equal(count_prefix("WARNING"), 0);
	assert_true(fcntl(fd, F_GETFD) < 0);
	expect_stats(dev, 0, 0);
}

static void test_close_error_at_release(void **state)
{
	struct device *dev = *state;
	char want[128];
	int fd;

	fd = devm_eventfd(dev, 0, 0);
	assert_true(fd >= 0);
	arm(fd, EIO);
	start_log_capture();
	errno = 77;
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(errno, 77);
	devres_set_log_sink(NULL, NULL);
	arm(-1, 0);
	snprintf(want, sizeof(want),
		 "test-dev: devm_eventfd: close(%d): Input/output error", fd);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
}

/* On Linux the descriptor is gone after EINTR: one call, no retry. */
static void test_close_not_retried_on_eintr(void **state)
{
	struct device *dev = *state;
	int fd;

	fd = devm_memfd_create(dev, "eintr", 0);
	assert_true(fd >= 0);
	arm(fd, EINTR);
	start_log_capture();
	devm_close(dev, fd);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(fail_calls, 1);
	arm(-1, 0);
	assert_int_equal(count_prefix("test-dev: devm_memfd_create: close("),
			 1);
	assert_true(fcntl(fd, F_GETFD) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)
		T(test_close_error_is_logged),
		T(test_close_error_at_release),
		T(test_close_not_retried_on_eintr),
#undef T
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
