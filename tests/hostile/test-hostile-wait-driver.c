// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=60 */
/*
 * driver_unregister() waits for the probes running with the driver. A
 * probe that waits for the unregistering thread closes a loop: a probe
 * that stops, with devm_thread_stop(), the managed thread unregistering
 * its driver. Both waits are on the record of waits, and the later one
 * is refused with one WARN: the unregister's (the driver stays
 * registered), or the stop's (-EDEADLK). In the control the probe
 * returns once the unregister waits, and nothing is refused.
 *
 * Each cell in a child under an alarm: before the unregister's wait was
 * recorded, every cell hung until it.
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
	UNREGISTER_LAST,
	STOP_LAST,
	CONTROL
};

static const char *const cell_names[] = { "unregister last", "stop last",
					  "control" };

static struct device udev;
static struct devres_thread *unreg;
static enum cell which;
static uint64_t probe_wid, unreg_wid;
static int in_probe, unreg_done, removed;
static long stop_ret = RET;

static void udev_release(struct device *dev)
{
	(void)dev;
}

static int wd_probe(struct platform_device *pdev)
{
	(void)pdev;
	STORE(probe_wid, devres_wait_self());
	STORE(in_probe, 1);
	/* Last, or the control: once the unregister waits for this probe. */
	if (which != UNREGISTER_LAST)
		while (!devres__wait_records(LOAD(unreg_wid)) &&
		       !LOAD(unreg_done))
			usleep(1000);
	if (which != CONTROL)
		stop_ret = devm_thread_stop(&udev, unreg);
	return 0;
}

static void wd_remove(struct platform_device *pdev)
{
	(void)pdev;
	STORE(removed, 1);
}

static struct platform_driver wd_drv = {
	.probe = wd_probe,
	.remove = wd_remove,
	.driver = { .name = "wd" },
};

static struct platform_device pdev = { .name = "wd", .id = 1 };

/* The managed thread that unregisters the driver during its probe. */
static int unreg_fn(void *arg)
{
	(void)arg;
	STORE(unreg_wid, devres_wait_self());
	while (!LOAD(in_probe))
		usleep(1000);
	/* Last: once the probe's stop of this thread waits. */
	if (which == UNREGISTER_LAST)
		while (!devres__wait_records(LOAD(probe_wid)))
			usleep(1000);
	platform_driver_unregister(&wd_drv);
	STORE(unreg_done, 1);
	return RET;
}

static int cell(enum cell c)
{
	bool kept = c == UNREGISTER_LAST;
	int w0, w;

	alarm(CELL_ALARM_S);
	which = c;
	pdev.dev.release = udev_release;
	device_initialize(&udev);
	udev.release = udev_release;
	if (dev_set_name(&udev, "wd-t") || platform_driver_register(&wd_drv))
		return 2;
	unreg = devm_thread_run(&udev, unreg_fn, NULL, "wd");
	if (IS_ERR(unreg))
		return 3;
	w0 = devres_warn_count();
	/* The probe runs here, on the main thread. */
	if (platform_device_register(&pdev))
		return 4;
	(void)devres_release_all(&udev);
	w = devres_warn_count() - w0;
	if (w != (c == CONTROL ? 0 : 1) ||
	    stop_ret != (c == STOP_LAST ? -EDEADLK : RET) ||
	    device_is_bound(&pdev.dev) != kept || LOAD(removed) == kept) {
		fprintf(stderr, "%s: %d WARNs, stop %ld, bound %d\n",
			cell_names[c], w, stop_ret,
			(int)device_is_bound(&pdev.dev));
		return 5;
	}
	/* Refused, the driver is still registered: it unregisters now. */
	if (kept) {
		platform_driver_unregister(&wd_drv);
		if (device_is_bound(&pdev.dev) || !LOAD(removed) ||
		    devres_warn_count() - w0 != 1)
			return 6;
	}
	platform_device_unregister(&pdev);
	put_device(&udev);
	return devres_warn_count() - w0 == w ? 0 : 7;
}

/* A cell in a child of its own (cell-child.h): one row, a column a cell. */
static int one(int row, int col)
{
	(void)row;
	return cell((enum cell)col);
}

static void probe_and_unregister(void **state)
{
	static const char *const rows[] = { "a probe and an unregister" };

	(void)state;
	run_cells_in_children(one, rows, 1, cell_names, CONTROL + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(probe_and_unregister),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
