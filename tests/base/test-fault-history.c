// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The fault points of a call do not depend on what its device held
 * before: the same acquisitions on the same device state pass the same
 * points, so a sweep's run N fails the same call in every run and its
 * reproducer (devres_fail_nth(N)) fails it again. Each cell counts the
 * points of one operation - an action added and removed (the lookup
 * builds the device's index), then ADDS more actions (the index grows
 * twice) - on a device with a history: none, a small dormant table left
 * by an earlier release, a large one, an index grown and left full of
 * tombstones. The count must be the operation's node allocations,
 * 1 + ADDS, in each; and the operation's lookups still find each action.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include "testlib.h"

#define ADDS 40

static void noop(void *data)
{
	(void)data;
}

/* Actions keyed by (noop, 1 + i): each a node of the device's index. */
static void *key(int i)
{
	return (void *)(uintptr_t)(1 + i);
}

/* @n actions, one looked up (the index built), all released. */
static void history(struct device *dev, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(devm_add_action(dev, noop, key(i)), 0);
	devm_remove_action(dev, noop, key(0));
	assert_int_equal(devres_release_all(dev), n - 1);
}

/* Many added and removed by key: the index left with tombstones. */
static void tombstones(struct device *dev)
{
	for (int i = 0; i < 11; i++)
		assert_int_equal(devm_add_action(dev, noop, key(i)), 0);
	for (int i = 1; i < 11; i++)
		devm_remove_action(dev, noop, key(i));
}

static unsigned int points_of_operation(struct device *dev)
{
	unsigned int n;

	devres_fail_nth(UINT_MAX);
	assert_int_equal(devm_add_action(dev, noop, key(100)), 0);
	devm_remove_action(dev, noop, key(100));
	for (int i = 0; i < ADDS; i++)
		assert_int_equal(devm_add_action(dev, noop, key(200 + i)), 0);
	n = UINT_MAX - devres_fail_nth_get();
	devres_fail_nth(0);
	/* Each is found by its key, newest to oldest. */
	for (int i = ADDS - 1; i >= 0; i--) {
		assert_true(devm_is_action_added(dev, noop, key(200 + i)));
		devm_release_action(dev, noop, key(200 + i));
	}
	return n;
}

static void no_history(void **state)
{
	assert_int_equal(points_of_operation(*state), 1 + ADDS);
}

static void small_dormant_table(void **state)
{
	history(*state, 4);
	assert_int_equal(points_of_operation(*state), 1 + ADDS);
}

static void large_dormant_table(void **state)
{
	history(*state, 150);
	assert_int_equal(points_of_operation(*state), 1 + ADDS);
}

static void index_with_tombstones(void **state)
{
	tombstones(*state);
	assert_int_equal(points_of_operation(*state), 1 + ADDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_history, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(small_dormant_table, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(large_dormant_table, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(index_with_tombstones,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests_name("fault-history", tests, NULL, NULL);
}
