// SPDX-License-Identifier: MIT
/* ctest-labels: stress hostile timeout=600 */
/*
 * The table of handles is bounded: 2^20 objects of a kind live at once
 * (the handle's index has 20 bits). Revocables, the one kind a process
 * makes that many of cheaply (100 MiB at the bound; threads stop far
 * earlier, at the system's limit), driven to the bound and past it: the
 * 2^20th is made, the next is refused with one WARN naming the bound, the
 * device's release gives all of them back, and a slot given back is taken
 * again. Before, the refusal was a NULL with no word, as for a short
 * memory. One thread: not in ThreadSanitizer's build, where it had no race
 * to find and took 8 s of CPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/revocable.h>
#include "testlib.h"

#define BOUND (1 << 20)

static int res;

static void test_revocables_past_the_bound(void **state)
{
	struct device *dev = *state;
	struct revocable *h;
	int w0 = devres_warn_count();

	for (int i = 0; i < BOUND; i++) {
		h = devm_revocable_create(dev, &res, NULL);
		if (!h)
			fail_msg("revocable %d of %d refused", i, BOUND);
	}
	assert_int_equal(devres_warn_count(), w0);
	start_capture();
	assert_null(devm_revocable_create(dev, &res, NULL));
	expect_warn("devm_revocable_create", "1048576 revocables live at once: "
					     "refused");
	assert_int_equal(devres_release_all(dev), BOUND);
	/* The slots are free again: taken by the next ones. */
	h = devm_revocable_create(dev, &res, NULL);
	assert_non_null(h);
	assert_true(revocable_try_access(h) == &res);
	revocable_access_end(h);
	assert_int_equal(devres_release_all(dev), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_revocables_past_the_bound,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
