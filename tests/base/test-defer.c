// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Deferred probe: -EPROBE_DEFER parks a device; parked devices are retried
 * after a successful bind, before the call that caused it returns, in
 * rounds that stop once a round binds nothing.
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

static int name_match(struct device *dev, const struct device_driver *drv);

/* Devices match the driver named like them; "any" takes every device. */
static const struct bus_type bus = { .name = "dbus", .match = name_match };

static int name_match(struct device *dev, const struct device_driver *drv)
{
	if (strcmp(dev_name(dev), "match-defers") == 0)
		return -EPROBE_DEFER;
	return strcmp(drv->name, "any") == 0 ||
	       strcmp(dev_name(dev), drv->name) == 0;
}

static char trace[512];

static void note(const struct device *dev, const char *what)
{
	size_t len = strlen(trace);

	snprintf(trace + len, sizeof(trace) - len, "%s%s:%s", len ? " " : "",
		 dev_name(dev), what);
}

/* A needs B, B needs C: each defers until its supplier is bound. */
static struct device *a, *b, *c;
static int external_ready;

static int chain_probe(struct device *dev)
{
	struct device *supplier = dev == a ? b : dev == b ? c : NULL;
	int ret = 0;

	if (supplier && !device_is_bound(supplier))
		ret = -EPROBE_DEFER;
	if (strcmp(dev_name(dev), "external") == 0 && !external_ready)
		ret = -EPROBE_DEFER;
	if (strcmp(dev_name(dev), "never") == 0)
		ret = -EPROBE_DEFER;
	/* Memory that a deferral must give back. */
	if (!devm_kzalloc(dev, 100, GFP_KERNEL))
		return -ENOMEM;
	note(dev, ret ? "defer" : "ok");
	return ret;
}

static struct device_driver any_drv = {
	.name = "any",
	.bus = &bus,
	.probe = chain_probe,
};

static int setup(void **state)
{
	(void)state;
	trace[0] = '\0';
	heap_released = 0;
	external_ready = 0;
	a = b = c = NULL;
	return 0;
}

static void chain_devices_in_reverse_order(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	assert_int_equal(t_driver_register(&any_drv), 0);
	a = heap_dev(&bus, "A");
	b = heap_dev(&bus, "B");
	c = heap_dev(&bus, "C");
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	assert_string_equal(trace, "A:defer B:defer");
	assert_false(device_is_bound(a));
	/* C binds, B is retried and binds, then A in the next round. */
	assert_int_equal(t_device_add(c), 0);
	assert_string_equal(trace, "A:defer B:defer C:ok A:defer B:ok A:ok");
	assert_true(device_is_bound(a));
	assert_true(device_is_bound(b));
	t_device_unregister(a);
	t_device_unregister(b);
	t_device_unregister(c);
	t_driver_unregister(&any_drv);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static int own_probe(struct device *dev)
{
	return chain_probe(dev);
}

static void chain_drivers_in_reverse_order(void **state)
{
	struct device_driver da = { .name = "A",
				    .bus = &bus,
				    .probe = own_probe };
	struct device_driver db = { .name = "B",
				    .bus = &bus,
				    .probe = own_probe };
	struct device_driver dc = { .name = "C",
				    .bus = &bus,
				    .probe = own_probe };

	(void)state;
	a = heap_dev(&bus, "A");
	b = heap_dev(&bus, "B");
	c = heap_dev(&bus, "C");
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	assert_int_equal(t_device_add(c), 0);
	assert_string_equal(trace, "");
	assert_int_equal(t_driver_register(&da), 0);
	assert_int_equal(t_driver_register(&db), 0);
	assert_string_equal(trace, "A:defer B:defer");
	assert_int_equal(t_driver_register(&dc), 0);
	assert_string_equal(trace, "A:defer B:defer C:ok A:defer B:ok A:ok");
	assert_ptr_equal(a->driver, &da);
	t_driver_unregister(&dc);
	t_driver_unregister(&db);
	t_driver_unregister(&da);
	t_device_unregister(a);
	t_device_unregister(b);
	t_device_unregister(c);
	assert_int_equal(heap_released, 3);
}

static void defers_again_stays_parked(void **state)
{
	struct device *never = heap_dev(&bus, "never");
	struct device *bystander;

	(void)state;
	assert_int_equal(t_driver_register(&any_drv), 0);
	assert_int_equal(t_device_add(never), 0);
	assert_string_equal(trace, "never:defer");
	/* Each trigger retries it once; it stays parked. */
	driver_deferred_probe_trigger();
	driver_deferred_probe_trigger();
	assert_string_equal(trace, "never:defer never:defer never:defer");
	/* A bind elsewhere retries it once more, not in a loop. */
	bystander = heap_dev(&bus, "other");
	assert_int_equal(t_device_add(bystander), 0);
	assert_string_equal(trace, "never:defer never:defer never:defer "
				   "other:ok never:defer");
	assert_false(device_is_bound(never));
	t_device_unregister(bystander);
	/* Deleted while parked: never probed again. */
	t_device_unregister(never);
	driver_deferred_probe_trigger();
	bystander = heap_dev(&bus, "other2");
	assert_int_equal(t_device_add(bystander), 0);
	assert_string_equal(trace, "never:defer never:defer never:defer "
				   "other:ok never:defer other2:ok");
	t_device_unregister(bystander);
	t_driver_unregister(&any_drv);
	assert_int_equal(heap_released, 3);
}

static void trigger_on_demand(void **state)
{
	struct device *ext = heap_dev(&bus, "external");

	(void)state;
	assert_int_equal(t_driver_register(&any_drv), 0);
	assert_int_equal(t_device_add(ext), 0);
	assert_int_equal(device_attach(ext), 0);
	assert_string_equal(trace, "external:defer external:defer");
	external_ready = 1;
	driver_deferred_probe_trigger();
	assert_string_equal(trace, "external:defer external:defer external:ok");
	assert_true(device_is_bound(ext));
	t_device_unregister(ext);
	t_driver_unregister(&any_drv);
}

static void attach_by_hand_defers(void **state)
{
	struct device_driver loose = { .name = "loose", .probe = own_probe };
	struct device *ext = heap_dev(&bus, "external");

	(void)state;
	assert_int_equal(t_device_add(ext), 0);
	assert_int_equal(device_driver_attach(&loose, ext), -EAGAIN);
	assert_null(ext->driver);
	/* Parked: the first registered driver to match retries it. */
	external_ready = 1;
	assert_int_equal(t_driver_register(&any_drv), 0);
	assert_ptr_equal(ext->driver, &any_drv);
	assert_string_equal(trace, "external:defer external:ok");
	t_device_unregister(ext);
	t_driver_unregister(&any_drv);
}

static void match_defers(void **state)
{
	struct device *md = heap_dev(&bus, "match-defers");

	(void)state;
	assert_int_equal(t_driver_register(&any_drv), 0);
	assert_int_equal(t_device_add(md), 0);
	assert_false(device_is_bound(md));
	/* Parked by its match: unregistering it later must unpark it. */
	t_device_unregister(md);
	driver_deferred_probe_trigger();
	t_driver_unregister(&any_drv);
	assert_string_equal(trace, "");
	assert_int_equal(heap_released, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(chain_devices_in_reverse_order, setup),
		cmocka_unit_test_setup(chain_drivers_in_reverse_order, setup),
		cmocka_unit_test_setup(defers_again_stays_parked, setup),
		cmocka_unit_test_setup(trigger_on_demand, setup),
		cmocka_unit_test_setup(attach_by_hand_defers, setup),
		cmocka_unit_test_setup(match_defers, setup),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &bus);
}
