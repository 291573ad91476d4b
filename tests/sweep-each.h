/* SPDX-License-Identifier: MIT */
/*
 * What the per-call sweep tables share (tests/base/test-sweep-each-call,
 * tests/kcompat/test-kc-sweep-each-call, tests/pci/test-pci-sweep-each-
 * call): the ledger read just before the call under test and the check
 * of a call that failed, and one cell: the row's call swept in its column
 * (on a device through devres_sweep(), in a probe through
 * driver_probe_sweep()), strict, with the checks every cell makes; for
 * the tables of calls on a struct device (not SWEEP_EACH_PCI), the row,
 * the sweep's operation and the probe. Header only: each table is its
 * own binary.
 */
#ifndef DEVRES_TESTS_SWEEP_EACH_H
#define DEVRES_TESTS_SWEEP_EACH_H

#include <errno.h>
#include <stdio.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"

/* Calls that failed and left something behind, or returned no errno. */
static int bad;
/* What the ledger read just before the call under test. */
static struct devres_ledger before_call;
static const char *const col_names[] = { "device", "probe" };

static inline void begin(void)
{
	devres_ledger_snapshot(&before_call);
}

/* The call failed: nothing of it may be left. Returns @err, an errno. */
static inline int failed(const char *what, int err)
{
	struct devres_ledger now;

	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&before_call, &now, stderr)) {
		fprintf(stderr, "%s: failed with %d and left the above\n", what,
			err);
		bad++;
	}
	if (err >= 0) {
		fprintf(stderr, "%s: failed with %d, not an errno\n", what,
			err);
		bad++;
		err = -EIO;
	}
	return err;
}

/*
 * Sweeps the call @name in column @col: @op on @ctx, undone by @undo, or
 * @drv's probe of @dev. 0 when the sweep found nothing, no call failed
 * badly, the call had a fault point and the ledger and the WARN count
 * are back where they were; else 1 to 5, said on stderr.
 */
static inline int sweep_cell(const char *name, int col, int (*op)(void *),
			     void (*undo)(void *), void *ctx,
			     struct device_driver *drv, struct device *dev)
{
	struct devres_sweep_result r = { 0 };
	struct devres_ledger b, a;
	int warns, ret;

	devres_sweep_set_strict(true);
	devres_ledger_snapshot(&b);
	warns = devres_warn_count();
	if (col == 0)
		ret = devres_sweep(op, undo, ctx, &r);
	else
		ret = driver_probe_sweep(drv, dev, &r);
	devres_ledger_snapshot(&a);
	if (ret || r.leaks || r.warns || r.findings) {
		fprintf(stderr,
			"%s/%s: sweep %d, %u leaks, %u warns, %u findings\n",
			name, col_names[col], ret, r.leaks, r.warns,
			r.findings);
		return 1;
	}
	if (bad)
		return 2;
	if (r.points < 1) {
		fprintf(stderr, "%s/%s: no fault point\n", name,
			col_names[col]);
		return 3;
	}
	if (devres_ledger_diff(&b, &a, stderr))
		return 4;
	return devres_warn_count() != warns ? 5 : 0;
}

#ifndef SWEEP_EACH_PCI
#include <devres/platform.h>

/* A row of a table of calls on a device; the one a cell sweeps. */
struct call {
	const char *name;
	int (*fn)(struct device *dev);
};

static const struct call *cur;

/* Column 0: a failed call's prerequisites go, as a failed probe's would. */
static inline int op_on_device(void *ctx)
{
	struct device *dev = ctx;
	int ret = cur->fn(dev);

	if (ret)
		devres_release_all(dev);
	return ret;
}

static inline void undo_on_device(void *ctx)
{
	devres_release_all(ctx);
}

/* Column 1: the call in a probe. */
static inline int each_probe(struct platform_device *pdev)
{
	return cur->fn(&pdev->dev);
}

static struct platform_driver each_driver = {
	.probe = each_probe,
	.driver = { .name = "sweep-each" },
};
#endif /* SWEEP_EACH_PCI */

/* @n calls named @rows x the two columns, each cell in a child. */
static inline void sweep_table(int (*cell)(int, int), const char **rows, int n)
{
	run_cells_in_children_wide(cell, rows, n, col_names, 2, 2);
}

#endif /* DEVRES_TESTS_SWEEP_EACH_H */
