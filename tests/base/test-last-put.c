// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The last reference of a device put from inside a callback the library
 * runs: every kind of callback (release callbacks of each release path,
 * match and for-each callbacks, probe, remove, a bus's match, the device's
 * own ->release) times every target (the device the callback runs on, its
 * parent, its child). Each cell asserts that the target is released
 * exactly once; that a release which would free what the running pass
 * still uses (the device itself, or its parent, which may own the
 * device's memory) waits for the end of that pass, and that any other
 * (the child) is not held back; the WARNs expected (none, or the one of a
 * registered device put once too often); and, at the fixture's teardown,
 * that the ledger is back at its baseline. ASan proves that nothing is
 * used after it is freed: in the parent cells of the last put and of
 * ->release, the device's memory belongs to its parent's resources. The
 * runner is tests/base/last-put.h, shared with test-kc-last-put.
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
#include <devres/driver.h>
#include "testlib.h"
#include "base/last-put.h"

enum kind {
	/* On a device that was never added: the resource passes. */
	K_RELEASE_ALL,	   /* an action, devres_release_all() */
	K_RELEASE_ACTION,  /* an action, devm_release_action() */
	K_RELEASE_GROUP,   /* an action in a group, devres_release_group() */
	K_RELEASE_MATCH,   /* devres_release()'s match, then its release */
	K_REMOVE_MATCH,	   /* devres_remove()'s match */
	K_FIND_MATCH,	   /* devres_find()'s match */
	K_GET_MATCH,	   /* devres_get()'s match */
	K_FOR_EACH,	   /* devres_for_each_res()'s callback */
	K_LAST_PUT_ACTION, /* an action run by the device's own last put */
	K_DEV_RELEASE,	   /* the device's ->release */
	/* On a registered device: the driver model's callbacks. */
	K_PROBE_FAIL,	  /* probe, returning an error */
	K_PROBE_OK,	  /* probe, returning 0 */
	K_REMOVE,	  /* remove, by device_release_driver() */
	K_DRV_UNREGISTER, /* remove, by driver_unregister() */
	K_BINDING_ACTION, /* an action of the binding, at unbind */
	K_BUS_MATCH,	  /* the bus's match */
	K_DEL_ACTION,	  /* an action of the device, run by device_del() */
	K_NR
};

static const char *const kind_names[K_NR] = {
	"release_all",	   "release_action", "release_group",  "release_match",
	"remove_match",	   "find_match",     "get_match",      "for_each",
	"last_put_action", "dev_release",    "probe_fail",     "probe_ok",
	"remove",	   "drv_unregister", "binding_action", "bus_match",
	"del_action",
};

static bool registered(enum kind k)
{
	return k >= K_PROBE_FAIL;
}

/*
 * Cells that cannot be made: the count of a device whose own last put or
 * ->release runs is already zero (put again, that is row 30, an underflow).
 */
static bool cell_exists(int k, enum target t)
{
	return !(t == T_SELF && (k == K_LAST_PUT_ACTION || k == K_DEV_RELEASE));
}

/*
 * lp (last-put.h) holds the cell: P is D's parent, C is D's child; D is
 * the device the callbacks run on.
 */
static bool d_on_parent; /* D's memory belongs to P's resources */

static void drop(void);

static void release_d(struct device *dev)
{
	lp.rel_d++;
	if (lp.kind == K_DEV_RELEASE)
		drop();
	if (!d_on_parent)
		free(dev);
}

/*
 * Puts the target's last reference, which the test handed to the
 * callback. The last put of a registered device is one put too many: its
 * registration's reference goes too.
 */
static void drop(void)
{
	/* The owner's, then the registration's. */
	lp_drop(registered(lp.kind) && lp.kind != K_DEL_ACTION);
}

static void action_drop(void *data)
{
	(void)data;
	drop();
}

static void mark_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int match_drop(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	drop();
	return data != NULL;
}

static void each_drop(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	drop();
}

static int bus_match(struct device *dev, const struct device_driver *drv)
{
	(void)drv;
	if (dev == lp.D && lp.kind == K_BUS_MATCH)
		drop();
	return 1;
}

static const struct bus_type bus = { .name = "lpbus", .match = bus_match };

static int probe(struct device *dev)
{
	if (dev != lp.D)
		return -ENODEV;
	if (lp.kind == K_PROBE_FAIL || lp.kind == K_PROBE_OK)
		drop();
	if (lp.kind == K_BINDING_ACTION)
		assert_int_equal(devm_add_action(dev, action_drop, NULL), 0);
	return lp.kind == K_PROBE_FAIL ? -ENODEV : 0;
}

static void remove_cb(struct device *dev)
{
	if (dev == lp.D && (lp.kind == K_REMOVE || lp.kind == K_DRV_UNREGISTER))
		drop();
}

static struct device_driver drv = {
	.name = "lpdrv",
	.bus = &bus,
	.probe = probe,
	.remove = remove_cb,
};

static struct device *new_dev(const char *name,
			      void (*release)(struct device *), void *mem)
{
	struct device *dev = mem ? mem : calloc(1, sizeof(*dev));

	assert_non_null(dev);
	dev->release = release;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "%s", name), 0);
	return dev;
}

/* The device's memory is its parent's resource only where D dies first. */
static bool memory_on_parent(void)
{
	return lp.target == T_PARENT &&
	       (lp.kind == K_LAST_PUT_ACTION || lp.kind == K_DEV_RELEASE);
}

static void build(void)
{
	lp.P = new_dev("lp-parent", lp_release_p, NULL);
	d_on_parent = memory_on_parent();
	lp.D = new_dev("lp-dev", release_d,
		       d_on_parent
			       ? devm_kzalloc(lp.P, sizeof(*lp.D), GFP_KERNEL)
			       : NULL);
	lp.D->parent = lp.P;
	lp.C = new_dev("lp-child", lp_release_c, NULL);
	lp.C->parent = lp.D;
}

/* Makes the call that runs the callback. */
static void trigger(void)
{
	void *node, *g;

	switch (lp.kind) {
	case K_RELEASE_ALL:
		assert_int_equal(devm_add_action(lp.D, action_drop, NULL), 0);
		devres_release_all(lp.D);
		break;
	case K_RELEASE_ACTION:
		assert_int_equal(devm_add_action(lp.D, action_drop, lp.D), 0);
		devm_release_action(lp.D, action_drop, lp.D);
		break;
	case K_RELEASE_GROUP:
		g = devres_open_group(lp.D, NULL, GFP_KERNEL);
		assert_non_null(g);
		assert_int_equal(devm_add_action(lp.D, action_drop, NULL), 0);
		devres_close_group(lp.D, g);
		assert_int_equal(devres_release_group(lp.D, g), 1);
		break;
	case K_RELEASE_MATCH:
	case K_REMOVE_MATCH:
	case K_FIND_MATCH:
	case K_FOR_EACH:
		node = devres_alloc(mark_release, 8, GFP_KERNEL);
		assert_non_null(node);
		devres_add(lp.D, node);
		if (lp.kind == K_RELEASE_MATCH)
			assert_int_equal(devres_release(lp.D, mark_release,
							match_drop, lp.D),
					 0);
		else if (lp.kind == K_REMOVE_MATCH)
			assert_null(devres_remove(lp.D, mark_release,
						  match_drop, NULL));
		else if (lp.kind == K_FIND_MATCH)
			assert_null(devres_find(lp.D, mark_release, match_drop,
						NULL));
		else
			devres_for_each_res(lp.D, mark_release, NULL, NULL,
					    each_drop, NULL);
		break;
	case K_GET_MATCH:
		/* One to match against, then the one added. */
		node = devres_alloc(mark_release, 8, GFP_KERNEL);
		assert_non_null(node);
		devres_add(lp.D, node);
		node = devres_alloc(mark_release, 8, GFP_KERNEL);
		assert_non_null(node);
		assert_ptr_equal(devres_get(lp.D, node, match_drop, NULL),
				 node);
		break;
	case K_LAST_PUT_ACTION:
		assert_int_equal(devm_add_action(lp.D, action_drop, NULL), 0);
		put_device(lp.D);
		break;
	case K_DEV_RELEASE:
		put_device(lp.D);
		break;
	case K_PROBE_FAIL:
	case K_PROBE_OK:
	case K_BUS_MATCH:
		assert_int_equal(device_add(lp.D), 0);
		break;
	case K_REMOVE:
	case K_BINDING_ACTION:
		assert_int_equal(device_add(lp.D), 0);
		assert_ptr_equal(lp.D->driver, &drv);
		device_release_driver(lp.D);
		break;
	case K_DRV_UNREGISTER:
		assert_int_equal(device_add(lp.D), 0);
		assert_ptr_equal(lp.D->driver, &drv);
		driver_unregister(&drv);
		break;
	case K_DEL_ACTION:
		assert_int_equal(device_add(lp.D), 0);
		assert_int_equal(devm_add_action(lp.D, action_drop, NULL), 0);
		device_del(lp.D);
		break;
	case K_NR:
		break;
	}
}

static void arm(void)
{
	if (!registered(lp.kind))
		return;
	lp.D->bus = &bus;
	if (lp.kind != K_DRV_UNREGISTER)
		assert_int_equal(t_driver_register(&drv), 0);
	else
		assert_int_equal(driver_register(&drv), 0);
}

static bool overput(void)
{
	return lp.target == T_SELF && registered(lp.kind) &&
	       lp.kind != K_DEL_ACTION;
}

static const char *overput_line(void)
{
	return "WARNING: lp-dev: put_device: released while still registered "
	       "(state: ";
}

/*
 * A registered child holds a reference on its parent: the parent's
 * owner hands its own over, and the child's release puts the last.
 */
static bool parent_held(void)
{
	return registered(lp.kind) && lp.target == T_PARENT;
}

/*
 * A release deferred is one that would free what the pass that ran the
 * callback still uses: the device itself, or its parent. A child is
 * released at once.
 */
static bool at_once(void)
{
	return lp.target == T_CHILD;
}

/* What the test still owns goes now. */
static void finish(void)
{
	if (registered(lp.kind) && lp.kind != K_DRV_UNREGISTER)
		t_driver_unregister(&drv);
	if (!lp.rel_d) {
		if (registered(lp.kind) && lp.kind != K_DEL_ACTION)
			device_del(lp.D);
		if (lp.target != T_SELF)
			put_device(lp.D);
	}
	lp_put_rest();
}

static const struct lp_matrix matrix = {
	.kind_names = kind_names,
	.cell_exists = cell_exists,
	.build = build,
	.arm = arm,
	.trigger = trigger,
	.overput = overput,
	.overput_line = overput_line,
	.parent_held = parent_held,
	.at_once = at_once,
	.finish = finish,
};

/* One cmocka test per kind of callback, each over every target. */
#define KIND_TEST(k) LP_KIND_TEST(matrix, k)
KIND_TEST(K_RELEASE_ALL)
KIND_TEST(K_RELEASE_ACTION)
KIND_TEST(K_RELEASE_GROUP)
KIND_TEST(K_RELEASE_MATCH)
KIND_TEST(K_REMOVE_MATCH)
KIND_TEST(K_FIND_MATCH)
KIND_TEST(K_GET_MATCH)
KIND_TEST(K_FOR_EACH)
KIND_TEST(K_LAST_PUT_ACTION)
KIND_TEST(K_DEV_RELEASE)
KIND_TEST(K_PROBE_FAIL)
KIND_TEST(K_PROBE_OK)
KIND_TEST(K_REMOVE)
KIND_TEST(K_DRV_UNREGISTER)
KIND_TEST(K_BINDING_ACTION)
KIND_TEST(K_BUS_MATCH)
KIND_TEST(K_DEL_ACTION)

/* Every kind is in the list below: a new one cannot be forgotten. */
static void every_kind_is_tested(void **state);

#define T(k) cmocka_unit_test_setup_teardown(test_##k, dev_setup, dev_teardown)
static const struct CMUnitTest tests[] = {
	T(K_RELEASE_ALL),     T(K_RELEASE_ACTION),
	T(K_RELEASE_GROUP),   T(K_RELEASE_MATCH),
	T(K_REMOVE_MATCH),    T(K_FIND_MATCH),
	T(K_GET_MATCH),	      T(K_FOR_EACH),
	T(K_LAST_PUT_ACTION), T(K_DEV_RELEASE),
	T(K_PROBE_FAIL),      T(K_PROBE_OK),
	T(K_REMOVE),	      T(K_DRV_UNREGISTER),
	T(K_BINDING_ACTION),  T(K_BUS_MATCH),
	T(K_DEL_ACTION),      cmocka_unit_test(every_kind_is_tested),
};

static void every_kind_is_tested(void **state)
{
	(void)state;
	assert_int_equal(sizeof(tests) / sizeof(tests[0]), K_NR + 1);
}

int main(void)
{
	return run_tests_on_bus(tests, &bus);
}
