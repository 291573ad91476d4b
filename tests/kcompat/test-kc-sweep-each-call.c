// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat tsan */
/*
 * Every managed registration of the compat headers swept on its own, as
 * tests/base/test-sweep-each-call does for the library's calls: each of
 * its fault points failed in turn, on a device that is added and not
 * bound, and in a probe. A failed call fails as a whole: its caller sees
 * the injected errno (strict), the ledger is back where it was just
 * before the call, nothing of it stays registered; each call has a fault
 * point, and the sweep prints no WARN. Each cell runs in a child of
 * fork(), whose heap device (kmalloc()'s) is its own: made at the fork,
 * not at the child's first kmalloc() inside the sweep, where it was
 * counted as a leak of that run (hwrng, rtc and watchdog registrations,
 * whose records are kmalloc()'d).
 *
 * Calls x {device, probe}: each cell in a child under an alarm.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/clk.h>
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>
#include <linux/rtc.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/watchdog.h>
#include <linux/workqueue.h>
#include "kcompat/kctest.h"
#include "sweep-each.h"

static ssize_t extra_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	(void)dev;
	(void)attr;
	return sysfs_emit(buf, "x\n");
}
static DEVICE_ATTR_RO(extra);

static struct attribute *each_attrs[] = {
	&dev_attr_extra.attr,
	NULL,
};

static const struct attribute_group each_group = {
	.name = "g",
	.attrs = each_attrs,
};

static const struct attribute_group *each_groups[] = {
	&each_group,
	NULL,
};

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)rng;
	(void)wait;
	memset(data, 0x42, max);
	return (int)max;
}

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	memset(tm, 0, sizeof(*tm));
	return 0;
}

static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read };

static int wdt_start(struct watchdog_device *wdd)
{
	(void)wdd;
	return 0;
}

static const struct watchdog_info wdt_info = { .identity = "each" };
static const struct watchdog_ops wdt_ops = { .start = wdt_start };

static void work_fn(struct work_struct *w)
{
	(void)w;
}

/* Storage the calls register; reset before each run. */
static struct {
	struct mutex lock;
	struct work_struct work;
	struct delayed_work dwork;
	struct hwrng rng;
	struct watchdog_device wdd;
} S;

/*
 * Not managed, but the heap of every compat allocation (the calls below
 * make their records with it): a child's first kmalloc() is no leak.
 */
static int c_kmalloc(struct device *dev)
{
	void *p;

	(void)dev;
	begin();
	p = kmalloc(32, GFP_KERNEL);
	if (!p)
		return failed(__func__, -ENOMEM);
	kfree(p);
	return 0;
}

static int c_clk_get(struct device *dev)
{
	struct clk *c;

	begin();
	c = devm_clk_get(dev, NULL);
	return IS_ERR(c) ? failed(__func__, (int)PTR_ERR(c)) : 0;
}

static int c_clk_get_enabled(struct device *dev)
{
	struct clk *c;

	begin();
	c = devm_clk_get_enabled(dev, NULL);
	return IS_ERR(c) ? failed(__func__, (int)PTR_ERR(c)) : 0;
}

static int c_mutex_init(struct device *dev)
{
	int ret;

	begin();
	ret = devm_mutex_init(dev, &S.lock);
	return ret ? failed(__func__, ret) : 0;
}

static int c_pm_runtime(struct device *dev)
{
	int ret;

	begin();
	ret = devm_pm_runtime_enable(dev);
	return ret ? failed(__func__, ret) : 0;
}

static int c_work(struct device *dev)
{
	int ret;

	begin();
	ret = devm_work_autocancel(dev, &S.work, work_fn);
	return ret ? failed(__func__, ret) : 0;
}

static int c_delayed_work(struct device *dev)
{
	int ret;

	begin();
	ret = devm_delayed_work_autocancel(dev, &S.dwork, work_fn);
	return ret ? failed(__func__, ret) : 0;
}

static int c_add_group(struct device *dev)
{
	int ret;

	begin();
	ret = devm_device_add_group(dev, &each_group);
	return ret ? failed(__func__, ret) : 0;
}

static int c_add_groups(struct device *dev)
{
	int ret;

	begin();
	ret = devm_device_add_groups(dev, each_groups);
	return ret ? failed(__func__, ret) : 0;
}

static int c_hwrng(struct device *dev)
{
	int ret;

	memset(&S.rng, 0, sizeof(S.rng));
	S.rng.name = "each";
	S.rng.read = rng_read;
	begin();
	ret = devm_hwrng_register(dev, &S.rng);
	return ret ? failed(__func__, ret) : 0;
}

static int c_rtc(struct device *dev)
{
	struct rtc_device *rtc = devm_rtc_allocate_device(dev);
	int ret;

	if (IS_ERR(rtc))
		return (int)PTR_ERR(rtc);
	rtc->ops = &rtc_ops;
	rtc->range_max = U32_MAX;
	begin();
	ret = devm_rtc_register_device(rtc);
	return ret ? failed(__func__, ret) : 0;
}

static int c_rtc_allocate(struct device *dev)
{
	struct rtc_device *rtc;

	begin();
	rtc = devm_rtc_allocate_device(dev);
	return IS_ERR(rtc) ? failed(__func__, (int)PTR_ERR(rtc)) : 0;
}

static int c_watchdog(struct device *dev)
{
	int ret;

	memset(&S.wdd, 0, sizeof(S.wdd));
	S.wdd.info = &wdt_info;
	S.wdd.ops = &wdt_ops;
	S.wdd.parent = dev;
	S.wdd.min_timeout = 1;
	S.wdd.max_timeout = 60;
	S.wdd.timeout = 30;
	begin();
	ret = devm_watchdog_register_device(dev, &S.wdd);
	return ret ? failed(__func__, ret) : 0;
}

static const struct call calls[] = {
	{ "kmalloc", c_kmalloc },
	{ "devm_clk_get", c_clk_get },
	{ "devm_clk_get_enabled", c_clk_get_enabled },
	{ "devm_mutex_init", c_mutex_init },
	{ "devm_pm_runtime_enable", c_pm_runtime },
	{ "devm_work_autocancel", c_work },
	{ "devm_delayed_work_autocancel", c_delayed_work },
	{ "devm_device_add_group", c_add_group },
	{ "devm_device_add_groups", c_add_groups },
	{ "devm_hwrng_register", c_hwrng },
	{ "devm_rtc_allocate_device", c_rtc_allocate },
	{ "devm_rtc_register_device", c_rtc },
	{ "devm_watchdog_register_device", c_watchdog },
};

#define NCALLS ((int)(sizeof(calls) / sizeof(calls[0])))

static int cell(int row, int col)
{
	struct platform_device *pdev;
	int ret;

	alarm(20);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	pdev = platform_device_register_simple("kc-each", 0, NULL, 0);
	if (IS_ERR(pdev))
		return 10;
	cur = &calls[row];
	ret = sweep_cell(cur->name, col, op_on_device, undo_on_device,
			 &pdev->dev, &each_driver.driver, &pdev->dev);
	if (!ret)
		platform_device_unregister(pdev);
	return ret;
}

static void each_call(void **state)
{
	const char *rows[NCALLS];
	int i;

	(void)state;
	for (i = 0; i < NCALLS; i++)
		rows[i] = calls[i].name;
	sweep_table(cell, rows, NCALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
