// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A pass of release callbacks run inside another on the same device (a
 * release callback that releases its own device's group, calls
 * devres_release_all() on it, or puts its last reference and then
 * releases more of it) is one frame, not two: the inner pass is not
 * pushed (src/base/frame.h). Each test puts the last reference of a
 * device from inside the inner pass and checks when the release runs:
 * not at the inner pass's end, while the outer pass still walks the
 * device (the release count is 0 there, and the device's name is read,
 * which ASan checks is not freed memory), and once at the outer pass's
 * end. Two more tell the skip from a skip too wide: an inner pass on the
 * parent of the outer pass's device is a frame of its own, which holds
 * back the grandparent's release until it ends; and an inner pass on the
 * same device whose parent changed since the outer began is one too,
 * holding back the new parent's release.
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
#include <devres/devres.h>
#include "testlib.h"

/* G is P's parent, P is D's; Q is another parent D is given. */
enum {
	G,
	P,
	D,
	Q,
	NR_DEVS
};
static const char *const names[NR_DEVS] = { "fn-grand", "fn-parent", "fn-dev",
					    "fn-new-parent" };
static struct device *devs[NR_DEVS];
static int rel[NR_DEVS];
static int steps; /* the callbacks that ran, in order, one bit each */

static void release_counted(struct device *dev)
{
	for (int i = 0; i < NR_DEVS; i++)
		if (dev == devs[i])
			rel[i]++;
	free(dev);
}

static struct device *new_dev(int i)
{
	struct device *dev = calloc(1, sizeof(*dev));

	assert_non_null(dev);
	dev->release = release_counted;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "%s", names[i]), 0);
	devs[i] = dev;
	rel[i] = 0;
	return dev;
}

/* D is alive: not released, and its memory readable (ASan). */
static void d_alive(void)
{
	assert_int_equal(rel[D], 0);
	assert_string_equal(dev_name(devs[D]), names[D]);
}

static void put_last(void *data)
{
	int i = (int)(intptr_t)data;

	put_device(devs[i]);
	steps |= 1;
	/* The release of a device a frame runs on waits for its end. */
	assert_int_equal(rel[i], 0);
}

static void check_alive(void *data)
{
	(void)data;
	d_alive();
	steps |= 2;
}

/* Inner: D's own group g2, from a callback of D's group g1. */
static void release_inner_group(void *g2)
{
	assert_int_equal(devres_release_group(devs[D], g2), 1);
	d_alive();
	steps |= 4;
}

static void test_group_inside_group(void **state)
{
	struct device *dev = new_dev(D);
	void *g1, *g2;

	(void)state;
	steps = 0;
	g2 = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g2);
	assert_int_equal(devm_add_action(dev, put_last, (void *)(intptr_t)D),
			 0);
	devres_close_group(dev, g2);
	g1 = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g1);
	/* Older: runs after the inner pass, in the outer one. */
	assert_int_equal(devm_add_action(dev, check_alive, NULL), 0);
	assert_int_equal(devm_add_action(dev, release_inner_group, g2), 0);
	devres_close_group(dev, g1);
	assert_int_equal(devres_release_group(dev, g1), 2);
	assert_int_equal(steps, 7);
	assert_int_equal(rel[D], 1);
}

/* Inner: devres_release_all() of D, from an action devm_release_action() runs. */
static void release_inner_all(void *data)
{
	(void)data;
	assert_int_equal(devres_release_all(devs[D]), 2);
	d_alive();
	steps |= 4;
}

static void test_release_all_inside_release_action(void **state)
{
	struct device *dev = new_dev(D);

	(void)state;
	steps = 0;
	assert_int_equal(devm_add_action(dev, check_alive, NULL), 0);
	assert_int_equal(devm_add_action(dev, put_last, (void *)(intptr_t)D),
			 0);
	assert_int_equal(devm_add_action(dev, release_inner_all, NULL), 0);
	devm_release_action(dev, release_inner_all, NULL);
	assert_int_equal(steps, 7);
	assert_int_equal(rel[D], 1);
}

/* The last put first, then an inner pass on the same device. */
static void put_then_release_all(void *data)
{
	(void)data;
	put_device(devs[D]);
	d_alive();
	assert_int_equal(devres_release_all(devs[D]), 1);
	d_alive();
	steps |= 1 | 4;
}

static void test_put_then_inner_pass(void **state)
{
	struct device *dev = new_dev(D);
	void *g1;

	(void)state;
	steps = 0;
	/* Outside the group: left for the inner pass. */
	assert_int_equal(devm_add_action(dev, check_alive, NULL), 0);
	g1 = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g1);
	assert_int_equal(devm_add_action(dev, put_then_release_all, NULL), 0);
	devres_close_group(dev, g1);
	assert_int_equal(devres_release_group(dev, g1), 1);
	assert_int_equal(steps, 7);
	assert_int_equal(rel[D], 1);
}

/*
 * Inner: a pass on D's parent P, from D's pass. It is a frame of its own:
 * G's last put from it waits for its end, and no longer (the outer frame,
 * on D, holds back P, not G).
 */
static void release_parent(void *data)
{
	(void)data;
	assert_int_equal(devres_release_all(devs[P]), 1);
	assert_int_equal(rel[G], 1);
	steps |= 4;
}

static void test_inner_pass_on_the_parent(void **state)
{
	struct device *g = new_dev(G), *p = new_dev(P), *d = new_dev(D);

	(void)state;
	steps = 0;
	p->parent = g;
	d->parent = p;
	assert_int_equal(devm_add_action(p, put_last, (void *)(intptr_t)G), 0);
	assert_int_equal(devm_add_action(d, release_parent, NULL), 0);
	assert_int_equal(devres_release_all(d), 1);
	assert_int_equal(steps, 5);
	assert_int_equal(rel[G], 1);
	put_device(d);
	put_device(p);
	assert_int_equal(rel[D], 1);
	assert_int_equal(rel[P], 1);
}

/*
 * Inner: a pass on D after the callback gave D another parent, Q. The
 * outer frame holds back D's first parent; the inner one, Q: Q's last put
 * from it waits for its end.
 */
static void reparent_and_release(void *data)
{
	struct device *d = devs[D], *first = d->parent;

	(void)data;
	d->parent = devs[Q];
	assert_int_equal(devres_release_all(d), 1);
	assert_int_equal(rel[Q], 1);
	d->parent = first;
	steps |= 4;
}

static void test_inner_pass_after_a_new_parent(void **state)
{
	struct device *p = new_dev(P), *d = new_dev(D);

	(void)state;
	steps = 0;
	new_dev(Q);
	d->parent = p;
	assert_int_equal(devm_add_action(d, put_last, (void *)(intptr_t)Q), 0);
	assert_int_equal(devm_add_action(d, reparent_and_release, NULL), 0);
	devm_release_action(d, reparent_and_release, NULL);
	assert_int_equal(steps, 5);
	assert_int_equal(rel[Q], 1);
	put_device(d);
	put_device(p);
	assert_int_equal(rel[D], 1);
	assert_int_equal(rel[P], 1);
}

static struct devres_ledger base;

static int setup(void **state)
{
	(void)state;
	devres_ledger_snapshot(&base);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_inside_group, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_release_all_inside_release_action, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_put_then_inner_pass, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_inner_pass_on_the_parent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_inner_pass_after_a_new_parent, setup, teardown),
	};
	int warns = devres_warn_count(), ret;

	ret = cmocka_run_group_tests(tests, NULL, NULL);
	/* None of this is a misuse. */
	if (devres_warn_count() != warns) {
		fprintf(stderr, "%d WARNs\n", devres_warn_count() - warns);
		return 1;
	}
	return ret;
}
