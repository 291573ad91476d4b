// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A node that a call holds while it runs the caller's code, given back to
 * the library from that code: devres_get()'s match, with the new node in
 * hand, and the release callback of devres_release(), of
 * devres_release_group() and of devres_release_all(), with the node being
 * released. From each, every call that takes a node from the caller:
 * devres_free(), devres_add() to the same device or to another one,
 * devres_get() on another one. Each is one WARN and no effect: the node
 * is listed once, where the call puts it, and released once; the other
 * device holds nothing, and the ledger is back at its start.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include "testlib.h"

enum reentry {
	FREE_IT,
	ADD_HERE,
	ADD_OTHER,
	GET_OTHER,
	NR_REENTRY
};

static const char *const reentry_name[] = { "devres_free", "devres_add here",
					    "devres_add other",
					    "devres_get other" };

/* The calls the WARN names, in the order of enum reentry. */
static const char *const reentry_func[] = { "devres_free", "devres_add",
					    "devres_add", "devres_get" };

/* The device each WARN names: devres_free() has none. */
static const char *const reentry_dev[] = { "(no device)", "test-dev",
					   "other-dev", "other-dev" };

static const char *const reentry_why[] = { "is still on a device",
					   "is already added",
					   "is already added",
					   "is already added" };

static enum reentry what;
static void *victim;
static int releases, reentered;

static int no_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	return 0;
}

static void reenter(struct device *dev)
{
	reentered++;
	switch (what) {
	case FREE_IT:
		devres_free(victim);
		break;
	case ADD_HERE:
		devres_add(dev, victim);
		break;
	case ADD_OTHER:
		devres_add(&other, victim);
		break;
	case GET_OTHER:
		devres_get(&other, victim, no_match, NULL);
		break;
	default:
		fail();
	}
}

static void plain_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	releases++;
}

/* The release of the node under attack: gives itself back. */
static void reentering_release(struct device *dev, void *res)
{
	releases++;
	if (res == victim)
		reenter(dev);
}

static int reentering_match(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	reenter(dev);
	return 0;
}

enum holder {
	IN_GET,
	IN_RELEASE,
	IN_RELEASE_GROUP,
	IN_RELEASE_ALL,
	NR_HOLDER
};

static const char *const holder_name[] = { "devres_get's match",
					   "devres_release's release",
					   "devres_release_group's release",
					   "devres_release_all's release" };

static int match_victim(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)data;
	return res == victim;
}

static void expect_empty(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 0);
}

static void one_cell(struct device *dev, enum holder h, enum reentry r)
{
	struct devres_ledger before, after;
	struct devres_stats st;
	void *id, *got;

	devres_ledger_snapshot(&before);
	releases = reentered = 0;
	what = r;
	victim = devres_alloc(reentering_release, 16, GFP_KERNEL);
	assert_non_null(victim);

	switch (h) {
	case IN_GET:
		/* One of its kind already there, so that the match runs. */
		devres_add(dev,
			   devres_alloc(reentering_release, 16, GFP_KERNEL));
		start_capture();
		got = devres_get(dev, victim, reentering_match, NULL);
		expect_warn_on(reentry_dev[r], reentry_func[r], reentry_why[r]);
		assert_ptr_equal(got, victim);
		devres_get_stats(dev, &st);
		assert_int_equal(st.allocs, 2);
		/* Its release need not give it back again. */
		victim = NULL;
		assert_int_equal(devres_release_all(dev), 2);
		assert_int_equal(releases, 2);
		break;
	case IN_RELEASE:
		devres_add(dev, victim);
		start_capture();
		assert_int_equal(devres_release(dev, reentering_release,
						match_victim, NULL),
				 0);
		break;
	case IN_RELEASE_GROUP:
		id = devres_open_group(dev, NULL, GFP_KERNEL);
		assert_non_null(id);
		devres_add(dev, victim);
		devres_close_group(dev, id);
		start_capture();
		assert_int_equal(devres_release_group(dev, id), 1);
		break;
	case IN_RELEASE_ALL:
		devres_add(dev, victim);
		start_capture();
		assert_int_equal(devres_release_all(dev), 1);
		break;
	default:
		fail();
	}
	if (h != IN_GET) {
		expect_warn_on(reentry_dev[r], reentry_func[r], reentry_why[r]);
		assert_int_equal(releases, 1);
	}
	assert_int_equal(reentered, 1);
	expect_empty(dev);
	expect_empty(&other);
	assert_int_equal(devres_release_all(&other), 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void every_holder_every_reentry(void **state)
{
	struct device *dev = *state;

	(void)plain_release;
	for (int h = 0; h < NR_HOLDER; h++)
		for (int r = 0; r < NR_REENTRY; r++) {
			print_message("%s: %s\n", holder_name[h],
				      reentry_name[r]);
			one_cell(dev, (enum holder)h, (enum reentry)r);
		}
}

/* The mark the match saw is gone with the call: the node is usable. */
static void found_node_is_freed_once(void **state)
{
	struct device *dev = *state;
	void *old, *new_res, *first;

	releases = 0;
	old = devres_alloc(plain_release, 8, GFP_KERNEL);
	devres_add(dev, old);
	new_res = devres_alloc(plain_release, 8, GFP_KERNEL);
	victim = NULL;
	start_capture();
	assert_ptr_equal(devres_get(dev, new_res, no_match, NULL), new_res);
	first = new_res;
	/* Without a match, the newest of the kind is found: the new one
	 * is freed, once. */
	new_res = devres_alloc(plain_release, 8, GFP_KERNEL);
	assert_ptr_equal(devres_get(dev, new_res, NULL, NULL), first);
	expect_no_warn();
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(releases, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_holder_every_reentry,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(found_node_is_freed_once,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: expect_warn_on() counts the lines. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
