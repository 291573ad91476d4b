// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile kcompat tsan */
/*
 * test-hostile-args for the compat headers: every inline function of
 * <linux/completion.h>, <linux/list.h> and <linux/workqueue.h> a driver
 * calls, each of its pointer arguments in turn NULL, ERR_PTR(-EINVAL) and
 * (void *)16, every other argument valid: one WARN, the call's "nothing"
 * (void, false, 0, NULL, an errno; list_empty() says empty), never a
 * crash. The calls come from the headers (gen-args.py --kcompat), so a
 * new function of these headers is attacked the day it is written. Each
 * call runs in a child of its own. <linux/pci.h>'s calls take a device
 * of a fake PCI tree; <linux/uaccess.h>'s copies answer a bad user
 * pointer with no WARN and every byte left, as the kernel does.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/clk.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/hw_random.h>
#include <linux/kstrtox.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/of.h>
#include <linux/of_device.h>
#include <linux/pci.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>
#include <linux/random.h>
#include <linux/rtc.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/time64.h>
#include <linux/uaccess.h>
#include <linux/watchdog.h>
#include <linux/workqueue.h>
#include <devres/pci_fake.h>
#include "kcompat/kctest.h"
#include "hostile/hostile-args.h"

/*
 * Arguments where the kernel gives NULL a meaning: an absent optional
 * clock, no match table, nothing to free or to copy, no attribute groups.
 * (A NULL queue is no longer the system's: that is system_wq.)
 */
static const char *const null_ok[] = {
	"clk_prepare_enable:c",
	"clk_disable_unprepare:c",
	"clk_prepare:c",
	"clk_unprepare:c",
	"clk_enable:c",
	"clk_disable:c",
	"clk_get_rate:c",
	"of_match_device:ids",
	"kstrdup:s",
	"devm_device_add_groups:groups",
	"device_add_groups:groups",
	"device_remove_groups:groups",
	"device_remove_group:grp",
	"pcim_iomap_region:name",
};

/* And ZERO_SIZE_PTR, what a zero-byte allocation returned, as well. */
static const char *const zero_ok[] = { "kfree:p", "kvfree:p",
				       "kfree_sensitive:p", "krealloc:p" };

/*
 * A bad pointer refused as a parse error, without a WARN: kstrto*()
 * answer what a user writes to an attribute (docs/misuse.md). And a bad
 * user pointer, which the kernel meets with a short copy: every byte left.
 */
static const char *const quiet[] = {
	"kstrtobool:s",
	"kstrtobool:res",
	"copy_to_user:to",
	"copy_from_user:from",
};

/*
 * Arguments these headers never read: a cookie kept for the driver, the
 * device whose firmware properties would hold a timeout (there are none),
 * the module and name the kernel's older RTC call no longer uses.
 */
static const char *const opaque[] = {
	"watchdog_set_drvdata:d",
	"watchdog_init_timeout:dev",
	"devm_rtc_device_register:owner",
	"devm_rtc_device_register:name",
};

/* Calls whose "nothing" is true: a bad head is an empty list. */
static const char *const true_is_nothing[] = { "list_empty" };

/* 1; BAR 0, the fixture's one BAR, so that a name is read. */
static long arg_int(const char *func, const char *arg)
{
	(void)func;
	return strcmp(arg, "bar") ? 1 : 0;
}

static struct list_head *arg_list_head(const char *func, const char *arg)
{
	static struct list_head l[2];
	struct list_head *h = &l[!strcmp(arg, "head")];

	(void)func;
	INIT_LIST_HEAD(h);
	return h;
}

static void nop_fn(struct work_struct *w)
{
	(void)w;
}

static void *arg_fn(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return (void *)nop_fn;
}

static struct work_struct *arg_work_struct(const char *func, const char *arg)
{
	static struct work_struct w;

	(void)func;
	(void)arg;
	INIT_WORK(&w, nop_fn);
	return &w;
}

static struct delayed_work *arg_delayed_work(const char *func, const char *arg)
{
	static struct delayed_work dw;

	(void)func;
	(void)arg;
	INIT_DELAYED_WORK(&dw, nop_fn);
	return &dw;
}

static struct workqueue_struct *arg_workqueue_struct(const char *func,
						     const char *arg)
{
	(void)func;
	(void)arg;
	return alloc_workqueue("hostile", 0, 0);
}

static struct platform_device *arg_platform_device(const char *func,
						   const char *arg)
{
	static struct platform_device *p;

	(void)func;
	(void)arg;
	if (!p)
		p = platform_device_alloc("kc-hostile", PLATFORM_DEVID_NONE);
	return p;
}

static struct device *arg_device(const char *func, const char *arg)
{
	return &arg_platform_device(func, arg)->dev;
}

static char scratch[256];

static void *arg_buf(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return scratch;
}

static const char *arg_str(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return "1";
}

static struct mutex *arg_mutex(const char *func, const char *arg)
{
	static struct mutex m;

	(void)func;
	(void)arg;
	return &m;
}

static struct rtc_time *arg_rtc_time(const char *func, const char *arg)
{
	static struct rtc_time tm = { .tm_year = 100, .tm_mday = 1 };

	(void)func;
	(void)arg;
	return &tm;
}

static const struct rtc_class_ops *arg_rtc_class_ops(const char *func,
						     const char *arg)
{
	static const struct rtc_class_ops ops;

	(void)func;
	(void)arg;
	return &ops;
}

static struct rtc_device *arg_rtc_device(const char *func, const char *arg)
{
	static struct rtc_device r;

	(void)func;
	(void)arg;
	return &r;
}

static struct module *arg_module(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return NULL;
}

static struct hwrng *arg_hwrng(const char *func, const char *arg)
{
	static struct hwrng h = { .name = "kc-hostile" };

	(void)func;
	(void)arg;
	return &h;
}

static const struct attribute_group *arg_attribute_group(const char *func,
							 const char *arg)
{
	static struct attribute *attrs[] = { NULL };
	static const struct attribute_group g = { .attrs = attrs };
	static const struct attribute_group *groups[] = { &g, NULL };

	(void)func;
	return strcmp(arg, "groups") ? &g : (const void *)groups;
}

static struct watchdog_device *arg_watchdog_device(const char *func,
						   const char *arg)
{
	static struct watchdog_device w;

	(void)func;
	(void)arg;
	return &w;
}

static const struct of_device_id *arg_of_device_id(const char *func,
						   const char *arg)
{
	static const struct of_device_id ids[] = { { .compatible = "kc,x" },
						   {} };

	(void)func;
	(void)arg;
	return ids;
}

/*
 * A PCI device with one BAR of a page: the parent makes the fake tree, the
 * child that first needs the device scans it.
 */
static struct pci_fake *tree;

static struct pci_dev *arg_pci_dev(const char *func, const char *arg)
{
	(void)func;
	(void)arg;
	return hostile_pci_dev(tree);
}

#pragma GCC diagnostic push
/* A format under attack is not a literal, by design. */
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#include "kc-hostile-args-cases.h"
#pragma GCC diagnostic pop

static int run_case(const struct arg_case *c, void *bad, bool allowed,
		    bool silent)
{
	int w0, r, n;

	devres_set_log_sink(count_sink, NULL);
	w0 = warns;
	r = c->call(bad);
	n = warns - w0;
	if (allowed)
		return n == 0 ? V_PASS : V_WARNED_ON_NULL;
	if (silent)
		return n ? V_MANY_WARNS : r == RES_ERR ? V_PASS : V_SUCCEEDED;
	if (n == 0)
		return V_NO_WARN;
	if (n > 1)
		return V_MANY_WARNS;
	if (r == RES_OK && !IN(true_is_nothing, c->func))
		return V_SUCCEEDED;
	if (r == RES_POS)
		return V_SUCCEEDED;
	return V_PASS;
}

static bool left_alone(const struct arg_case *c)
{
	char key[128];

	snprintf(key, sizeof(key), "%s:%s", c->func, c->arg);
	return IN(opaque, key);
}

static int child(const struct arg_case *c, int b)
{
	char key[128];
	bool zerook, nullok;

	snprintf(key, sizeof(key), "%s:%s", c->func, c->arg);
	zerook = IN(zero_ok, key);
	nullok = zerook || IN(null_ok, key);
	return run_case(c, hostile_bad[b],
			(b == 0 && nullok) || (b == 2 && zerook),
			IN(quiet, key));
}

static void test_every_pointer_argument(void **state)
{
	int failed, ran;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	tree = pci_fake_create();
	assert_non_null(tree);
	struct pci_fake_dev d = hostile_fake_dev("0000:00:01.0");
	assert_int_equal(pci_fake_add(tree, &d), 0);
	failed = hostile_run_all(arg_cases,
				 sizeof(arg_cases) / sizeof(arg_cases[0]),
				 left_alone, child, 10, &ran);
	pci_fake_destroy(tree);
	fprintf(stderr, "%d calls, %d failed\n", ran, failed);
	assert_true(ran >= 120);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pointer_argument),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
