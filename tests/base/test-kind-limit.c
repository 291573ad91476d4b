// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The table of release functions and actions has room for 65536: at the
 * limit a new one is refused with a WARN (it was refused silently, the
 * allocation just failed), while those already known keep working.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"

typedef void (*action_fn)(void *);

/* Distinct addresses, never called: each action is removed unrun. */
static action_fn fake(unsigned int i)
{
	return (action_fn)(uintptr_t)(0x10000000u + 16u * i);
}

static void table_full_warns(void **state)
{
	struct device *dev = *state;
	unsigned int i;
	int ret = 0;

	start_capture();
	for (i = 0; i < 70000; i++) {
		ret = devm_add_action_named(dev, fake(i), NULL, "fake");
		if (ret)
			break;
		devm_remove_action(dev, fake(i), NULL);
	}
	assert_int_equal(ret, -ENOMEM);
	assert_true(i > 65000 && i < 65536);
	expect_warn_on("(no device)", "fake",
		       "65536 release functions and actions known");
	/* Every further new one: one WARN each, and refused. */
	start_capture();
	assert_int_equal(devm_add_action_named(dev, fake(i + 1), NULL, "fake"),
			 -ENOMEM);
	expect_warn_on("(no device)", "fake",
		       "65536 release functions and actions known: no room "
		       "for another");
	/* Known ones still work. */
	start_capture();
	assert_int_equal(devm_add_action_named(dev, fake(0), NULL, "fake"), 0);
	devm_remove_action(dev, fake(0), NULL);
	assert_non_null(devm_kmalloc(dev, 16, GFP_KERNEL));
	expect_no_warn();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(table_full_warns, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
