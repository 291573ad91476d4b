// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Every compat devm_ call whose object has an unmanaged release (the
 * table): the object made by the managed call in a probe, then released
 * by hand with the plain call before the device unbinds. The plain call
 * WARNs once, naming the device and the managed call, releases the
 * object and drops its devres node (the device's dump counts one fewer), so
 * that the unbind releases nothing a second time (the driver's own
 * release method runs once in all, no second WARN, ASan clean). The
 * managed twin of the release, and the plain call on an object made by
 * hand, say nothing. The pairs with no such release in these headers
 * are named in docs/misuse.md.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"

static struct mutex mx;
static struct hwrng rng;
static struct watchdog_device wdd;
static int cleanups, stops;

static int rng_read(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)r;
	(void)wait;
	memset(data, 0x5a, max);
	return (int)max;
}

static void rng_cleanup(struct hwrng *r)
{
	(void)r;
	cleanups++;
}

static int wdt_start(struct watchdog_device *w)
{
	(void)w;
	return 0;
}

static int wdt_stop(struct watchdog_device *w)
{
	(void)w;
	stops++;
	return 0;
}

static const struct watchdog_info wdt_info = { .identity = "by-hand" };
static const struct watchdog_ops wdt_ops = {
	.start = wdt_start,
	.stop = wdt_stop,
};

static void rng_fresh(void)
{
	memset(&rng, 0, sizeof(rng));
	rng.name = "by-hand";
	rng.read = rng_read;
	rng.cleanup = rng_cleanup;
}

static void wdt_fresh(struct device *dev)
{
	memset(&wdd, 0, sizeof(wdd));
	wdd.parent = dev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
	wdd.timeout = 30;
	set_bit(WDOG_STOP_ON_UNREGISTER, &wdd.status);
}

/* Each pair: what the probe makes, the release by hand, what it counts. */
static int make_mutex(struct device *dev)
{
	return devm_mutex_init(dev, &mx);
}

static void hand_mutex(struct device *dev)
{
	(void)dev;
	mutex_destroy(&mx);
}

static int make_hwrng(struct device *dev)
{
	rng_fresh();
	return devm_hwrng_register(dev, &rng);
}

static void hand_hwrng(struct device *dev)
{
	(void)dev;
	hwrng_unregister(&rng);
}

static void twin_hwrng(struct device *dev)
{
	devm_hwrng_unregister(dev, &rng);
}

static int make_wdt(struct device *dev)
{
	int ret;

	wdt_fresh(dev);
	ret = devm_watchdog_register_device(dev, &wdd);
	/* Running, so that its unregister stops it: counted. */
	return ret ? ret : watchdog_dev_start(&wdd);
}

static void hand_wdt(struct device *dev)
{
	(void)dev;
	watchdog_unregister_device(&wdd);
}

struct pair {
	const char *managed; /* the devm_ call, named in the WARN */
	const char *plain;   /* the release by hand */
	int (*make)(struct device *dev);
	void (*hand)(struct device *dev);
	void (*twin)(struct device *dev); /* the devm_ release, or NULL */
	int *released; /* the driver's release method's count, or NULL */
};

static const struct pair pairs[] = {
	{ "devm_mutex_init", "mutex_destroy", make_mutex, hand_mutex, NULL,
	  NULL },
	{ "devm_hwrng_register", "hwrng_unregister", make_hwrng, hand_hwrng,
	  twin_hwrng, &cleanups },
	{ "devm_watchdog_register_device", "watchdog_unregister_device",
	  make_wdt, hand_wdt, NULL, &stops },
};

static const struct pair *cur;

static int probe(struct platform_device *pdev)
{
	return cur->make(&pdev->dev);
}

static struct platform_driver drv = {
	.probe = probe,
	.driver = { .name = "kc-by-hand" },
};

static struct platform_device *pdev;

/* The device's resources, as its dump counts them. */
static long nodes_now(void)
{
	char *d = dump_to_string(&pdev->dev);
	const char *colon = d ? strchr(d, ':') : NULL;
	long n = -1;

	assert_non_null(colon);
	assert_int_equal(sscanf(colon + 1, "%ld resources", &n), 1);
	free(d);
	return n;
}

static void bind_with(const struct pair *p)
{
	cur = p;
	cleanups = stops = 0;
	assert_int_equal(device_attach(&pdev->dev), 1);
}

/* The plain call on a managed object: one WARN, the node gone. */
static void release_by_hand_before_unbind(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct pair *p = &pairs[i];
		char want[160];
		long n0;
		int w0;

		bind_with(p);
		n0 = nodes_now();
		w0 = devres_warn_count();
		start_capture();
		p->hand(&pdev->dev);
		devres_set_log_sink(NULL, NULL);
		if (devres_warn_count() != w0 + 1)
			fail_msg("%s of a %s object: %d WARNs, not 1", p->plain,
				 p->managed, devres_warn_count() - w0);
		snprintf(want, sizeof(want), "kc-by-hand: %s: ", p->plain);
		assert_true(kc_said(want));
		snprintf(want, sizeof(want), "by %s(): ", p->managed);
		assert_true(kc_said(want));
		assert_int_equal(nodes_now(), n0 - 1);
		if (p->released)
			assert_int_equal(*p->released, 1);
		device_release_driver(&pdev->dev);
		assert_int_equal(devres_warn_count(), w0 + 1);
		if (p->released)
			assert_int_equal(*p->released, 1);
	}
}

/* The managed twin, and the unbind alone: nothing said, released once. */
static void managed_release_is_quiet(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct pair *p = &pairs[i];
		int w0 = devres_warn_count();
		long n0;

		bind_with(p);
		if (p->twin) {
			n0 = nodes_now();
			p->twin(&pdev->dev);
			assert_int_equal(nodes_now(), n0 - 1);
			if (p->released)
				assert_int_equal(*p->released, 1);
		}
		device_release_driver(&pdev->dev);
		assert_int_equal(devres_warn_count(), w0);
		if (p->released)
			assert_int_equal(*p->released, 1);
	}
}

/* Made by hand, released by hand: the plain pairs, no WARN. */
static void unmanaged_pairs_are_quiet(void **state)
{
	int w0 = devres_warn_count();

	(void)state;
	mutex_init(&mx);
	mutex_destroy(&mx);
	rng_fresh();
	cleanups = 0;
	assert_int_equal(hwrng_register(&rng), 0);
	hwrng_unregister(&rng);
	assert_int_equal(cleanups, 1);
	wdt_fresh(&pdev->dev);
	stops = 0;
	assert_int_equal(watchdog_register_device(&wdd), 0);
	assert_int_equal(watchdog_dev_start(&wdd), 0);
	watchdog_unregister_device(&wdd);
	assert_int_equal(stops, 1);
	assert_int_equal(devres_warn_count(), w0);
}

static int setup(void **state)
{
	(void)state;
	cur = &pairs[0];
	kc_bare_setup(&pdev, "kc-by-hand", &drv, false);
	device_release_driver(&pdev->dev);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, &drv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(release_by_hand_before_unbind),
		cmocka_unit_test(managed_release_is_quiet),
		cmocka_unit_test(unmanaged_pairs_are_quiet),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, setup, teardown);
}
