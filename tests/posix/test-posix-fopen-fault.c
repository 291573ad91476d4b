// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * devm_fopen() with a mode too long for its buffer on the stack copies
 * the mode to the heap: that copy is behind the fault point, as every
 * allocation of a managed call, so that a sweep fails it too. Three
 * points then (the copy, the node, the open), each failing with NULL and
 * its errno, the ledger at its baseline; two for a short mode.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

static unsigned int points_of(struct device *dev, const char *mode)
{
	struct devres_ledger before, now;
	/* A short mode has no copy: its points are the last two. */
	unsigned int first = strlen(mode) >= 15 ? 0 : 1, points = 0;

	devres_ledger_snapshot(&before);
	for (unsigned int n = 1;; n++) {
		unsigned int left;
		FILE *f;
		int err;

		devres_fail_nth(n);
		errno = 0;
		f = devm_fopen(dev, "/dev/null", mode);
		err = errno;
		left = devres_fail_nth_get();
		devres_fail_nth(0);
		if (left) {
			assert_non_null(f);
			devm_fclose(dev, f);
			break;
		}
		assert_null(f);
		/* The copy, the node: ENOMEM; the open: EMFILE. */
		assert_int_equal(err, first + points < 2 ? ENOMEM : EMFILE);
		points++;
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
		assert_in_range(n, 1, 8);
	}
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
	return points;
}

static void long_mode(void **state)
{
	/*
	 * 16 characters: past the stack buffer's 16 with the added "e"
	 * (no ",ccs=": glibc keeps a converter's cache for the process).
	 */
	assert_int_equal(points_of(*state, "rbbbbbbbbbbbbbbb"), 3);
}

static void short_mode(void **state)
{
	assert_int_equal(points_of(*state, "r"), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(long_mode, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(short_mode, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
