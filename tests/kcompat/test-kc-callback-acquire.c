// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Every managed call of the compat headers that records its own node,
 * from every kind of devres callback of the same device. From a match
 * callback (devres_find(), devres_get()) or a for-each callback
 * (devres_for_each_res()) the thread holds the device's devres lock up
 * the stack, where the kernel's call would wait for its own spinlock for
 * ever: each is refused before it acquires anything, with -EDEADLK (or
 * ERR_PTR(-EDEADLK)), one WARN naming the call, nothing registered, made
 * or left on the device (docs/misuse.md, row 21 for the library's own
 * calls). Before, a registration was made and its node refused by
 * devres_add() with a WARN naming devres_add: the rng, watchdog or rtc
 * stayed registered for good, with 0 returned; a clock, a mutex's
 * destroy or a compatible string was on no device; an rtc allocation
 * said -ENOMEM. From a release callback (devres_release(),
 * devres_release_all()) or a devm action run by devm_release_action(),
 * the call is no misuse: it succeeds without a WARN, and what it recorded
 * goes with the device's next release. Each cell checks the return, the
 * WARN count and its line, what is registered, and the ledger back where
 * it was once the device is put; in a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/clk.h>
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/mutex.h>
#include <linux/pm_runtime.h>
#include <linux/rtc.h>
#include <linux/sysfs.h>
#include <linux/watchdog.h>
#include <linux/workqueue.h>
#include <stdlib.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

/* clang-format off */
#define CALLS(X)                                                               \
	X(devm_device_add_group)                                               \
	X(devm_device_add_groups)                                              \
	X(device_add_group)                                                    \
	X(device_add_groups)                                                   \
	X(devm_clk_get)                                                        \
	X(devm_clk_get_optional)                                               \
	X(devm_clk_get_prepared)                                               \
	X(devm_clk_get_enabled)                                                \
	X(devm_clk_get_optional_enabled)                                       \
	X(devm_hwrng_register)                                                 \
	X(devm_watchdog_register_device)                                       \
	X(devm_rtc_allocate_device)                                            \
	X(devm_rtc_register_device)                                            \
	X(devm_rtc_device_register)                                            \
	X(devm_mutex_init)                                                     \
	X(kcompat_set_compatible)                                              \
	X(devm_pm_runtime_enable)                                              \
	X(devm_work_autocancel)                                                \
	X(devm_kzalloc)
/* clang-format on */

#define ENUM(c) C_##c,
#define NAME(c) #c,
enum call {
	CALLS(ENUM) C_NR
};
static const char *const call_name[C_NR] = { CALLS(NAME) };

enum ctx {
	X_FIND_MATCH,  /* devres_find()'s match callback */
	X_GET_MATCH,   /* devres_get()'s match callback */
	X_FOR_EACH,    /* devres_for_each_res()'s callback */
	X_RELEASE,     /* a release callback run by devres_release() */
	X_RELEASE_ALL, /* a release callback run by devres_release_all() */
	X_ACTION,      /* a devm action run by devm_release_action() */
	X_NR,
};

static const char *const ctx_name[X_NR] = {
	"devres_find match",	 "devres_get match",
	"devres_for_each_res",	 "release (devres_release)",
	"release (release_all)", "devm action",
};

static struct device dev;
static enum call the_call;
static bool in_callback;
static bool called;
static long ret_int;
static void *ret_ptr;

static struct hwrng rng;
static struct watchdog_device wdd;
static struct rtc_device rtc_static;
static struct rtc_device *rtc_made;
static struct mutex mx;
static struct work_struct work;
static struct attribute *no_attrs[] = { NULL };
static const struct attribute_group grp = { .name = "g", .attrs = no_attrs };
static const struct attribute_group *grps[] = { &grp, NULL };

static int rng_read(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)r;
	(void)wait;
	memset(data, 0, max);
	return (int)max;
}

static int wdt_start(struct watchdog_device *w)
{
	(void)w;
	return 0;
}

static int rtc_read(struct device *d, struct rtc_time *tm)
{
	(void)d;
	memset(tm, 0, sizeof(*tm));
	return 0;
}

static const struct watchdog_ops wdt_ops = { .start = wdt_start };
static const struct watchdog_info wdt_info = { .identity = "cb" };
static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read };

static void work_fn(struct work_struct *w)
{
	(void)w;
}

static char warn_line[256];
static int warn_lines;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	if (!warn_lines++)
		snprintf(warn_line, sizeof(warn_line), "%s", line);
}

/* The call, its result in ret_int or ret_ptr. */
static void make_call(void)
{
	ret_ptr = NULL;
	ret_int = 0;
	switch (the_call) {
	case C_devm_device_add_group:
		ret_int = devm_device_add_group(&dev, &grp);
		break;
	case C_devm_device_add_groups:
		ret_int = devm_device_add_groups(&dev, grps);
		break;
	case C_device_add_group:
		ret_int = device_add_group(&dev, &grp);
		break;
	case C_device_add_groups:
		ret_int = device_add_groups(&dev, grps);
		break;
	case C_devm_clk_get:
		ret_ptr = devm_clk_get(&dev, NULL);
		break;
	case C_devm_clk_get_optional:
		ret_ptr = devm_clk_get_optional(&dev, NULL);
		break;
	case C_devm_clk_get_prepared:
		ret_ptr = devm_clk_get_prepared(&dev, NULL);
		break;
	case C_devm_clk_get_enabled:
		ret_ptr = devm_clk_get_enabled(&dev, NULL);
		break;
	case C_devm_clk_get_optional_enabled:
		ret_ptr = devm_clk_get_optional_enabled(&dev, NULL);
		break;
	case C_devm_hwrng_register:
		ret_int = devm_hwrng_register(&dev, &rng);
		break;
	case C_devm_watchdog_register_device:
		ret_int = devm_watchdog_register_device(&dev, &wdd);
		break;
	case C_devm_rtc_allocate_device:
		ret_ptr = devm_rtc_allocate_device(&dev);
		break;
	case C_devm_rtc_register_device:
		ret_int = devm_rtc_register_device(&rtc_static);
		break;
	case C_devm_rtc_device_register:
		ret_ptr = devm_rtc_device_register(&dev, "cb", &rtc_ops, NULL);
		rtc_made = IS_ERR(ret_ptr) ? NULL : ret_ptr;
		break;
	case C_devm_mutex_init:
		ret_int = devm_mutex_init(&dev, &mx);
		break;
	case C_kcompat_set_compatible:
		ret_int = kcompat_set_compatible(&dev, "acme,cb");
		break;
	case C_devm_pm_runtime_enable:
		ret_int = devm_pm_runtime_enable(&dev);
		break;
	case C_devm_work_autocancel:
		ret_int = devm_work_autocancel(&dev, &work, work_fn);
		break;
	case C_devm_kzalloc:
		ret_ptr = devm_kzalloc(&dev, 16, GFP_KERNEL);
		break;
	default:
		break;
	}
}

static void call_once(void)
{
	if (!in_callback || called)
		return;
	called = true;
	make_call();
}

static void mark_release(struct device *d, void *res)
{
	(void)d;
	(void)res;
	call_once();
}

static int in_match(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
	call_once();
	return 0;
}

static void in_each(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
	call_once();
}

static void action(void *data)
{
	(void)data;
	call_once();
}

/* Whether the call left what it registers or records on the device. */
static bool left_something(void)
{
	switch (the_call) {
	case C_devm_hwrng_register:
		return rng.reg != NULL;
	case C_devm_watchdog_register_device:
		return wdd.reg != NULL;
	case C_devm_rtc_register_device:
		return rtc_static.reg != NULL;
	case C_devm_rtc_device_register:
		return rtc_made && rtc_made->reg;
	default:
		return false;
	}
}

static bool refused_ctx(int x)
{
	return x == X_FIND_MATCH || x == X_GET_MATCH || x == X_FOR_EACH;
}

/* The value the call returns where it is refused. */
static bool refused_value(void)
{
	switch (the_call) {
	case C_devm_clk_get:
	case C_devm_clk_get_optional:
	case C_devm_clk_get_prepared:
	case C_devm_clk_get_enabled:
	case C_devm_clk_get_optional_enabled:
	case C_devm_rtc_allocate_device:
	case C_devm_rtc_device_register:
		return ret_ptr == ERR_PTR(-EDEADLK);
	case C_devm_kzalloc:
		return ret_ptr == NULL;
	default:
		return ret_int == -EDEADLK;
	}
}

static bool ok_value(void)
{
	switch (the_call) {
	case C_devm_clk_get:
	case C_devm_clk_get_optional:
	case C_devm_clk_get_prepared:
	case C_devm_clk_get_enabled:
	case C_devm_clk_get_optional_enabled:
	case C_devm_rtc_allocate_device:
	case C_devm_rtc_device_register:
	case C_devm_kzalloc:
		return !IS_ERR_OR_NULL(ret_ptr);
	default:
		return ret_int == 0;
	}
}

/* The function a refusal's WARN names. */
static const char *warn_func(void)
{
	switch (the_call) {
	default:
		return call_name[the_call];
	}
}

static void cell(int c, int x, int unused)
{
	struct devres_ledger before, after;
	char want[80];
	void *mark, *extra;
	int warns;

	(void)unused;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	/* The compat heap's device, made at its first use, stays: made now. */
	kfree(kmalloc(1, GFP_KERNEL));
	devres_ledger_snapshot(&before);
	the_call = (enum call)c;
	rng.name = "cb-rng";
	rng.read = rng_read;
	wdd.ops = &wdt_ops;
	wdd.info = &wdt_info;
	rtc_static.ops = &rtc_ops;
	rtc_static.parent = &dev;
	CHECK(init_dev(&dev, "cb-dev") == 0);
	mark = devres_alloc(mark_release, 8, GFP_KERNEL);
	CHECK(mark);
	devres_add(&dev, mark);
	if (x == X_ACTION)
		CHECK(devm_add_action(&dev, action, NULL) == 0);
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	in_callback = true;
	switch (x) {
	case X_FIND_MATCH:
		CHECK(devres_find(&dev, mark_release, in_match, NULL) == NULL);
		break;
	case X_GET_MATCH:
		extra = devres_alloc(mark_release, 8, GFP_KERNEL);
		CHECK(extra);
		CHECK(devres_get(&dev, extra, in_match, NULL) == extra);
		break;
	case X_FOR_EACH:
		devres_for_each_res(&dev, mark_release, NULL, NULL, in_each,
				    NULL);
		break;
	case X_RELEASE:
		CHECK(devres_release(&dev, mark_release, NULL, NULL) == 0);
		break;
	case X_RELEASE_ALL:
		CHECK(devres_release_all(&dev) >= 1);
		break;
	case X_ACTION:
		devm_release_action(&dev, action, NULL);
		break;
	default:
		CHECK(0);
	}
	in_callback = false;
	devres_set_log_sink(NULL, NULL);
	CHECK(called);
	if (refused_ctx(x)) {
		if (!refused_value() || devres_warn_count() != warns + 1 ||
		    warn_lines != 1)
			fprintf(stderr, "  ret %ld / %p, %d WARN(s): %s\n",
				ret_int, ret_ptr, devres_warn_count() - warns,
				warn_line);
		CHECK(refused_value());
		CHECK(devres_warn_count() == warns + 1 && warn_lines == 1);
		snprintf(want, sizeof(want), ": %s: ", warn_func());
		CHECK(strstr(warn_line, want));
		CHECK(!left_something());
	} else {
		if (!ok_value() || devres_warn_count() != warns)
			fprintf(stderr, "  ret %ld / %p, %d WARN(s): %s\n",
				ret_int, ret_ptr, devres_warn_count() - warns,
				warn_line);
		CHECK(ok_value());
		CHECK(devres_warn_count() == warns);
	}
	/* What the call recorded goes with the device's release. */
	devres_release_all(&dev);
	rtc_made = NULL; /* its memory too: devm_rtc_allocate_device()'s */
	CHECK(!left_something());
	put_device(&dev);
	devres_ledger_snapshot(&after);
	CHECK(!devres_ledger_diff(&before, &after, stderr));
}

static void every_call_every_callback(void **state)
{
	char name[96];
	int bad = 0;

	(void)state;
	for (int c = 0; c < C_NR; c++)
		for (int x = 0; x < X_NR; x++) {
			snprintf(name, sizeof(name), "%s / %s", call_name[c],
				 ctx_name[x]);
			bad += in_child(cell, c, x, 0, name);
		}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_every_callback),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
