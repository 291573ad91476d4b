// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=60 */
/*
 * A thread's driver pins, nested deeper than the record's first page
 * (drv-pin.c: DRV_PINS_MAX, 8): a probe registers the next driver, whose
 * attach probes its device, which registers the next ..., @depth drivers
 * deep on one thread. The deepest probe stops, with devm_thread_stop(),
 * the managed thread that unregisters the deepest driver, once that stop
 * is on the record: driver_unregister()'s wait for the probe closes the
 * loop and is refused with one WARN (the driver stays registered, the
 * stop returns the thread's value). At 8 pins, 9 and 17 (a page of
 * overflow, two).
 *
 * Each cell in a child under an alarm: before the pins past the eighth
 * were recorded, the cells of 9 and 17 hung until it.
 *
 * The same nesting holds as many device locks (frame.h: the first 8
 * on the thread's stack of keys, deeper ones as members of their own):
 * in the second row the managed thread unbinds the deepest device
 * instead, whose lock the probe holds, and its wait is the one refused.
 *
 * limit-cell: src/base/drv-pin.c:pins.set
 * limit-cell: src/base/drv-pin.c:pin_page.set
 * limit-cell: src/base/frame.h:devres__held_keys.key
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
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
#define DEPTH_MAX 17

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static const int depths[] = { 8, 9, 17 };
static const char *const depth_names[] = { "8 pins", "9 pins", "17 pins" };

static struct platform_driver drv[DEPTH_MAX];
static struct platform_device pdev[DEPTH_MAX];
static char names[DEPTH_MAX][16];
static int depth;
static struct device udev;
static struct devres_thread *unreg;
static uint64_t probe_wid;
static int in_probe, removed;
static long stop_ret = RET;
static int row_now; /* 0: unregister the deepest driver; 1: unbind */

static void nop_release(struct device *dev)
{
	(void)dev;
}

/* Driver @i's probe: the next driver, or at the deepest the stop. */
static int pd_probe(struct platform_device *p)
{
	int i = (int)(p - pdev);

	if (i + 1 < depth)
		return platform_driver_register(&drv[i + 1]);
	STORE(probe_wid, devres_wait_self());
	STORE(in_probe, 1);
	stop_ret = devm_thread_stop(&udev, unreg);
	return 0;
}

static void pd_remove(struct platform_device *p)
{
	(void)p;
	__atomic_fetch_add(&removed, 1, __ATOMIC_RELAXED);
}

/*
 * Unregisters the deepest driver (or unbinds its device) once the probe's
 * stop waits for it.
 */
static int unreg_fn(void *arg)
{
	(void)arg;
	while (!LOAD(in_probe) || !devres__wait_records(LOAD(probe_wid)))
		usleep(1000);
	if (row_now)
		device_release_driver(&pdev[depth - 1].dev);
	else
		platform_driver_unregister(&drv[depth - 1]);
	return RET;
}

static int cell(int d)
{
	int w0;

	alarm(CELL_ALARM_S);
	depth = d;
	device_initialize(&udev);
	udev.release = nop_release;
	if (dev_set_name(&udev, "pins-t"))
		return 2;
	for (int i = 0; i < d; i++) {
		(void)snprintf(names[i], sizeof(names[i]), "pd%d", i);
		drv[i].probe = pd_probe;
		drv[i].remove = pd_remove;
		drv[i].driver.name = names[i];
		pdev[i].name = names[i];
		pdev[i].id = i;
		pdev[i].dev.release = nop_release;
		if (platform_device_register(&pdev[i]))
			return 3;
	}
	unreg = devm_thread_run(&udev, unreg_fn, NULL, "pins");
	if (IS_ERR(unreg))
		return 4;
	w0 = devres_warn_count();
	/* Every probe runs here, nested, on the main thread. */
	if (platform_driver_register(&drv[0]))
		return 5;
	if (devres_warn_count() - w0 != 1 || stop_ret != RET) {
		fprintf(stderr, "%d pins: %d WARNs, stop %ld\n", d,
			devres_warn_count() - w0, stop_ret);
		return 6;
	}
	/* Refused, the deepest driver is still registered, and bound. */
	for (int i = 0; i < d; i++)
		if (!device_is_bound(&pdev[i].dev))
			return 7;
	for (int i = d - 1; i >= 0; i--)
		platform_driver_unregister(&drv[i]);
	for (int i = 0; i < d; i++)
		platform_device_unregister(&pdev[i]);
	(void)devres_release_all(&udev);
	put_device(&udev);
	if (LOAD(removed) != d || devres_warn_count() - w0 != 1)
		return 8;
	return 0;
}

/* A cell in a child of its own (cell-child.h): a column a depth. */
static int one(int row, int col)
{
	row_now = row;
	return cell(depths[col]);
}

static void pins_deep(void **state)
{
	static const char *const rows[] = {
		"a probe nested that stops its driver's unregisterer",
		"a probe nested that stops its device's unbinder",
	};

	(void)state;
	run_cells_in_children(one, rows, 2, depth_names,
			      (int)(sizeof(depths) / sizeof(depths[0])));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pins_deep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
