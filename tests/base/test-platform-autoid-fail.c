// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * The taking of an automatic platform id is a fault point, whether the
 * table of ids grows or not: platform_device_add() of the process's
 * first PLATFORM_DEVID_AUTO device, which grows the table, and of the
 * next one (the table has room) each hold exactly one fault point more
 * than the add of a device with no id. Every injected failure returns
 * -ENOMEM, takes no id (the ids handed out after are 0 and 1, the
 * lowest) and leaves the ledger as it was; the device is added on the
 * next try.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/platform.h>
#include <devres/fault.h>
#include "testlib.h"

/*
 * Adds @pdev with the n-th fault point failed, n = 1, 2, ..., until an
 * add reaches no fault: the number of fault points of the add.
 */
static unsigned int add_points(struct platform_device *pdev)
{
	for (unsigned int n = 1; n < 1000; n++) {
		struct devres_ledger before, after;
		int ret;

		devres_ledger_snapshot(&before);
		devres_fail_nth(n);
		ret = platform_device_add(pdev);
		if (devres_fail_nth_get()) {
			devres_fail_nth(0);
			assert_int_equal(ret, 0);
			return n - 1;
		}
		if (ret != -ENOMEM)
			fail_msg("%s: fault point %u: %d, not -ENOMEM",
				 pdev->name, n, ret);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	fail_msg("%s: the add never ran without a fault", pdev->name);
	return 0;
}

static void auto_id_is_a_fault_point(void **state)
{
	struct platform_device *none, *first, *next;
	unsigned int p_none, p_first, p_next;

	(void)state;
	none = platform_device_alloc("af-none", PLATFORM_DEVID_NONE);
	first = platform_device_alloc("af-auto", PLATFORM_DEVID_AUTO);
	next = platform_device_alloc("af-auto", PLATFORM_DEVID_AUTO);
	assert_non_null(none);
	assert_non_null(first);
	assert_non_null(next);
	p_none = add_points(none);
	p_first = add_points(first);
	p_next = add_points(next);
	print_message("fault points of an add: %u with no id, %u for the "
		      "first automatic one, %u for the next\n",
		      p_none, p_first, p_next);
	assert_int_equal(p_first, p_none + 1);
	assert_int_equal(p_next, p_none + 1);
	/* No failed add kept an id. */
	assert_int_equal(first->id, 0);
	assert_int_equal(next->id, 1);
	platform_device_unregister(next);
	platform_device_unregister(first);
	platform_device_unregister(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(auto_id_is_a_fault_point),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
