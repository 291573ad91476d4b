// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=60 */
/*
 * A compat framework's call that runs a driver's method, on one thread,
 * parked in the method at a gate, while another thread takes the
 * registration back: a watchdog's start(), ping() or stop() (from
 * watchdog_dev_start(), _ping(), _stop()) against
 * watchdog_unregister_device() by hand or the release of
 * devm_watchdog_register_device()'s node; an rtc's read_time() or
 * set_time() (rtc_read_time(), rtc_set_time()) against the release of
 * devm_rtc_register_device()'s node. The calls read the registration
 * without a lock: the take-back returned (and freed the record, which
 * the call then read) while the method ran, a watchdog's stop on
 * unregister ran beside the parked method, and a start parked there set
 * the watchdog active after it was unregistered. Now a call counts
 * itself on the registration under the frameworks' lock, the calls run
 * one at a time, and the take-back waits for the one running: each
 * cell, the take-back is still asleep when the method is let go, no two
 * methods overlap, and the watchdog is stopped at the end
 * (WDOG_STOP_ON_UNREGISTER).
 *
 * own_take_back: a method that takes its own registration back (the
 * kernel deadlocks): one WARN, the record freed when the method returns.
 * method_ends_thread: a method that ends its thread: one WARN, the call
 * let go, so that the take-back after it does not wait for ever.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <linux/device.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"
#include "gate.h"

enum method {
	M_START,
	M_PING,
	M_STOP,
	M_READ,
	M_SET,
	M_NONE
};

static const char *const method_names[] = { "start", "ping", "stop",
					    "read_time", "set_time" };

static struct watchdog_device wdd;
static struct rtc_device *rtc;
static enum method park = M_NONE, back_in = M_NONE, exit_in = M_NONE;
static int inside, most_inside;
static bool managed;

static void take_back(enum method m)
{
	if (m >= M_READ || managed)
		(void)devres_release_all(&tdev);
	else
		watchdog_unregister_device(&wdd);
}

static int method(enum method m)
{
	int now = __atomic_add_fetch(&inside, 1, __ATOMIC_ACQ_REL);
	int most = __atomic_load_n(&most_inside, __ATOMIC_ACQUIRE);

	while (now > most &&
	       !__atomic_compare_exchange_n(&most_inside, &most, now, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	if (__atomic_load_n(&park, __ATOMIC_ACQUIRE) == m) {
		__atomic_store_n(&park, M_NONE, __ATOMIC_RELEASE);
		gate_wait();
	}
	if (back_in == m) {
		back_in = M_NONE;
		take_back(m);
	}
	__atomic_sub_fetch(&inside, 1, __ATOMIC_ACQ_REL);
	if (exit_in == m) {
		exit_in = M_NONE;
		pthread_exit(NULL);
	}
	return 0;
}

static int wdt_start(struct watchdog_device *w)
{
	(void)w;
	return method(M_START);
}

static int wdt_ping(struct watchdog_device *w)
{
	(void)w;
	return method(M_PING);
}

static int wdt_stop(struct watchdog_device *w)
{
	(void)w;
	return method(M_STOP);
}

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000, tm);
	return method(M_READ);
}

static int rtc_set(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	(void)tm;
	return method(M_SET);
}

static const struct watchdog_info wdt_info = { .identity = "calls" };
static const struct watchdog_ops wdt_ops = {
	.start = wdt_start,
	.ping = wdt_ping,
	.stop = wdt_stop,
};
static const struct rtc_class_ops rtc_ops = {
	.read_time = rtc_read,
	.set_time = rtc_set,
};

static enum method cur;
static int call_ret;

static int call(void)
{
	struct rtc_time tm = { 0 };

	switch (cur) {
	case M_START:
		return watchdog_dev_start(&wdd);
	case M_PING:
		return watchdog_dev_ping(&wdd);
	case M_STOP:
		return watchdog_dev_stop(&wdd);
	case M_READ:
		return rtc_read_time(rtc, &tm);
	default:
		rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000, &tm);
		return rtc_set_time(rtc, &tm);
	}
}

static void *run_call(void *arg)
{
	(void)arg;
	call_ret = call();
	return NULL;
}

static int tb_tid;
static bool tb_done;

static void *run_take_back(void *arg)
{
	(void)arg;
	__atomic_store_n(&tb_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	take_back(cur);
	__atomic_store_n(&tb_done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void fresh(void)
{
	inside = most_inside = 0;
	park = back_in = exit_in = M_NONE;
	if (cur >= M_READ) {
		rtc = devm_rtc_allocate_device(&tdev);
		assert_false(IS_ERR(rtc));
		rtc->ops = &rtc_ops;
		assert_int_equal(devm_rtc_register_device(rtc), 0);
		return;
	}
	memset(&wdd, 0, sizeof(wdd));
	wdd.parent = &tdev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
	watchdog_stop_on_unregister(&wdd);
	if (managed)
		assert_int_equal(devm_watchdog_register_device(&tdev, &wdd), 0);
	else
		assert_int_equal(watchdog_register_device(&wdd), 0);
	/* Ping and stop act on a started watchdog. */
	if (cur != M_START)
		assert_int_equal(watchdog_dev_start(&wdd), 0);
}

static const char *taker(void)
{
	if (cur >= M_READ)
		return "devm_rtc_register_device()'s release";
	return managed ? "devm_watchdog_register_device()'s release"
		       : "watchdog_unregister_device()";
}

/* Whether the cell's take-back waited for the parked method. */
static bool cell(void)
{
	pthread_t caller, taker_t;
	bool early, active;
	long waited = 0;

	fresh();
	gate_reset();
	park = cur;
	assert_int_equal(pthread_create(&caller, NULL, run_call, NULL), 0);
	gate_until_reached();
	tb_tid = 0;
	tb_done = false;
	assert_int_equal(pthread_create(&taker_t, NULL, run_take_back, NULL),
			 0);
	/* Asleep waiting for the method, or (before) through already. */
	while (!__atomic_load_n(&tb_done, __ATOMIC_ACQUIRE) &&
	       !tid_asleep(__atomic_load_n(&tb_tid, __ATOMIC_ACQUIRE))) {
		assert_true(waited++ < 10000);
		usleep(1000);
	}
	usleep(20000);
	early = __atomic_load_n(&tb_done, __ATOMIC_ACQUIRE);
	gate_release();
	pthread_join(caller, NULL);
	pthread_join(taker_t, NULL);
	active = cur < M_READ && watchdog_active(&wdd);
	(void)devres_release_all(&tdev);
	if (!early && most_inside <= 1 && !active && call_ret == 0)
		return true;
	print_message("%s, %s: the take-back returned %s the method ended, "
		      "%d methods at once, %s at the end, the call returned "
		      "%d\n",
		      method_names[cur], taker(), early ? "before" : "after",
		      most_inside, active ? "active" : "stopped", call_ret);
	return false;
}

static void take_back_waits(void **state)
{
	int bad = 0;

	(void)state;
	for (int m = 0; m < 2; m++) {
		managed = m;
		for (cur = M_START; cur < M_NONE; cur++)
			if (cur < M_READ || managed)
				bad += !cell();
	}
	assert_int_equal(bad, 0);
}

/*
 * Taken back: the calls after find nothing. An rtc went with its parent's
 * release: nothing of it is left on the device.
 */
static bool gone(void)
{
	struct devres_stats st;

	if (cur >= M_READ) {
		devres_get_stats(&tdev, &st);
		return st.allocs == 0;
	}
	return watchdog_dev_ping(&wdd) == -ENODEV && !watchdog_active(&wdd);
}

static void own_take_back(void **state)
{
	int bad = 0;

	(void)state;
	managed = false;
	for (cur = M_START; cur < M_NONE; cur++) {
		int w0, ret;

		fresh();
		w0 = devres_warn_count();
		back_in = cur;
		ret = call();
		if (ret == 0 && devres_warn_count() == w0 + 1 && gone())
			continue;
		bad++;
		print_message("%s: returned %d, %d WARNs\n", method_names[cur],
			      ret, devres_warn_count() - w0);
		take_back(cur);
	}
	(void)devres_release_all(&tdev);
	assert_int_equal(bad, 0);
}

static void method_ends_thread(void **state)
{
	int bad = 0;

	(void)state;
	managed = false;
	for (cur = M_START; cur < M_NONE; cur++) {
		pthread_t t;
		int w0;

		fresh();
		w0 = devres_warn_count();
		exit_in = cur;
		assert_int_equal(pthread_create(&t, NULL, run_call, NULL), 0);
		pthread_join(t, NULL);
		/* The call let go: the take-back waits for nothing. */
		take_back(cur);
		if (devres_warn_count() == w0 + 1 && gone())
			continue;
		bad++;
		print_message("%s: %d WARNs\n", method_names[cur],
			      devres_warn_count() - w0);
	}
	(void)devres_release_all(&tdev);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(take_back_waits, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(own_take_back, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(method_ends_thread, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
