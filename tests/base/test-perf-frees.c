// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Frees by key in any order: devm_kfree, devm_remove_action and
 * devm_release_action of any one resource, groups by id and nested. The
 * freed node dies in place and a later walk unlinks it: these tests check
 * that nothing of that shows (order, stats, dumps, the ledger, the list
 * checker after every step), that duplicates are found newest first, that
 * memory stays bounded under churn, and that oldest-first frees do not
 * cost a search each.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

static int acted[8];
static int nacted;

static void act(void *data)
{
	if (nacted < 8)
		acted[nacted] = (int)(intptr_t)data;
	nacted++;
}

static long live_nodes(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.nodes - ledger_base.nodes;
}

/* Oldest first, with recorders between: the rest are released in order. */
static void test_kfree_any_order(void **state)
{
	struct device *dev = *state;
	enum {
		N = 3000
	};
	char **p = calloc(N, sizeof(*p));

	assert_non_null(p);
	add_rec(dev, 1);
	for (int i = 0; i < N; i++) {
		p[i] = devm_kmalloc(dev, 24, GFP_KERNEL);
		assert_non_null(p[i]);
		memset(p[i], i & 0xff, 24);
	}
	add_rec(dev, 2);
	for (int i = 0; i < N; i += 2)
		devm_kfree(dev, p[i]);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, N / 2 + 2, (N / 2) * 24 + 2 * (int)sizeof(int));
	/* The living kept their contents. */
	for (int i = 1; i < N; i += 2)
		assert_int_equal((unsigned char)p[i][23], i & 0xff);
	/* A freed one is refused, and nothing is read of it. */
	start_capture();
	devm_kfree(dev, p[0]);
	expect_warn("devm_kfree", "not a managed allocation of this device");
	for (int i = 1; i < N; i += 2)
		devm_kfree(dev, p[i]);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, 2, 2 * (int)sizeof(int));
	reset_order();
	devres_release_all(dev);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 1);
	free(p);
}

/* The same action on the same data twice: the newest record goes first. */
static void test_duplicate_actions_newest_first(void **state)
{
	struct device *dev = *state;

	nacted = 0;
	assert_int_equal(devm_add_action(dev, act, (void *)1), 0);
	add_rec(dev, 10);
	assert_int_equal(devm_add_action(dev, act, (void *)1), 0);
	add_rec(dev, 11);
	assert_int_equal(devm_add_action(dev, act, (void *)2), 0);
	assert_true(devm_is_action_added(dev, act, (void *)1));
	devm_remove_action(dev, act, (void *)1); /* the newer one */
	assert_int_equal(devres_check(dev), 0);
	reset_order();
	devres_release_all(dev);
	/* 2, rec 11, rec 10, then the older (1): the newer one was removed. */
	assert_int_equal(nacted, 2);
	assert_int_equal(acted[0], 2);
	assert_int_equal(acted[1], 1);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], 11);
	assert_int_equal(order[1], 10);
}

/* devm_release_action runs the action once, now, and keeps errno. */
static void test_release_action_any_order(void **state)
{
	struct device *dev = *state;
	enum {
		N = 500
	};

	nacted = 0;
	for (int i = 0; i < N; i++)
		assert_int_equal(devm_add_action(dev, act, (void *)(intptr_t)i),
				 0);
	for (int i = 0; i < N - 1; i++) {
		errno = 1234;
		devm_release_action(dev, act, (void *)(intptr_t)i);
		assert_int_equal(errno, 1234);
		assert_false(
			devm_is_action_added(dev, act, (void *)(intptr_t)i));
	}
	assert_int_equal(nacted, N - 1);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, 1, (int)sizeof(void *));
	start_capture();
	devm_remove_action(dev, act, (void *)0);
	expect_warn("devm_remove_action", "is not recorded");
	devres_release_all(dev);
	assert_int_equal(nacted, N);
	assert_int_equal(acted[0], 0);
}

/* Two groups with one id: the newest is found, as the list would. */
static void test_group_duplicate_ids(void **state)
{
	struct device *dev = *state;
	static int id;

	assert_ptr_equal(devres_open_group(dev, &id, GFP_KERNEL), &id);
	add_rec(dev, 1);
	devres_close_group(dev, &id);
	assert_ptr_equal(devres_open_group(dev, &id, GFP_KERNEL), &id);
	add_rec(dev, 2);
	devres_close_group(dev, &id);
	add_rec(dev, 3);
	reset_order();
	assert_int_equal(devres_release_group(dev, &id), 1);
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 2);
	assert_int_equal(devres_check(dev), 0);
	assert_int_equal(devres_release_group(dev, &id), 1);
	assert_int_equal(order[1], 1);
	assert_int_equal(devres_check(dev), 0);
	start_capture();
	devres_release_group(dev, &id);
	expect_warn("devres_release_group", "no group");
}

/* 64 nested groups by NULL id: each close and release finds its own. */
static void test_nested_null_ids(void **state)
{
	struct device *dev = *state;
	void *ids[64];

	for (int i = 0; i < 64; i++) {
		ids[i] = devres_open_group(dev, NULL, GFP_KERNEL);
		assert_non_null(ids[i]);
		add_rec(dev, i);
	}
	/* Close the innermost half by NULL: the newest open each time. */
	for (int i = 63; i >= 32; i--)
		devres_close_group(dev, NULL);
	assert_int_equal(devres_check(dev), 0);
	/* The newest open group is now ids[31]: releasing it takes 31..63. */
	reset_order();
	assert_int_equal(devres_release_group(dev, NULL), 33);
	assert_int_equal(norder, 33);
	assert_int_equal(order[0], 63);
	assert_int_equal(order[32], 31);
	assert_int_equal(devres_check(dev), 0);
	/* Remove every other outer group, then release the outermost. */
	for (int i = 1; i < 31; i += 2)
		devres_remove_group(dev, ids[i]);
	assert_int_equal(devres_check(dev), 0);
	reset_order();
	assert_int_equal(devres_release_group(dev, ids[0]), 31);
	assert_int_equal(order[0], 30);
	assert_int_equal(order[30], 0);
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_check(dev), 0);
}

/*
 * Interleaved groups (A opens, B opens, A closes, B closes) with B removed:
 * releasing A unlinks B's dead open marker while its close marker stays,
 * and B is freed only when both are gone. The ledger and ASan see it.
 */
static void test_removed_group_straddling_a_release(void **state)
{
	struct device *dev = *state;
	void *a, *b;

	a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	b = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	devres_close_group(dev, a);
	add_rec(dev, 3);
	devres_close_group(dev, b);
	devres_remove_group(dev, b);
	assert_int_equal(devres_check(dev), 0);
	reset_order();
	assert_int_equal(devres_release_group(dev, a), 2);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 1);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, 1, (int)sizeof(int));
	devres_release_all(dev);
	assert_int_equal(order[2], 3);
}

/*
 * Churn on a long-lived device: alloc/free pairs in any order never let
 * the dead pile up beyond the living (the nodes the ledger sees, and the
 * list's length through the dump, stay bounded).
 */
static void test_churn_is_bounded(void **state)
{
	struct device *dev = *state;
	enum {
		LIVE = 100,
		ROUNDS = 200000
	};
	void *keep[LIVE];
	unsigned int seed = 1;

	for (int i = 0; i < LIVE; i++)
		keep[i] = devm_kmalloc(dev, 40, GFP_KERNEL);
	for (int r = 0; r < ROUNDS; r++) {
		int i = (int)(rand_r(&seed) % LIVE);

		devm_kfree(dev, keep[i]);
		keep[i] = devm_kmalloc(dev, 40, GFP_KERNEL);
		assert_non_null(keep[i]);
	}
	assert_int_equal(live_nodes(), LIVE);
	assert_int_equal(devres_check(dev), 0);
	/* The list itself: at most as many dead as living, plus a few. */
	assert_true(dev->devres_listed <= 2 * LIVE + 65);
	devres_release_all(dev);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Oldest first against newest first, n = 20000: a search per free would
 * make it thousands of times slower; O(1) keeps it within a few times
 * (the bound is loose, for a loaded machine: the best of three tries).
 */
static void test_fifo_costs_about_lifo(void **state)
{
	struct device *dev = *state;
	enum {
		N = 20000
	};
	void **p = calloc(N, sizeof(*p));
	double best = 1e9;

	assert_non_null(p);
	for (int t = 0; t < 3; t++) {
		double t0, lifo, fifo;

		for (int i = 0; i < N; i++)
			p[i] = devm_kmalloc(dev, 64, GFP_KERNEL);
		t0 = now();
		for (int i = N - 1; i >= 0; i--)
			devm_kfree(dev, p[i]);
		lifo = now() - t0;
		for (int i = 0; i < N; i++)
			p[i] = devm_kmalloc(dev, 64, GFP_KERNEL);
		t0 = now();
		for (int i = 0; i < N; i++)
			devm_kfree(dev, p[i]);
		fifo = now() - t0;
		if (fifo / lifo < best)
			best = fifo / lifo;
	}
	free(p);
	assert_true(best < 8.0);
	expect_stats(dev, 0, 0);
}

/*
 * Everything freed one by one, so that the list empties without a
 * devres_release_all(): the device's index and blocks must still go with
 * the device (LeakSanitizer and valgrind check it).
 */
static void test_emptied_device_frees_its_state(void **state)
{
	struct device *d = heap_dev(NULL, "emptied");
	void *p[65];

	(void)state;
	assert_non_null(d);
	/* 65 dead out of 65 listed: the last free compacts them all. */
	for (int i = 0; i < 65; i++)
		p[i] = devm_kmalloc(d, i % 2 ? 1000 : 40, GFP_KERNEL);
	for (int i = 0; i < 65; i++)
		devm_kfree(d, p[i]);
	assert_int_equal(devres_check(d), 0);
	assert_null(d->devres_head);
	put_device(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kfree_any_order, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_duplicate_actions_newest_first, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(test_release_action_any_order,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_group_duplicate_ids,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_nested_null_ids, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_removed_group_straddling_a_release, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(test_churn_is_bounded,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_fifo_costs_about_lifo,
						dev_setup, dev_teardown),
		cmocka_unit_test(test_emptied_device_frees_its_state),
	};

	/* One line per WARN: the tests count them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
