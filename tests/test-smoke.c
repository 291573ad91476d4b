// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void smoke(void **state)
{
	struct device dev = { .release = dev_release };
	struct devres_stats st;

	(void)state;
	device_initialize(&dev);
	assert_non_null(devm_kmalloc(&dev, 10, GFP_KERNEL));
	devres_get_stats(&dev, &st);
	assert_int_equal(st.allocs, 1);
	assert_int_equal(devres_release_all(&dev), 1);
	put_device(&dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(smoke) };

	return cmocka_run_group_tests(tests, NULL, NULL);
}
