// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
/*
 * A group call made from a release callback while its device's resources
 * are released as a whole, as the kernel does on every unbind, failed
 * probe and device_del(): there the device's list is empty while the
 * callbacks run, and devres_release_group() of an id it does not find is
 * silent (the group was taken by the release in progress), where
 * devres_close_group() and devres_remove_group() still WARN. Here a bound
 * device keeps its binding's marker listed (no driver can name it), and
 * the release of a binding keeps what was acquired before it: the list is
 * not empty, and devres_release_group() WARNed for a group the pass took.
 *
 * Rows: how the resources go (devres_release_all() of an unbound device,
 * of a bound one, with or without a resource acquired before the bind; an
 * unbind, a failed probe, a device_del() of a bound device; and, not a
 * whole release, devres_release_group() of an enclosing group, where the
 * group's id is unknown for a WARN as before; and a release of the pass,
 * newer than the group's, that acquires on the device, which is then not
 * empty, for a WARN as in the kernel). Columns: the call the
 * callback makes (devres_release_group() of the group the pass took, of an
 * id never opened, devres_close_group() and devres_remove_group() of the
 * group the pass took). Each cell in a child process under an alarm: the
 * callback runs once, its call returns 0 and WARNs as the kernel's does,
 * naming the call, the list is sound and the ledger back where it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10

enum row {
	R_ALL_UNBOUND,
	R_ALL_BOUND,
	R_ALL_BOUND_BEFORE,
	R_UNBIND,
	R_UNBIND_BEFORE,
	R_PROBE_FAILS,
	R_PROBE_FAILS_BEFORE,
	R_DEL_BEFORE,
	R_OUTER_GROUP,
	R_ALL_ACQUIRED,
	R_UNBIND_ACQUIRED,
	R_NR
};

static const char *const rows[R_NR] = {
	"devres_release_all() of an unbound device",
	"devres_release_all() of a bound device",
	"devres_release_all() of a bound device, a resource before the bind",
	"unbind",
	"unbind, a resource before the bind",
	"failed probe",
	"failed probe, a resource before the bind",
	"device_del() of a bound device, a resource before the bind",
	"devres_release_group() of an enclosing group",
	"devres_release_all(), a newer release acquiring",
	"unbind, a resource before the bind, a newer release acquiring",
};

enum col {
	C_RELEASE,
	C_RELEASE_NEVER,
	C_CLOSE,
	C_REMOVE,
	C_NR
};

static const char *const cols[C_NR] = {
	"devres_release_group() of the group taken",
	"devres_release_group() of an id never opened",
	"devres_close_group() of the group taken",
	"devres_remove_group() of the group taken",
};

static const char *const funcs[C_NR] = {
	"devres_release_group",
	"devres_release_group",
	"devres_close_group",
	"devres_remove_group",
};

static const struct bus_type bus = { .name = "release-pass" };
static int the_col, probe_ret, runs, cb_ret, never_opened;
static bool acquiring;
static void *gid;
static char line[512];

static void sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	if (level == DEVRES_LOG_WARNING && !line[0])
		snprintf(line, sizeof(line), "%s", text);
}

/* The group's resource: its release looks for the group, gone by now. */
static void looks_for_group(struct device *dev, void *res)
{
	(void)res;
	runs++;
	cb_ret = 0;
	switch (the_col) {
	case C_RELEASE:
		cb_ret = devres_release_group(dev, gid);
		break;
	case C_RELEASE_NEVER:
		cb_ret = devres_release_group(dev, &never_opened);
		break;
	case C_CLOSE:
		devres_close_group(dev, gid);
		break;
	default:
		devres_remove_group(dev, gid);
	}
}

/* Released before the group's: the list is not empty any more. */
static void acquires(struct device *dev, void *res)
{
	(void)res;
	(void)devm_kmalloc(dev, 8, GFP_KERNEL);
}

/*
 * A group holding the resource above and a managed allocation; then, in
 * the rows that say so, a resource whose release acquires.
 */
static int fill_group(struct device *dev)
{
	void *r;

	gid = devres_open_group(dev, NULL, GFP_KERNEL);
	r = devres_alloc(looks_for_group, 8, GFP_KERNEL);
	if (!gid || !r || !devm_kmalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	devres_add(dev, r);
	devres_close_group(dev, gid);
	if (!acquiring)
		return 0;
	r = devres_alloc(acquires, 8, GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	devres_add(dev, r);
	return 0;
}

static int probe(struct device *dev)
{
	int ret = fill_group(dev);

	return ret ? ret : probe_ret;
}

static struct device_driver drv = {
	.name = "release-pass",
	.bus = &bus,
	.probe = probe,
};

static void dev_release(struct device *dev)
{
	(void)dev;
}

static bool bound_row(int row)
{
	return row != R_ALL_UNBOUND && row != R_OUTER_GROUP &&
	       row != R_ALL_ACQUIRED;
}

static bool before_row(int row)
{
	return row == R_ALL_BOUND_BEFORE || row == R_UNBIND_BEFORE ||
	       row == R_PROBE_FAILS_BEFORE || row == R_DEL_BEFORE ||
	       row == R_OUTER_GROUP || row == R_UNBIND_ACQUIRED;
}

/* Releases what the row says; -1 when a step failed. */
static int run_row(struct device *dev, int row)
{
	void *outer;

	switch (row) {
	case R_ALL_UNBOUND:
	case R_ALL_ACQUIRED:
		if (fill_group(dev))
			return -1;
		return devres_release_all(dev) == 2 + acquiring ? 0 : -1;
	case R_OUTER_GROUP:
		outer = devres_open_group(dev, NULL, GFP_KERNEL);
		if (!outer || fill_group(dev))
			return -1;
		devres_close_group(dev, outer);
		return devres_release_group(dev, outer) == 2 ? 0 : -1;
	case R_ALL_BOUND:
	case R_ALL_BOUND_BEFORE:
		if (device_add(dev) || !device_is_bound(dev))
			return -1;
		return devres_release_all(dev) == 2 + (row != R_ALL_BOUND) ? 0
									   : -1;
	case R_UNBIND:
	case R_UNBIND_BEFORE:
	case R_UNBIND_ACQUIRED:
		if (device_add(dev) || !device_is_bound(dev))
			return -1;
		device_release_driver(dev);
		return 0;
	case R_PROBE_FAILS:
	case R_PROBE_FAILS_BEFORE:
		probe_ret = -EIO;
		return device_add(dev) || device_is_bound(dev) ? -1 : 0;
	default:
		if (device_add(dev) || !device_is_bound(dev))
			return -1;
		device_del(dev);
		return 0;
	}
}

/* The kernel's rule: silent while the list is empty, as it is there. */
static bool warn_expected(int row, int col)
{
	return row == R_OUTER_GROUP || row == R_ALL_ACQUIRED ||
	       row == R_UNBIND_ACQUIRED || col == C_CLOSE || col == C_REMOVE;
}

static int cell(int row, int col)
{
	struct devres_ledger before, after;
	struct device dev;
	int w, fail = 0;

	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_set_log_sink(sink, NULL);
	the_col = col;
	acquiring = row == R_ALL_ACQUIRED || row == R_UNBIND_ACQUIRED;
	if (bus_register(&bus) || driver_register(&drv))
		return 2;
	devres_ledger_snapshot(&before);
	memset(&dev, 0, sizeof(dev));
	dev.release = dev_release;
	if (bound_row(row))
		dev.bus = &bus;
	device_initialize(&dev);
	if (dev_set_name(&dev, "pass-dev"))
		return 3;
	if (before_row(row) && !devm_kmalloc(&dev, 16, GFP_KERNEL))
		return 4;
	w = devres_warn_count();
	if (run_row(&dev, row))
		fail |= 1 << 3;
	if (runs != 1 || cb_ret != 0)
		fail |= 1 << 4;
	if (devres_warn_count() - w != (warn_expected(row, col) ? 1 : 0))
		fail |= 1 << 5;
	if (warn_expected(row, col) && !strstr(line, funcs[col]))
		fail |= 1 << 6;
	if (devres_check(&dev))
		fail |= 1 << 7;
	if (row != R_DEL_BEFORE && bound_row(row))
		device_del(&dev);
	put_device(&dev);
	driver_unregister(&drv);
	bus_unregister(&bus);
	devres_ledger_snapshot(&after);
	if (devres_ledger_diff(&before, &after, stderr))
		fail |= 1 << 2;
	if (fail)
		fprintf(stderr, "  runs %d, returned %d, WARN \"%s\"\n", runs,
			cb_ret, line);
	return fail;
}

static void test_group_calls_in_release_passes(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, R_NR, cols, C_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_calls_in_release_passes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
