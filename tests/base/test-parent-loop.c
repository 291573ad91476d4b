// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * A device may not be its own parent or ancestor. A parent only
 * initialized may take children, so a chain of parents can be built
 * before its top is added: the add that would close a loop (the device
 * its own parent, or a parent whose added ancestors lead back to it) is
 * refused with one WARN, as each child holds a reference on its parent
 * and a loop would hold every device in it for ever. The table: loops of
 * 1 to 4 devices, closed by each of the adding calls; then chains that
 * are no loop (deep, or beside one) still add.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"

#define LOOP_MAX 4
#define REASON "device is its own parent or ancestor"

enum closer {
	BY_ADD,
	BY_REGISTER,
	BY_PLATFORM_ADD,
	CLOSERS
};

static const char *const closer_name[CLOSERS] = {
	"device_add",
	"device_register",
	"platform_device_add",
};

static void ledger_is_back(const struct devres_ledger *before)
{
	struct devres_ledger now;

	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(before, &now, stderr), 0);
}

/*
 * A loop of @len devices closed by @how: x[1..len-1] are added first,
 * each under the next and the last under x[0], which is only initialized
 * (zeroed for device_register(), so only its own parent: a zeroed
 * device takes no children); then x[0] is added under x[1] (or under
 * itself when @len is 1) and refused.
 */
static void one_loop(int len, enum closer how)
{
	struct devres_ledger before;
	struct device *x[LOOP_MAX] = { NULL };
	struct platform_device *pdev = NULL;
	int released = heap_released, ret;
	char name[24] = "loop0";

	devres_ledger_snapshot(&before);
	if (how == BY_PLATFORM_ADD) {
		pdev = platform_device_alloc("loop", len);
		assert_non_null(pdev);
		x[0] = &pdev->dev;
		snprintf(name, sizeof(name), "loop.%d", len);
	} else if (how == BY_REGISTER) {
		x[0] = calloc(1, sizeof(*x[0]));
		assert_non_null(x[0]);
		x[0]->release = heap_release;
		x[0]->init_name = "loop0";
	} else {
		x[0] = heap_dev(NULL, "loop0");
	}
	for (int i = 1; i < len; i++)
		x[i] = heap_dev(NULL, "loop%d", i);
	for (int i = len - 1; i >= 1; i--) {
		x[i]->parent = i == len - 1 ? x[0] : x[i + 1];
		assert_int_equal(device_add(x[i]), 0);
	}
	x[0]->parent = len == 1 ? x[0] : x[1];

	start_capture();
	if (how == BY_PLATFORM_ADD)
		ret = platform_device_add(pdev);
	else if (how == BY_REGISTER)
		ret = device_register(x[0]);
	else
		ret = device_add(x[0]);
	assert_int_equal(ret, -EINVAL);
	expect_warn_on(name, "device_add", REASON);
	assert_false(device_is_bound(x[0]));

	/* Nothing was added: each device goes once, children first. */
	for (int i = 1; i < len; i++)
		device_del(x[i]);
	for (int i = 1; i < len; i++)
		put_device(x[i]);
	if (pdev)
		platform_device_put(pdev);
	else
		put_device(x[0]);
	assert_int_equal(heap_released - released, pdev ? len - 1 : len);
	ledger_is_back(&before);
}

static void every_loop_refused(void **state)
{
	(void)state;
	for (int len = 1; len <= LOOP_MAX; len++)
		for (int how = 0; how < CLOSERS; how++) {
			if (how == BY_REGISTER && len > 1)
				continue;
			print_message("loop of %d closed by %s\n", len,
				      closer_name[how]);
			one_loop(len, (enum closer)how);
		}
}

/* A chain of 64 added devices, and one added under its deepest: no loop. */
static void deep_chain_adds(void **state)
{
	struct devres_ledger before;
	struct device *x[65];
	int released = heap_released;

	(void)state;
	devres_ledger_snapshot(&before);
	start_capture();
	for (int i = 0; i < 65; i++) {
		x[i] = heap_dev(NULL, "chain%d", i);
		x[i]->parent = i ? x[i - 1] : NULL;
		assert_int_equal(device_add(x[i]), 0);
	}
	expect_no_warn();
	for (int i = 64; i >= 0; i--)
		device_unregister(x[i]);
	assert_int_equal(heap_released - released, 65);
	ledger_is_back(&before);
}

/*
 * Two devices under one parent only initialized, one of them then the
 * other's parent: a tree, not a loop; and the refused loop leaves its
 * members usable: the refused device, given a parent of its own, adds.
 */
static void tree_beside_loop(void **state)
{
	struct devres_ledger before;
	struct device *top, *a, *b;
	int released = heap_released;

	(void)state;
	devres_ledger_snapshot(&before);
	top = heap_dev(NULL, "top");
	a = heap_dev(NULL, "a");
	b = heap_dev(NULL, "b");
	a->parent = top;
	b->parent = a;
	start_capture();
	assert_int_equal(device_add(a), 0);
	assert_int_equal(device_add(b), 0);
	expect_no_warn();

	top->parent = b;
	start_capture();
	assert_int_equal(device_add(top), -EINVAL);
	expect_warn_on("top", "device_add", REASON);

	top->parent = NULL;
	start_capture();
	assert_int_equal(device_add(top), 0);
	expect_no_warn();
	device_unregister(b);
	device_unregister(a);
	device_unregister(top);
	assert_int_equal(heap_released - released, 3);
	ledger_is_back(&before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_loop_refused),
		cmocka_unit_test(deep_chain_adds),
		cmocka_unit_test(tree_beside_loop),
	};

	/* One line a WARN: the debug build's backtrace off. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
