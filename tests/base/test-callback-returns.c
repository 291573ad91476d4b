// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * What the driver model's callbacks return, one cell each: a driver's
 * probe() and a bus's probe() (0 or a negative errno), a bus's match()
 * (> 0 a match, 0 none, or a negative errno). A value of the contract
 * passes as it is, with no WARN. A positive probe() was taken as -EINVAL
 * with one WARN already; a negative value past -MAX_ERRNO (INT_MIN) was
 * handed on: device_driver_attach() returned it, an error no caller's
 * check names, and a match's stopped the search without a word. Each is
 * now taken as -EINVAL with one WARN naming the driver: the device stays
 * unbound, and the call returns what it returns for -EINVAL (for a
 * match, device_attach() returns 0 after any error, as for none).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

enum who {
	DRV_PROBE,
	BUS_PROBE,
	BUS_MATCH,
	NR_WHO
};

static const char *const who_name[NR_WHO] = { "driver probe()", "bus probe()",
					      "bus match()" };

static const int probe_values[] = {
	0, -ENODEV, -EIO, -MAX_ERRNO, 1, INT_MAX, -MAX_ERRNO - 1, INT_MIN,
};

static const int match_values[] = {
	1, INT_MAX, 0, -ENODEV, -MAX_ERRNO, -MAX_ERRNO - 1, INT_MIN,
};

struct cell {
	enum who who;
	int said;
	char name[80];
};

static const struct cell *cur;
static bool armed;		/* the callbacks return the cell's value */
static struct device *cell_dev; /* its reference put at teardown */

static bool valid(const struct cell *c)
{
	return c->said >= -MAX_ERRNO && (c->who == BUS_MATCH || c->said <= 0);
}

/* Before the cell's call: no match, so that nothing binds at the adds. */
static int said(enum who who)
{
	if (!armed)
		return 0;
	return cur->who == who ? cur->said : who == BUS_MATCH ? 1 : 0;
}

static int cr_match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	return said(BUS_MATCH);
}

static int cr_bus_probe(struct device *dev)
{
	(void)dev;
	return said(BUS_PROBE);
}

static int cr_drv_probe(struct device *dev)
{
	(void)dev;
	return said(DRV_PROBE);
}

static struct bus_type bus = { .name = "cr-bus", .match = cr_match };
static struct bus_type bus_probing = {
	.name = "cr-bus-probing",
	.match = cr_match,
	.probe = cr_bus_probe,
};

static struct device_driver drv = { .name = "cr-drv", .probe = cr_drv_probe };

/* The call's return, 1 more when the device ended bound. */
static int attach(const struct cell *c)
{
	int ret = c->who == BUS_MATCH ? device_attach(cell_dev)
				      : device_driver_attach(&drv, cell_dev);

	return ret * 10 + (cell_dev->driver != NULL);
}

/* What the call gives for the cell's value, as attach() says it. */
static int expected(const struct cell *c)
{
	int v = valid(c) ? c->said : -EINVAL;

	if (c->who != BUS_MATCH)
		return v == 0 ? 1 : v * 10;
	/* Bound: device_attach() says 1; none, or a match's error: 0. */
	return v > 0 ? 10 + 1 : 0;
}

static void run_cell(void **state)
{
	const struct cell *c = cur;
	struct bus_type *b = c->who == BUS_PROBE ? &bus_probing : &bus;
	char reason[128];

	(void)state;
	armed = false;
	assert_int_equal(t_bus_register(b), 0);
	drv.bus = b;
	cell_dev = heap_dev(b, "cr-dev");
	assert_non_null(cell_dev);
	assert_int_equal(t_device_add(cell_dev), 0);
	assert_int_equal(t_driver_register(&drv), 0);
	assert_null(cell_dev->driver);
	armed = true;
	start_capture();
	assert_int_equal(attach(c), expected(c));
	if (valid(c)) {
		expect_no_warn();
		return;
	}
	if (c->who == BUS_MATCH)
		snprintf(reason, sizeof(reason),
			 "bus cr-bus: match returned %d, not 1, 0 or a "
			 "negative errno: taken as -EINVAL",
			 c->said);
	else
		snprintf(reason, sizeof(reason),
			 "probe returned %d, not 0 or a negative errno",
			 c->said);
	expect_warn_on("cr-dev", "cr-drv", reason);
}

static int cell_setup(void **state)
{
	cur = *state;
	return 0;
}

/* The registrations undone (the device deleted), then its last put. */
static int cell_teardown(void **state)
{
	int ret = reg_teardown(state);

	if (cell_dev)
		put_device(cell_dev);
	cell_dev = NULL;
	return ret;
}

#define NR_CELLS (2 * N(probe_values) + N(match_values))

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

static size_t add(size_t n, enum who who, int v)
{
	cells[n] = (struct cell){ who, v, "" };
	add_cell(&tests[n], &cells[n], run_cell, cell_setup, cell_teardown,
		 "%s returns %d", who_name[who], v);
	return n + 1;
}

int main(void)
{
	size_t n = 0;

	for (size_t i = 0; i < N(probe_values); i++)
		n = add(n, DRV_PROBE, probe_values[i]);
	for (size_t i = 0; i < N(probe_values); i++)
		n = add(n, BUS_PROBE, probe_values[i]);
	for (size_t i = 0; i < N(match_values); i++)
		n = add(n, BUS_MATCH, match_values[i]);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests_name("callback-returns", tests, NULL,
					   NULL);
}
