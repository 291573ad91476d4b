// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * errno is preserved: by every release path and by
 * every public function that returns void or a count, even when the
 * release callbacks, the actions, the driver's remove, the device's
 * release and the log sink all change it. So that
 *
 *	if (fd < 0) { devres_release_group(dev, g); return -errno; }
 *
 * returns the error of open(), not of a release.
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
#include <devres/platform.h>
#include "testlib.h"

/* What the caller's failed call left in errno. */
#define SENTINEL EXDEV

static int clobbered;

static void clobber_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	clobbered++;
	errno = EIO;
}

static void clobber_action(void *data)
{
	(void)data;
	clobbered++;
	errno = ENOSPC;
}

static void clobber_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
	clobbered++;
	errno = EPIPE;
}

/* @call leaves errno as it found it, and something did try to change it. */
#define KEEPS_ERRNO(call)                                                      \
	do {                                                                   \
		clobbered = 0;                                                 \
		errno = SENTINEL;                                              \
		call;                                                          \
		assert_int_equal(errno, SENTINEL);                             \
		assert_true(clobbered > 0);                                    \
	} while (0)

static void *add_clobber(struct device *dev)
{
	void *p = devres_alloc(clobber_release, 8, GFP_KERNEL);

	assert_non_null(p);
	devres_add(dev, p);
	return p;
}

static void test_release_paths(void **state)
{
	struct device *dev = *state;
	void *g;

	add_clobber(dev);
	add_clobber(dev);
	KEEPS_ERRNO(assert_int_equal(devres_release_all(dev), 2));

	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	add_clobber(dev);
	assert_int_equal(devm_add_action(dev, clobber_action, NULL), 0);
	KEEPS_ERRNO(assert_int_equal(devres_release_group(dev, g), 2));

	add_clobber(dev);
	KEEPS_ERRNO(assert_int_equal(
		devres_release(dev, clobber_release, NULL, NULL), 0));

	assert_int_equal(devm_add_action(dev, clobber_action, dev), 0);
	KEEPS_ERRNO(devm_release_action(dev, clobber_action, dev));
}

/* With logging on, every call logs, and the sink changes errno. */
static void test_void_functions_with_a_clobbering_sink(void **state)
{
	struct device *dev = *state;
	unsigned long pages;
	void *g, *p;
	char *m;
	FILE *f;

	devres_set_log_sink(clobber_sink, NULL);
	devres_set_log(true);

	p = devres_alloc(clobber_release, 8, GFP_KERNEL);
	assert_non_null(p);
	KEEPS_ERRNO(devres_add(dev, p));
	/* A WARN (the node is on the device) goes to the sink too. */
	KEEPS_ERRNO(devres_free(p));
	KEEPS_ERRNO(assert_ptr_equal(
		devres_remove(dev, clobber_release, NULL, NULL), p));
	clobbered = 1;
	errno = SENTINEL;
	devres_free(p);
	assert_int_equal(errno, SENTINEL);

	KEEPS_ERRNO(g = devres_open_group(dev, NULL, GFP_KERNEL));
	assert_non_null(g);
	KEEPS_ERRNO(devres_close_group(dev, g));
	KEEPS_ERRNO(devres_remove_group(dev, g));

	KEEPS_ERRNO(m = devm_kmalloc(dev, 16, GFP_KERNEL));
	KEEPS_ERRNO(devm_kfree(dev, m));
	/* devm_kfree of what is not managed WARNs. */
	KEEPS_ERRNO(devm_kfree(dev, &clobbered));

	assert_int_equal(devm_add_action(dev, clobber_action, NULL), 0);
	KEEPS_ERRNO(devm_remove_action(dev, clobber_action, NULL));
	KEEPS_ERRNO(devm_remove_action(dev, clobber_action, NULL));

	KEEPS_ERRNO(pages = devm_get_free_pages(dev, GFP_KERNEL, 0));
	assert_int_not_equal(pages, 0);
	KEEPS_ERRNO(devm_free_pages(dev, pages));

	add_clobber(dev);
	KEEPS_ERRNO(assert_int_equal(
		devres_destroy(dev, clobber_release, NULL, NULL), 0));
	KEEPS_ERRNO(devres_get_stats(NULL, NULL));
	errno = SENTINEL;
	assert_int_equal(devres_check(dev), 0);
	assert_int_equal(errno, SENTINEL);
	devres_set_log(false);

	/* A stream that cannot be written sets errno as it fails. */
	f = fopen("/dev/full", "w");
	assert_non_null(f);
	assert_int_equal(setvbuf(f, NULL, _IONBF, 0), 0);
	add_clobber(dev);
	errno = SENTINEL;
	devres_dump(dev, f);
	assert_int_equal(errno, SENTINEL);
	fclose(f);
	KEEPS_ERRNO(devres_release_all(dev));
}

/*
 * The driver model's release paths: the last put_device() runs the
 * device's release, device_del() the driver's remove; both release
 * resources.
 */
static const struct bus_type ebus = { .name = "errno-bus" };

static int clobber_probe(struct device *dev)
{
	add_clobber(dev);
	return devm_add_action(dev, clobber_action, dev);
}

static void clobber_remove(struct device *dev)
{
	(void)dev;
	clobbered++;
	errno = ENOTTY;
}

static struct device_driver edrv = {
	.name = "errno-drv",
	.bus = &ebus,
	.probe = clobber_probe,
	.remove = clobber_remove,
};

static void clobber_dev_release(struct device *dev)
{
	heap_release(dev);
	errno = EMLINK;
}

static void test_driver_model_paths(void **state)
{
	struct device *dev;

	(void)state;
	assert_int_equal(driver_register(&edrv), 0);
	dev = heap_dev(&ebus, "errno-dev");
	dev->release = clobber_dev_release;
	assert_int_equal(device_add(dev), 0);
	assert_true(device_is_bound(dev));
	KEEPS_ERRNO(device_release_driver(dev));
	assert_int_equal(device_attach(dev), 1);
	KEEPS_ERRNO(driver_unregister(&edrv));
	assert_int_equal(driver_register(&edrv), 0);
	assert_true(device_is_bound(dev));
	add_clobber(dev);
	KEEPS_ERRNO(device_del(dev));
	add_clobber(dev);
	KEEPS_ERRNO(put_device(dev));
	driver_unregister(&edrv);
}

/* The platform bus's void calls, with a probe and remove that clobber. */
static int clobber_pprobe(struct platform_device *pdev)
{
	return clobber_probe(&pdev->dev);
}

static void clobber_premove(struct platform_device *pdev)
{
	clobber_remove(&pdev->dev);
}

static struct platform_driver epdrv = {
	.driver = { .name = "errno-pdrv" },
	.probe = clobber_pprobe,
	.remove = clobber_premove,
};

static void test_platform_and_bus_paths(void **state)
{
	static const struct bus_type lone = { .name = "errno-lone" };
	struct platform_device *pdev;

	(void)state;
	assert_int_equal(platform_driver_register(&epdrv), 0);
	pdev = platform_device_register_simple("errno-pdrv", 0, NULL, 0);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_non_null(pdev->dev.driver);
	KEEPS_ERRNO(platform_driver_unregister(&epdrv));
	assert_int_equal(platform_driver_register(&epdrv), 0);
	assert_non_null(pdev->dev.driver);
	KEEPS_ERRNO(platform_device_del(pdev));
	platform_device_put(pdev);
	pdev = platform_device_register_simple("errno-pdrv", 1, NULL, 0);
	assert_false(IS_ERR_OR_NULL(pdev));
	KEEPS_ERRNO(platform_device_unregister(pdev));
	platform_driver_unregister(&epdrv);

	/* No callback runs here; errno stays all the same. */
	assert_int_equal(bus_register(&lone), 0);
	errno = SENTINEL;
	bus_unregister(&lone);
	assert_int_equal(errno, SENTINEL);
	errno = SENTINEL;
	driver_deferred_probe_trigger();
	assert_int_equal(errno, SENTINEL);
}

static int teardown(void **state)
{
	devres_set_log(false);
	return dev_teardown(state);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_release_paths),
		T(test_void_functions_with_a_clobbering_sink),
		T(test_driver_model_paths),
		T(test_platform_and_bus_paths),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &ebus);
}
