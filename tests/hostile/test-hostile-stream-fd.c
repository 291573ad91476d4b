// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * The descriptor of a managed stream (devm_fopen()) closed or replaced by
 * hand, under the stream: close(fileno(f)), close_range() over it,
 * dup2() and dup3() onto it. Each is one WARN at the call and the
 * stream's node dropped, so that the device's release does not fclose()
 * the stream: that would close the number again, and another owner's
 * open file has it by then. Before, none was caught, and the release
 * closed the other owner's descriptor. CLOSE_RANGE_CLOEXEC closes
 * nothing: no WARN, the stream stays managed.
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
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

enum how {
	CLOSE,
	CLOSE_RANGE,
	DUP2,
	DUP3,
	CLOEXEC_ONLY
};

static const struct {
	enum how how;
	const char *func;
} cells[] = {
	{ CLOSE, "close" }, { CLOSE_RANGE, "close_range" }, { DUP2, "dup2" },
	{ DUP3, "dup3" },   { CLOEXEC_ONLY, NULL },
};

static void by_hand(enum how how, int fd)
{
	int z = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	assert_true(z >= 0);
	switch (how) {
	case CLOSE:
		assert_int_equal(close(fd), 0);
		break;
	case CLOSE_RANGE:
		assert_int_equal(
			close_range((unsigned int)fd, (unsigned int)fd, 0), 0);
		break;
	case DUP2:
		assert_int_equal(dup2(z, fd), fd);
		break;
	case DUP3:
		assert_int_equal(dup3(z, fd, O_CLOEXEC), fd);
		break;
	case CLOEXEC_ONLY:
		assert_int_equal(close_range((unsigned int)fd, (unsigned int)fd,
					     CLOSE_RANGE_CLOEXEC),
				 0);
		break;
	}
	close(z);
}

static void test_stream_fd_by_hand(void **state)
{
	struct device *dev = *state;

	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		struct devres_ledger before, after;
		FILE *f;
		int fd, owner2 = -1;
		char c;

		devres_ledger_snapshot(&before);
		f = devm_fopen(dev, "/dev/null", "r");
		assert_non_null(f);
		fd = fileno(f);
		start_capture();
		by_hand(cells[i].how, fd);
		if (!cells[i].func) {
			/* Nothing closed: still the device's, released by it. */
			expect_no_warn();
			assert_int_equal(devres_release_all(dev), 1);
			devres_ledger_snapshot(&after);
			assert_int_equal(
				devres_ledger_diff(&before, &after, stderr), 0);
			continue;
		}
		expect_warn(cells[i].func, "a stream's, acquired with "
					   "devm_fopen(): use devm_fclose()");
		/* Another owner gets the number (dup2/dup3 made it one). */
		if (cells[i].how == CLOSE || cells[i].how == CLOSE_RANGE)
			owner2 = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		else
			owner2 = fd;
		assert_int_equal(owner2, fd);
		/* The node is gone: the release leaves the number alone. */
		assert_int_equal(devres_release_all(dev), 0);
		assert_int_equal(read(owner2, &c, 1), 1);
		assert_int_equal(close(owner2), 0);
		/* The FILE is the program's: its fclose() is a plain one. */
		start_capture();
		fclose(f);
		expect_no_warn();
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stream_fd_by_hand,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
