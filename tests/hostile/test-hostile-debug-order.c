// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * The debug checks against the order the driver acquires its resources
 * in, each cell a place the existing order tests do not reach:
 *
 * DMA debug (the "mappings still live" check of a binding): the first
 * mapping made in a group nested in another, the inner group released
 * early and then the outer; made by a devm action's callback at the
 * unbind, after the release of everything else began; made in probe that
 * then fails; made by an action in a group the driver releases early.
 * Each mapping is left live: the check must report it exactly once, and
 * never while the resources still being released could undo it.
 *
 * Live objects (the check of managed memory freed with an object still
 * live in it): the deactivating action added after the memory (released
 * first: no report), before it (the memory goes first: one report and
 * the fixup), and both inside a nested group released early.
 *
 * After each cell the ledger is back where it was: the debug bookkeeping
 * itself holds nothing once the resources are gone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/liveobj.h>
#include "testlib.h"

static const struct bus_type obus = { .name = "debug-order" };

enum dma_cell {
	D_NESTED,	  /* first mapping in a nested group, both released */
	D_ACTION_UNBIND,  /* an action maps at the unbind */
	D_PROBE_FAILS,	  /* probe maps, then fails */
	D_ACTION_IN_GROUP /* an action in a group maps when it is released */
};

static enum dma_cell cell;
static char buf[64] __attribute__((aligned(64)));
static dma_addr_t handle;
static void *g_outer, *g_inner;

static void act_map(void *arg)
{
	handle = dma_map_single(arg, buf, sizeof(buf), DMA_TO_DEVICE);
	/* Checked, as a driver must: unchecked, debug mode reports it. */
	if (dma_mapping_error(arg, handle))
		handle = DMA_MAPPING_ERROR;
}

static int probe(struct device *dev)
{
	switch (cell) {
	case D_NESTED:
		g_outer = devres_open_group(dev, NULL, GFP_KERNEL);
		g_inner = devres_open_group(dev, NULL, GFP_KERNEL);
		if (!g_outer || !g_inner)
			return -ENOMEM;
		act_map(dev);
		devres_close_group(dev, g_inner);
		devres_close_group(dev, g_outer);
		return 0;
	case D_ACTION_UNBIND:
		return devm_add_action(dev, act_map, dev);
	case D_PROBE_FAILS:
		act_map(dev);
		return -EIO;
	default:
		g_outer = devres_open_group(dev, NULL, GFP_KERNEL);
		if (!g_outer || devm_add_action(dev, act_map, dev))
			return -ENOMEM;
		devres_close_group(dev, g_outer);
		return 0;
	}
}

static struct device_driver odrv = {
	.name = "debug-order",
	.bus = &obus,
	.probe = probe,
};

static int reports(void)
{
	return count_prefix("WARNING: dbg-order: dma-debug:");
}

/* Reports expected: after probe, after the driver's group releases, after
 * the unbind, after the device's deletion. */
static const struct {
	enum dma_cell cell;
	const char *name;
	int after_probe, after_groups, after_unbind, after_del;
} dma_cells[] = {
	{ D_NESTED, "nested group released early", 0, 0, 1, 1 },
	/* Made while the device's resources are released: the device's own. */
	{ D_ACTION_UNBIND, "action maps at the unbind", 0, 0, 0, 1 },
	{ D_PROBE_FAILS, "probe maps, then fails", 1, 1, 1, 1 },
	{ D_ACTION_IN_GROUP, "action in a group released early", 0, 0, 1, 1 },
};

static void test_dma_debug_orders(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	assert_int_equal(t_bus_register(&obus), 0);
	assert_int_equal(t_driver_register(&odrv), 0);
	devres_set_dma_debug(true);
	for (size_t i = 0; i < sizeof(dma_cells) / sizeof(dma_cells[0]); i++) {
		struct device *dev;

		devres_ledger_snapshot(&before);
		dev = heap_dev(&obus, "dbg-order");
		assert_non_null(dev);
		cell = dma_cells[i].cell;
		g_outer = g_inner = NULL;
		handle = DMA_MAPPING_ERROR;
		start_log_capture();
		assert_int_equal(t_device_add(dev), 0);
		assert_int_equal(device_is_bound(dev), cell != D_PROBE_FAILS);
		if (reports() != dma_cells[i].after_probe)
			fail_msg("%s: %d reports after probe",
				 dma_cells[i].name, reports());
		if (g_inner)
			devres_release_group(dev, g_inner);
		if (g_outer && cell != D_PROBE_FAILS)
			devres_release_group(dev, g_outer);
		if (reports() != dma_cells[i].after_groups)
			fail_msg("%s: %d reports after the groups",
				 dma_cells[i].name, reports());
		device_release_driver(dev);
		if (reports() != dma_cells[i].after_unbind)
			fail_msg("%s: %d reports after the unbind",
				 dma_cells[i].name, reports());
		t_device_del(dev);
		if (reports() != dma_cells[i].after_del)
			fail_msg("%s: %d reports after the deletion",
				 dma_cells[i].name, reports());
		devres_set_log_sink(NULL, NULL);
		/* The mapping was live all along: the unmap finds it. */
		assert_true(handle != DMA_MAPPING_ERROR);
		start_capture();
		dma_unmap_single(dev, handle, sizeof(buf), DMA_TO_DEVICE);
		expect_no_warn();
		put_device(dev);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	devres_set_dma_debug(false);
	t_undo_all();
}

/* A live object: its state says pending until its fixup has run. */
struct obj {
	int pending;
};

static int fixups;
static struct obj *cancel_target;

static enum devres_liveobj_state obj_state(void *o)
{
	return ((struct obj *)o)->pending ? DEVRES_LIVEOBJ_PENDING
					  : DEVRES_LIVEOBJ_IDLE;
}

static void obj_fixup(void *o, enum devres_liveobj_state st)
{
	(void)st;
	((struct obj *)o)->pending = 0;
	fixups++;
	devres_liveobj_deactivate(o);
	/* Its memory goes now: the cancel, run later, must not touch it. */
	if (cancel_target == o)
		cancel_target = NULL;
}

static const struct devres_liveobj_descr obj_descr = { "test_obj",
						       "obj_cancel()",
						       obj_state, obj_fixup };

static void obj_cancel(void *o)
{
	((struct obj *)o)->pending = 0;
	devres_liveobj_deactivate(o);
}

/* A pending object in managed memory, registered live. */
static struct obj *obj_new(struct device *dev)
{
	struct obj *o = devm_kzalloc(dev, sizeof(*o), GFP_KERNEL);

	assert_non_null(o);
	o->pending = 1;
	assert_int_equal(devres_liveobj_activate(o, &obj_descr), 0);
	return o;
}

static const struct {
	const char *name;
	bool action_first; /* the cancel added before the memory */
	bool nested;	   /* both in a nested group, released early */
	int warns;
} obj_cells[] = {
	{ "cancel after the memory", false, false, 0 },
	{ "cancel before the memory", true, false, 1 },
	{ "cancel after, nested group released early", false, true, 0 },
	{ "cancel before, nested group released early", true, true, 1 },
};

static void cancel_late(void *arg)
{
	(void)arg;
	if (cancel_target)
		obj_cancel(cancel_target);
}

static void test_liveobj_orders(void **state)
{
	struct device *dev = *state;

	for (size_t i = 0; i < sizeof(obj_cells) / sizeof(obj_cells[0]); i++) {
		void *outer = NULL, *inner = NULL;
		struct obj *o;

		fixups = 0;
		cancel_target = NULL;
		if (obj_cells[i].nested) {
			outer = devres_open_group(dev, NULL, GFP_KERNEL);
			inner = devres_open_group(dev, NULL, GFP_KERNEL);
			assert_non_null(outer);
			assert_non_null(inner);
		}
		if (obj_cells[i].action_first)
			assert_int_equal(
				devm_add_action(dev, cancel_late, NULL), 0);
		o = obj_new(dev);
		cancel_target = o;
		if (!obj_cells[i].action_first)
			assert_int_equal(
				devm_add_action(dev, cancel_late, NULL), 0);
		start_capture();
		if (obj_cells[i].nested) {
			devres_close_group(dev, inner);
			devres_close_group(dev, outer);
			devres_release_group(dev, inner);
		} else {
			devres_release_all(dev);
		}
		if (cap.n != obj_cells[i].warns)
			fail_msg("%s: %d WARNs", obj_cells[i].name, cap.n);
		assert_int_equal(fixups, obj_cells[i].warns);
		devres_set_log_sink(NULL, NULL);
		/* Nothing left live, nothing left recorded in the group. */
		assert_false(devres_liveobj_active(o));
		if (obj_cells[i].nested)
			assert_int_equal(devres_release_group(dev, outer), 0);
		assert_int_equal(devres_release_all(dev), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dma_debug_orders),
		cmocka_unit_test_setup_teardown(test_liveobj_orders, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
