// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The cases of the kernel's KUnit suites "root-device-devm" and
 * "platform-device-devm", in our words: a device's managed resources are
 * released when it is unregistered, even when a managed action holds a
 * reference to the device; a probe's are released when it fails, and after
 * remove when the device goes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/platform.h>
#include <devres/fault.h>
#include "testlib.h"

struct test_priv {
	bool probe_done;
	bool release_done;
	bool device_released;
	bool remove_done;
	bool remove_saw_release; /* release_done was already set in remove */
	struct device *dev;
};

static struct test_priv priv;

static void device_action(void *data)
{
	struct test_priv *p = data;

	p->release_done = true;
}

/* The action holds a reference on its own device and drops it. */
static void put_device_action(void *data)
{
	struct test_priv *p = data;

	p->release_done = true;
	put_device(p->dev);
}

static void root_release(struct device *dev)
{
	priv.device_released = true;
	free(dev);
}

static struct device *root_device_register(const char *name)
{
	struct device *dev = calloc(1, sizeof(*dev));

	assert_non_null(dev);
	dev->release = root_release;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "%s", name), 0);
	assert_int_equal(t_device_add(dev), 0);
	return dev;
}

static struct devres_ledger baseline;

static int setup(void **state)
{
	(void)state;
	priv = (struct test_priv){ 0 };
	devres_ledger_snapshot(&baseline);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	/* What the test registered goes first, even after a failure. */
	t_undo_all();
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&baseline, &now, stderr), 0);
	return 0;
}

/* root-device-devm: register, unregister: the action runs. */
static void root_register_unregister(void **state)
{
	(void)state;
	priv.dev = root_device_register("test");
	assert_int_equal(
		devm_add_action_or_reset(priv.dev, device_action, &priv), 0);
	t_device_unregister(priv.dev);
	assert_true(priv.release_done);
	assert_true(priv.device_released);
}

/* root-device-devm: an action holding the device's last reference. */
static void root_register_get_unregister_with_devm(void **state)
{
	(void)state;
	priv.dev = root_device_register("test");
	get_device(priv.dev);
	assert_int_equal(devm_add_action_or_reset(priv.dev, put_device_action,
						  &priv),
			 0);
	t_device_unregister(priv.dev);
	/* Released at device_del(), so the cycle is broken. */
	assert_true(priv.release_done);
	assert_true(priv.device_released);
}

/* The platform device "test", allocated and added. */
static struct platform_device *platform_device_added(void)
{
	struct platform_device *pdev;

	pdev = platform_device_alloc("test", PLATFORM_DEVID_NONE);
	assert_non_null(pdev);
	assert_int_equal(platform_device_add(pdev), 0);
	return pdev;
}

/* platform-device-devm: the same on a platform device. */
static void platform_register_unregister(void **state)
{
	struct platform_device *pdev;

	(void)state;
	pdev = platform_device_added();
	priv.dev = &pdev->dev;
	assert_int_equal(
		devm_add_action_or_reset(priv.dev, device_action, &priv), 0);
	platform_device_unregister(pdev);
	assert_true(priv.release_done);
}

static void platform_register_get_unregister_with_devm(void **state)
{
	struct platform_device *pdev;

	(void)state;
	pdev = platform_device_added();
	priv.dev = &pdev->dev;
	get_device(priv.dev);
	assert_int_equal(devm_add_action_or_reset(priv.dev, put_device_action,
						  &priv),
			 0);
	platform_device_unregister(pdev);
	assert_true(priv.release_done);
}

static int probe_ret;

static int fake_probe(struct platform_device *pdev)
{
	int ret;

	priv.dev = &pdev->dev;
	get_device(priv.dev);
	ret = devm_add_action_or_reset(priv.dev, put_device_action, &priv);
	if (ret)
		return ret;
	priv.probe_done = true;
	return probe_ret;
}

static void fake_remove(struct platform_device *pdev)
{
	(void)pdev;
	priv.remove_done = true;
	priv.remove_saw_release = priv.release_done;
}

static struct platform_driver fake_driver = {
	.probe = fake_probe,
	.remove = fake_remove,
	.driver = { .name = "test" },
};

/* A bound device: remove first, then the probe's resources. */
static void platform_probe_then_unregister(void **state)
{
	struct platform_device *pdev;

	(void)state;
	probe_ret = 0;
	assert_int_equal(t_platform_driver_register(&fake_driver), 0);
	pdev = platform_device_register_simple("test", PLATFORM_DEVID_NONE,
					       NULL, 0);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_true(priv.probe_done);
	assert_false(priv.release_done);
	platform_device_unregister(pdev);
	assert_true(priv.remove_done);
	assert_false(priv.remove_saw_release);
	assert_true(priv.release_done);
	t_platform_driver_unregister(&fake_driver);
}

/* A failed probe gives back what it acquired, remove never runs. */
static void platform_probe_failure_releases(void **state)
{
	struct platform_device *pdev;

	(void)state;
	probe_ret = -EINVAL;
	assert_int_equal(t_platform_driver_register(&fake_driver), 0);
	pdev = platform_device_register_simple("test", PLATFORM_DEVID_NONE,
					       NULL, 0);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_true(priv.probe_done);
	assert_true(priv.release_done);
	assert_false(priv.remove_done);
	assert_null(pdev->dev.driver);
	platform_device_unregister(pdev);
	t_platform_driver_unregister(&fake_driver);
	assert_false(priv.remove_done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(root_register_unregister, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			root_register_get_unregister_with_devm, setup,
			teardown),
		cmocka_unit_test_setup_teardown(platform_register_unregister,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			platform_register_get_unregister_with_devm, setup,
			teardown),
		cmocka_unit_test_setup_teardown(platform_probe_then_unregister,
						setup, teardown),
		cmocka_unit_test_setup_teardown(platform_probe_failure_releases,
						setup, teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
