// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=60 */
/*
 * An unbind waits for the calls holding the device's binding
 * (device_bound_get(), a show() or store() of sysfs). A holder that waits
 * for the unbinding thread closes a loop: a store() that stops, with
 * devm_thread_stop(), the managed thread unbinding its device. Both waits
 * are on the record of waits, and the later one is refused with one WARN:
 * the unbind's (it goes on without waiting for that call, as for a call
 * of its own thread), or the stop's (-EDEADLK). In the control the holder
 * lets go once the unbind waits, and nothing is refused.
 *
 * Each cell in a child under an alarm: before the unbind's wait was
 * recorded, both loop cells hung until it.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "base/waits.h"

#define CELL_ALARM_S 10
#define RET 7

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

enum cell {
	UNBIND_LAST,
	STOP_LAST,
	CONTROL
};

static const char *const cell_names[] = { "unbind last", "stop last",
					  "control" };

static int wb_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static struct platform_driver wb_drv = {
	.probe = wb_probe,
	.driver = { .name = "wb" },
};

static struct platform_device pdev = { .name = "wb", .id = 1 };
static struct device udev;
static struct devres_thread *unbinder;
static enum cell which;
static uint64_t holder_wid, unbinder_wid;
static int held, unbinder_in, unbinder_done;

static void udev_release(struct device *dev)
{
	(void)dev;
}

/* The managed thread that unbinds the device. */
static int unbind_fn(void *arg)
{
	(void)arg;
	STORE(unbinder_wid, devres_wait_self());
	STORE(unbinder_in, 1);
	while (!LOAD(held))
		usleep(1000);
	/* Unbinding last: once the holder's stop of this thread waits. */
	if (which == UNBIND_LAST)
		while (!devres__wait_records(LOAD(holder_wid)))
			usleep(1000);
	device_release_driver(&pdev.dev);
	STORE(unbinder_done, 1);
	return RET;
}

static int cell(enum cell c)
{
	long stop_ret = RET;
	int w0, w;

	alarm(CELL_ALARM_S);
	which = c;
	pdev.dev.release = udev_release;
	if (platform_driver_register(&wb_drv) ||
	    platform_device_register(&pdev) || !device_is_bound(&pdev.dev))
		return 2;
	device_initialize(&udev);
	udev.release = udev_release;
	if (dev_set_name(&udev, "wb-t"))
		return 3;
	w0 = devres_warn_count();
	/* This thread holds the binding, as a store() would. */
	if (device_bound_get(&pdev.dev))
		return 4;
	STORE(holder_wid, devres_wait_self());
	unbinder = devm_thread_run(&udev, unbind_fn, NULL, "wb");
	if (IS_ERR(unbinder))
		return 5;
	while (!LOAD(unbinder_in))
		usleep(1000);
	STORE(held, 1);
	if (c != UNBIND_LAST)
		while (!devres__wait_records(LOAD(unbinder_wid)) &&
		       !LOAD(unbinder_done))
			usleep(1000);
	if (c == CONTROL)
		device_bound_put(&pdev.dev);
	else
		stop_ret = devm_thread_stop(&udev, unbinder);
	if (c != CONTROL)
		device_bound_put(&pdev.dev);
	(void)devres_release_all(&udev);
	w = devres_warn_count() - w0;
	if (w != (c == CONTROL ? 0 : 1) ||
	    stop_ret != (c == STOP_LAST ? -EDEADLK : RET) ||
	    device_is_bound(&pdev.dev)) {
		fprintf(stderr, "%s: %d WARNs, stop %ld, bound %d\n",
			cell_names[c], w, stop_ret,
			(int)device_is_bound(&pdev.dev));
		return 6;
	}
	platform_device_unregister(&pdev);
	platform_driver_unregister(&wb_drv);
	put_device(&udev);
	return 0;
}

/* A cell in a child of its own (cell-child.h): one row, a column a cell. */
static int one(int row, int col)
{
	(void)row;
	return cell((enum cell)col);
}

static void holder_and_unbinder(void **state)
{
	static const char *const rows[] = { "a holder and an unbinder" };

	(void)state;
	run_cells_in_children(one, rows, 1, cell_names, CONTROL + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(holder_and_unbinder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
