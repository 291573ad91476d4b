// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Buses and drivers: registration, matching, the bus's probe and remove
 * wrapping the driver's, walks over a bus, and misuse.
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

/* What happened, in order, as short words. */
static char trace[256];

static void note(const char *what, const struct device *dev)
{
	size_t len = strlen(trace);

	snprintf(trace + len, sizeof(trace) - len, "%s%s:%s", len ? " " : "",
		 what, dev_name(dev));
}

static int probe_ok(struct device *dev)
{
	note("probe", dev);
	return 0;
}

static int probe_fail(struct device *dev)
{
	note("fail", dev);
	return -EIO;
}

static void remove_note(struct device *dev)
{
	note("remove", dev);
}

static int setup(void **state)
{
	(void)state;
	trace[0] = '\0';
	heap_released = 0;
	return 0;
}

static void null_match_takes_all(void **state)
{
	static const struct bus_type bus = { .name = "anybus" };
	struct device_driver drv = { .name = "first",
				     .bus = &bus,
				     .probe = probe_ok,
				     .remove = remove_note };
	struct device_driver second = { .name = "second",
					.bus = &bus,
					.probe = probe_ok };
	struct device *a, *b;

	(void)state;
	assert_int_equal(t_bus_register(&bus), 0);
	a = heap_dev(&bus, "a");
	b = heap_dev(&bus, "b");
	assert_int_equal(t_device_add(a), 0);
	assert_int_equal(t_device_add(b), 0);
	assert_string_equal(trace, "");
	assert_int_equal(t_driver_register(&drv), 0);
	assert_string_equal(trace, "probe:a probe:b");
	assert_ptr_equal(a->driver, &drv);
	assert_ptr_equal(b->driver, &drv);
	/* Both taken already; the second driver finds nothing to do. */
	assert_int_equal(t_driver_register(&second), 0);
	assert_string_equal(trace, "probe:a probe:b");
	t_driver_unregister(&drv);
	assert_string_equal(trace, "probe:a probe:b remove:a remove:b");
	assert_null(a->driver);
	/* Unbound devices stay; attach finds the remaining driver. */
	assert_int_equal(device_attach(a), 1);
	assert_ptr_equal(a->driver, &second);
	t_driver_unregister(&second);
	t_device_unregister(a);
	t_device_unregister(b);
	t_bus_unregister(&bus);
	assert_int_equal(heap_released, 2);
}

/* Matches drivers whose name is the device's name up to the first '-'. */
static int prefix_match(struct device *dev, const struct device_driver *drv)
{
	const char *name = dev_name(dev);

	if (strcmp(name, "broken") == 0)
		return -EIO;
	return strncmp(name, drv->name, strcspn(name, "-")) == 0 &&
	       drv->name[strcspn(name, "-")] == '\0';
}

static void matching(void **state)
{
	static const struct bus_type bus = { .name = "mbus",
					     .match = prefix_match };
	struct device_driver uart = { .name = "uart",
				      .bus = &bus,
				      .probe = probe_ok };
	struct device_driver spi = { .name = "spi",
				     .bus = &bus,
				     .probe = probe_ok };
	struct device *u0, *s0, *x0, *broken;

	(void)state;
	assert_int_equal(t_bus_register(&bus), 0);
	assert_int_equal(t_driver_register(&uart), 0);
	assert_int_equal(t_driver_register(&spi), 0);
	u0 = heap_dev(&bus, "uart-0");
	s0 = heap_dev(&bus, "spi-0");
	x0 = heap_dev(&bus, "i2c-0");
	broken = heap_dev(&bus, "broken");
	assert_int_equal(t_device_add(u0), 0);
	assert_int_equal(t_device_add(s0), 0);
	assert_int_equal(t_device_add(x0), 0);
	assert_int_equal(t_device_add(broken), 0);
	assert_ptr_equal(u0->driver, &uart);
	assert_ptr_equal(s0->driver, &spi);
	assert_null(x0->driver);
	/* A match error stops the search: no probe at all. */
	assert_null(broken->driver);
	assert_string_equal(trace, "probe:uart-0 probe:spi-0");
	assert_int_equal(device_attach(x0), 0);
	assert_int_equal(device_attach(u0), 1);

	t_driver_unregister(&uart);
	t_driver_unregister(&spi);
	t_device_unregister(u0);
	t_device_unregister(s0);
	t_device_unregister(x0);
	t_device_unregister(broken);
	t_bus_unregister(&bus);
}

static void failed_probe_lets_next_try(void **state)
{
	static const struct bus_type bus = { .name = "fbus" };
	struct device_driver bad = { .name = "bad",
				     .bus = &bus,
				     .probe = probe_fail };
	struct device_driver good = { .name = "good",
				      .bus = &bus,
				      .probe = probe_ok };
	struct device *dev;

	(void)state;
	assert_int_equal(t_bus_register(&bus), 0);
	assert_int_equal(t_driver_register(&bad), 0);
	assert_int_equal(t_driver_register(&good), 0);
	dev = heap_dev(&bus, "d");
	assert_int_equal(t_device_add(dev), 0);
	assert_string_equal(trace, "fail:d probe:d");
	assert_ptr_equal(dev->driver, &good);
	t_device_unregister(dev);
	t_driver_unregister(&bad);
	t_driver_unregister(&good);
	t_bus_unregister(&bus);
}

/* A bus's probe and remove stand in for the driver's, and call them. */
static int bus_probe(struct device *dev)
{
	note("bus-probe", dev);
	return dev->driver->probe(dev);
}

static void bus_remove(struct device *dev)
{
	note("bus-remove", dev);
	dev->driver->remove(dev);
}

static void bus_wraps_driver(void **state)
{
	static const struct bus_type bus = { .name = "wbus",
					     .probe = bus_probe,
					     .remove = bus_remove };
	struct device_driver drv = { .name = "w",
				     .bus = &bus,
				     .probe = probe_ok,
				     .remove = remove_note };
	struct device *dev;

	(void)state;
	assert_int_equal(t_bus_register(&bus), 0);
	assert_int_equal(t_driver_register(&drv), 0);
	dev = heap_dev(&bus, "d");
	assert_int_equal(t_device_add(dev), 0);
	device_release_driver(dev);
	assert_string_equal(trace, "bus-probe:d probe:d bus-remove:d remove:d");
	assert_null(dev->driver);
	t_device_unregister(dev);
	t_driver_unregister(&drv);
	t_bus_unregister(&bus);
}

static int count_dev(struct device *dev, void *data)
{
	note("see", dev);
	(*(int *)data)++;
	return strcmp(dev_name(dev), "stop") == 0 ? 42 : 0;
}

static int delete_dev(struct device *dev, void *data)
{
	(void)data;
	note("del", dev);
	t_device_del(dev);
	return 0;
}

static void walk(void **state)
{
	static const struct bus_type bus = { .name = "walkbus" };
	struct device *d[4];
	const char *names[4] = { "a", "b", "stop", "c" };
	int n = 0;

	(void)state;
	assert_int_equal(t_bus_register(&bus), 0);
	for (int i = 0; i < 4; i++) {
		d[i] = heap_dev(&bus, "%s", names[i]);
		assert_int_equal(t_device_add(d[i]), 0);
	}
	assert_int_equal(bus_for_each_dev(&bus, NULL, &n, count_dev), 42);
	assert_int_equal(n, 3);
	assert_int_equal(bus_for_each_dev(&bus, d[2], &n, count_dev), 0);
	assert_int_equal(n, 4);
	assert_string_equal(trace, "see:a see:b see:stop see:c");

	/* The walk survives its callback deleting what it stands on. */
	trace[0] = '\0';
	assert_int_equal(bus_for_each_dev(&bus, NULL, NULL, delete_dev), 0);
	assert_string_equal(trace, "del:a del:b del:stop del:c");
	n = 0;
	assert_int_equal(bus_for_each_dev(&bus, NULL, &n, count_dev), 0);
	assert_int_equal(n, 0);
	for (int i = 0; i < 4; i++)
		put_device(d[i]);
	assert_int_equal(heap_released, 4);
	t_bus_unregister(&bus);
}

static void bus_misuse(void **state)
{
	static const struct bus_type bus = { .name = "mis" };
	static const struct bus_type twin = { .name = "mis" };
	static const struct bus_type noname = { .name = NULL };
	static const struct bus_type never = { .name = "never" };
	int warns = devres_warn_count();
	struct device *dev;

	(void)state;
	assert_int_equal(t_bus_register(NULL), -EINVAL);
	assert_int_equal(t_bus_register(&noname), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 2);
	assert_int_equal(t_bus_register(&bus), 0);
	assert_int_equal(t_bus_register(&bus), -EBUSY);
	assert_int_equal(t_bus_register(&twin), -EBUSY);
	assert_int_equal(devres_warn_count(), warns + 4);
	t_bus_unregister(&never);
	assert_int_equal(devres_warn_count(), warns + 5);
	assert_int_equal(bus_for_each_dev(&never, NULL, NULL, count_dev),
			 -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 6);

	/* A bus with a device on it stays registered. */
	dev = heap_dev(&bus, "d");
	assert_int_equal(t_device_add(dev), 0);
	t_bus_unregister(&bus);
	assert_int_equal(devres_warn_count(), warns + 7);
	t_device_unregister(dev);
	dev = heap_dev(&bus, "d2");
	assert_int_equal(t_device_add(dev), 0);
	t_device_unregister(dev);
	t_bus_unregister(&bus);
	assert_int_equal(devres_warn_count(), warns + 7);
	t_bus_unregister(&bus);
	assert_int_equal(devres_warn_count(), warns + 8);
}

static void driver_misuse(void **state)
{
	static const struct bus_type bus = { .name = "dmis" };
	static const struct bus_type never = { .name = "never" };
	struct device_driver busless = { .name = "busless" };
	struct device_driver nameless = { .bus = &bus };
	struct device_driver lost = { .name = "lost", .bus = &never };
	struct device_driver drv = { .name = "drv", .bus = &bus };
	struct device_driver twin = { .name = "drv", .bus = &bus };
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(t_bus_register(&bus), 0);
	assert_int_equal(t_driver_register(NULL), -EINVAL);
	assert_int_equal(t_driver_register(&busless), -EINVAL);
	assert_int_equal(t_driver_register(&nameless), -EINVAL);
	assert_int_equal(t_driver_register(&lost), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 4);
	assert_int_equal(t_driver_register(&drv), 0);
	assert_int_equal(t_driver_register(&drv), -EBUSY);
	assert_int_equal(t_driver_register(&twin), -EBUSY);
	assert_int_equal(devres_warn_count(), warns + 6);
	/* A bus with a driver on it stays registered. */
	t_bus_unregister(&bus);
	assert_int_equal(devres_warn_count(), warns + 7);
	t_driver_unregister(&twin);
	assert_int_equal(devres_warn_count(), warns + 8);
	t_driver_unregister(&drv);
	assert_int_equal(devres_warn_count(), warns + 8);
	t_driver_unregister(&drv);
	t_driver_unregister(NULL);
	assert_int_equal(devres_warn_count(), warns + 10);
	/* Registered again after unregistration, it works again. */
	assert_int_equal(t_driver_register(&drv), 0);
	t_driver_unregister(&drv);
	t_bus_unregister(&bus);
	assert_int_equal(devres_warn_count(), warns + 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(null_match_takes_all, setup),
		cmocka_unit_test_setup(matching, setup),
		cmocka_unit_test_setup(failed_probe_lets_next_try, setup),
		cmocka_unit_test_setup(bus_wraps_driver, setup),
		cmocka_unit_test_setup(walk, setup),
		cmocka_unit_test_setup(bus_misuse, setup),
		cmocka_unit_test_setup(driver_misuse, setup),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
