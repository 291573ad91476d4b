// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * The DMA debug check of mappings still live against a release that
 * finishes after its chain: a revocable revoked by a thread inside an
 * access of its own is queued, and released when the thread's outermost
 * access ends (or the thread ends). Its release may undo a mapping of the
 * binding: the check must wait for it, as it waits for every other
 * release of the chain, and report a mapping left live exactly once.
 *
 * Each cell: how the resources are released (an unbind, the device's own
 * resources by devres_release_all()), whether the revocation is queued
 * (released inside an access) or not, whether the revocable's release
 * unmaps, which came first (the mapping or the revocable), and how many
 * revocables. The reports are counted after the release and after the
 * access ends; the ledger is back at its value before the cell.
 */
#include <errno.h>
#include <pthread.h>
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
#include <devres/revocable.h>
#include "testlib.h"

#define MAX_REVS 2

static const struct bus_type dbus = { .name = "debug-deferred" };

struct cell {
	const char *what;
	bool unbind;	 /* released by an unbind, else devres_release_all() */
	bool in_access;	 /* released inside an access: the revocation queued */
	bool unmaps;	 /* the revocable's release unmaps its mapping */
	bool rev_first;	 /* the revocable made before the mapping */
	int nrevs;	 /* revocables, each with a mapping of its own */
	bool thread_end; /* the access ends with its thread (pthread_exit) */
	int at_release, at_end; /* reports after the release, after the end */
};

static const struct cell cells[] = {
	{ "unbind in an access, the release unmaps", true, true, true, false, 1,
	  false, 0, 0 },
	{ "unbind in an access, revocable made first", true, true, true, true,
	  1, false, 0, 0 },
	{ "unbind in nested accesses, two revocables", true, true, true, false,
	  2, false, 0, 0 },
	{ "unbind in an access, the release leaves it live", true, true, false,
	  false, 1, false, 0, 1 },
	{ "unbind in an access ended by the thread's end", true, true, true,
	  false, 1, true, 0, 0 },
	{ "unbind outside any access, the release unmaps", true, false, true,
	  false, 1, false, 0, 0 },
	{ "unbind outside any access, the release leaves it live", true, false,
	  false, false, 1, false, 1, 1 },
	{ "device's own resources in an access, the release unmaps", false,
	  true, true, false, 1, false, 0, 0 },
	{ "device's own resources in an access, left live", false, true, false,
	  false, 1, false, 0, 1 },
};

static const struct cell *cur;
static char bufs[MAX_REVS][64] __attribute__((aligned(64)));
static dma_addr_t handles[MAX_REVS];
static struct revocable *revs[MAX_REVS];
static struct device *cur_dev;

static void unmap_release(void *res)
{
	int i = (int)((char(*)[64])res - bufs);

	if (cur->unmaps) {
		dma_unmap_single(cur_dev, handles[i], sizeof(bufs[i]),
				 DMA_TO_DEVICE);
		handles[i] = DMA_MAPPING_ERROR;
	}
}

static int acquire(struct device *dev)
{
	for (int i = 0; i < cur->nrevs; i++) {
		if (cur->rev_first)
			revs[i] = devm_revocable_create(dev, bufs[i],
							unmap_release);
		handles[i] = dma_map_single(dev, bufs[i], sizeof(bufs[i]),
					    DMA_TO_DEVICE);
		if (!cur->rev_first)
			revs[i] = devm_revocable_create(dev, bufs[i],
							unmap_release);
		/* Checked first, as a driver must (debug mode). */
		if (dma_mapping_error(dev, handles[i]) || !revs[i])
			return -ENOMEM;
		revocable_get(revs[i]);
	}
	return 0;
}

static int probe(struct device *dev)
{
	return acquire(dev);
}

static struct device_driver ddrv = {
	.name = "debug-deferred",
	.bus = &dbus,
	.probe = probe,
};

static int reports(void)
{
	return count_prefix("WARNING: dbg-deferred: dma-debug:");
}

static int seen_release;

/* Releases @cur's way, inside accesses when the cell says so. */
static void release(void)
{
	bool in[MAX_REVS] = { false };

	for (int i = 0; cur->in_access && i < cur->nrevs; i++)
		in[i] = revocable_try_access(revs[i]) != NULL;
	if (cur->unbind)
		device_release_driver(cur_dev);
	else
		devres_release_all(cur_dev);
	seen_release = reports();
	if (cur->thread_end)
		pthread_exit(NULL);
	for (int i = cur->nrevs - 1; i >= 0; i--)
		if (in[i])
			revocable_access_end(revs[i]);
}

static void *release_thread(void *arg)
{
	(void)arg;
	release();
	return NULL;
}

static void every_cell(void **state)
{
	int failed = 0;

	(void)state;
	assert_int_equal(t_bus_register(&dbus), 0);
	assert_int_equal(t_driver_register(&ddrv), 0);
	devres_set_dma_debug(true);
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		struct devres_ledger before, after;
		pthread_t t;
		int at_end, warns;

		cur = &cells[i];
		devres_ledger_snapshot(&before);
		/* Not on the bus: not bound, its resources its own. */
		cur_dev = heap_dev(cur->unbind ? &dbus : NULL, "dbg-deferred");
		assert_non_null(cur_dev);
		start_log_capture();
		assert_int_equal(t_device_add(cur_dev), 0);
		if (cur->unbind)
			assert_true(device_is_bound(cur_dev));
		else
			assert_int_equal(acquire(cur_dev), 0);
		warns = devres_warn_count();
		/* A thread of its own: a cell may end it inside the access. */
		assert_int_equal(pthread_create(&t, NULL, release_thread, NULL),
				 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		at_end = reports();
		if (seen_release != cur->at_release || at_end != cur->at_end) {
			print_message("%s: %d reports after the release, %d "
				      "after the access, want %d and %d\n",
				      cur->what, seen_release, at_end,
				      cur->at_release, cur->at_end);
			failed++;
		}
		/* The reports, and the thread's end inside its access. */
		if (devres_warn_count() - warns != at_end + cur->thread_end) {
			print_message("%s: %d WARNs\n", cur->what,
				      devres_warn_count() - warns);
			failed++;
		}
		devres_set_log_sink(NULL, NULL);
		for (int r = 0; r < cur->nrevs; r++) {
			if (handles[r] != DMA_MAPPING_ERROR)
				dma_unmap_single(cur_dev, handles[r],
						 sizeof(bufs[r]),
						 DMA_TO_DEVICE);
			revocable_put(revs[r]);
		}
		t_device_del(cur_dev);
		put_device(cur_dev);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	devres_set_dma_debug(false);
	t_undo_all();
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
