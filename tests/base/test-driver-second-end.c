// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A second thread end while the first unwinds: a driver's remove ends its
 * thread (pthread_exit(), or a cancellation it enabled), and as the
 * thread unwinds, a release callback of the binding's resources (a
 * devm_add_action() the probe made), which the completing unbind runs,
 * ends it again with pthread_exit(). Through every driver-core call that
 * unbinds: device_release_driver(), device_del(), device_unregister(),
 * driver_unregister() and platform_device_unregister() (of a platform
 * driver's device). bus_unregister() unbinds nothing: it refuses a bus
 * that still has devices or drivers. Each cell checks that the unbind and
 * the call completed anyway: the remove and the action ran once each,
 * the device is unbound (and deleted, for the calls that delete it), and
 * from the main thread the device binds again or is released, the driver
 * and the bus unregister, with the ledger back at its start. A hang (a
 * lock the thread kept) fails the cell.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"
#include "base/thread-end.h"

enum call {
	RELEASE_DRIVER,
	DEVICE_DEL,
	DEVICE_UNREGISTER,
	DRIVER_UNREGISTER,
	PLATFORM_DEVICE_UNREGISTER,
	NR_CALLS
};

static const char *const call_name[] = {
	"device_release_driver",      "device_del",
	"device_unregister",	      "driver_unregister",
	"platform_device_unregister",
};

static enum ending first_end;
static int armed; /* the remove ends the thread, then the action */
static int removes, actions_run, released;

/* The device's release function ends it again, instead of the action. */
static bool end_in_release;

static void action(void *data)
{
	(void)data;
	__atomic_add_fetch(&actions_run, 1, __ATOMIC_RELAXED);
	if (!end_in_release && __atomic_load_n(&armed, __ATOMIC_ACQUIRE) == 2) {
		__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
		pthread_exit((void *)2);
	}
}

static int probe(struct device *dev)
{
	if (devm_add_action(dev, action, NULL))
		return -ENOMEM;
	return 0;
}

static void remove_cb(struct device *dev)
{
	(void)dev;
	removes++;
	if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE) == 1) {
		__atomic_store_n(&armed, 2, __ATOMIC_RELEASE);
		if (first_end == BY_CANCEL)
			pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		end_thread_by(first_end);
	}
}

static int pprobe(struct platform_device *pdev)
{
	return probe(&pdev->dev);
}

static void premove(struct platform_device *pdev)
{
	remove_cb(&pdev->dev);
}

static int match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	return 1;
}

static const struct bus_type bus = {
	.name = "dse",
	.match = match,
};

static struct device_driver drv = {
	.name = "dse-drv",
	.probe = probe,
	.remove = remove_cb,
};

static struct platform_driver pdrv = {
	.driver = { .name = "dse-pdrv" },
	.probe = pprobe,
	.remove = premove,
};

/* The release function ends the thread again, instead of the action. */
static void dev_release(struct device *d)
{
	released++;
	if (end_in_release && __atomic_load_n(&armed, __ATOMIC_ACQUIRE) == 2) {
		__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
		/* Its container is the owner's once the release ended. */
		pthread_exit((void *)2);
	}
	free(d);
}

static struct device *dev;
static struct platform_device *pdev;
static enum call cur;

static void *run_call(void *arg)
{
	(void)arg;
	switch (cur) {
	case RELEASE_DRIVER:
		device_release_driver(dev);
		break;
	case DEVICE_DEL:
		device_del(dev);
		break;
	case DEVICE_UNREGISTER:
		device_unregister(dev);
		break;
	case DRIVER_UNREGISTER:
		driver_unregister(&drv);
		break;
	case PLATFORM_DEVICE_UNREGISTER:
		platform_device_unregister(pdev);
		break;
	default:
		break;
	}
	return (void *)1;
}

static void cell(enum call c, enum ending e)
{
	struct device *d;
	pthread_t t;
	void *ret;
	int n;

	cur = c;
	first_end = e;
	removes = actions_run = released = 0;
	if (c == PLATFORM_DEVICE_UNREGISTER) {
		assert_int_equal(platform_driver_register(&pdrv), 0);
		pdev = platform_device_register_simple("dse-pdrv", 1, NULL, 0);
		assert_false(IS_ERR_OR_NULL(pdev));
		d = &pdev->dev;
	} else {
		assert_int_equal(bus_register(&bus), 0);
		drv.bus = &bus;
		assert_int_equal(driver_register(&drv), 0);
		dev = calloc(1, sizeof(*dev));
		assert_non_null(dev);
		device_initialize(dev);
		dev->bus = &bus;
		dev->release = dev_release;
		assert_int_equal(dev_set_name(dev, "dse0"), 0);
		assert_int_equal(device_add(dev), 0);
		d = dev;
	}
	assert_true(device_is_bound(d));
	start_capture();
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, run_call, NULL), 0);
	ret = join_within(t, "the call's thread did not end");
	devres_set_log_sink(NULL, NULL);
	/* The remove's WARN and the release callback's, no other. */
	assert_int_equal(count_prefix("WARNING: "), 2);
	assert_non_null(strstr(cap.line[0], ": remove: the thread ended "
					    "inside "));
	assert_non_null(strstr(cap.line[1], ": driver binding: the thread "
					    "ended inside the release of "
					    "action"));
	assert_ptr_equal(ret, (void *)2);
	assert_int_equal(armed, 0);
	assert_int_equal(removes, 1);
	assert_int_equal(actions_run, 1);

	/* The call completed: what is left is used from here. */
	switch (c) {
	case RELEASE_DRIVER:
		assert_false(device_is_bound(dev));
		assert_null(dev->driver);
		/* Binds again, then goes as usual. */
		assert_int_equal(device_attach(dev), 1);
		device_unregister(dev);
		driver_unregister(&drv);
		bus_unregister(&bus);
		break;
	case DEVICE_DEL:
		assert_null(dev->driver);
		put_device(dev);
		driver_unregister(&drv);
		bus_unregister(&bus);
		break;
	case DEVICE_UNREGISTER:
		driver_unregister(&drv);
		bus_unregister(&bus);
		break;
	case DRIVER_UNREGISTER:
		assert_null(dev->driver);
		/* The driver registers again and binds the device. */
		assert_int_equal(driver_register(&drv), 0);
		assert_true(device_is_bound(dev));
		device_unregister(dev);
		driver_unregister(&drv);
		bus_unregister(&bus);
		break;
	case PLATFORM_DEVICE_UNREGISTER:
		platform_driver_unregister(&pdrv);
		break;
	default:
		break;
	}
	if (c != PLATFORM_DEVICE_UNREGISTER)
		assert_int_equal(released, 1);
	/* Bound again by the cell: a second, ordinary unbind. */
	n = c == RELEASE_DRIVER || c == DRIVER_UNREGISTER ? 2 : 1;
	assert_int_equal(removes, n);
	assert_int_equal(actions_run, n);
}

static void second_end(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	for (int c = 0; c < NR_CALLS; c++)
		for (int e = BY_EXIT; e <= BY_CANCEL; e++) {
			print_message("%s, remove by %s, action by "
				      "pthread_exit\n",
				      call_name[c], ending_name[e]);
			devres_ledger_snapshot(&before);
			cell((enum call)c, (enum ending)e);
			devres_ledger_snapshot(&after);
			assert_int_equal(
				devres_ledger_diff(&before, &after, stderr), 0);
		}
}

/*
 * device_unregister() whose remove ends the thread, and whose device's
 * release function, run by the owner's put as the thread unwinds, ends it
 * again: the device is deleted and released (the name freed, the count
 * of releases one), the driver and the bus unregister.
 */
static void release_ends_again(void **state)
{
	struct devres_ledger before, after;
	void *ret;
	pthread_t t;

	(void)state;
	end_in_release = true;
	for (int e = BY_EXIT; e <= BY_CANCEL; e++) {
		struct device *leftover;

		print_message("remove by %s, release by pthread_exit\n",
			      ending_name[e]);
		devres_ledger_snapshot(&before);
		cur = DEVICE_UNREGISTER;
		first_end = (enum ending)e;
		removes = actions_run = released = 0;
		assert_int_equal(bus_register(&bus), 0);
		drv.bus = &bus;
		assert_int_equal(driver_register(&drv), 0);
		dev = calloc(1, sizeof(*dev));
		assert_non_null(dev);
		device_initialize(dev);
		dev->bus = &bus;
		dev->release = dev_release;
		assert_int_equal(dev_set_name(dev, "dse0"), 0);
		assert_int_equal(device_add(dev), 0);
		leftover = dev;
		start_capture();
		__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, run_call, NULL), 0);
		ret = join_within(t, "the call's thread did not end");
		devres_set_log_sink(NULL, NULL);
		assert_ptr_equal(ret, (void *)2);
		assert_int_equal(armed, 0);
		assert_int_equal(removes, 1);
		assert_int_equal(actions_run, 1);
		assert_int_equal(released, 1);
		assert_int_equal(count_prefix("WARNING: "), 2);
		assert_non_null(strstr(cap.line[0], ": remove: the thread "
						    "ended inside "));
		assert_non_null(strstr(cap.line[1], "the thread ended inside "
						    "the "
						    "device's release "
						    "function"));
		/* The release ended before its free: the owner's to free. */
		free(leftover);
		driver_unregister(&drv);
		bus_unregister(&bus);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	end_in_release = false;
}

/* A driver the sweep lends the bus to: registered nowhere. */
static struct device_driver sweep_drv = {
	.name = "dse-sweep",
	.probe = probe,
	.remove = remove_cb,
};

static void *sweeper(void *arg)
{
	struct devres_sweep_result r;

	(void)driver_probe_sweep(&sweep_drv, arg, &r);
	return (void *)1;
}

/*
 * driver_probe_sweep(), whose unbind after a run has the remove end the
 * thread and the binding's action end it again: the device is left
 * unbound, the bus lent to the driver taken back, and a sweep runs again
 * to its end.
 */
static void sweep_ends_again(void **state)
{
	struct devres_ledger before, after;
	struct devres_sweep_result r;
	pthread_t t;

	(void)state;
	for (int e = BY_EXIT; e <= BY_CANCEL; e++) {
		print_message("remove by %s, action by pthread_exit\n",
			      ending_name[e]);
		devres_ledger_snapshot(&before);
		first_end = (enum ending)e;
		removes = actions_run = released = 0;
		assert_int_equal(bus_register(&bus), 0);
		dev = calloc(1, sizeof(*dev));
		assert_non_null(dev);
		device_initialize(dev);
		dev->bus = &bus;
		dev->release = dev_release;
		assert_int_equal(dev_set_name(dev, "dse0"), 0);
		assert_int_equal(device_add(dev), 0);
		start_capture();
		__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, sweeper, dev), 0);
		assert_ptr_equal(join_within(t, "the sweep did not end"),
				 (void *)2);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(armed, 0);
		assert_int_equal(removes, 1);
		assert_int_equal(actions_run, 1);
		assert_int_equal(count_prefix("WARNING: "), 2);
		assert_null(sweep_drv.bus);
		assert_false(device_is_bound(dev));
		assert_null(dev->driver);
		/* A sweep runs again, to its end, and finds nothing. */
		assert_int_equal(driver_probe_sweep(&sweep_drv, dev, &r), 0);
		assert_null(sweep_drv.bus);
		assert_false(device_is_bound(dev));
		device_unregister(dev);
		bus_unregister(&bus);
		assert_int_equal(released, 1);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(second_end),
		cmocka_unit_test(release_ends_again),
		cmocka_unit_test(sweep_ends_again),
	};

	/* A hang anywhere fails the test instead of blocking its run. */
	alarm(60);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
