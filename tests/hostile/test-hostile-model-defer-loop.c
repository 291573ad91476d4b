// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * A probe that binds a device in its own thread and then defers: it adds
 * a child that a driver binds and keeps it, or unregisters it again when
 * the probe fails (a managed action), or registers the driver of a
 * waiting device and unregisters it again. Every such bind starts
 * another round of retries of the parked devices, whose probe of the
 * same device binds again: the kernel forbids the pattern (a probe must
 * not defer once it registered children) and retries it for ever in its
 * work queue. Here each call that retries (driver_register(),
 * device_register(), device_attach(), device_driver_attach(),
 * driver_deferred_probe_trigger()) never returned.
 *
 * Now, after 8 such probes in a row the device is not parked: one WARN
 * naming it and its driver, the call returns, the device is unbound and
 * no trigger tries it again, but device_attach() does (8 more, one more
 * WARN). A probe that defers without binding anything (the control row)
 * stays parked with no WARN, each trigger trying it once. Each cell in a
 * child of its own under an alarm; a cell whose probe runs 100 times is
 * the endless retry, failed at once. Everything is unregistered at the
 * end and the ledger is back at its start.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"

/* The probes in a row the library lets bind and defer (src/base/dd.c). */
#define LOOP_MAX 8
#define RUNAWAY 100
#define NKIDS (RUNAWAY + 1)

enum row {
	R_CONTROL,
	R_CHILD_KEPT,
	R_CHILD_DEVM,
	R_DRIVER_DEVM,
	NR_ROW
};

static const char *const row_names[NR_ROW] = {
	"defers, binds nothing",
	"adds a child, keeps it",
	"adds a child, managed unregister",
	"registers a driver, managed unregister",
};

enum col {
	C_DRIVER_REGISTER,
	C_DEVICE_REGISTER,
	C_DEVICE_ATTACH,
	C_DRIVER_ATTACH,
	C_TRIGGER,
	NR_COL
};

static const char *const col_names[NR_COL] = {
	"driver_register",
	"device_register",
	"device_attach",
	"device_driver_attach",
	"driver_deferred_probe_trigger",
};

static enum row cur_row;
static bool par_match_on, looping;
static int par_probes, loop_probes, kid_probes, sup_probes, nkids;
static struct device par, sup, kids[NKIDS];

/* The last WARN line, whose text names the device and its driver. */
static char last[512];

static void keep_last(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0)
		snprintf(last, sizeof(last), "%s", line + 9);
}

static void nop_release(struct device *dev)
{
	(void)dev;
}

static bool named(const struct device *dev, const char *prefix)
{
	return strncmp(dev_name(dev), prefix, strlen(prefix)) == 0;
}

static int dl_match(struct device *dev, const struct device_driver *drv)
{
	if (strcmp(drv->name, "dl-par") == 0)
		return par_match_on && named(dev, "dl-par");
	return named(dev, drv->name);
}

static const struct bus_type dl_bus = { .name = "dl", .match = dl_match };

static int kid_probe(struct device *dev)
{
	(void)dev;
	kid_probes++;
	return 0;
}

static int sup_probe(struct device *dev)
{
	(void)dev;
	sup_probes++;
	return 0;
}

static struct device_driver kid_drv = {
	.name = "dl-kid",
	.bus = &dl_bus,
	.probe = kid_probe,
};

static struct device_driver sup_drv = {
	.name = "dl-sup",
	.bus = &dl_bus,
	.probe = sup_probe,
};

static void unregister_dev(void *dev)
{
	device_unregister(dev);
}

static void unregister_drv(void *drv)
{
	driver_unregister(drv);
}

static int add_kid(struct device *parent)
{
	struct device *kid = &kids[nkids++];

	device_initialize(kid);
	kid->bus = &dl_bus;
	kid->parent = parent;
	kid->release = nop_release;
	if (dev_set_name(kid, "dl-kid%d", nkids) || device_add(kid))
		return -EIO;
	return 0;
}

static int par_probe(struct device *dev)
{
	int ret = 0;

	if (++par_probes > RUNAWAY)
		_exit(99); /* the retries would never end */
	if (!looping)
		return -EPROBE_DEFER;
	loop_probes++;
	switch (cur_row) {
	case R_CONTROL:
	case NR_ROW:
		break;
	case R_CHILD_KEPT:
		ret = add_kid(dev);
		break;
	case R_CHILD_DEVM:
		ret = add_kid(dev);
		if (!ret)
			ret = devm_add_action_or_reset(dev, unregister_dev,
						       &kids[nkids - 1]);
		break;
	case R_DRIVER_DEVM:
		ret = driver_register(&sup_drv);
		if (!ret)
			ret = devm_add_action_or_reset(dev, unregister_drv,
						       &sup_drv);
		break;
	}
	return ret ?: -EPROBE_DEFER;
}

static struct device_driver par_drv = {
	.name = "dl-par",
	.bus = &dl_bus,
	.probe = par_probe,
};

static int reg(struct device *dev, const char *name, struct device *parent)
{
	device_initialize(dev);
	dev->bus = &dl_bus;
	dev->parent = parent;
	dev->release = nop_release;
	if (dev_set_name(dev, "%s", name))
		return -ENOMEM;
	return device_add(dev);
}

/* Registers the bus, the children's driver, the waiting device. */
static int setup(void)
{
	if (bus_register(&dl_bus) || driver_register(&kid_drv) ||
	    reg(&sup, "dl-sup", NULL))
		return -1;
	return 0;
}

/* Starts the probe of dl-par the column's way; 0 when the call held. */
static int start(enum col c)
{
	switch (c) {
	case C_DRIVER_REGISTER:
		par_match_on = true;
		if (reg(&par, "dl-par", NULL))
			return 10;
		return driver_register(&par_drv) ? 11 : 0;
	case C_DEVICE_REGISTER:
		par_match_on = true;
		if (driver_register(&par_drv))
			return 12;
		return reg(&par, "dl-par", NULL) ? 13 : 0;
	case C_DEVICE_ATTACH:
	case C_DRIVER_ATTACH:
		if (driver_register(&par_drv) || reg(&par, "dl-par", NULL))
			return 14;
		par_match_on = true;
		if (c == C_DEVICE_ATTACH)
			return device_attach(&par) != 0 ? 15 : 0;
		return device_driver_attach(&par_drv, &par) != -EAGAIN ? 16 : 0;
	case C_TRIGGER:
		looping = false;
		par_match_on = true;
		if (driver_register(&par_drv) || reg(&par, "dl-par", NULL))
			return 17;
		if (par_probes != 1 || loop_probes)
			return 18;
		looping = true;
		driver_deferred_probe_trigger();
		return 0;
	case NR_COL:
		break;
	}
	return 19;
}

/* How many probes one start makes, and how many WARNs. */
static int expect_probes(void)
{
	return cur_row == R_CONTROL ? 1 : LOOP_MAX;
}

static int cell(int row, int col)
{
	struct devres_ledger base, now;
	int w0, ret, n;

	alarm(10);
	devres_set_log_sink(keep_last, NULL);
	cur_row = (enum row)row;
	looping = true;
	devres_ledger_snapshot(&base);
	if (setup())
		return 2;
	w0 = devres_warn_count();
	ret = start((enum col)col);
	if (ret)
		return ret;
	n = row == R_CONTROL ? 0 : 1;
	/* The control may be retried once more after the first defer. */
	if (row == R_CONTROL ? loop_probes < 1 || loop_probes > 2
			     : loop_probes != expect_probes())
		return 20;
	if (devres_warn_count() != w0 + n || device_is_bound(&par))
		return 21;
	if (row != R_CONTROL && kid_probes + sup_probes != loop_probes)
		return 22;
	if (n && !strstr(last, "dl-par: dl-par: probe deferred 8 times"))
		return 28;
	/* Parked (the control) is retried by a trigger; dropped is not. */
	ret = loop_probes;
	driver_deferred_probe_trigger();
	if (loop_probes != ret + (row == R_CONTROL))
		return 23;
	/* device_attach() tries it again, bounded again. */
	ret = loop_probes;
	if (device_attach(&par) != 0)
		return 24;
	if (loop_probes - ret < expect_probes() ||
	    loop_probes - ret > expect_probes() + (row == R_CONTROL) ||
	    devres_warn_count() != w0 + 2 * n)
		return 25;
	looping = false;
	for (int i = 0; i < nkids; i++)
		if (row == R_CHILD_KEPT)
			device_unregister(&kids[i]);
	device_unregister(&par);
	device_unregister(&sup);
	driver_unregister(&par_drv);
	driver_unregister(&kid_drv);
	bus_unregister(&dl_bus);
	if (devres_warn_count() != w0 + 2 * n)
		return 26;
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? 27 : 0;
}

static void defer_after_bind(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, row_names, NR_ROW, col_names, NR_COL,
				   2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defer_after_bind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
