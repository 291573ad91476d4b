// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
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
#include <devres/platform.h>
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
	/* The release waits for the walk, then runs once, in full. */
	devres_for_each_res(dev, mark_release, NULL, NULL, each_fn, NULL);
	expect_no_warn();
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
	int n = 0;

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
	assert_int_equal(bus_for_each_dev(&bus, NULL, &n, count_fn), 0);
	assert_int_equal(n, 0);
}

/*
 * The last reference put by the device's own probe: carried out when the
 * probe's pass is over, as the put of a registered device (row 33).
 */
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
	assert_int_equal(device_add(dev), 0); /* untracked: refs are ours */
	expect_warn_on("d10-probe", "put_device",
		       "released while still registered");
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

/* ==== Beyond the list: hostile scenarios ==== */

/* H1. A log sink that calls back into the driver model on every WARN. */
static struct device *sink_dev;
static int sink_calls, sink_depth;

static void calling_sink(void *ctx, int level, const char *line)
{
	int n = 0;

	(void)ctx;
	(void)line;
	if (level != DEVRES_LOG_WARNING || sink_depth)
		return;
	sink_depth++;
	sink_calls++;
	(void)bus_for_each_dev(&bus, NULL, &n, count_fn);
	(void)device_is_bound(sink_dev);
	driver_deferred_probe_trigger();
	sink_depth--;
}

static void warn_once_with(void (*fn)(void))
{
	int before = devres_warn_count(), calls = sink_calls;

	fn();
	assert_int_equal(devres_warn_count() - before, 1);
	assert_int_equal(sink_calls - calls, 1);
}

static void m_unregister_unregistered(void)
{
	driver_unregister(&late_drv);
}

static void m_bus_busy(void)
{
	bus_unregister(&bus);
}

static void m_add_twice(void)
{
	assert_int_equal(device_add(sink_dev), -EEXIST);
}

static void m_walk_from_unadded(void)
{
	int n = 0;

	assert_int_equal(bus_for_each_dev(&bus, &tdev, &n, count_fn), -EINVAL);
	assert_int_equal(n, 0);
}

static void m_attach_other_bus(void)
{
	static const struct bus_type nobus = { .name = "nobus" };
	static struct device_driver odrv = { .name = "o", .bus = &nobus };

	assert_int_equal(device_driver_attach(&odrv, sink_dev), -EINVAL);
}

static void m_revive(void)
{
	struct device *dev = heap_dev(NULL, "h1-revive");

	assert_int_equal(devm_add_action(dev, revive, dev), 0);
	put_device(dev);
}

static void sink_calls_back(void **state)
{
	(void)state;
	alarm(20);
	sink_dev = bound_dev("h1");
	sink_calls = 0;
	devres_set_log_sink(calling_sink, NULL);
	warn_once_with(m_unregister_unregistered);
	warn_once_with(m_bus_busy);
	warn_once_with(m_add_twice);
	warn_once_with(m_walk_from_unadded);
	warn_once_with(m_attach_other_bus);
	warn_once_with(m_revive);
	devres_set_log_sink(NULL, NULL);
	t_device_unregister(sink_dev);
	alarm(0);
	assert_int_equal(heap_released, 2);
}

/* H2. Release callbacks of device_del() re-entering on their own device. */
static int reenter_ret[3];

static void reenter_on_delete(void *data)
{
	struct device *dev = data;

	reenter_ret[0] = device_attach(dev);
	reenter_ret[1] = t_driver_register(&late_drv);
	reenter_ret[2] = device_driver_attach(&mark_drv, dev);
	device_del(dev); /* the one WARN */
}

static void release_reenters_own_delete(void **state)
{
	struct device *dev = heap_dev(&bus, "h2");

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(devm_add_action(dev, reenter_on_delete, dev), 0);
	start_capture();
	t_device_unregister(dev);
	expect_warn_on("h2", "device_del", "already deleted");
	assert_int_equal(reenter_ret[0], -ENODEV);
	assert_int_equal(reenter_ret[1], 0);
	assert_int_equal(reenter_ret[2], -ENODEV);
	assert_int_equal(probes, 0);
	assert_int_equal(heap_released, 1);
}

/* H3. A release callback of the binding re-entering on its device. */
static int h3_ret;

static void reenter_on_unbind(void *data)
{
	struct device *dev = data;

	h3_ret = device_attach(dev); /* WARN: own callback */
}

static int h3_probe(struct device *dev)
{
	return devm_add_action(dev, reenter_on_unbind, dev);
}

static struct device_driver h3_drv = {
	.name = "h3",
	.bus = &bus,
	.probe = h3_probe,
	.remove = count_remove,
};

static void binding_release_reenters(void **state)
{
	struct device *dev = heap_dev(&bus, "h3");

	(void)state;
	assert_int_equal(t_driver_register(&h3_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(dev->driver, &h3_drv);
	start_capture();
	device_release_driver(dev);
	expect_warn_on("h3", "device_attach", "own probe or remove");
	assert_int_equal(h3_ret, -EDEADLK);
	assert_null(dev->driver);
	assert_int_equal(removes, 1);
	t_device_unregister(dev);
	assert_int_equal(heap_released, 1);
}

/* H4. Two devices whose release callbacks delete each other. */
static struct device *h4_a, *h4_b;

static void delete_b(void *data)
{
	(void)data;
	t_device_unregister(h4_b);
}

static void delete_a(void *data)
{
	(void)data;
	device_del(h4_a); /* being deleted: WARN */
}

static void cross_device_release(void **state)
{
	(void)state;
	h4_a = heap_dev(&bus, "h4-a");
	h4_b = heap_dev(&bus, "h4-b");
	assert_int_equal(t_device_add(h4_a), 0);
	assert_int_equal(t_device_add(h4_b), 0);
	assert_int_equal(devm_add_action(h4_a, delete_b, NULL), 0);
	assert_int_equal(devm_add_action(h4_b, delete_a, NULL), 0);
	start_capture();
	t_device_unregister(h4_a);
	expect_warn_on("h4-a", "device_del", "already deleted");
	assert_int_equal(heap_released, 2);
}

/* H5. A walk whose callback unregisters every device, then the bus. */
static const struct bus_type walk_bus = { .name = "walkbus" };
static int walked;

static int unregister_fn(struct device *dev, void *data)
{
	walked++;
	t_device_unregister(dev);
	if (walked == *(int *)data)
		t_bus_unregister(&walk_bus);
	return 0;
}

static void walker_unregisters_everything(void **state)
{
	int n = 4;

	(void)state;
	assert_int_equal(t_bus_register(&walk_bus), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(t_device_add(heap_dev(&walk_bus, "w%d", i)),
				 0);
	walked = 0;
	start_capture();
	assert_int_equal(bus_for_each_dev(&walk_bus, NULL, &n, unregister_fn),
			 0);
	expect_no_warn();
	assert_int_equal(walked, n);
	assert_int_equal(heap_released, n);
	/* The bus is gone: it registers afresh. */
	assert_int_equal(bus_register(&walk_bus), 0);
	bus_unregister(&walk_bus);
}

/* H6. remove puts every reference, the registration's too. */
static int overput_removes;

static void overput_remove(struct device *dev)
{
	overput_removes++;
	put_device(dev); /* the creator's, handed to the driver */
	put_device(dev); /* the registration's: one too many */
}

static struct device_driver overput_drv = {
	.name = "overput",
	.bus = &bus,
	.probe = late_probe,
	.remove = overput_remove,
};

static void remove_puts_everything(void **state)
{
	struct device *dev = heap_dev(&bus, "h6");

	(void)state;
	overput_removes = 0;
	assert_int_equal(t_driver_register(&overput_drv), 0);
	assert_int_equal(device_add(dev), 0); /* untracked: refs are ours */
	start_capture();
	device_del(dev);
	expect_warn_on("h6", "device_del", "put once too often");
	assert_int_equal(overput_removes, 1);
	assert_int_equal(heap_released, 1);
	/*
	 * The same from device_release_driver(): the last put waits for the
	 * unbind to finish, then deletes and releases the device (row 33).
	 */
	dev = heap_dev(&bus, "h6b");
	assert_int_equal(device_add(dev), 0);
	start_capture();
	device_release_driver(dev);
	expect_warn_on("h6b", "put_device", "released while still registered");
	assert_int_equal(overput_removes, 2);
	assert_int_equal(heap_released, 2);
}

/* H7. A child added from its parent's last-put release callback. */
static struct device *h7_child;
static int h7_ret;

static void add_child(void *data)
{
	h7_child = heap_dev(&bus, "h7-child");
	h7_child->parent = data;
	h7_ret = device_add(h7_child);
}

static void child_of_dying_parent(void **state)
{
	struct device *parent = heap_dev(NULL, "h7");

	(void)state;
	assert_int_equal(devm_add_action(parent, add_child, parent), 0);
	start_capture();
	put_device(parent);
	expect_warn_on("h7-child", "device_add", "parent is being released");
	assert_int_equal(h7_ret, -EINVAL);
	assert_int_equal(heap_released, 1);
	put_device(h7_child);
	assert_int_equal(heap_released, 2);
}

/* H8. remove registers a driver that would match its own device. */
static int h8_ret;

static void register_in_remove(struct device *dev)
{
	(void)dev;
	if (!removes++)
		h8_ret = t_driver_register(&late_drv);
}

static struct device_driver h8_drv = {
	.name = "h8",
	.bus = &bus,
	.probe = late_probe,
	.remove = register_in_remove,
};

static void remove_registers_driver(void **state)
{
	struct device *dev = heap_dev(&bus, "h8");

	(void)state;
	assert_int_equal(t_driver_register(&h8_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(dev->driver, &h8_drv);
	start_capture();
	device_release_driver(dev);
	expect_no_warn();
	assert_int_equal(h8_ret, 0);
	/* An unbind does not probe again, as in the kernel. */
	assert_null(dev->driver);
	assert_int_equal(device_attach(dev), 1);
	assert_ptr_equal(dev->driver, &h8_drv);
	t_device_unregister(dev);
	assert_int_equal(heap_released, 1);
}

/* H9. A probe that deletes a sibling whose remove attaches the prober. */
static struct device *h9_a, *h9_b;
static int h9_ret;

static void attach_a_remove(struct device *dev)
{
	if (dev == h9_b)
		h9_ret = device_attach(h9_a); /* A's probe runs: own callback */
}

static int delete_sibling_probe(struct device *dev)
{
	if (dev == h9_a)
		t_device_unregister(h9_b);
	return 0;
}

static struct device_driver h9_drv = {
	.name = "h9",
	.bus = &bus,
	.probe = delete_sibling_probe,
	.remove = attach_a_remove,
};

static void probe_deletes_sibling(void **state)
{
	(void)state;
	h9_a = heap_dev(&bus, "h9-a");
	h9_b = heap_dev(&bus, "h9-b");
	assert_int_equal(t_device_add(h9_b), 0);
	assert_int_equal(t_driver_register(&h9_drv), 0);
	assert_ptr_equal(h9_b->driver, &h9_drv);
	start_capture();
	assert_int_equal(t_device_add(h9_a), 0);
	expect_warn_on("h9-a", "device_attach", "own probe or remove");
	assert_int_equal(h9_ret, -EDEADLK);
	assert_ptr_equal(h9_a->driver, &h9_drv);
	assert_int_equal(heap_released, 1);
	t_device_unregister(h9_a);
	assert_int_equal(heap_released, 2);
}

/* H10. A parked device deleted, then the deferred list retried. */
static int always_defer(struct device *dev)
{
	(void)dev;
	probes++;
	return -EPROBE_DEFER;
}

static struct device_driver defer_drv = {
	.name = "defer",
	.bus = &bus,
	.probe = always_defer,
};

static void parked_device_deleted(void **state)
{
	struct device *dev = heap_dev(&bus, "h10");

	(void)state;
	assert_int_equal(t_driver_register(&defer_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(probes, 1);
	t_device_unregister(dev);
	assert_int_equal(heap_released, 1);
	driver_deferred_probe_trigger();
	assert_int_equal(probes, 1);
}

/* H11. A sweep, and its reproducer, asked for from a for-each callback. */
static int h11_ret[2];

static void sweep_each(struct device *dev, void *res, void *data)
{
	struct devres_sweep_result r;

	(void)res;
	(void)data;
	h11_ret[0] = driver_probe_sweep(&mark_drv, dev, &r);
	h11_ret[1] = driver_probe_fail_nth(&mark_drv, dev, 1);
}

static void sweep_from_for_each(void **state)
{
	struct device *dev = heap_dev(&bus, "h11");
	void *m = devres_alloc(mark_release, 8, GFP_KERNEL);

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	devres_add(dev, m);
	start_capture();
	devres_for_each_res(dev, mark_release, NULL, NULL, sweep_each, NULL);
	assert_int_equal(cap.n, 2);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(h11_ret[0], -EDEADLK);
	assert_int_equal(h11_ret[1], -EDEADLK);
	assert_int_equal(probes, 0);
	t_device_unregister(dev);
	assert_int_equal(heap_released, 1);
}

/* H12. Every driver-model call on a device in each state of its life. */
enum mx_state {
	S_UNINIT,
	S_INIT,
	S_ADDED,
	S_BOUND,
	S_DELETED,
	S_RELEASED
};
enum mx_fn {
	F_SET_NAME,
	F_ADD,
	F_DEL,
	F_GET_PUT,
	F_ATTACH,
	F_DRV_ATTACH,
	F_RELEASE_DRV,
	F_IS_BOUND,
	F_FOR_EACH,
	F_SWEEP,
	F_FAIL_NTH,
	F_KMALLOC,
	F_NR,
};

struct mx_want {
	int ret, warns;
};

#define EI (-EINVAL)
#define ND (-ENODEV)
#define EB (-EBUSY)
/* clang-format off */
static const struct mx_want mx_table[][F_NR] = {
	/*              name    add          del    get+put attach  drv_attach
	 *              unbind  is_bound     walk   sweep   fail_nth kmalloc */
	[S_UNINIT]  = { {EI,1}, {EI,1},      {0,1}, {0,2}, {EI,1}, {EI,1},
			{0,1},  {0,1},       {EI,1}, {EI,1}, {EI,1}, {0,1} },
	[S_INIT]    = { {0,0},  {0,0},       {0,1}, {0,0}, {ND,1}, {ND,1},
			{0,0},  {0,0},       {EI,1}, {ND,1}, {ND,1}, {1,0} },
	[S_ADDED]   = { {EB,1}, {-EEXIST,1}, {0,0}, {0,0}, {0,0},  {0,0},
			{0,0},  {0,0},       {0,0},  {0,0},  {-ENOMEM,0}, {1,0} },
	[S_BOUND]   = { {EB,1}, {-EEXIST,1}, {0,0}, {0,0}, {1,0},  {-EBUSY,0},
			{0,0},  {1,0},       {0,0},  {EB,1}, {EB,1}, {1,0} },
	[S_DELETED] = { {EB,1}, {ND,1},      {0,1}, {0,0}, {ND,0}, {ND,0},
			{0,0},  {0,0},       {EI,1}, {ND,1}, {ND,1}, {1,0} },
	[S_RELEASED] = { {EI,1}, {EI,1},     {0,1}, {0,2}, {EI,1}, {EI,1},
			 {0,1},  {0,1},      {EI,1}, {EI,1}, {EI,1}, {0,1} },
};
/* clang-format on */
#undef EI
#undef ND
#undef EB

static struct device mx;
static int mx_released;

static void mx_release(struct device *dev)
{
	(void)dev;
	mx_released++;
}

static int mx_probe(struct device *dev)
{
	return devm_kzalloc(dev, 8, GFP_KERNEL) ? 0 : -ENOMEM;
}

static struct device_driver mx_drv = {
	.name = "mx",
	.bus = &bus,
	.probe = mx_probe,
};

static void mx_to_state(enum mx_state st)
{
	memset(&mx, 0, sizeof(mx));
	mx_released = 0;
	if (st == S_UNINIT)
		return;
	mx.bus = &bus;
	mx.release = mx_release;
	device_initialize(&mx);
	assert_int_equal(dev_set_name(&mx, "mx"), 0);
	if (st == S_RELEASED) {
		put_device(&mx);
		assert_int_equal(mx_released, 1);
		return;
	}
	if (st == S_INIT)
		return;
	assert_int_equal(device_add(&mx), 0);
	if (st == S_BOUND)
		assert_int_equal(device_driver_attach(&mx_drv, &mx), 0);
	if (st == S_DELETED)
		device_del(&mx);
}

static int mx_call(enum mx_fn fn)
{
	struct devres_sweep_result r;
	int n = 0;

	switch (fn) {
	case F_SET_NAME:
		return dev_set_name(&mx, "mx-%d", 2);
	case F_ADD:
		return device_add(&mx);
	case F_DEL:
		device_del(&mx);
		return 0;
	case F_GET_PUT:
		put_device(get_device(&mx));
		return 0;
	case F_ATTACH:
		return device_attach(&mx);
	case F_DRV_ATTACH:
		return device_driver_attach(&mx_drv, &mx);
	case F_RELEASE_DRV:
		device_release_driver(&mx);
		return 0;
	case F_IS_BOUND:
		return device_is_bound(&mx);
	case F_FOR_EACH:
		return bus_for_each_dev(&bus, &mx, &n, count_fn);
	case F_SWEEP:
		return driver_probe_sweep(&mx_drv, &mx, &r);
	case F_FAIL_NTH:
		return driver_probe_fail_nth(&mx_drv, &mx, 1);
	case F_KMALLOC:
		return devm_kmalloc(&mx, 8, GFP_KERNEL) != NULL;
	case F_NR:
		break;
	}
	return 0;
}

static void quiet_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

/* Back to nothing: deleted if added, released if initialized. */
static void mx_clean(bool initialized)
{
	devres_set_log_sink(quiet_sink, NULL);
	if (initialized && !mx_released) {
		device_del(&mx);
		for (int i = 0; i < 4 && !mx_released; i++)
			put_device(&mx);
	}
	devres_set_log_sink(NULL, NULL);
}

static void every_call_in_every_state(void **state)
{
	(void)state;
	for (int st = S_UNINIT; st <= S_RELEASED; st++) {
		for (int fn = 0; fn < F_NR; fn++) {
			const struct mx_want *w = &mx_table[st][fn];
			int before, ret, warns;

			mx_to_state(st);
			before = devres_warn_count();
			devres_set_log_sink(quiet_sink, NULL);
			ret = mx_call(fn);
			devres_set_log_sink(NULL, NULL);
			warns = devres_warn_count() - before;
			if (ret != w->ret || warns != w->warns)
				print_error("state %d, call %d: got %d with %d "
					    "WARN(s), want %d with %d\n",
					    st, fn, ret, warns, w->ret,
					    w->warns);
			assert_int_equal(ret, w->ret);
			assert_int_equal(warns, w->warns);
			mx_clean(st != S_UNINIT);
		}
	}
}

/* H13. A platform device unregistered from its own for-each callback. */
static void unregister_pdev_each(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	platform_device_unregister(to_platform_device(dev));
}

static void platform_unregister_from_for_each(void **state)
{
	struct platform_device *pdev =
		platform_device_register_simple("h13", 0, NULL, 0);
	void *m = devres_alloc(mark_release, 8, GFP_KERNEL);

	(void)state;
	assert_false(IS_ERR(pdev));
	devres_add(&pdev->dev, m);
	start_capture();
	devres_for_each_res(&pdev->dev, mark_release, NULL, NULL,
			    unregister_pdev_each, NULL);
	expect_warn_on("h13.0", "platform_device_unregister",
		       "from a match or for-each callback");
	assert_int_equal(marks_released, 0);
	/* Both references are still there: the real unregister frees it. */
	platform_device_unregister(pdev);
	assert_int_equal(marks_released, 1);
}

/* H14. A binding's release callback unregisters its own driver. */
static int h14_probe(struct device *dev);

static struct device_driver h14_drv = {
	.name = "h14",
	.bus = &bus,
	.probe = h14_probe,
	.remove = count_remove,
};

static void unregister_own_driver(void *data)
{
	(void)data;
	t_driver_unregister(&h14_drv);
}

static int h14_probe(struct device *dev)
{
	probes++;
	return devm_add_action(dev, unregister_own_driver, NULL);
}

static void binding_release_unregisters_driver(void **state)
{
	struct device *a = heap_dev(&bus, "h14-a");
	struct device *b = heap_dev(&bus, "h14-b");

	(void)state;
	assert_int_equal(t_driver_register(&h14_drv), 0);
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	assert_int_equal(probes, 2);
	start_capture();
	device_release_driver(a);
	/* b is unbound by the unregister; its own action finds it gone. */
	expect_warn_on("(no device)", "driver_unregister",
		       "h14: driver is not registered");
	assert_null(a->driver);
	assert_null(b->driver);
	assert_int_equal(removes, 2);
	assert_int_equal(device_attach(a), 0);
	t_device_unregister(a);
	t_device_unregister(b);
	assert_int_equal(heap_released, 2);
}

/* H15. A child's remove deletes its parent; the parent goes last. */
static struct device *h15_parent, *h15_child;
static char h15_order[16];

static void h15_release(struct device *dev)
{
	strcat(h15_order, dev == h15_parent ? "P" : "C");
	free(dev);
}

static void delete_parent(struct device *dev)
{
	(void)dev;
	removes++;
	t_device_unregister(h15_parent);
}

static struct device_driver h15_drv = {
	.name = "h15",
	.bus = &bus,
	.probe = late_probe,
	.remove = delete_parent,
};

static void child_remove_deletes_parent(void **state)
{
	(void)state;
	h15_order[0] = '\0';
	h15_parent = heap_dev(NULL, "h15-parent");
	h15_parent->release = h15_release;
	h15_child = heap_dev(&bus, "h15-child");
	h15_child->release = h15_release;
	h15_child->parent = h15_parent;
	assert_int_equal(t_device_add(h15_parent), 0);
	assert_int_equal(t_driver_register(&h15_drv), 0);
	assert_int_equal(t_device_add(h15_child), 0);
	assert_ptr_equal(h15_child->driver, &h15_drv);
	start_capture();
	t_device_unregister(h15_child);
	expect_no_warn();
	assert_int_equal(removes, 1);
	assert_string_equal(h15_order, "CP");
}

/* H16. Deferring probes that retry the deferred list themselves. */
static int trigger_and_defer(struct device *dev)
{
	(void)dev;
	if (++probes > 50)
		return -ELOOP; /* a runaway recursion would get here */
	driver_deferred_probe_trigger();
	return -EPROBE_DEFER;
}

static struct device_driver h16_drv = {
	.name = "h16",
	.bus = &bus,
	.probe = trigger_and_defer,
};

static void deferring_probe_triggers_retry(void **state)
{
	struct device *a = heap_dev(&bus, "h16-a");
	struct device *b = heap_dev(&bus, "h16-b");
	int n;

	(void)state;
	alarm(20);
	assert_int_equal(t_driver_register(&h16_drv), 0);
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	/*
	 * Each probe's trigger is one more round once its device_add() is
	 * done (not from inside the probe: that would lock a device while
	 * holding another); nothing binds, so it ends.
	 */
	assert_in_range(probes, 2, 6);
	n = probes;
	driver_deferred_probe_trigger();
	assert_int_equal(probes, n + 2);
	assert_null(a->driver);
	assert_null(b->driver);
	alarm(0);
	t_device_unregister(a);
	t_device_unregister(b);
	assert_int_equal(heap_released, 2);
}

/* H17. A release callback of the last put registers its own device. */
static int h17_ret;
static bool h17_register;

static void register_self(void *data)
{
	h17_ret = h17_register ? device_register(data) : device_add(data);
}

static void register_from_last_put(void **state)
{
	static const char *const names[] = { "h17-0", "h17-1", "h17-2" };
	struct device *dev;

	(void)state;
	for (int i = 0; i < 3; i++) {
		dev = heap_dev(&bus, "h17-%d", i);
		h17_register = i > 0;
		if (i == 2) { /* added and deleted first */
			assert_int_equal(t_device_add(dev), 0);
			t_device_del(dev);
		}
		assert_int_equal(devm_add_action(dev, register_self, dev), 0);
		start_capture();
		put_device(dev);
		expect_warn_on(names[i],
			       h17_register ? "device_register" : "device_add",
			       "device is being released");
		assert_int_equal(h17_ret, -ENODEV);
		assert_int_equal(heap_released, i + 1);
	}
	/* Nothing on the bus points at them. */
	assert_int_equal(bus_for_each_dev(&bus, NULL, NULL, count_fn), 0);
}

/* H18. A bus match that deletes the next device of the walk. */
static struct device *h18_a, *h18_b;

static int deleting_match(struct device *dev, const struct device_driver *drv)
{
	(void)drv;
	if (dev == h18_a && h18_b) {
		t_device_unregister(h18_b);
		h18_b = NULL;
	}
	return 1;
}

static const struct bus_type match_bus = {
	.name = "hmatch",
	.match = deleting_match,
};

static struct device_driver h18_drv = {
	.name = "h18",
	.bus = &match_bus,
	.probe = late_probe,
};

static void match_deletes_next_device(void **state)
{
	(void)state;
	assert_int_equal(t_bus_register(&match_bus), 0);
	h18_a = heap_dev(&match_bus, "h18-a");
	h18_b = heap_dev(&match_bus, "h18-b");
	assert_int_equal(t_device_add(h18_a), 0);
	assert_int_equal(t_device_add(h18_b), 0);
	start_capture();
	assert_int_equal(t_driver_register(&h18_drv), 0);
	expect_no_warn();
	assert_ptr_equal(h18_a->driver, &h18_drv);
	assert_int_equal(probes, 1);
	assert_int_equal(heap_released, 1);
	t_device_unregister(h18_a);
	t_driver_unregister(&h18_drv);
	t_bus_unregister(&match_bus);
	assert_int_equal(heap_released, 2);
}

/* H19. A remove that asks for the deferred devices to be retried. */
static bool h19_ready;

static int h19_wait_probe(struct device *dev)
{
	(void)dev;
	probes++;
	return h19_ready ? 0 : -EPROBE_DEFER;
}

static void h19_trigger_remove(struct device *dev)
{
	(void)dev;
	h19_ready = true;
	driver_deferred_probe_trigger(); /* runs once the unbind is done */
}

static int h19_match(struct device *dev, const struct device_driver *drv)
{
	return dev_name(dev)[4] == drv->name[4];
}

static const struct bus_type h19_bus = { .name = "h19bus", .match = h19_match };
static struct device_driver h19_waiter = {
	.name = "h19-w",
	.bus = &h19_bus,
	.probe = h19_wait_probe,
};
static struct device_driver h19_trigger = {
	.name = "h19-t",
	.bus = &h19_bus,
	.remove = h19_trigger_remove,
};

static void remove_triggers_retry(void **state)
{
	struct device *w = heap_dev(&h19_bus, "h19-w");
	struct device *t = heap_dev(&h19_bus, "h19-t");

	(void)state;
	h19_ready = false;
	assert_int_equal(t_bus_register(&h19_bus), 0);
	assert_int_equal(t_driver_register(&h19_waiter), 0);
	assert_int_equal(t_driver_register(&h19_trigger), 0);
	assert_int_equal(t_device_add(w), 0);
	assert_int_equal(t_device_add(t), 0);
	assert_null(w->driver);
	assert_ptr_equal(t->driver, &h19_trigger);
	device_release_driver(t);
	assert_ptr_equal(w->driver, &h19_waiter);
	t_device_unregister(t);
	t_device_unregister(w);
	assert_int_equal(heap_released, 2);
}

/*
 * A failed assertion leaves nothing registered for the next
 * test. The failing group runs in a child (run_self()): its first test
 * registers a driver and a device and fails half way; its second
 * registers the same driver and device name again and must pass.
 */
static struct device *left_dev;

static void fails_half_way(void **state)
{
	(void)state;
	assert_int_equal(t_driver_register(&mark_drv), 0);
	left_dev = heap_dev(&bus, "left-behind");
	assert_int_equal(t_device_add(left_dev), 0);
	put_device(left_dev); /* the registry's reference keeps it */
	fail_msg("deliberately, with a driver and a device registered");
}

static void next_one_is_clean(void **state)
{
	struct device *dev = heap_dev(&bus, "left-behind");

	(void)state;
	assert_int_equal(t_driver_register(&mark_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(dev->driver, &mark_drv);
	t_device_unregister(dev);
	t_driver_unregister(&mark_drv);
}

static int failing_group(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fails_half_way, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(next_one_is_clean, setup,
						dev_teardown),
	};

	return run_tests_on_bus(tests, &bus);
}

static void failure_does_not_cascade(void **state)
{
	char *err = NULL;

	(void)state;
	/* The exit status counts failed tests: the second one passed. */
	assert_int_equal(run_self("TEST_FILTER", &err, "--failing-group", NULL),
			 1);
	assert_non_null(strstr(err, "fails_half_way"));
	assert_null(strstr(err, "next_one_is_clean"));
	free(err);
}

int main(int argc, char **argv)
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
#define H(f) cmocka_unit_test_setup_teardown(f, setup, dev_teardown)
		H(sink_calls_back),
		H(release_reenters_own_delete),
		H(binding_release_reenters),
		H(cross_device_release),
		H(walker_unregisters_everything),
		H(remove_puts_everything),
		H(child_of_dying_parent),
		H(remove_registers_driver),
		H(probe_deletes_sibling),
		H(parked_device_deleted),
		H(sweep_from_for_each),
		H(every_call_in_every_state),
		H(platform_unregister_from_for_each),
		H(binding_release_unregisters_driver),
		H(child_remove_deletes_parent),
		H(deferring_probe_triggers_retry),
		H(register_from_last_put),
		H(match_deletes_next_device),
		H(remove_triggers_retry),
		H(failure_does_not_cascade),
#undef H
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (argc == 2 && strcmp(argv[1], "--failing-group") == 0)
		return failing_group();
	return run_tests_on_bus(tests, &bus);
}
