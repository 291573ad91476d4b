// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A framework registration made twice over the same object, in the state
 * "registered": watchdog_register_device(), devm_watchdog_register_device()
 * and devm_rtc_register_device() replaced the object's record with a new
 * one, and the first leaked (the fixture's ledger fails). Now -EBUSY and
 * one WARN each; the registration made first stays, and goes once.
 * (hwrng_register() of a registered rng is -EEXIST by its name, with a
 * WARN: test-kc-registries runs the three registries through one table.)
 *
 * rtc_twice_at_once: two devm_rtc_register_device() of one rtc at once,
 * the first parked at a gate (a log sink of its record's allocation)
 * while the second registers. The check and the set of the record were
 * apart, with no lock: both registered, the first record leaked. Now the
 * record is set under the frameworks' lock: the first is refused.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"
#include "gate.h"

static int wdt_start(struct watchdog_device *wdd)
{
	(void)wdd;
	return 0;
}

static const struct watchdog_ops wdt_ops = { .start = wdt_start };
static const struct watchdog_info wdt_info = { .identity = "twice" };

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	memset(tm, 0, sizeof(*tm));
	tm->tm_mday = 1;
	tm->tm_year = 100;
	return 0;
}

static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read };

static void watchdog_twice(void **state)
{
	struct watchdog_device wdd = { .ops = &wdt_ops, .info = &wdt_info };

	(void)state;
	assert_int_equal(watchdog_register_device(&wdd), 0);
	start_capture();
	assert_int_equal(watchdog_register_device(&wdd), -EBUSY);
	expect_warn_on("(no device)", "watchdog_register_device",
		       "is registered already: refused");
	assert_int_equal(watchdog_dev_start(&wdd), 0);
	watchdog_unregister_device(&wdd);
	assert_int_equal(watchdog_dev_ping(&wdd), -ENODEV);
	/* Unregistered: it may register again. */
	assert_int_equal(watchdog_register_device(&wdd), 0);
	watchdog_unregister_device(&wdd);
}

static void devm_watchdog_twice(void **state)
{
	struct device *dev = *state;
	struct watchdog_device wdd = { .ops = &wdt_ops, .info = &wdt_info };

	assert_int_equal(devm_watchdog_register_device(dev, &wdd), 0);
	start_capture();
	assert_int_equal(devm_watchdog_register_device(dev, &wdd), -EBUSY);
	expect_warn_on("(no device)", "watchdog_register_device",
		       "is registered already: refused");
	assert_int_equal(devres_release_all(dev), 1);
	assert_null(wdd.reg);
}

static void rtc_twice(void **state)
{
	struct device *dev = *state;
	struct rtc_device *rtc = devm_rtc_allocate_device(dev);
	struct rtc_time tm;

	assert_false(IS_ERR(rtc));
	rtc->ops = &rtc_ops;
	assert_int_equal(devm_rtc_register_device(rtc), 0);
	start_capture();
	assert_int_equal(devm_rtc_register_device(rtc), -EBUSY);
	expect_warn("devm_rtc_register_device", "is registered already: "
						"refused");
	assert_int_equal(rtc_read_time(rtc, &tm), 0);
	/* The memory and the one registration. */
	assert_int_equal(devres_release_all(dev), 2);
}

static pthread_t parked;
static bool park_once;

/* Parks the first registering thread at its first ADD line. */
static void park_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	if (pthread_equal(pthread_self(), parked) && strstr(text, " ADD ") &&
	    __atomic_exchange_n(&park_once, false, __ATOMIC_ACQ_REL))
		gate_wait();
}

static void *register_rtc(void *arg)
{
	return (void *)(intptr_t)devm_rtc_register_device(
		(struct rtc_device *)arg);
}

static void rtc_twice_at_once(void **state)
{
	struct device *dev = *state;
	struct rtc_device *rtc = devm_rtc_allocate_device(dev);
	void *first;
	int second;

	assert_false(IS_ERR(rtc));
	rtc->ops = &rtc_ops;
	gate_reset();
	park_once = true;
	devres_set_log_sink(park_sink, NULL);
	devres_set_log(true);
	assert_int_equal(pthread_create(&parked, NULL, register_rtc, rtc), 0);
	gate_until_reached();
	second = devm_rtc_register_device(rtc);
	gate_release();
	pthread_join(parked, &first);
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(second, 0);
	assert_int_equal((int)(intptr_t)first, -EBUSY);
	/* The memory and the one registration. */
	assert_int_equal(devres_release_all(dev), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(watchdog_twice, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(devm_watchdog_twice, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(rtc_twice, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(rtc_twice_at_once, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
