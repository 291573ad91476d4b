// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Actions: devm_add_action, devm_add_action_or_reset, devm_remove_action,
 * devm_release_action, devm_is_action_added.
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
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

/* Every action run appends its argument's value to the order. */
static void act(void *data)
{
	if (norder < 64)
		order[norder] = data ? *(int *)data : -100;
	norder++;
}

static void act2(void *data)
{
	if (norder < 64)
		order[norder] = -*(int *)data;
	norder++;
}

static int v[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

static void test_action_runs_in_lifo_order(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;

	reset_order();
	add_rec(dev, 1);
	assert_int_equal(devm_add_action(dev, act, &v[2]), 0);
	add_rec(dev, 3);
	assert_int_equal(devm_add_action(dev, act2, &v[4]), 0);
	assert_int_equal(norder, 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 4);
	assert_int_equal(st.total_size,
			 2 * (int)sizeof(int) + 2 * (int)sizeof(void *));
	assert_int_equal(devres_release_all(dev), 4);
	assert_int_equal(norder, 4);
	assert_int_equal(order[0], -4);
	assert_int_equal(order[1], 3);
	assert_int_equal(order[2], 2);
	assert_int_equal(order[3], 1);
}

static void test_is_action_added(void **state)
{
	struct device *dev = *state;

	assert_false(devm_is_action_added(dev, act, &v[1]));
	assert_int_equal(devm_add_action(dev, act, &v[1]), 0);
	assert_true(devm_is_action_added(dev, act, &v[1]));
	/* Both the function and the data must match. */
	assert_false(devm_is_action_added(dev, act, &v[2]));
	assert_false(devm_is_action_added(dev, act2, &v[1]));
	assert_int_equal(devm_add_action(dev, act, NULL), 0);
	assert_true(devm_is_action_added(dev, act, NULL));
	assert_int_equal(devres_release_all(dev), 2);
	assert_false(devm_is_action_added(dev, act, &v[1]));
	assert_false(devm_is_action_added(dev, act, NULL));
}

static void test_remove_action_does_not_run(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;

	reset_order();
	assert_int_equal(devm_add_action(dev, act, &v[1]), 0);
	assert_int_equal(devm_add_action(dev, act, &v[2]), 0);
	start_capture();
	devm_remove_action(dev, act, &v[1]);
	expect_no_warn();
	assert_int_equal(norder, 0);
	assert_false(devm_is_action_added(dev, act, &v[1]));
	assert_true(devm_is_action_added(dev, act, &v[2]));
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - ledger_base.nodes, 1);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 2);
}

static void test_release_action_runs_now(void **state)
{
	struct device *dev = *state;

	reset_order();
	assert_int_equal(devm_add_action(dev, act, &v[1]), 0);
	assert_int_equal(devm_add_action(dev, act, &v[2]), 0);
	assert_int_equal(devm_add_action(dev, act, &v[3]), 0);
	start_capture();
	devm_release_action(dev, act, &v[2]);
	expect_no_warn();
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 2);
	assert_false(devm_is_action_added(dev, act, &v[2]));
	/* It does not run a second time. */
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(norder, 3);
	assert_int_equal(order[1], 3);
	assert_int_equal(order[2], 1);
}

static void test_duplicate_records(void **state)
{
	struct device *dev = *state;

	reset_order();
	assert_int_equal(devm_add_action(dev, act, &v[5]), 0);
	add_rec(dev, 6);
	assert_int_equal(devm_add_action(dev, act, &v[5]), 0);
	/* One record goes; the other still runs at release. */
	devm_remove_action(dev, act, &v[5]);
	assert_true(devm_is_action_added(dev, act, &v[5]));
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], 6);
	assert_int_equal(order[1], 5);
}

static void test_or_reset_success(void **state)
{
	struct device *dev = *state;

	reset_order();
	assert_int_equal(devm_add_action_or_reset(dev, act, &v[1]), 0);
	assert_int_equal(norder, 0);
	assert_true(devm_is_action_added(dev, act, &v[1]));
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(norder, 1);
}

static void test_or_reset_runs_on_failure(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;

	reset_order();
	devres_fail_nth(1);
	assert_int_equal(devm_add_action_or_reset(dev, act, &v[7]), -ENOMEM);
	assert_int_equal(devres_fail_nth_get(), 0);
	/* Run at once, not recorded: nothing left to undo. */
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 7);
	assert_false(devm_is_action_added(dev, act, &v[7]));
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes, ledger_base.nodes);
	assert_int_equal(devres_release_all(dev), 0);
	assert_int_equal(norder, 1);
}

static void test_add_action_fail_nth(void **state)
{
	struct device *dev = *state;

	reset_order();
	devres_fail_nth(2);
	assert_int_equal(devm_add_action(dev, act, &v[1]), 0);
	assert_int_equal(devm_add_action(dev, act, &v[2]), -ENOMEM);
	assert_int_equal(devm_add_action(dev, act, &v[3]), 0);
	/* Plain devm_add_action does not run a failed action. */
	assert_int_equal(norder, 0);
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[1], 1);
}

static void test_action_in_group(void **state)
{
	struct device *dev = *state;
	void *g;

	reset_order();
	assert_int_equal(devm_add_action(dev, act, &v[1]), 0);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	assert_int_equal(devm_add_action(dev, act, &v[2]), 0);
	assert_int_equal(devm_add_action(dev, act2, &v[3]), 0);
	devres_close_group(dev, g);
	assert_int_equal(devres_release_group(dev, g), 2);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], -3);
	assert_int_equal(order[1], 2);
	assert_true(devm_is_action_added(dev, act, &v[1]));
}

/* An action may manage more resources of its own device when it runs. */
static struct device *self_dev;

static void acquiring_action(void *data)
{
	(void)data;
	norder++;
	assert_int_equal(devm_add_action(self_dev, act, &v[6]), 0);
}

static void test_action_acquires_on_release(void **state)
{
	struct device *dev = *state;

	reset_order();
	self_dev = dev;
	assert_int_equal(devm_add_action(dev, acquiring_action, NULL), 0);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(norder, 1);
	assert_true(devm_is_action_added(dev, act, &v[6]));
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(order[1], 6);
}

static void test_absent_action_warns(void **state)
{
	struct device *dev = *state;

	reset_order();
	assert_int_equal(devm_add_action(dev, act, &v[1]), 0);
	start_capture();
	devm_remove_action(dev, act, &v[2]);
	expect_warn("devm_remove_action", "not recorded");
	start_capture();
	devm_release_action(dev, act2, &v[1]);
	expect_warn("devm_release_action", "not recorded");
	assert_int_equal(norder, 0);
	assert_true(devm_is_action_added(dev, act, &v[1]));
}

/*
 * A resource whose release is NULL is of kind (NULL, NULL): an action
 * lookup with a NULL action must never reach it. Each
 * call WARNs once and leaves the node where it is.
 */
static void test_null_action_matches_no_resource(void **state)
{
	struct device *dev = *state;
	void *p = devres_alloc(NULL, 0, GFP_KERNEL);
	void *q = devres_alloc(NULL, sizeof(void *), GFP_KERNEL);

	assert_non_null(p);
	assert_non_null(q);
	devres_add(dev, p);
	devres_add(dev, q);
	start_capture();
	devm_remove_action(dev, NULL, NULL);
	expect_warn("devm_remove_action", "NULL action");
	start_capture();
	devm_release_action(dev, NULL, NULL);
	expect_warn("devm_release_action", "NULL action");
	start_capture();
	assert_false(devm_is_action_added(dev, NULL, p));
	expect_warn("devm_is_action_added", "NULL action");
	start_capture();
	assert_false(devm_is_action_added(dev, NULL, NULL));
	expect_warn("devm_is_action_added", "NULL action");
	/* Both nodes are still the device's, and the caller's pointers good. */
	expect_stats(dev, 2, (int)sizeof(void *));
	assert_ptr_equal(devres_find(dev, NULL, NULL, NULL), q);
	assert_int_equal(devres_release_all(dev), 2);
}

/* Nor does an action lookup reach a NULL-release node keyed by its data. */
static void test_action_lookup_skips_resources(void **state)
{
	struct device *dev = *state;
	void **p = devres_alloc(NULL, sizeof(void *), GFP_KERNEL);

	assert_non_null(p);
	*p = &v[3];
	devres_add(dev, p);
	assert_false(devm_is_action_added(dev, act, &v[3]));
	start_capture();
	devm_remove_action(dev, act, &v[3]);
	expect_warn("devm_remove_action", "not recorded");
	expect_stats(dev, 1, (int)sizeof(void *));
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_action_runs_in_lifo_order),
		T(test_is_action_added),
		T(test_remove_action_does_not_run),
		T(test_release_action_runs_now),
		T(test_duplicate_records),
		T(test_or_reset_success),
		T(test_or_reset_runs_on_failure),
		T(test_add_action_fail_nth),
		T(test_action_in_group),
		T(test_action_acquires_on_release),
		T(test_absent_action_warns),
		T(test_null_action_matches_no_resource),
		T(test_action_lookup_skips_resources),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
