// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * fork() from inside a callback of a driver-model call, whose child
 * returns from the callback into the call: the child's one thread holds
 * the copy of the parent's device's lock (or pins it in a walk) and goes
 * on with the call on the parent's device in its copy of memory: the
 * bind or the failure, the retry of parked devices that follows, the
 * reference the call took on the device put as it ends. That put used to
 * WARN "put_device: device belongs to process N" in every cell, for a
 * put the program never made. Then the child uses the library: a bus, a
 * driver and devices of its own (a deferral retried by a bind, an unbind,
 * an attach), with no WARN, and the parent's device, whose calls are
 * refused with one WARN each (docs/fork.md).
 *
 * Each cell: the call (device_add(), driver_register(), device_attach(),
 * device_driver_attach(), the retry of driver_deferred_probe_trigger(),
 * with a probe that forks; bus_for_each_dev() with a function that
 * forks; device_release_driver() with a remove that forks) x what the
 * child's callback returns (0, -EPROBE_DEFER, -ENODEV; a remove returns
 * nothing). Each cell in a child of its own, the forked child under an
 * alarm; the parent's call finishes with no WARN.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "child-check.h"

#define CHILD_ALARM_S 10

enum how {
	H_ADD,
	H_DRV_REGISTER,
	H_ATTACH,
	H_DRV_ATTACH,
	H_TRIGGER,
	H_WALK,
	H_RELEASE,
	NHOW
};

static const char *const hows[NHOW] = {
	"device_add",
	"driver_register",
	"device_attach",
	"device_driver_attach",
	"deferred-probe retry",
	"bus_for_each_dev",
	"device_release_driver",
};

static const int child_rets[] = { 0, -EPROBE_DEFER, -ENODEV };
static const char *const rets[] = { "child returns 0",
				    "child returns -EPROBE_DEFER",
				    "child returns -ENODEV" };

static const struct bus_type pbus = { .name = "fork-probe" };
static const struct bus_type cbus = { .name = "fork-probe-child" };

static int how, ret_col;
static bool armed, in_child, parent_ready;
static pid_t child;
static int fork_warns;

/* Forks once when armed: the child returns @ret_col's value. */
static bool fork_here(void)
{
	if (!armed)
		return false;
	armed = false;
	fflush(NULL);
	child = fork();
	if (child == 0) {
		alarm(CHILD_ALARM_S);
		fork_warns = devres_warn_count();
		in_child = true;
	}
	return true;
}

static int x_walk(struct device *dev, void *data)
{
	(void)dev;
	(void)data;
	if (fork_here() && in_child)
		return child_rets[ret_col];
	return 0;
}

static void x_remove(struct device *dev)
{
	(void)dev;
	if (how == H_RELEASE)
		(void)fork_here();
}

static int x_probe(struct device *dev)
{
	(void)dev;
	if (how == H_WALK || how == H_RELEASE || !fork_here())
		return parent_ready ? 0 : -EPROBE_DEFER;
	return in_child ? child_rets[ret_col] : 0;
}

static struct device_driver xdrv = {
	.name = "xdrv",
	.bus = &pbus,
	.probe = x_probe,
	.remove = x_remove,
};

static int y_defer = 1;

static int y_probe(struct device *dev)
{
	(void)dev;
	return y_defer ? -EPROBE_DEFER : 0;
}

static struct device_driver ydrv = {
	.name = "ydrv",
	.bus = &cbus,
	.probe = y_probe,
};

/* The child, back from the parent's call: its own, then the parent's. */
static void child_goes_on(struct device *x)
{
	int warns = devres_warn_count();
	struct device *y, *z;

	/* The call that probed ended in the child with no WARN. */
	CHILD_CHECK(warns == fork_warns);

	CHILD_CHECK(bus_register(&cbus) == 0);
	CHILD_CHECK(driver_register(&ydrv) == 0);
	y = heap_dev(&cbus, "child-y");
	z = heap_dev(&cbus, "child-z");
	CHILD_CHECK(y && z);
	/* A deferral of its own, retried by the bind of another. */
	CHILD_CHECK(device_add(y) == 0);
	CHILD_CHECK(!device_is_bound(y));
	y_defer = 0;
	CHILD_CHECK(device_add(z) == 0);
	CHILD_CHECK(device_is_bound(z));
	CHILD_CHECK(device_is_bound(y));
	device_release_driver(y);
	CHILD_CHECK(!device_is_bound(y));
	CHILD_CHECK(device_attach(y) == 1);
	driver_deferred_probe_trigger();
	device_unregister(y);
	device_unregister(z);
	driver_unregister(&ydrv);
	bus_unregister(&cbus);
	CHILD_CHECK(devres_warn_count() == warns);

	/* The parent's device: refused, one WARN each. */
	if (how == H_WALK)
		CHILD_CHECK(bus_for_each_dev(&pbus, NULL, NULL, x_walk) == 0);
	CHILD_CHECK(devres_warn_count() == warns);
	CHILD_CHECK(device_attach(x) < 0);
	CHILD_CHECK(devres_warn_count() == warns + 1);
	device_release_driver(x);
	CHILD_CHECK(devres_warn_count() == warns + 2);
	device_del(x);
	CHILD_CHECK(devres_warn_count() == warns + 3);
	_exit(0);
}

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s / %s: line %d: %s\n", hows[how],   \
				rets[ret_col], __LINE__, #cond);               \
			return 1;                                              \
		}                                                              \
	} while (0)

static int one_cell(int r, int c)
{
	struct device *x;
	int st = 0, warns;

	how = r;
	ret_col = c;
	alarm(2 * CHILD_ALARM_S);
	CHECK(bus_register(&pbus) == 0);
	x = heap_dev(&pbus, "parent-x");
	CHECK(x != NULL);
	if (how == H_ATTACH || how == H_DRV_ATTACH || how == H_TRIGGER) {
		/* Parked first: its probe defers until parent_ready. */
		CHECK(driver_register(&xdrv) == 0);
		CHECK(device_add(x) == 0);
		CHECK(!device_is_bound(x));
	} else if (how == H_DRV_REGISTER) {
		CHECK(device_add(x) == 0);
	} else if (how == H_WALK || how == H_RELEASE) {
		parent_ready = true;
		CHECK(driver_register(&xdrv) == 0);
		CHECK(device_add(x) == 0);
		CHECK(device_is_bound(x));
	}
	parent_ready = true;
	armed = true;
	warns = devres_warn_count();
	switch (how) {
	case H_ADD:
		CHECK(driver_register(&xdrv) == 0);
		(void)device_add(x);
		break;
	case H_DRV_REGISTER:
		(void)driver_register(&xdrv);
		break;
	case H_ATTACH:
		(void)device_attach(x);
		break;
	case H_DRV_ATTACH:
		(void)device_driver_attach(&xdrv, x);
		break;
	case H_TRIGGER:
		driver_deferred_probe_trigger();
		break;
	case H_WALK:
		(void)bus_for_each_dev(&pbus, NULL, NULL, x_walk);
		break;
	case H_RELEASE:
		device_release_driver(x);
		break;
	default:
		break;
	}
	if (in_child)
		child_goes_on(x);
	CHECK(child > 0);
	CHECK(waitpid(child, &st, 0) == child);
	if (!cell_held(st, hows[how], rets[ret_col]))
		return 1;
	CHECK(devres_warn_count() == warns);
	CHECK(device_is_bound(x) == (how != H_RELEASE));
	device_unregister(x);
	driver_unregister(&xdrv);
	bus_unregister(&pbus);
	return 0;
}

static void fork_probe_return(void **state)
{
	(void)state;
	run_cells_in_children_wide(one_cell, hows, NHOW, rets, 3, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_probe_return),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
