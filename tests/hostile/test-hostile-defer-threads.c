// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * Loops of deferral through two threads: device A, added on one thread,
 * defers waiting for device B, whose probe, added on another thread at
 * the same time, defers waiting for A. Each probe, before deferring:
 * nothing more; calls driver_deferred_probe_trigger() (each thread's
 * retry then probes the other's device, whose probe triggers again); or
 * adds a child that another driver binds (each bind retries the parked
 * devices, whose probes bind again). The kernel retries such probes from
 * its work queue for ever; here every call returns: the triggers count
 * once each (a retry asked for from a callback is made by the outermost
 * call, after which nothing new is parked), and a device whose probe
 * bound and deferred 8 times in a row is not parked again, one WARN
 * each. Then the wait is broken (B's probe no longer waits) and one
 * trigger binds both.
 *
 * Each cell in a child of its own under an alarm; a cell whose probes
 * run 1000 times is the endless retry, failed at once. Everything is
 * unregistered at the end and the ledger is back at its start.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "child-check.h"

#define CELL_ALARM_S 10
#define PROBES_MAX 1000

enum mode {
	M_PLAIN,
	M_TRIGGER,
	M_CHILD,
	NMODES
};

static const char *const modes[NMODES] = { "plain deferral",
					   "trigger, then defer",
					   "bind a child, then defer" };
static const char *const cols[1] = { "two threads" };

static int is_child_dev(struct device *dev, const struct device_driver *drv);

static const struct bus_type tbus = { .name = "defer-threads",
				      .match = is_child_dev };

static enum mode mode;
static struct device *a, *b;
static int probes, b_waits = 1;

static int is_child_dev(struct device *dev, const struct device_driver *drv)
{
	return (strncmp(dev_name(dev), "kid", 3) == 0) ==
	       (strcmp(drv->name, "kid") == 0);
}

static void unregister_action(void *dev)
{
	device_unregister(dev);
}

static int add_child(struct device *dev)
{
	struct device *kid =
		heap_dev(&tbus, "kid-%s-%d", dev_name(dev),
			 __atomic_load_n(&probes, __ATOMIC_RELAXED));

	if (!kid)
		return -ENOMEM;
	kid->parent = dev;
	if (device_add(kid)) {
		put_device(kid);
		return -EIO;
	}
	return devm_add_action_or_reset(dev, unregister_action, kid);
}

static int pair_probe(struct device *dev)
{
	struct device *peer = dev == a ? b : a;
	int ret;

	if (__atomic_add_fetch(&probes, 1, __ATOMIC_SEQ_CST) > PROBES_MAX) {
		fprintf(stderr, "%s: endless retry\n", modes[mode]);
		_exit(3);
	}
	if (mode == M_TRIGGER)
		driver_deferred_probe_trigger();
	if (mode == M_CHILD) {
		ret = add_child(dev);
		if (ret)
			return ret;
	}
	if (dev == b && !__atomic_load_n(&b_waits, __ATOMIC_ACQUIRE))
		return 0;
	/* Each waits for the other, which is never bound first. */
	if (peer && device_is_bound(peer))
		return 0;
	return -EPROBE_DEFER;
}

static struct device_driver pair_drv = {
	.name = "pair",
	.bus = &tbus,
	.probe = pair_probe,
};

static struct device_driver kid_drv = {
	.name = "kid",
	.bus = &tbus,
};

static void *adder(void *dev)
{
	return (void *)(intptr_t)device_add(dev);
}

static int one_cell(int r, int c)
{
	struct devres_ledger before, after;
	pthread_t ta, tb;
	void *ra, *rb;
	int warns;

	(void)c;
	mode = r;
	alarm(CELL_ALARM_S);
	devres_ledger_snapshot(&before);
	CHILD_CHECK(bus_register(&tbus) == 0);
	CHILD_CHECK(driver_register(&kid_drv) == 0);
	CHILD_CHECK(driver_register(&pair_drv) == 0);
	a = heap_dev(&tbus, "dev-a");
	b = heap_dev(&tbus, "dev-b");
	CHILD_CHECK(a && b);
	warns = devres_warn_count();
	CHILD_CHECK(pthread_create(&ta, NULL, adder, a) == 0);
	CHILD_CHECK(pthread_create(&tb, NULL, adder, b) == 0);
	CHILD_CHECK(pthread_join(ta, &ra) == 0 && !ra);
	CHILD_CHECK(pthread_join(tb, &rb) == 0 && !rb);
	/* Neither is bound: each waits for the other. */
	CHILD_CHECK(!device_is_bound(a) && !device_is_bound(b));
	/* One WARN a device for the probes that bound and deferred. */
	CHILD_CHECK(devres_warn_count() - warns == (mode == M_CHILD ? 2 : 0));

	/* The wait broken: a trigger (or an attach, if not parked) binds. */
	__atomic_store_n(&b_waits, 0, __ATOMIC_RELEASE);
	warns = devres_warn_count();
	driver_deferred_probe_trigger();
	if (!device_is_bound(b))
		CHILD_CHECK(device_attach(b) == 1);
	if (!device_is_bound(a))
		CHILD_CHECK(device_attach(a) == 1);
	CHILD_CHECK(device_is_bound(a) && device_is_bound(b));
	CHILD_CHECK(devres_warn_count() == warns);

	device_unregister(a);
	device_unregister(b);
	driver_unregister(&pair_drv);
	driver_unregister(&kid_drv);
	bus_unregister(&tbus);
	devres_ledger_snapshot(&after);
	CHILD_CHECK(devres_ledger_diff(&before, &after, stderr) == 0);
	return 0;
}

static void defer_loop_threads(void **state)
{
	(void)state;
	run_cells_in_children_wide(one_cell, modes, NMODES, cols, 1, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defer_loop_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
