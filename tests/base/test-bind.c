// SPDX-License-Identifier: MIT
/* ctest-labels: unit timeout=60 */
/*
 * Binding: what a probe acquires belongs to the binding and goes when the
 * probe fails or after remove; what the device acquired while unbound stays
 * until device_del(). Also binding by hand, registering devices and drivers
 * from a probe, callbacks that misuse their own device, and 1000 bind and
 * unbind cycles with nothing left behind.
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
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static const struct bus_type bus = { .name = "bbus" };

static char trace[512];

static void note(const char *what)
{
	size_t len = strlen(trace);

	snprintf(trace + len, sizeof(trace) - len, "%s%s", len ? " " : "",
		 what);
}

static void act(void *label)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "rel:%s", (const char *)label);
	note(buf);
}

static int probe_ret;
static bool a2_alive;

static void a2_release(void *label)
{
	a2_alive = false;
	act(label);
}

/* Memory, an action, a closed group, another action, then @probe_ret. */
static int full_probe(struct device *dev)
{
	void *grp;

	note("probe");
	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	if (devm_add_action_or_reset(dev, act, "a1"))
		return -ENOMEM;
	grp = devres_open_group(dev, NULL, GFP_KERNEL);
	if (!grp)
		return -ENOMEM;
	if (devm_add_action_or_reset(dev, act, "g1"))
		return -ENOMEM;
	devres_close_group(dev, grp);
	if (devm_add_action_or_reset(dev, a2_release, "a2"))
		return -ENOMEM;
	a2_alive = true;
	dev_set_drvdata(dev, &probe_ret);
	return probe_ret;
}

static void full_remove(struct device *dev)
{
	/*
	 * Remove runs while everything of the binding is still there. No
	 * assert here: it would jump out of the callback, device locked.
	 */
	if (a2_alive && dev_get_drvdata(dev) == &probe_ret)
		note("remove");
	else
		note("remove-too-late");
}

static struct device_driver full_drv = {
	.name = "full",
	.bus = &bus,
	.probe = full_probe,
	.remove = full_remove,
};

static int setup(void **state)
{
	(void)state;
	trace[0] = '\0';
	heap_released = 0;
	probe_ret = 0;
	return 0;
}

static int count_nodes(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return st.allocs;
}

static void probe_failure_releases(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;

	(void)state;
	devres_ledger_snapshot(&before);
	dev = heap_dev(&bus, "pf");
	assert_int_equal(t_device_add(dev), 0);
	/* Acquired while unbound: the device's own. */
	assert_int_equal(devm_add_action(dev, act, "own"), 0);
	probe_ret = -EIO;
	assert_int_equal(device_driver_attach(&full_drv, dev), -EIO);
	assert_string_equal(trace, "probe rel:a2 rel:g1 rel:a1");
	assert_null(dev->driver);
	assert_null(dev_get_drvdata(dev));
	assert_false(device_is_bound(dev));
	assert_int_equal(count_nodes(dev), 1);
	t_device_unregister(dev);
	assert_string_equal(trace, "probe rel:a2 rel:g1 rel:a1 rel:own");
	assert_int_equal(heap_released, 1);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void remove_then_release(void **state)
{
	struct device *dev = heap_dev(&bus, "rr");

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(devm_add_action(dev, act, "own"), 0);
	assert_int_equal(t_driver_register(&full_drv), 0);
	assert_ptr_equal(dev->driver, &full_drv);
	assert_true(device_is_bound(dev));
	/* Acquired while bound, after probe: the binding's too. */
	assert_int_equal(devm_add_action(dev, act, "late"), 0);
	assert_int_equal(count_nodes(dev), 6);
	t_driver_unregister(&full_drv);
	assert_string_equal(trace, "probe remove rel:late rel:a2 rel:g1 "
				   "rel:a1");
	assert_null(dev->driver);
	assert_null(dev_get_drvdata(dev));
	assert_int_equal(count_nodes(dev), 1);
	t_device_unregister(dev);
	assert_string_equal(trace, "probe remove rel:late rel:a2 rel:g1 rel:a1 "
				   "rel:own");
}

static void unbound_resources_survive_rebind(void **state)
{
	struct device *dev = heap_dev(&bus, "rb");
	int *own;

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	own = devm_kzalloc(dev, sizeof(*own), GFP_KERNEL);
	assert_non_null(own);
	*own = 1234;
	assert_int_equal(device_driver_attach(&full_drv, dev), 0);
	device_release_driver(dev);
	assert_int_equal(device_driver_attach(&full_drv, dev), 0);
	device_release_driver(dev);
	/* Unbinding an unbound device does nothing. */
	device_release_driver(dev);
	assert_string_equal(trace, "probe remove rel:a2 rel:g1 rel:a1 "
				   "probe remove rel:a2 rel:g1 rel:a1");
	assert_int_equal(count_nodes(dev), 1);
	assert_int_equal(*own, 1234);
	t_device_del(dev);
	assert_int_equal(count_nodes(dev), 0);
	put_device(dev);
	assert_int_equal(heap_released, 1);
}

static void release_group_cannot_reach_binding(void **state)
{
	struct device *dev = heap_dev(&bus, "grp");
	int warns;

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(device_driver_attach(&full_drv, dev), 0);
	/* No open group: the binding is not one a driver can name. */
	warns = devres_warn_count();
	assert_int_equal(devres_release_group(dev, NULL), 0);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_int_equal(count_nodes(dev), 4);
	assert_true(a2_alive);
	t_device_unregister(dev);
	assert_false(a2_alive);
}

static int probe_nop(struct device *dev)
{
	(void)dev;
	note("nop");
	return 0;
}

static void attach_by_hand(void **state)
{
	static const struct bus_type other_bus = { .name = "other" };
	struct device_driver loose = { .name = "loose", .probe = probe_nop };
	struct device_driver foreign = { .name = "foreign", .bus = &other_bus };
	struct device *dev = heap_dev(&bus, "hand");
	struct device *never = heap_dev(&bus, "never");
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(device_driver_attach(&loose, never), -ENODEV);
	assert_int_equal(device_attach(never), -ENODEV);
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(device_attach(dev), 0);
	assert_int_equal(device_driver_attach(&foreign, dev), -EINVAL);
	assert_int_equal(device_driver_attach(NULL, dev), -EINVAL);
	/* Two on the device never added, two on bad drivers. */
	assert_int_equal(devres_warn_count(), warns + 4);
	/* A driver need not be registered to be bound by hand. */
	assert_int_equal(device_driver_attach(&loose, dev), 0);
	assert_ptr_equal(dev->driver, &loose);
	assert_int_equal(device_attach(dev), 1);
	assert_int_equal(device_driver_attach(&full_drv, dev), -EBUSY);
	device_release_driver(dev);
	/* A registered driver is found by device_attach(). */
	assert_int_equal(t_driver_register(&full_drv), 0);
	device_release_driver(dev);
	assert_int_equal(device_attach(dev), 1);
	assert_ptr_equal(dev->driver, &full_drv);
	t_driver_unregister(&full_drv);
	assert_string_equal(trace, "nop probe remove rel:a2 rel:g1 rel:a1 "
				   "probe remove rel:a2 rel:g1 rel:a1");
	t_device_unregister(dev);
	put_device(never);
	assert_int_equal(devres_warn_count(), warns + 4);
}

static void thousand_cycles(void **state)
{
	struct devres_ledger before, mid, after;
	struct device *dev;

	(void)state;
	devres_ledger_snapshot(&before);
	dev = heap_dev(&bus, "cycle");
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(devm_add_action(dev, act, "own"), 0);
	devres_ledger_snapshot(&mid);
	assert_int_equal(t_driver_register(&full_drv), 0);
	for (int i = 0; i < 1000; i++) {
		trace[0] = '\0';
		if (i % 2) {
			device_release_driver(dev);
			assert_int_equal(device_attach(dev), 1);
		} else {
			t_driver_unregister(&full_drv);
			assert_int_equal(t_driver_register(&full_drv), 0);
		}
		assert_ptr_equal(dev->driver, &full_drv);
	}
	device_release_driver(dev);
	{
		struct devres_ledger now;

		/* Only the device's own action is left: no growth. */
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&mid, &now, stderr), 0);
	}
	t_driver_unregister(&full_drv);
	t_device_unregister(dev);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/*
 * A parent whose probe registers a child device (bound at once by the
 * child driver) and a driver; both go away through managed actions.
 */
static int child_probe(struct device *dev)
{
	(void)dev;
	note("child-probe");
	return 0;
}

static void child_remove(struct device *dev)
{
	(void)dev;
	note("child-remove");
}

static int child_match(struct device *dev, const struct device_driver *drv);

static const struct bus_type family_bus = { .name = "family",
					    .match = child_match };

static struct device_driver child_drv = {
	.name = "child",
	.bus = &family_bus,
	.probe = child_probe,
	.remove = child_remove,
};

static struct device_driver late_drv = {
	.name = "late",
	.bus = &family_bus,
	.probe = child_probe,
	.remove = child_remove,
};

static int child_match(struct device *dev, const struct device_driver *drv)
{
	return strncmp(dev_name(dev), drv->name, strlen(drv->name)) == 0;
}

static void unregister_action(void *data)
{
	t_device_unregister(data);
}

static void driver_unregister_action(void *data)
{
	t_driver_unregister(data);
}

static int parent_probe(struct device *dev)
{
	struct device *child = calloc(1, sizeof(*child));
	int ret;

	note("parent-probe");
	if (!child)
		return -ENOMEM;
	child->bus = &family_bus;
	child->parent = dev;
	child->release = heap_release;
	device_initialize(child);
	ret = dev_set_name(child, "child-of-%s", dev_name(dev));
	if (!ret)
		ret = t_device_add(child);
	if (ret) {
		put_device(child);
		return ret;
	}
	ret = devm_add_action_or_reset(dev, unregister_action, child);
	if (ret)
		return ret;
	/* Bound before device_add() returned. */
	if (!device_is_bound(child))
		return -EIO;
	ret = t_driver_register(&late_drv);
	if (ret)
		return ret;
	return devm_add_action_or_reset(dev, driver_unregister_action,
					&late_drv);
}

static void parent_remove(struct device *dev)
{
	(void)dev;
	note("parent-remove");
}

static struct device_driver parent_drv = {
	.name = "parent",
	.bus = &family_bus,
	.probe = parent_probe,
	.remove = parent_remove,
};

static void register_from_probe(void **state)
{
	struct device *parent, *waiting;
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	assert_int_equal(t_bus_register(&family_bus), 0);
	assert_int_equal(t_driver_register(&child_drv), 0);
	assert_int_equal(t_driver_register(&parent_drv), 0);
	/* Waits for the driver the parent's probe registers. */
	waiting = heap_dev(&bus, "late-0");
	waiting->bus = &family_bus;
	assert_int_equal(t_device_add(waiting), 0);
	assert_false(device_is_bound(waiting));
	parent = heap_dev(&bus, "parent-0");
	parent->bus = &family_bus;
	assert_int_equal(t_device_add(parent), 0);
	assert_true(device_is_bound(parent));
	assert_true(device_is_bound(waiting));
	assert_string_equal(trace, "parent-probe child-probe child-probe");

	t_device_unregister(parent);
	assert_string_equal(trace, "parent-probe child-probe child-probe "
				   "parent-remove child-remove child-remove");
	assert_false(device_is_bound(waiting));
	/* The child held its parent; both are gone now. */
	assert_int_equal(heap_released, 2);
	t_device_unregister(waiting);
	t_driver_unregister(&parent_drv);
	t_driver_unregister(&child_drv);
	t_bus_unregister(&family_bus);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* Callbacks that turn on their own device or driver: WARN, no deadlock. */
static struct device_driver rude_drv;
static int rude_warns;

static int rude_probe(struct device *dev)
{
	int warns = devres_warn_count();

	device_release_driver(dev);
	t_device_del(dev);
	t_driver_unregister(&rude_drv);
	if (device_attach(dev) != -EDEADLK)
		return -EIO;
	if (device_driver_attach(&rude_drv, dev) != -EDEADLK)
		return -EIO;
	rude_warns = devres_warn_count() - warns;
	return 0;
}

static void rude_remove(struct device *dev)
{
	int warns = devres_warn_count();

	t_device_del(dev);
	t_driver_unregister(&rude_drv);
	rude_warns += devres_warn_count() - warns;
}

static struct device_driver rude_drv = {
	.name = "rude",
	.bus = &bus,
	.probe = rude_probe,
	.remove = rude_remove,
};

static void callbacks_on_themselves(void **state)
{
	struct device *dev = heap_dev(&bus, "rude");

	(void)state;
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(t_driver_register(&rude_drv), 0);
	assert_true(device_is_bound(dev));
	assert_int_equal(rude_warns, 5);
	t_driver_unregister(&rude_drv);
	assert_int_equal(rude_warns, 7);
	assert_false(device_is_bound(dev));
	t_device_unregister(dev);
	assert_int_equal(heap_released, 1);
}

/*
 * A probe that registers a better driver for its own device, then gives
 * up: the search in progress goes on to the new driver, which binds.
 */
static struct device_driver better_drv = {
	.name = "better",
	.bus = &bus,
	.probe = probe_nop,
};

static int handover_probe(struct device *dev)
{
	(void)dev;
	note("handover");
	if (t_driver_register(&better_drv))
		return -EIO;
	return -ENODEV;
}

static struct device_driver handover_drv = {
	.name = "handover",
	.bus = &bus,
	.probe = handover_probe,
};

static void driver_registered_during_search(void **state)
{
	struct device *dev = heap_dev(&bus, "ho");

	(void)state;
	assert_int_equal(t_driver_register(&handover_drv), 0);
	assert_int_equal(t_device_add(dev), 0);
	assert_string_equal(trace, "handover nop");
	assert_ptr_equal(dev->driver, &better_drv);
	t_device_unregister(dev);
	t_driver_unregister(&better_drv);
	t_driver_unregister(&handover_drv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(probe_failure_releases, setup),
		cmocka_unit_test_setup(remove_then_release, setup),
		cmocka_unit_test_setup(unbound_resources_survive_rebind, setup),
		cmocka_unit_test_setup(release_group_cannot_reach_binding,
				       setup),
		cmocka_unit_test_setup(attach_by_hand, setup),
		cmocka_unit_test_setup(thousand_cycles, setup),
		cmocka_unit_test_setup(register_from_probe, setup),
		cmocka_unit_test_setup(callbacks_on_themselves, setup),
		cmocka_unit_test_setup(driver_registered_during_search, setup),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &bus);
}
