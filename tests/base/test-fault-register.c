// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * The records of bus_register() and driver_register(), behind the fault
 * point as every other allocation the library makes for its caller: a
 * sweep (fail-nth for N = 1, 2, ...) fails each as the real allocation
 * would, with -ENOMEM and nothing half done. A bus that failed is not
 * known (a device cannot be added on it, and it registers afterwards
 * with no -EBUSY); a driver that failed is on no bus and bound to
 * nothing (its probe never ran, the device it matches stays unbound),
 * and registers and binds afterwards. Each has one fault point.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdbool.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static int probes;

static int probe_ok(struct device *dev)
{
	(void)dev;
	probes++;
	return 0;
}

/*
 * Runs @op with fail-nth at 1, 2, ... until a run with no point left to
 * fail; each failed run must return -ENOMEM and leave the ledger as it
 * was. Returns how many points failed; @op's last (good) result in
 * @ret_ok.
 */
static unsigned int sweep_points(int (*op)(void *), void *arg, int *ret_ok)
{
	struct devres_ledger before, now;
	unsigned int points = 0;

	devres_ledger_snapshot(&before);
	for (unsigned int n = 1;; n++) {
		unsigned int left;
		int rc;

		start_capture();
		devres_fail_nth(n);
		rc = op(arg);
		left = devres_fail_nth_get();
		devres_fail_nth(0);
		if (left) {
			*ret_ok = rc;
			return points;
		}
		points++;
		assert_int_equal(rc, -ENOMEM);
		expect_no_warn();
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
		assert_in_range(n, 1, 16);
	}
}

static const struct bus_type fbus = { .name = "fault-register-bus" };

static int bus_op(void *arg)
{
	struct device *dev = arg;
	int ret = t_bus_register(&fbus);

	/* A bus whose registration failed is not half known. */
	if (ret) {
		int warns = devres_warn_count();

		/* Its one WARN (with a backtrace in debug builds). */
		assert_int_equal(device_add(dev), -EINVAL);
		assert_int_equal(devres_warn_count(), warns + 1);
		start_capture();
	}
	return ret;
}

static void bus_record(void **state)
{
	struct device *dev;
	int ok = -1;

	(void)state;
	dev = heap_dev(&fbus, "fault-bus-dev");
	start_capture();
	assert_int_equal(sweep_points(bus_op, dev, &ok), 1);
	assert_int_equal(ok, 0);
	assert_int_equal(t_device_add(dev), 0);
	t_device_unregister(dev);
	t_bus_unregister(&fbus);
}

static struct device_driver fdrv = {
	.name = "fault-register-drv",
	.bus = &fbus,
	.probe = probe_ok,
};

static int drv_op(void *arg)
{
	struct device *dev = arg;
	int ret = t_driver_register(&fdrv);

	/* Not registered, not bound, never probed. */
	if (ret) {
		assert_null(dev->driver);
		assert_int_equal(probes, 0);
		assert_int_equal(device_attach(dev), 0);
		assert_null(dev->driver);
	}
	return ret;
}

static void driver_record(void **state)
{
	struct device *dev;
	int ok = -1;

	(void)state;
	probes = 0;
	assert_int_equal(t_bus_register(&fbus), 0);
	dev = heap_dev(&fbus, "fault-drv-dev");
	assert_int_equal(t_device_add(dev), 0);
	assert_int_equal(sweep_points(drv_op, dev, &ok), 1);
	assert_int_equal(ok, 0);
	/* The good run bound the device it matches, once. */
	assert_ptr_equal(dev->driver, &fdrv);
	assert_int_equal(probes, 1);
	t_driver_unregister(&fdrv);
	assert_null(dev->driver);
	t_device_unregister(dev);
	t_bus_unregister(&fbus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bus_record),
		cmocka_unit_test(driver_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
