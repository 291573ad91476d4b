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
 * hand, say nothing.
 *
 * made_again_by_hand: after the plain release, the same object made
 * again by hand (a plain mutex_init(), hwrng_register(),
 * watchdog_register_device()); the unbind must leave that new object
 * alone (live, registered: its release method not run), and its plain
 * release is then quiet.
 *
 * The table is whole: tests/check-plain-release.sh reads every devm_
 * call the compat headers define (those that are not the library's own,
 * whose table is tests/misuse/test-unmanaged-release.c) and fails unless
 * each is a row of pairs[] or of none[], with why it has no plain
 * release to test here.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/sysfs.h>
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

static struct attribute *grp_attrs[] = { NULL };
static const struct attribute_group grp = { .name = "h", .attrs = grp_attrs };
static const struct attribute_group *grp_list[] = { &grp, NULL };

static int make_group(struct device *dev)
{
	return devm_device_add_group(dev, &grp);
}

static void hand_group(struct device *dev)
{
	device_remove_group(dev, &grp);
}

static int make_groups(struct device *dev)
{
	return devm_device_add_groups(dev, grp_list);
}

static void hand_groups(struct device *dev)
{
	device_remove_groups(dev, grp_list);
}

/* The object made again by hand; whether it is still whole; its release. */
static int again_mutex(struct device *dev)
{
	(void)dev;
	mutex_init(&mx);
	return 0;
}

static bool alive_mutex(void)
{
	return !kcompat_lock_dead(&mx.k);
}

static int again_hwrng(struct device *dev)
{
	(void)dev;
	rng_fresh();
	return hwrng_register(&rng);
}

static bool alive_hwrng(void)
{
	return cleanups == 1; /* the first registration's, by hand */
}

static int again_wdt(struct device *dev)
{
	int ret;

	wdt_fresh(dev);
	ret = watchdog_register_device(&wdd);
	return ret ? ret : watchdog_dev_start(&wdd);
}

static bool alive_wdt(void)
{
	return stops == 1;
}

struct pair {
	const char *managed; /* the devm_ call, named in the WARN */
	const char *plain;   /* the release by hand */
	int (*make)(struct device *dev);
	void (*hand)(struct device *dev);
	void (*twin)(struct device *dev); /* the devm_ release, or NULL */
	int *released; /* the driver's release method's count, or NULL */
	int (*again)(struct device *dev); /* made again by hand, or NULL */
	bool (*alive)(void);		  /* what again() made is whole */
};

static const struct pair pairs[] = {
	{ "devm_mutex_init", "mutex_destroy", make_mutex, hand_mutex, NULL,
	  NULL, again_mutex, alive_mutex },
	{ "devm_hwrng_register", "hwrng_unregister", make_hwrng, hand_hwrng,
	  twin_hwrng, &cleanups, again_hwrng, alive_hwrng },
	{ "devm_watchdog_register_device", "watchdog_unregister_device",
	  make_wdt, hand_wdt, NULL, &stops, again_wdt, alive_wdt },
	/* A group made again by hand is the driver's to remove in its remove. */
	{ "devm_device_add_group", "device_remove_group", make_group,
	  hand_group, NULL, NULL, NULL, NULL },
	{ "devm_device_add_groups", "device_remove_groups", make_groups,
	  hand_groups, NULL, NULL, NULL, NULL },
};

/*
 * The compat headers' other devm_ calls, and why none has a plain release
 * to test here (tests/check-plain-release.sh reads both tables).
 */
struct none {
	const char *managed;
	const char *why;
};

static const struct none none[] = {
	{ "devm_add_action", "the action is the caller's: the library's "
			     "devm_add_action_named()" },
	{ "devm_add_action_or_reset", "the action is the caller's, as "
				      "devm_add_action" },
	{ "devm_clk_get", "no clk_put() in these headers" },
	{ "devm_clk_get_optional", "no clk_put() in these headers" },
	{ "devm_clk_get_prepared", "clk_unprepare() is the driver's to pair "
				   "with its own prepares: the release's "
				   "\"already unprepared\", as the kernel's" },
	{ "devm_clk_get_enabled", "clk_disable_unprepare() likewise: the "
				  "release's \"already disabled\" WARN" },
	{ "devm_clk_get_optional_enabled", "as devm_clk_get_enabled" },
	{ "devm_work_autocancel", "cancel_work_sync() by hand is no release: "
				  "the item is the driver's, cancelled again "
				  "at unbind (test-kc-work-devm)" },
	{ "devm_delayed_work_autocancel", "as devm_work_autocancel" },
	{ "devm_pm_runtime_enable", "pm_runtime_disable() counts nothing "
				    "here: no runtime PM" },
	{ "devm_rtc_allocate_device", "memory of devm_kzalloc(): "
				      "test-kc-kfree-managed" },
	{ "devm_rtc_register_device", "no rtc unregister in these headers "
				      "(nor in the kernel)" },
	{ "devm_rtc_device_register", "as devm_rtc_register_device" },
	{ "devm_hwrng_unregister", "the managed release" },
	{ "devm_platform_ioremap_resource_byname", "iounmap() of it: the "
						   "library's "
						   "devm_ioremap_resource row "
						   "(tests/misuse/"
						   "test-unmanaged-release."
						   "c)" },
	{ "pcim_iomap_region", "pci_iounmap() of it: the library's "
			       "pcim_iomap row" },
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
		snprintf(want, sizeof(want), " %s(): ", p->managed);
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

/* Given back by hand, made again by hand: the unbind leaves it alone. */
static void made_again_by_hand(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct pair *p = &pairs[i];
		int w0;

		if (!p->again)
			continue;
		bind_with(p);
		w0 = devres_warn_count();
		p->hand(&pdev->dev);
		assert_int_equal(p->again(&pdev->dev), 0);
		device_release_driver(&pdev->dev);
		if (!p->alive())
			fail_msg("%s by hand, made again by hand: the unbind "
				 "took it (a %s node left)",
				 p->plain, p->managed);
		p->hand(&pdev->dev);
		assert_int_equal(devres_warn_count(), w0 + 1);
	}
}

/* No call is in both tables. */
static void tables_apart(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		for (size_t j = 0; j < sizeof(pairs) / sizeof(pairs[0]); j++)
			assert_string_not_equal(none[i].managed,
						pairs[j].managed);
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
		cmocka_unit_test(made_again_by_hand),
		cmocka_unit_test(tables_apart),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, setup, teardown);
}
