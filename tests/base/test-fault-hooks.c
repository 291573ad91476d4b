// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault */
/*
 * The fault and defer points code outside the library adds
 * (devres_should_fail(), devres_should_defer()), platform_get_irq() as a
 * deferrable lookup, and driver_find_next_device().
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"

/* Counted with the library's points, in the same sequence. */
static void should_fail_counts_like_the_library(void **state)
{
	struct device dev = { 0 };
	void *p;

	(void)state;
	assert_int_equal(init_dev(&dev, "hooks"), 0);
	devres_fail_nth(2);
	assert_false(devres_should_fail(&dev, "framework_register"));
	assert_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	assert_int_equal(devres_fail_nth_get(), 0);
	devres_fail_nth(2);
	p = devm_kmalloc(&dev, 8, GFP_KERNEL);
	assert_non_null(p);
	assert_true(devres_should_fail(&dev, "framework_register"));
	assert_false(devres_should_fail(&dev, "framework_register"));
	devres_fail_nth(0);
	assert_false(devres_should_fail(NULL, NULL));
	devres_release_all(&dev);
	put_device(&dev);
}

static void defer_nth_is_its_own_count(void **state)
{
	(void)state;
	devres_fail_nth(1);
	devres_defer_nth(2);
	assert_false(devres_should_defer(NULL, "clk"));
	assert_int_equal(devres_defer_nth_get(), 1);
	assert_true(devres_should_defer(NULL, "clk"));
	assert_int_equal(devres_defer_nth_get(), 0);
	assert_false(devres_should_defer(NULL, "clk"));
	/* Deferrals did not touch the failure count. */
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(0);
}

static void platform_get_irq_defers_when_told(void **state)
{
	struct resource res = DEFINE_RES_IRQ(7);
	struct platform_device *pdev;

	(void)state;
	pdev = platform_device_register_simple("irqdefer", -1, &res, 1);
	assert_false(IS_ERR(pdev));
	devres_defer_nth(1);
	assert_int_equal(platform_get_irq(pdev, 0), -EPROBE_DEFER);
	assert_int_equal(platform_get_irq(pdev, 0), 7);
	/* A missing line is -ENXIO, never a deferral, and no lookup. */
	devres_defer_nth(1);
	assert_int_equal(platform_get_irq_optional(pdev, 1), -ENXIO);
	assert_int_equal(devres_defer_nth_get(), 1);
	devres_defer_nth(0);
	platform_device_unregister(pdev);
}

static int any_probe(struct device *dev)
{
	(void)dev;
	return 0;
}

static const struct bus_type fbus = { .name = "fnbus" };
static struct device_driver fdrv = { .name = "fn", .probe = any_probe };

static void find_next_device_walks_bound_ones(void **state)
{
	struct device devs[3], *d, *prev = NULL;
	int found = 0;

	(void)state;
	assert_int_equal(bus_register(&fbus), 0);
	fdrv.bus = &fbus;
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "fn%d", i);
		assert_int_equal(init_dev(&devs[i], name), 0);
		devs[i].bus = &fbus;
		assert_int_equal(device_add(&devs[i]), 0);
	}
	assert_int_equal(device_driver_attach(&fdrv, &devs[0]), 0);
	assert_int_equal(device_driver_attach(&fdrv, &devs[2]), 0);
	while ((d = driver_find_next_device(&fdrv, prev))) {
		assert_true(d == &devs[0] || d == &devs[2]);
		found++;
		if (prev)
			put_device(prev);
		prev = d;
	}
	if (prev)
		put_device(prev);
	assert_int_equal(found, 2);
	assert_null(driver_find_next_device(NULL, NULL));
	for (int i = 0; i < 3; i++) {
		device_release_driver(&devs[i]);
		device_del(&devs[i]);
		put_device(&devs[i]);
	}
	bus_unregister(&fbus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(should_fail_counts_like_the_library),
		cmocka_unit_test(defer_nth_is_its_own_count),
		cmocka_unit_test(platform_get_irq_defers_when_told),
		cmocka_unit_test(find_next_device_walks_bound_ones),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
