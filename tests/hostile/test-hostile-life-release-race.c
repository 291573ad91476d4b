// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * A device's last put_device() on one thread, and at the same moment a
 * lifecycle call on that device from a second thread that holds no
 * reference (its owner let go of it): every call of the driver model
 * that reads the device's private part under the driver core's lock, or
 * changes the device, from the first instant of the release to its end.
 * The release frees that private part and reads the name once, to free
 * it with the names it replaced.
 *
 * Each round must end as one of the orders of the two calls: the second
 * finds the device deleted, being released, or released, and answers as
 * docs/driver-model.md says for that state, with one WARN at most; the
 * device is released exactly once, and nothing is read after it is freed
 * (ASan) or without the lock its writer holds (TSan); what a managed call
 * recorded is given back by the release or refused after it (the ledger is
 * back). Each call is a cell
 * in a child under an alarm, many rounds (DEVRES_RACE_ROUNDS).
 *
 * Before: the release freed the private part without the lock, so a
 * bus_for_each_dev() or driver_find_next_device() from the device, or a
 * device_del(), read it freed; device_del() took a reference from zero
 * and released the device a second time; dev_set_name() set a name that
 * the release never freed; device_attach() and device_release_driver()
 * locked its destroyed mutex; a WARN read its freed name; a managed call
 * that came after the release's last look at the list recorded a node
 * nobody released.
 *
 * LIFE_RACE_WARNS=1 prints the second thread's WARNs.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
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
#include "hostile/cell-child.h"
#include "rounds.h"

#define CELL_ALARM_S 60

enum col {
	C_DEL,
	C_UNREGISTER,
	C_SET_NAME,
	C_FOR_EACH,
	C_FIND_NEXT,
	C_IS_BOUND,
	C_ATTACH,
	C_RELEASE_DRV,
	C_P_DEL,
	C_KZALLOC,
	C_ACTION,
	C_GROUP,
	C_NR
};

static const char *const cols[C_NR] = {
	"device_del",	    "device_unregister",       "dev_set_name",
	"bus_for_each_dev", "driver_find_next_device", "device_is_bound",
	"device_attach",    "device_release_driver",   "platform_device_del",
	"devm_kzalloc",	    "devm_add_action",	       "devres_open_group",
};

static const char *const rows[1] = { "the last put on another thread" };

static struct platform_device pd;
static int released;

static void pd_release(struct device *dev)
{
	(void)dev;
	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
}

static struct platform_driver pd_drv = {
	.driver = { .name = "life-release-race" },
};

/* The WARNs of the second thread only. */
static __thread bool counting;
static int warns;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (counting && strncmp(line, "WARNING: ", 9) == 0) {
		__atomic_add_fetch(&warns, 1, __ATOMIC_RELAXED);
		if (getenv("LIFE_RACE_WARNS"))
			fprintf(stderr, "%s\n", line);
	}
}

static int go;

static void start_together(void)
{
	__atomic_add_fetch(&go, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) < 2)
		sched_yield();
}

static void *last_put(void *arg)
{
	(void)arg;
	start_together();
	put_device(&pd.dev);
	return NULL;
}

static int one_dev(struct device *dev, void *data)
{
	(void)dev;
	(*(int *)data)++;
	return 0;
}

static enum col col;

static void no_op(void *data)
{
	(void)data;
}

/*
 * The managed calls: each records a node on the device, which its release
 * gives back, or is refused once the release is over; none outlives it.
 */
static void managed_call(struct device *dev)
{
	switch (col) {
	case C_KZALLOC:
		(void)devm_kzalloc(dev, 24, GFP_KERNEL);
		break;
	case C_ACTION:
		(void)devm_add_action(dev, no_op, NULL);
		break;
	case C_GROUP:
		(void)devres_open_group(dev, NULL, GFP_KERNEL);
		break;
	default:
		break;
	}
}

static void *other_call(void *arg)
{
	struct device *dev = &pd.dev, *d;
	int n = 0;

	(void)arg;
	start_together();
	counting = true;
	switch (col) {
	case C_DEL:
		device_del(dev);
		break;
	case C_UNREGISTER:
		device_unregister(dev);
		break;
	case C_SET_NAME:
		(void)dev_set_name(dev, "life-release-race-renamed");
		break;
	case C_FOR_EACH:
		(void)bus_for_each_dev(pd_drv.driver.bus, dev, &n, one_dev);
		break;
	case C_FIND_NEXT:
		d = driver_find_next_device(&pd_drv.driver, dev);
		if (d)
			put_device(d);
		break;
	case C_IS_BOUND:
		(void)device_is_bound(dev);
		break;
	case C_ATTACH:
		(void)device_attach(dev);
		break;
	case C_RELEASE_DRV:
		device_release_driver(dev);
		break;
	case C_P_DEL:
		platform_device_del(&pd);
		break;
	default:
		managed_call(dev);
		break;
	}
	counting = false;
	return NULL;
}

static int round_of(enum col c)
{
	pthread_t a, b;

	col = c;
	memset(&pd, 0, sizeof(pd));
	pd.name = "life-release-race";
	pd.id = PLATFORM_DEVID_NONE;
	pd.dev.release = pd_release;
	released = 0;
	warns = 0;
	go = 0;
	if (platform_device_register(&pd))
		return 2;
	/* Deleted, its owner's reference the last: the put releases it. */
	platform_device_del(&pd);
	if (pthread_create(&a, NULL, last_put, NULL) ||
	    pthread_create(&b, NULL, other_call, NULL))
		return 3;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	if (released != 1 || warns > 1) {
		fprintf(stderr, "%s: released %d times, %d WARN(s)\n", cols[c],
			released, warns);
		return 1;
	}
	/* What a rename left, given back by a new life's end. */
	device_initialize(&pd.dev);
	put_device(&pd.dev);
	return 0;
}

static int cell(int r, int c)
{
	long rounds = test_race_rounds("DEVRES_RACE_ROUNDS", 100);
	struct devres_ledger base, now;

	(void)r;
	alarm(CELL_ALARM_S);
	devres_set_log_sink(sink, NULL);
	if (platform_driver_register(&pd_drv))
		return 2;
	devres_ledger_snapshot(&base);
	for (long i = 0; i < rounds; i++) {
		int bad = round_of((enum col)c);

		if (bad)
			return bad;
	}
	devres_ledger_snapshot(&now);
	platform_driver_unregister(&pd_drv);
	devres_set_log_sink(NULL, NULL);
	if (devres_ledger_diff(&base, &now, stderr)) {
		fprintf(stderr, "%s: the ledger is not back\n", cols[c]);
		return 1;
	}
	return 0;
}

static void every_call(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, 1, cols, C_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
