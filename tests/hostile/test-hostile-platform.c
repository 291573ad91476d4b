// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * Who frees a platform device's resources. The library frees only the
 * arrays platform_device_add_resources() made; an owner may point
 * pdev->resource at its own (static, on its stack, in its own allocation),
 * before or after the library made one, on a device of its own or on one
 * platform_device_alloc() made. In every round the owner's array is never
 * freed nor written, and the library's is freed once (ASan sees both; the
 * ledger-free heap check sees a leak).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/platform.h>
#include "testlib.h"

static struct resource owners[2] = {
	DEFINE_RES_MEM_NAMED(0x60000000, 0x1000, "owner-a"),
	DEFINE_RES_IRQ(9),
};
static const struct resource copied[1] = {
	DEFINE_RES_MEM_NAMED(0x61000000, 0x1000, "copied"),
};

static void check_owners_intact(void)
{
	assert_int_equal(owners[0].start, 0x60000000);
	assert_string_equal(owners[0].name, "owner-a");
	assert_int_equal(owners[1].start, 9);
}

/* An allocated device: the owner's array set by hand, never freed. */
static void test_alloc_with_owner_array(void **state)
{
	struct platform_device *pdev;

	(void)state;
	for (int round = 0; round < 3; round++) {
		pdev = platform_device_alloc("hp-alloc", round);
		assert_non_null(pdev);
		if (round == 1)
			assert_int_equal(
				platform_device_add_resources(pdev, copied, 1),
				0);
		/* The owner's own array, as static board code does. */
		pdev->resource = owners;
		pdev->num_resources = 2;
		if (round == 2)
			/* Replaced by a copy: the owner's array stays. */
			assert_int_equal(
				platform_device_add_resources(pdev, copied, 1),
				0);
		assert_int_equal(platform_device_add(pdev), 0);
		assert_non_null(platform_get_resource(pdev, IORESOURCE_MEM, 0));
		platform_device_unregister(pdev);
		check_owners_intact();
	}
}

static int own_released;

static void own_release(struct device *dev)
{
	(void)dev;
	own_released++;
}

/*
 * A device of the owner's: the library's copy is given back by the next
 * platform_device_add_resources(), NULL included, even from the release.
 */
static struct platform_device own;

static void own_release_drops(struct device *dev)
{
	(void)dev;
	own_released++;
	assert_int_equal(platform_device_add_resources(&own, NULL, 0), 0);
}

static void test_own_device(void **state)
{
	(void)state;
	for (int round = 0; round < 2; round++) {
		memset(&own, 0, sizeof(own));
		own.name = "hp-own";
		own.id = round;
		own.dev.release = round ? own_release_drops : own_release;
		own_released = 0;
		assert_int_equal(platform_device_add_resources(&own, copied, 1),
				 0);
		/* The copy replaced by the owner's array, then a copy again. */
		own.resource = owners;
		own.num_resources = 2;
		assert_int_equal(platform_device_add_resources(&own, copied, 1),
				 0);
		assert_ptr_not_equal(own.resource, owners);
		assert_string_equal(own.resource[0].name, "copied");
		assert_int_equal(platform_device_register(&own), 0);
		platform_device_unregister(&own);
		assert_int_equal(own_released, 1);
		check_owners_intact();
		if (!round) {
			/* Deleted: the copy can still be given back. */
			assert_int_equal(platform_device_add_resources(&own,
								       NULL, 0),
					 0);
		}
		assert_null(own.resource);
		assert_int_equal(own.num_resources, 0);
	}
}

/* A resource name that is not a pointer is refused before it is copied. */
static void test_bad_resource_name(void **state)
{
	struct resource bad = DEFINE_RES_MEM(0x62000000, 0x1000);
	struct platform_device *pdev = platform_device_alloc("hp-bad", -1);
	char label[40];

	(void)state;
	assert_non_null(pdev);
	/* Not added: the device has no name yet. */
	snprintf(label, sizeof(label), "device@%p", (void *)&pdev->dev);
	bad.name = (const char *)ERR_PTR(-EINVAL);
	start_capture();
	assert_int_equal(platform_device_add_resources(pdev, &bad, 1), -EINVAL);
	expect_warn_on(label, "platform_device_add_resources",
		       "resource name is ERR_PTR(-22)");
	assert_null(pdev->resource);
	platform_device_put(pdev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_with_owner_array),
		cmocka_unit_test(test_own_device),
		cmocka_unit_test(test_bad_resource_name),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
