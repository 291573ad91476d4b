// SPDX-License-Identifier: MIT
/* ctest-labels: unit shared-only */
/*
 * The library's internal calls stay inside the library: an application
 * that defines its own device_add() (same signature) sees its version
 * called only where it calls device_add() itself, never from
 * platform_device_register(), device_register() or driver binding.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include <devres/platform.h>
#include <devres/fault.h>

static int app_calls;

/* The application's own device_add(): records the call and fails. */
int device_add(struct device *dev)
{
	(void)dev;
	app_calls++;
	return -EIO;
}

static int probes;

static int sym_probe(struct platform_device *pdev)
{
	(void)pdev;
	probes++;
	return 0;
}

static struct platform_driver sym_drv = {
	.probe = sym_probe,
	.driver = { .name = "sym" },
};

static long devices_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.devices;
}

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void internal_calls_stay_inside(void **state)
{
	struct platform_device *pdev;
	struct device plain = { .release = dev_release, .init_name = "plain" };
	long before = devices_now();

	(void)state;
	/* platform_device_register_simple -> platform_device_add -> device_add */
	pdev = platform_device_register_simple("sym", 0, NULL, 0);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_int_equal(app_calls, 0);
	assert_int_equal(devices_now(), before + 1);
	assert_int_equal(device_attach(&pdev->dev), 0);

	/* driver_register's binding path reaches the device. */
	assert_int_equal(platform_driver_register(&sym_drv), 0);
	assert_int_equal(probes, 1);
	assert_true(device_is_bound(&pdev->dev));

	/* device_register -> device_add */
	assert_int_equal(device_register(&plain), 0);
	assert_int_equal(app_calls, 0);
	assert_int_equal(devices_now(), before + 2);

	/* The application's own call does reach its own function. */
	assert_int_equal(device_add(&plain), -EIO);
	assert_int_equal(app_calls, 1);

	device_unregister(&plain);
	platform_device_unregister(pdev);
	platform_driver_unregister(&sym_drv);
	assert_int_equal(devices_now(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(internal_calls_stay_inside),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
