// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Groups with the kernel's colour rule: proper nesting, improper nesting
 * (a group only partly inside the released range keeps its markers), open
 * groups, NULL ids, remove vs release, fail-nth.
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
#include <devres/fault.h>
#include "testlib.h"

/* Asserts the release order recorded so far. */
static void expect_order(const int *want, int n)
{
	assert_int_equal(norder, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(order[i], want[i]);
}

#define EXPECT_ORDER(...)                                                      \
	do {                                                                   \
		const int want_[] = { __VA_ARGS__ };                           \
		expect_order(want_, (int)(sizeof(want_) / sizeof(want_[0])));  \
	} while (0)

static long live_groups(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.groups - ledger_base.groups;
}

static void test_open_returns_id(void **state)
{
	struct device *dev = *state;
	static int mine;
	struct devres_stats st;
	void *a, *b;

	assert_ptr_equal(devres_open_group(dev, &mine, GFP_KERNEL), &mine);
	a = devres_open_group(dev, NULL, GFP_KERNEL);
	b = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_ptr_not_equal(a, &mine);
	assert_int_equal(live_groups(), 3);
	/* Markers are not resources. */
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 0);
	assert_int_equal(st.total_size, 0);
	assert_int_equal(devres_release_all(dev), 0);
	assert_int_equal(live_groups(), 0);
}

static void test_release_closed_group(void **state)
{
	struct device *dev = *state;
	void *g;

	reset_order();
	add_rec(dev, 0);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	add_rec(dev, 1);
	add_rec(dev, 2);
	devres_close_group(dev, g);
	add_rec(dev, 3);

	assert_int_equal(devres_release_group(dev, g), 2);
	EXPECT_ORDER(2, 1);
	assert_int_equal(live_groups(), 0);
	/* What lies outside the group stays, in its order. */
	assert_int_equal(devres_release_all(dev), 2);
	EXPECT_ORDER(2, 1, 3, 0);
}

static void test_release_open_group(void **state)
{
	struct device *dev = *state;
	void *g;

	reset_order();
	add_rec(dev, 0);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	add_rec(dev, 2);
	add_rec(dev, 3);
	/* Open: everything from its opening to now. */
	assert_int_equal(devres_release_group(dev, g), 3);
	EXPECT_ORDER(3, 2, 1);
	assert_int_equal(live_groups(), 0);
	add_rec(dev, 4);
	assert_int_equal(devres_release_all(dev), 2);
	EXPECT_ORDER(3, 2, 1, 4, 0);
}

/* O< 1 I< 2 3 I> 4 O>: I lies wholly inside O. */
static void nest(struct device *dev, void **outer, void **inner)
{
	*outer = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	*inner = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	add_rec(dev, 3);
	devres_close_group(dev, *inner);
	add_rec(dev, 4);
	devres_close_group(dev, *outer);
}

static void test_proper_nesting_outer(void **state)
{
	struct device *dev = *state;
	void *outer, *inner;

	reset_order();
	nest(dev, &outer, &inner);
	add_rec(dev, 5);

	assert_int_equal(devres_release_group(dev, outer), 4);
	EXPECT_ORDER(4, 3, 2, 1);
	/* The nested group went with it. */
	assert_int_equal(live_groups(), 0);
	start_capture();
	assert_int_equal(devres_release_group(dev, inner), 0);
	expect_warn("devres_release_group", "no group");
	assert_int_equal(devres_release_all(dev), 1);
	EXPECT_ORDER(4, 3, 2, 1, 5);
}

static void test_proper_nesting_inner(void **state)
{
	struct device *dev = *state;
	void *outer, *inner;

	reset_order();
	nest(dev, &outer, &inner);

	assert_int_equal(devres_release_group(dev, inner), 2);
	EXPECT_ORDER(3, 2);
	assert_int_equal(live_groups(), 1);
	assert_int_equal(devres_release_group(dev, outer), 2);
	EXPECT_ORDER(3, 2, 4, 1);
	assert_int_equal(live_groups(), 0);
}

/*
 * A< 1 B< 2 A> 3 B>: A and B overlap. Releasing one takes what lies
 * between its markers; the other keeps its markers, only partly inside.
 */
static void overlap(struct device *dev, void **a, void **b)
{
	*a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	*b = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	devres_close_group(dev, *a);
	add_rec(dev, 3);
	devres_close_group(dev, *b);
}

/* The dump of @dev, with both markers of @g and no other group's. */
static char *dump_lone_group(struct device *dev, void *g)
{
	char *d = dump_to_string(dev);
	char want[64];

	snprintf(want, sizeof(want), "group %p {", g);
	assert_non_null(strstr(d, want));
	snprintf(want, sizeof(want), "} group %p", g);
	assert_non_null(strstr(d, want));
	assert_int_equal(count_substr(d, "group"), 2);
	return d;
}

static void test_improper_nesting_first(void **state)
{
	struct device *dev = *state;
	char *d, want[64];
	void *a, *b;

	reset_order();
	overlap(dev, &a, &b);
	assert_int_equal(devres_release_group(dev, a), 2);
	EXPECT_ORDER(2, 1);
	assert_int_equal(live_groups(), 1);
	/* B survives with both markers around what remains of it. */
	d = dump_lone_group(dev, b);
	snprintf(want, sizeof(want), "%p", a);
	assert_null(strstr(d, want));
	free(d);
	assert_int_equal(devres_release_group(dev, b), 1);
	EXPECT_ORDER(2, 1, 3);
	assert_int_equal(live_groups(), 0);
}

static void test_improper_nesting_second(void **state)
{
	struct device *dev = *state;
	void *a, *b;

	reset_order();
	overlap(dev, &a, &b);
	assert_int_equal(devres_release_group(dev, b), 2);
	EXPECT_ORDER(3, 2);
	assert_int_equal(live_groups(), 1);
	free(dump_lone_group(dev, a));
	assert_int_equal(devres_release_group(dev, a), 1);
	EXPECT_ORDER(3, 2, 1);
	assert_int_equal(live_groups(), 0);
}

/* An open group whose opening lies in the range counts as wholly inside. */
static void test_nested_open_group_goes(void **state)
{
	struct device *dev = *state;
	void *a, *b;

	reset_order();
	a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	b = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	devres_close_group(dev, a);
	add_rec(dev, 3);

	assert_int_equal(devres_release_group(dev, a), 2);
	EXPECT_ORDER(2, 1);
	assert_int_equal(live_groups(), 0);
	start_capture();
	assert_int_equal(devres_release_group(dev, b), 0);
	expect_warn("devres_release_group", "no group");
	assert_int_equal(devres_release_all(dev), 1);
	EXPECT_ORDER(2, 1, 3);
}

static void test_null_id_latest_open(void **state)
{
	struct device *dev = *state;
	void *a, *b;

	reset_order();
	a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	b = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	/* Closes B, the latest open group... */
	devres_close_group(dev, NULL);
	add_rec(dev, 3);
	/* ...so A is now the latest open one: everything since A opened. */
	assert_int_equal(devres_release_group(dev, NULL), 3);
	EXPECT_ORDER(3, 2, 1);
	assert_int_equal(live_groups(), 0);

	/* Closed groups are skipped by NULL: none is open, WARN. */
	a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 4);
	devres_close_group(dev, NULL);
	start_capture();
	assert_int_equal(devres_release_group(dev, NULL), 0);
	expect_warn("devres_release_group", "no group");
	assert_int_equal(devres_release_group(dev, a), 1);
	(void)b;
}

static void test_null_id_skips_newer_closed(void **state)
{
	struct device *dev = *state;
	void *a, *b;

	reset_order();
	a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	b = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	devres_close_group(dev, b);
	/* B is newer but closed: NULL closes A. */
	devres_close_group(dev, NULL);
	start_capture();
	devres_close_group(dev, NULL);
	expect_warn("devres_close_group", "no group");
	assert_int_equal(devres_release_group(dev, a), 2);
	EXPECT_ORDER(2, 1);
	assert_int_equal(live_groups(), 0);
}

static void test_remove_group_keeps_resources(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	void *g;

	reset_order();
	add_rec(dev, 0);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	add_rec(dev, 2);
	devres_close_group(dev, g);
	add_rec(dev, 3);
	devres_remove_group(dev, g);
	assert_int_equal(norder, 0);
	assert_int_equal(live_groups(), 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 4);
	start_capture();
	assert_int_equal(devres_release_group(dev, g), 0);
	expect_warn("devres_release_group", "no group");
	assert_int_equal(norder, 0);
	assert_int_equal(devres_release_all(dev), 4);
	EXPECT_ORDER(3, 2, 1, 0);
}

static void test_remove_group_null_id(void **state)
{
	struct device *dev = *state;
	void *a;

	reset_order();
	a = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 2);
	/* Drops B's (open) marker; its resource now belongs to A only. */
	devres_remove_group(dev, NULL);
	assert_int_equal(live_groups(), 1);
	assert_int_equal(devres_release_group(dev, NULL), 2);
	EXPECT_ORDER(2, 1);
	assert_int_equal(live_groups(), 0);
	(void)a;
}

static void test_after_close_not_in_group(void **state)
{
	struct device *dev = *state;
	void *g;

	reset_order();
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	add_rec(dev, 1);
	devres_close_group(dev, g);
	add_rec(dev, 2);
	add_rec(dev, 3);
	assert_int_equal(devres_release_group(dev, g), 1);
	EXPECT_ORDER(1);
	assert_int_equal(devres_release_all(dev), 2);
	EXPECT_ORDER(1, 3, 2);
}

static void test_release_counts_resources(void **state)
{
	struct device *dev = *state;
	void *g;

	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_int_equal(devres_release_group(dev, g), 0);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	for (int i = 0; i < 10; i++)
		assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	devres_open_group(dev, NULL, GFP_KERNEL);
	devres_close_group(dev, NULL);
	devres_close_group(dev, NULL);
	assert_int_equal(devres_release_group(dev, g), 10);
	assert_int_equal(live_groups(), 0);
}

/* A release callback inside a group may acquire on the same device. */
static void acquiring_release(struct device *dev, void *res)
{
	(void)res;
	norder++;
	assert_non_null(devm_kmalloc(dev, 16, GFP_KERNEL));
}

static void test_release_group_callback_acquires(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	void *g, *r;

	reset_order();
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	r = devres_alloc(acquiring_release, 4, GFP_KERNEL);
	assert_non_null(r);
	devres_add(dev, r);
	devres_close_group(dev, g);
	assert_int_equal(devres_release_group(dev, g), 1);
	assert_int_equal(norder, 1);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	assert_int_equal(st.total_size, 16);
}

static void test_fail_nth_open_group(void **state)
{
	struct device *dev = *state;
	void *g[4];

	devres_fail_nth(2);
	for (int i = 0; i < 4; i++)
		g[i] = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g[0]);
	assert_null(g[1]);
	assert_non_null(g[2]);
	assert_non_null(g[3]);
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_int_equal(live_groups(), 3);
	/* A failed open leaves nothing behind: NULL now means g[3]. */
	devres_close_group(dev, NULL);
	assert_int_equal(devres_release_group(dev, NULL), 0);
	assert_int_equal(live_groups(), 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_open_returns_id),
		T(test_release_closed_group),
		T(test_release_open_group),
		T(test_proper_nesting_outer),
		T(test_proper_nesting_inner),
		T(test_improper_nesting_first),
		T(test_improper_nesting_second),
		T(test_nested_open_group_goes),
		T(test_null_id_latest_open),
		T(test_null_id_skips_newer_closed),
		T(test_remove_group_keeps_resources),
		T(test_remove_group_null_id),
		T(test_after_close_not_in_group),
		T(test_release_counts_resources),
		T(test_release_group_callback_acquires),
		T(test_fail_nth_open_group),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
