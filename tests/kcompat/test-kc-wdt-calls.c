// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=60 */
/*
 * A watchdog's start(), ping() or stop(), called by watchdog_dev_start(),
 * _ping() or _stop() on one thread, parked in the method at a gate, while
 * another thread takes the registration back: watchdog_unregister_device()
 * by hand, or the release of devm_watchdog_register_device()'s node. The
 * calls read the registration without the framework's lock: the take-back
 * returned (and freed the record) while the method ran, its stop on
 * unregister ran beside the parked method, and a start parked there set
 * the watchdog active after it was unregistered. Now a call counts itself
 * on the registration under the lock, the calls run one at a time, and
 * the take-back waits for the one running: each cell, the take-back is
 * still asleep when the method is let go, no two methods overlap, and
 * the watchdog is stopped at the end (WDOG_STOP_ON_UNREGISTER).
 *
 * own_unregister: a method that unregisters its own watchdog (the kernel
 * deadlocks): one WARN, the record freed when the method returns.
 * method_ends_thread: a method that ends its thread: one WARN, the call
 * let go, so that the unregister after it does not wait for ever.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <linux/device.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"
#include "gate.h"

enum method {
	M_START,
	M_PING,
	M_STOP,
	M_NONE
};

static const char *const method_names[] = { "start", "ping", "stop" };

static struct watchdog_device wdd;
static enum method park = M_NONE, unreg_in = M_NONE, exit_in = M_NONE;
static int inside, most_inside;

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
	if (unreg_in == m) {
		unreg_in = M_NONE;
		watchdog_unregister_device(&wdd);
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

static const struct watchdog_info wdt_info = { .identity = "calls" };
static const struct watchdog_ops wdt_ops = {
	.start = wdt_start,
	.ping = wdt_ping,
	.stop = wdt_stop,
};

static int (*const calls[])(struct watchdog_device *) = {
	watchdog_dev_start,
	watchdog_dev_ping,
	watchdog_dev_stop,
};

static enum method cur;
static int call_ret;

static void *run_call(void *arg)
{
	(void)arg;
	call_ret = calls[cur](&wdd);
	return NULL;
}

static bool managed;
static int tb_tid;
static bool tb_done;

static void *run_take_back(void *arg)
{
	(void)arg;
	__atomic_store_n(&tb_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (managed)
		(void)devres_release_all(&tdev);
	else
		watchdog_unregister_device(&wdd);
	__atomic_store_n(&tb_done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void fresh(void)
{
	memset(&wdd, 0, sizeof(wdd));
	wdd.parent = &tdev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
	watchdog_stop_on_unregister(&wdd);
	inside = most_inside = 0;
	park = unreg_in = exit_in = M_NONE;
	if (managed)
		assert_int_equal(devm_watchdog_register_device(&tdev, &wdd), 0);
	else
		assert_int_equal(watchdog_register_device(&wdd), 0);
	/* Ping and stop act on a started watchdog. */
	if (cur != M_START)
		assert_int_equal(watchdog_dev_start(&wdd), 0);
}

/* Whether the cell's take-back waited for the parked method. */
static bool cell(void)
{
	pthread_t caller, taker;
	bool early, active;
	long waited = 0;

	fresh();
	gate_reset();
	park = cur;
	assert_int_equal(pthread_create(&caller, NULL, run_call, NULL), 0);
	gate_until_reached();
	tb_tid = 0;
	tb_done = false;
	assert_int_equal(pthread_create(&taker, NULL, run_take_back, NULL), 0);
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
	pthread_join(taker, NULL);
	active = watchdog_active(&wdd);
	(void)devres_release_all(&tdev);
	if (!early && most_inside <= 1 && !active && call_ret == 0)
		return true;
	print_message("%s, %s: take-back returned %s the method ended, "
		      "%d methods at once, %s at the end, the call returned "
		      "%d\n",
		      method_names[cur],
		      managed ? "the node's release"
			      : "watchdog_unregister_device()",
		      early ? "before" : "after", most_inside,
		      active ? "active" : "stopped", call_ret);
	return false;
}

static void take_back_waits(void **state)
{
	int bad = 0;

	(void)state;
	devres_set_log(false);
	for (int m = 0; m < 2; m++) {
		managed = m;
		for (cur = M_START; cur < M_NONE; cur++)
			bad += !cell();
	}
	assert_int_equal(bad, 0);
}

static void own_unregister(void **state)
{
	int bad = 0;

	(void)state;
	managed = false;
	for (cur = M_START; cur < M_NONE; cur++) {
		int w0, ret;

		fresh();
		w0 = devres_warn_count();
		unreg_in = cur;
		ret = calls[cur](&wdd);
		/* Gone: the calls after find nothing. */
		if (ret == 0 && devres_warn_count() == w0 + 1 &&
		    watchdog_dev_ping(&wdd) == -ENODEV &&
		    !watchdog_active(&wdd))
			continue;
		bad++;
		print_message("%s: returned %d, %d WARNs, %s\n",
			      method_names[cur], ret, devres_warn_count() - w0,
			      watchdog_active(&wdd) ? "active" : "stopped");
		watchdog_unregister_device(&wdd);
	}
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
		/* The call let go: the unregister waits for nothing. */
		watchdog_unregister_device(&wdd);
		if (devres_warn_count() == w0 + 1 &&
		    watchdog_dev_ping(&wdd) == -ENODEV)
			continue;
		bad++;
		print_message("%s: %d WARNs\n", method_names[cur],
			      devres_warn_count() - w0);
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(take_back_waits, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(own_unregister, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(method_ends_thread, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
