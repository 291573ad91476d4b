// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat */
/*
 * What a driver's method returns where its contract is 0 or a negative
 * errno, one cell each: a watchdog's start(), ping() and stop() (by the
 * magic close and by an unregister that stops it), an rtc's read_time()
 * and set_time(), an hwrng's init(), and the negative side of its read()
 * and data_read() (their counts are test-kc-method-counts'). A value of
 * the contract (0, an errno, -MAX_ERRNO) passes as it is, with no WARN;
 * a positive one or a negative one past -MAX_ERRNO (INT_MIN) is taken as
 * -EINVAL with one WARN naming the method, and the framework's state
 * follows the value it returns: a watchdog is active only after a start
 * that said 0 and stops only on a stop that said 0, an rng is
 * registered only when its init() said 0.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/hw_random.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include <limits.h>
#include "kcompat/kctest.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

enum method {
	WDT_START,
	WDT_PING,
	WDT_STOP,
	WDT_STOP_UNREGISTER,
	RTC_READ_TIME,
	RTC_SET_TIME,
	RNG_INIT,
	RNG_READ,
	RNG_DATA_READ,
	NR_METHODS
};

static const struct {
	const char *name; /* in the WARN: "its <name> method" */
	const char *func; /* the call that WARNs */
	bool counts;	  /* a read: a positive value is a count */
} methods[NR_METHODS] = {
	[WDT_START] = { "start", "watchdog_dev_start", false },
	[WDT_PING] = { "ping", "watchdog_dev_ping", false },
	[WDT_STOP] = { "stop", "watchdog_dev_stop", false },
	[WDT_STOP_UNREGISTER] = { "stop", "watchdog_unregister_device", false },
	[RTC_READ_TIME] = { "read_time", "rtc_read_time", false },
	[RTC_SET_TIME] = { "set_time", "rtc_set_time", false },
	[RNG_INIT] = { "init", "hwrng_register", false },
	[RNG_READ] = { "read", "hwrng_read", true },
	[RNG_DATA_READ] = { "data_read", "hwrng_read", true },
};

/* 0 or an errno; then past the contract: positive, and below -MAX_ERRNO. */
static const int values[] = {
	0, -EIO, -MAX_ERRNO, 1, INT_MAX, -MAX_ERRNO - 1, INT_MIN,
};

struct cell_s {
	enum method m;
	int said;
	char name[80];
};

static bool valid(const struct cell_s *c)
{
	return c->said >= -MAX_ERRNO && c->said <= 0;
}

static const struct cell_s *cur;

/* ---- The watchdog ---- */

static int wdt_op(enum method m)
{
	return cur->m == m ? cur->said : 0;
}

static int wdt_start(struct watchdog_device *wdd)
{
	(void)wdd;
	return wdt_op(WDT_START);
}

static int wdt_ping(struct watchdog_device *wdd)
{
	(void)wdd;
	return wdt_op(WDT_PING);
}

static int wdt_stop(struct watchdog_device *wdd)
{
	(void)wdd;
	return wdt_op(cur->m == WDT_STOP_UNREGISTER ? WDT_STOP_UNREGISTER
						    : WDT_STOP);
}

static const struct watchdog_info wdt_info = { .identity = "mr-wdt" };
static const struct watchdog_ops wdt_ops = {
	.start = wdt_start,
	.ping = wdt_ping,
	.stop = wdt_stop,
};

static int run_wdt(struct device *dev, const struct cell_s *c, int want)
{
	struct watchdog_device wdd = {
		.parent = dev,
		.info = &wdt_info,
		.ops = &wdt_ops,
	};
	int ret;

	if (c->m == WDT_STOP_UNREGISTER)
		set_bit(WDOG_STOP_ON_UNREGISTER, &wdd.status);
	assert_int_equal(watchdog_register_device(&wdd), 0);
	ret = watchdog_dev_start(&wdd);
	if (c->m == WDT_START) {
		/* Active only after a start that said 0. */
		assert_int_equal(watchdog_active(&wdd), want == 0);
		watchdog_unregister_device(&wdd);
		return ret;
	}
	assert_int_equal(ret, 0);
	assert_true(watchdog_active(&wdd));
	switch (c->m) {
	case WDT_PING:
		ret = watchdog_dev_ping(&wdd);
		assert_true(watchdog_active(&wdd));
		break;
	case WDT_STOP:
		ret = watchdog_dev_stop(&wdd);
		/* Stopped only by a stop that said 0. */
		assert_int_equal(watchdog_active(&wdd), want != 0);
		break;
	default:
		ret = 0;
		break;
	}
	watchdog_unregister_device(&wdd);
	if (c->m == WDT_STOP_UNREGISTER) {
		assert_int_equal(watchdog_active(&wdd), want != 0);
		/* Nothing returns the stop's value: its outcome is the bit. */
		return want;
	}
	return ret;
}

/* ---- The rtc ---- */

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000 + 86400, tm);
	return cur->said;
}

static int rtc_set(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	(void)tm;
	return cur->said;
}

static const struct rtc_class_ops rtc_ops = {
	.read_time = rtc_read,
	.set_time = rtc_set,
};

static int run_rtc(struct device *dev, const struct cell_s *c)
{
	struct rtc_device *rtc =
		devm_rtc_device_register(dev, "mr-rtc", &rtc_ops, NULL);
	struct rtc_time tm;
	int ret;

	assert_false(IS_ERR(rtc));
	rtc->range_min = RTC_TIMESTAMP_BEGIN_2000;
	rtc->range_max = RTC_TIMESTAMP_END_2099;
	if (c->m == RTC_READ_TIME)
		return rtc_read_time(rtc, &tm);
	rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000 + 3600, &tm);
	ret = rtc_set_time(rtc, &tm);
	return ret;
}

/* ---- The hwrng ---- */

static int rng_init(struct hwrng *rng)
{
	(void)rng;
	return cur->m == RNG_INIT ? cur->said : 0;
}

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)rng;
	(void)data;
	(void)max;
	(void)wait;
	return cur->said;
}

static int rng_data_read(struct hwrng *rng, u32 *data)
{
	(void)rng;
	*data = 0;
	return cur->said;
}

static int run_rng(const struct cell_s *c, int want)
{
	struct hwrng rng = { .name = "mr-rng", .init = rng_init };
	u8 buf[8];
	int ret, got;

	if (c->m == RNG_DATA_READ)
		rng.data_read = rng_data_read;
	else
		rng.read = rng_read;
	ret = hwrng_register(&rng);
	if (c->m != RNG_INIT) {
		assert_int_equal(ret, 0);
		ret = hwrng_read(rng.name, buf, sizeof(buf), false);
		hwrng_unregister(&rng);
		return ret;
	}
	/* Registered only when init() said 0: a read finds it or not. */
	got = hwrng_read(rng.name, buf, sizeof(buf), false);
	if (want == 0) {
		assert_int_equal(got, 0); /* read() returns cur->said, 0 */
		hwrng_unregister(&rng);
	} else {
		assert_int_equal(got, -ENODEV);
		assert_null(rng.reg);
	}
	return ret;
}

static void run_cell(void **state)
{
	struct device *dev = *state;
	const struct cell_s *c = cur;
	int want = valid(c) ? c->said : -EINVAL;
	char reason[128];
	int ret;

	start_capture();
	switch (c->m) {
	case WDT_START:
	case WDT_PING:
	case WDT_STOP:
	case WDT_STOP_UNREGISTER:
		ret = run_wdt(dev, c, want);
		break;
	case RTC_READ_TIME:
	case RTC_SET_TIME:
		ret = run_rtc(dev, c);
		break;
	default:
		ret = run_rng(c, want);
		break;
	}
	assert_int_equal(ret, want);
	if (valid(c)) {
		expect_no_warn();
		return;
	}
	snprintf(reason, sizeof(reason),
		 "its %s method returned %d, not 0 or a negative errno: "
		 "taken as -EINVAL",
		 methods[c->m].name, c->said);
	expect_warn_on(c->m >= RNG_INIT ? "(no device)" : "test-dev",
		       methods[c->m].func, reason);
}

static int cell_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

#define NR_CELLS (NR_METHODS * N(values))

static struct cell_s cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	for (int m = 0; m < NR_METHODS; m++)
		for (size_t v = 0; v < N(values); v++) {
			/* A read's positive value is a count (elsewhere). */
			if (methods[m].counts && values[v] > 0)
				continue;
			cells[n] = (struct cell_s){ (enum method)m, values[v],
						    "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 dev_teardown, "%s of %s returns %d",
				 methods[m].name, methods[m].func, values[v]);
			n++;
		}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("kc-method-returns", tests, n, NULL,
				       NULL);
}
