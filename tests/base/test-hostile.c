// SPDX-License-Identifier: MIT
/* ctest-labels: unit timeout=60 */
/*
 * The driver model used as a hostile program would: release callbacks and
 * devres callbacks that re-enter the driver model on their own device or
 * another, the last reference put from odd places, names changed while a
 * device dies, walks started where they should not be. Each case asserts
 * one WARN (or none), the state after, and no leak (ASan, the ledger).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static const struct bus_type bus = { .name = "hbus" };

static int probes, removes, marks_released;

static void mark_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	marks_released++;
}

/* A probe that leaves one node of mark_release and some memory. */
static int mark_probe(struct device *dev)
{
	void *m = devres_alloc(mark_release, 8, GFP_KERNEL);

	if (!m)
		return -ENOMEM;
	devres_add(dev, m);
	if (!devm_kzalloc(dev, 16, GFP_KERNEL))
		return -ENOMEM;
	probes++;
	return 0;
}

static void count_remove(struct device *dev)
{
	(void)dev;
	removes++;
}

static struct device_driver mark_drv = {
	.name = "mark",
	.bus = &bus,
	.probe = mark_probe,
	.remove = count_remove,
};

static int setup(void **state)
{
	probes = removes = marks_released = 0;
	heap_released = 0;
	return dev_setup(state);
}

/* A bound device, through the fixture's registry. */
static struct device *bound_dev(const char *name)
{
	struct device *dev = heap_dev(&bus, "%s", name);

	assert_int_equal(t_driver_register(&mark_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(dev->driver, &mark_drv);
	return dev;
}

/* ---- defect 2: the driver model from a devres for-each or match ---- */

enum dm_call {
	C_RELEASE_DRIVER,
	C_DEL,
	C_UNREGISTER,
	C_DRIVER_UNREGISTER,
	C_ATTACH,
	C_DRIVER_ATTACH,
	C_PUT_LAST,
};

static enum dm_call the_call;
static int call_ret;

static void do_call(struct device *dev)
{
	switch (the_call) {
	case C_RELEASE_DRIVER:
		device_release_driver(dev);
		break;
	case C_DEL:
		device_del(dev);
		break;
	case C_UNREGISTER:
		device_unregister(dev);
		break;
	case C_DRIVER_UNREGISTER:
		driver_unregister(&mark_drv);
		break;
	case C_ATTACH:
		call_ret = device_attach(dev);
		break;
	case C_DRIVER_ATTACH:
		call_ret = device_driver_attach(&mark_drv, dev);
		break;
	case C_PUT_LAST:
		put_device(dev);
		break;
	}
}

static void each_fn(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	do_call(dev);
}

static int match_fn(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	do_call(dev);
	return 1;
}

/* Runs the call from a for-each callback, then from a match callback. */
static void from_callbacks(struct device *dev, enum dm_call call,
			   const char *func)
{
	char name[64];

	snprintf(name, sizeof(name), "%s", dev_name(dev));
	the_call = call;
	start_capture();
	devres_for_each_res(dev, mark_release, NULL, NULL, each_fn, NULL);
	expect_warn_on(name, func, "from a match or for-each callback");
	start_capture();
	assert_non_null(devres_find(dev, mark_release, match_fn, NULL));
	expect_warn_on(name, func, "from a match or for-each callback");
}

static void unbind_from_own_for_each(void **state)
{
	struct device *dev = bound_dev("d2-unbind");
	char *dump;

	(void)state;
	from_callbacks(dev, C_RELEASE_DRIVER, "device_release_driver");
	/* No effect: still bound, remove did not run, nothing released. */
	assert_ptr_equal(dev->driver, &mark_drv);
	assert_true(device_is_bound(dev));
	assert_int_equal(removes, 0);
	assert_int_equal(marks_released, 0);
	/* The list is sane: a new attach neither relinks nor loops. */
	assert_int_equal(device_attach(dev), 1);
	dump = dump_to_string(dev);
	assert_int_equal(count_substr(dump, "mark_release"), 1);
	free(dump);
	device_release_driver(dev);
	assert_int_equal(removes, 1);
	assert_int_equal(marks_released, 1);
	assert_int_equal(device_attach(dev), 1);
	t_device_unregister(dev);
	assert_int_equal(removes, 2);
	assert_int_equal(marks_released, 2);
	assert_int_equal(heap_released, 1);
}

static void del_from_own_for_each(void **state)
{
	struct device *dev = bound_dev("d2-del");

	(void)state;
	from_callbacks(dev, C_DEL, "device_del");
	assert_true(device_is_bound(dev));
	assert_int_equal(removes, 0);
	from_callbacks(dev, C_UNREGISTER, "device_unregister");
	assert_true(device_is_bound(dev));
	assert_int_equal(removes, 0);
	assert_int_equal(heap_released, 0);
	t_device_unregister(dev);
	assert_int_equal(removes, 1);
	assert_int_equal(marks_released, 1);
	assert_int_equal(heap_released, 1);
}

static void driver_unregister_from_for_each(void **state)
{
	struct device *dev = bound_dev("d2-drv");

	(void)state;
	from_callbacks(dev, C_DRIVER_UNREGISTER, "driver_unregister");
	assert_true(device_is_bound(dev));
	assert_int_equal(removes, 0);
	/* Still registered: registering it again is refused. */
	start_capture();
	assert_int_equal(driver_register(&mark_drv), -EBUSY);
	expect_warn_on("(no device)", "driver_register", "already registered");
	t_driver_unregister(&mark_drv);
	assert_int_equal(removes, 1);
	assert_false(device_is_bound(dev));
	t_device_unregister(dev);
	assert_int_equal(heap_released, 1);
}

static void attach_from_for_each(void **state)
{
	struct device *dev = heap_dev(&bus, "d2-attach");
	void *m = devres_alloc(mark_release, 8, GFP_KERNEL);

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	devres_add(dev, m);
	assert_int_equal(t_driver_register(&mark_drv), 0);
	/* The node was added while unbound, and the driver did bind. */
	device_release_driver(dev);
	assert_null(dev->driver);
	call_ret = 0;
	from_callbacks(dev, C_ATTACH, "device_attach");
	assert_int_equal(call_ret, -EDEADLK);
	from_callbacks(dev, C_DRIVER_ATTACH, "device_driver_attach");
	assert_int_equal(call_ret, -EDEADLK);
	assert_null(dev->driver);
	assert_int_equal(probes, 1);
	assert_int_equal(marks_released, 1); /* the binding's */
	t_device_unregister(dev);
	assert_int_equal(marks_released, 2);
	assert_int_equal(heap_released, 1);
}

static void last_put_from_for_each(void **state)
{
	struct device *dev = heap_dev(NULL, "d2-put");
	void *m = devres_alloc(mark_release, 8, GFP_KERNEL);

	(void)state;
	devres_add(dev, m);
	the_call = C_PUT_LAST;
	start_capture();
	devres_for_each_res(dev, mark_release, NULL, NULL, each_fn, NULL);
	expect_warn_on("d2-put", "put_device",
		       "from a match or for-each callback");
	assert_int_equal(heap_released, 0);
	put_device(dev);
	assert_int_equal(heap_released, 1);
	assert_int_equal(marks_released, 1);
}

/* ---- defect 3: a reference taken by a release run by the last put ---- */

static void revive(void *data)
{
	struct device *dev = data;

	put_device(get_device(dev));
}

static void revive_in_last_put(void **state)
{
	struct device *dev = heap_dev(NULL, "d3");

	(void)state;
	assert_int_equal(devm_add_action(dev, revive, dev), 0);
	start_capture();
	put_device(dev);
	expect_warn_on("d3", "get_device", "reference count is zero");
	assert_int_equal(heap_released, 1);
}

/* ---- defect 7: a walk started at a deleted device ---- */

static int count_fn(struct device *dev, void *data)
{
	(void)dev;
	(*(int *)data)++;
	return 0;
}

static void walk_from_deleted(void **state)
{
	struct device *a = heap_dev(&bus, "d7-a"), *b = heap_dev(&bus, "d7-b");
	int n = 0;

	(void)state;
	alarm(20); /* today's main spins forever here */
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	get_device(a);
	t_device_unregister(a);
	start_capture();
	assert_int_equal(bus_for_each_dev(&bus, a, &n, count_fn), -EINVAL);
	expect_warn_on("d7-a", "bus_for_each_dev", "not registered on");
	assert_int_equal(n, 0);
	/* A device of no bus, or never added, is refused the same way. */
	start_capture();
	assert_int_equal(bus_for_each_dev(&bus, &tdev, &n, count_fn), -EINVAL);
	expect_warn("bus_for_each_dev", "not registered on");
	/* From a live device: the ones after it. */
	assert_int_equal(bus_for_each_dev(&bus, NULL, &n, count_fn), 0);
	assert_int_equal(n, 1);
	put_device(a);
	t_device_unregister(b);
	alarm(0);
	assert_int_equal(heap_released, 2);
}

/* ---- defect 8: a driver registered while a search ends in a deferral ---- */

static int late_probe(struct device *dev)
{
	(void)dev;
	probes++;
	return 0;
}

static struct device_driver late_drv = {
	.name = "late",
	.bus = &bus,
	.probe = late_probe,
	.remove = count_remove,
};

static int defer_after_register(struct device *dev)
{
	(void)dev;
	if (t_driver_register(&late_drv))
		return -EIO;
	return -EPROBE_DEFER;
}

static struct device_driver deferring_drv = {
	.name = "deferring",
	.bus = &bus,
	.probe = defer_after_register,
};

static void driver_registered_while_deferring(void **state)
{
	struct device *dev = heap_dev(&bus, "d8");

	(void)state;
	assert_int_equal(t_driver_register(&deferring_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	/* The kernel tries a new driver on every unbound device. */
	assert_ptr_equal(dev->driver, &late_drv);
	assert_int_equal(probes, 1);
	t_device_unregister(dev);
	assert_int_equal(removes, 1);
	assert_int_equal(heap_released, 1);
}

/* ---- defect 9: resources added while the last put releases ---- */

static int late_adds, late_runs;

static void late_action(void *data)
{
	(void)data;
	late_runs++;
}

static void adder(void *data)
{
	struct device *dev = data;

	if (late_adds-- > 0)
		assert_int_equal(devm_add_action(dev, adder, dev), 0);
	assert_int_equal(devm_add_action(dev, late_action, NULL), 0);
	assert_non_null(devm_kzalloc(dev, 24, GFP_KERNEL));
}

static void added_during_last_put(void **state)
{
	struct device *dev = heap_dev(NULL, "d9");

	(void)state;
	late_adds = 3;
	late_runs = 0;
	assert_int_equal(devm_add_action(dev, adder, dev), 0);
	start_capture();
	put_device(dev);
	expect_no_warn();
	assert_int_equal(late_runs, 4);
	assert_int_equal(heap_released, 1);
}

static struct device forever_dev;
static int forever_runs;

static void forever(void *data)
{
	forever_runs++;
	/* assert would jump out of the release: count instead. */
	if (devm_add_action(data, forever, data))
		forever_runs += 1000;
}

static void nop_release(struct device *dev)
{
	(void)dev;
}

static void added_forever_is_bounded(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	forever_dev = (struct device){ .release = nop_release };
	device_initialize(&forever_dev);
	assert_int_equal(dev_set_name(&forever_dev, "d9-forever"), 0);
	forever_runs = 0;
	assert_int_equal(devm_add_action(&forever_dev, forever, &forever_dev),
			 0);
	start_capture();
	put_device(&forever_dev);
	expect_warn_on("d9-forever", "put_device", "release passes");
	assert_in_range(forever_runs, 2, 999);
	/* The one node left is reachable from the static device; counted. */
	devres_ledger_snapshot(&after);
	assert_int_equal(after.nodes - before.nodes, 1);
	ledger_base.nodes++;
	ledger_base.node_bytes =
		after.node_bytes - before.node_bytes + ledger_base.node_bytes;
}

/* ---- defect 10: the last put of a registered, bound device ---- */

static void last_put_while_bound(void **state)
{
	struct device *dev = bound_dev("d10");

	(void)state;
	t_forget(dev);	 /* the test puts both references itself */
	put_device(dev); /* the owner's */
	start_capture();
	put_device(dev); /* the registration's: one too many */
	expect_warn_on("d10", "put_device", "released while still registered");
	assert_int_equal(removes, 1);
	assert_int_equal(marks_released, 1);
	assert_int_equal(heap_released, 1);
	/* The bus is empty again: the device is off its lists. */
	assert_int_equal(bus_for_each_dev(&bus, NULL, NULL, count_fn), 0);
}

/* The last reference put by the device's own probe: refused. */
static int putting_probe(struct device *dev)
{
	put_device(dev); /* the owner's */
	put_device(dev); /* the registration's */
	return -ENODEV;
}

static struct device_driver putting_drv = {
	.name = "putting",
	.bus = &bus,
	.probe = putting_probe,
};

static void last_put_from_own_probe(void **state)
{
	struct device *dev = heap_dev(&bus, "d10-probe");

	(void)state;
	assert_int_equal(t_driver_register(&putting_drv), 0);
	start_capture();
	assert_int_equal(t_device_add(dev), 0);
	expect_warn_on("d10-probe", "put_device", "own probe or remove");
	assert_int_equal(heap_released, 0);
	/* The refused put left the registration's reference in place. */
	t_forget(dev);
	device_del(dev);
	assert_int_equal(heap_released, 1);
}

/* ---- defect 13: a name changed by a release run by the last put ---- */

static void rename_self(void *data)
{
	assert_int_equal(dev_set_name(data, "renamed-%d", 13), 0);
}

static void rename_in_last_put(void **state)
{
	struct device *dev = heap_dev(NULL, "d13");

	(void)state;
	assert_int_equal(devm_add_action(dev, rename_self, dev), 0);
	start_capture();
	put_device(dev);
	expect_no_warn();
	assert_int_equal(heap_released, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unbind_from_own_for_each, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(del_from_own_for_each, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(driver_unregister_from_for_each,
						setup, dev_teardown),
		cmocka_unit_test_setup_teardown(attach_from_for_each, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(last_put_from_for_each, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(revive_in_last_put, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(walk_from_deleted, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(
			driver_registered_while_deferring, setup, dev_teardown),
		cmocka_unit_test_setup_teardown(added_during_last_put, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(added_forever_is_bounded, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(last_put_while_bound, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(last_put_from_own_probe, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(rename_in_last_put, setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &bus);
}
