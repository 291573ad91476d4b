// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * driver_probe_fail_nth() and driver_probe_sweep() of a driver nobody
 * registered lend it its device's bus for the call, and must take it
 * back whatever happens in the probe: also when the probe ends its
 * thread (pthread_exit(), or a cancellation it enabled). Left lent, the
 * driver was one of that bus that nobody registered: driver_register()
 * of it, which says "has no bus" for the driver as its caller made it,
 * registered it on the lent bus (and bound it to every device there).
 * Calls x endings: the bus taken back, the device unbound, one WARN (the
 * driver core's, for the thread that ended), the ledger back; then the
 * same call runs again to its end, and the driver still has no bus.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

enum call {
	C_FAIL_NTH,
	C_SWEEP,
	NR_CALL
};
enum ending {
	BY_EXIT,
	BY_CANCEL,
	NR_ENDING
};

static const char *const call_name[] = { "driver_probe_fail_nth", "driver_"
								  "probe_"
								  "sweep" };
static const char *const ending_name[] = { "pthread_exit", "cancellation" };

static int end_next; /* the probe ends its thread once */
static enum ending ending;

static int ending_probe(struct device *dev)
{
	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	if (!__atomic_exchange_n(&end_next, 0, __ATOMIC_ACQ_REL))
		return 0;
	if (ending == BY_EXIT)
		pthread_exit((void *)7);
	/* The driver core runs callbacks with cancellation off. */
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_cancel(pthread_self());
	pthread_testcancel();
	return 0;
}

static struct device_driver fn_drv = {
	.name = "fn-ends",
	.probe = ending_probe,
};

static struct bus_type fn_bus = { .name = "fn-bus" };

static enum call call;

static int run_call(struct device *dev)
{
	struct devres_sweep_result r;

	if (call == C_FAIL_NTH)
		return driver_probe_fail_nth(&fn_drv, dev, 100);
	return driver_probe_sweep(&fn_drv, dev, &r);
}

static void *caller(void *arg)
{
	(void)run_call(arg);
	return (void *)1;
}

static void *join_within(pthread_t t)
{
	struct timespec when;
	void *ret = NULL;

	clock_gettime(CLOCK_REALTIME, &when);
	when.tv_sec += 2;
	if (pthread_timedjoin_np(t, &ret, &when))
		fail_msg("the thread is still inside the call");
	return ret;
}

static void dev_release(struct device *dev)
{
	free(dev);
}

static void lent_bus_taken_back(void **state)
{
	struct devres_ledger before, after;
	struct device *dev = calloc(1, sizeof(*dev));

	(void)state;
	assert_non_null(dev);
	assert_int_equal(bus_register(&fn_bus), 0);
	dev->bus = &fn_bus;
	dev->release = dev_release;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "fn0"), 0);
	assert_int_equal(device_add(dev), 0);
	for (int c = 0; c < NR_CALL; c++) {
		for (int e = 0; e < NR_ENDING; e++) {
			pthread_t t;

			print_message("%s / %s\n", call_name[c],
				      ending_name[e]);
			call = (enum call)c;
			ending = (enum ending)e;
			devres_ledger_snapshot(&before);
			start_capture();
			__atomic_store_n(&end_next, 1, __ATOMIC_RELEASE);
			assert_int_equal(pthread_create(&t, NULL, caller, dev),
					 0);
			assert_ptr_equal(join_within(t),
					 e == BY_EXIT ? (void *)7
						      : PTHREAD_CANCELED);
			devres_set_log_sink(NULL, NULL);
			assert_int_equal(count_prefix("WARNING: "), 1);
			assert_null(fn_drv.bus);
			assert_false(device_is_bound(dev));
			devres_ledger_snapshot(&after);
			assert_int_equal(
				devres_ledger_diff(&before, &after, stderr), 0);
			/* Again, to its end: nothing found, no bus kept. */
			assert_int_equal(run_call(dev), 0);
			assert_null(fn_drv.bus);
			assert_false(device_is_bound(dev));
		}
	}
	device_unregister(dev);
	bus_unregister(&fn_bus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lent_bus_taken_back),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
