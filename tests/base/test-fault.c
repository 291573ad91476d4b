// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * fail-nth: the kernel's semantics, one count per fault-injectable call,
 * per thread, and DEVRES_FAIL_NTH arming the main thread at start (checked
 * by running this binary again with the variable set).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void dev_init(struct device *dev)
{
	*dev = (struct device){ .release = dev_release };
	device_initialize(dev);
}

static void dev_done(struct device *dev)
{
	devres_release_all(dev);
	put_device(dev);
}

static void ledger_same(const struct devres_ledger *before)
{
	struct devres_ledger now;

	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(before, &now, NULL), 0);
}

static void nth_semantics(void **state)
{
	struct device dev;

	(void)state;
	dev_init(&dev);
	assert_int_equal(devres_fail_nth_get(), 0);
	devres_fail_nth(3);
	assert_int_equal(devres_fail_nth_get(), 3);
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 2);
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 1);
	assert_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	/* Once injected, the fault is spent: 0, and nothing else fails. */
	assert_int_equal(devres_fail_nth_get(), 0);
	for (int i = 0; i < 10; i++)
		assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	assert_int_equal(devres_release_all(&dev), 12);

	/* 0 disarms an armed thread. */
	devres_fail_nth(1);
	devres_fail_nth(0);
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 0);
	dev_done(&dev);
}

static void node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Calls that are not acquisitions do not count. */
static void lookups_do_not_count(void **state)
{
	struct device dev;
	void *p;

	(void)state;
	dev_init(&dev);
	p = devm_kmalloc(&dev, 8, GFP_KERNEL);
	assert_non_null(p);
	devres_fail_nth(1);
	assert_null(devres_find(&dev, node_release, NULL, NULL));
	devm_kfree(&dev, p);
	assert_int_equal(devres_release_all(&dev), 0);
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(0);
	dev_done(&dev);
}

static int action_runs;

static void count_action(void *data)
{
	(void)data;
	action_runs++;
}

/*
 * Each managed call counts once, and an injected failure looks like the
 * real one and leaves nothing behind.
 */
static void each_call_counts_once(void **state)
{
	struct devres_ledger before;
	struct device dev;
	void *res;

	(void)state;
	devres_ledger_snapshot(&before);
	dev_init(&dev);
	before.devices++; /* the ledger counts it until its release */

	devres_fail_nth(1);
	assert_null(devres_alloc(node_release, 16, GFP_KERNEL));
	devres_fail_nth(1);
	assert_null(devm_kzalloc(&dev, 16, GFP_KERNEL));
	devres_fail_nth(1);
	assert_null(devm_kstrdup(&dev, "x", GFP_KERNEL));
	devres_fail_nth(1);
	assert_null(devm_kasprintf(&dev, GFP_KERNEL, "%d", 42));
	devres_fail_nth(1);
	assert_null(devm_kcalloc(&dev, 4, 4, GFP_KERNEL));
	devres_fail_nth(1);
	assert_null(devres_open_group(&dev, NULL, GFP_KERNEL));
	devres_fail_nth(1);
	action_runs = 0;
	assert_int_equal(devm_add_action_or_reset(&dev, count_action, NULL),
			 -ENOMEM);
	assert_int_equal(action_runs, 1);
	assert_int_equal(devres_fail_nth_get(), 0);
	ledger_same(&before);

	/* Armed at 2, each of them consumes exactly one count. */
	devres_fail_nth(2);
	res = devres_alloc(node_release, 16, GFP_KERNEL);
	assert_non_null(res);
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_free(res);
	devres_fail_nth(2);
	assert_non_null(devm_kstrdup(&dev, "x", GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(2);
	assert_non_null(devm_kasprintf(&dev, GFP_KERNEL, "%d", 42));
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(2);
	assert_non_null(devres_open_group(&dev, NULL, GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(2);
	assert_int_equal(devm_add_action(&dev, count_action, NULL), 0);
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(0);
	dev_done(&dev);
	before.devices--;
	ledger_same(&before);
}

struct thread_arg {
	unsigned int seen;
	int ok_allocs;
	bool own_fault_ok;
};

static void *other_thread(void *p)
{
	struct thread_arg *a = p;
	struct device dev;

	dev_init(&dev);
	a->seen = devres_fail_nth_get();
	for (int i = 0; i < 5; i++)
		if (devm_kmalloc(&dev, 8, GFP_KERNEL))
			a->ok_allocs++;
	/* Its own arming works, and does not reach the main thread. */
	devres_fail_nth(1);
	a->own_fault_ok = !devm_kmalloc(&dev, 8, GFP_KERNEL) &&
			  devres_fail_nth_get() == 0;
	devres_fail_nth(5);
	dev_done(&dev);
	return NULL;
}

static void per_thread(void **state)
{
	struct thread_arg a = { 0 };
	struct device dev;
	pthread_t t;

	(void)state;
	dev_init(&dev);
	devres_fail_nth(2);
	assert_int_equal(pthread_create(&t, NULL, other_thread, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.seen, 0);
	assert_int_equal(a.ok_allocs, 5);
	assert_true(a.own_fault_ok);
	assert_int_equal(devres_fail_nth_get(), 2);
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	assert_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	dev_done(&dev);
}

/* Runs this binary again with DEVRES_FAIL_NTH set to @value (or unset). */
static int run_child(const char *value, const char *expect)
{
	char var[64] = "DEVRES_FAIL_NTH";

	if (value)
		snprintf(var, sizeof(var), "DEVRES_FAIL_NTH=%s", value);
	return run_self(var, NULL, "--child-fail-nth", expect, NULL);
}

static void environment_arms_main_thread(void **state)
{
	(void)state;
	assert_int_equal(run_child("3", "3"), 0);
	assert_int_equal(run_child("1", "1"), 0);
	assert_int_equal(run_child(NULL, "0"), 0);
	assert_int_equal(run_child("0", "0"), 0);
	assert_int_equal(run_child("", "0"), 0);
	/* What is not a count arms nothing (and WARNs). */
	assert_int_equal(run_child("-1", "0"), 0);
	assert_int_equal(run_child("3x", "0"), 0);
	assert_int_equal(run_child("99999999999", "0"), 0);
	/* The child does check: a wrong expectation makes it fail. */
	assert_int_not_equal(run_child("3", "2"), 0);
}

static void *read_nth(void *p)
{
	*(unsigned int *)p = devres_fail_nth_get();
	return NULL;
}

/*
 * The child: its main thread must start armed at @expect (0 = not armed),
 * other threads not at all, and exactly the @expect-th allocation fails.
 */
static int child(unsigned int expect)
{
	unsigned int in_thread = 99;
	struct device dev;
	pthread_t t;
	int bad = 0;

	if (devres_fail_nth_get() != expect)
		return 2;
	if (pthread_create(&t, NULL, read_nth, &in_thread) ||
	    pthread_join(t, NULL) || in_thread != 0)
		return 3;
	dev_init(&dev);
	for (unsigned int i = 1; i <= expect + 2; i++) {
		bool failed = !devm_kmalloc(&dev, 8, GFP_KERNEL);

		if (failed != (i == expect))
			bad = 4;
	}
	if (devres_fail_nth_get() != 0)
		bad = 5;
	dev_done(&dev);
	return bad;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nth_semantics),
		cmocka_unit_test(lookups_do_not_count),
		cmocka_unit_test(each_call_counts_once),
		cmocka_unit_test(per_thread),
		cmocka_unit_test(environment_arms_main_thread),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (argc == 3 && strcmp(argv[1], "--child-fail-nth") == 0)
		return child((unsigned int)strtoul(argv[2], NULL, 10));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
