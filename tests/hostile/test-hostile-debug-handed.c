// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box */
/*
 * The DMA debug check of mappings still live against a revocation handed
 * to another thread: a thread that unbinds a device whose revocable is
 * being read by a thread that waits for it (here: stops it) cannot wait
 * for that reader, so the revocation is handed to the reader, which
 * releases it when its access ends. That release may undo a mapping of
 * the binding: the unbind's check of live mappings must wait for it, as
 * it waits for a revocation queued on its own thread
 * (test-hostile-debug-deferred), and report a mapping left live once,
 * when the reader's release is done.
 *
 * Each cell: whether the revocable's release unmaps, and which came
 * first, the mapping or the revocable. The reports are counted once the
 * unbind is over and once the reader's access has ended; the ledger is
 * back at its value before the cell.
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
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "base/waits.h"
#include "testlib.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static const struct bus_type hbus = { .name = "debug-handed" };

struct cell {
	const char *what;
	bool unmaps;	/* the revocable's release unmaps its mapping */
	bool rev_first; /* the revocable made before the mapping */
	int at_end;	/* reports once the reader's access has ended */
};

static const struct cell cells[] = {
	{ "the release unmaps", true, false, 0 },
	{ "the release unmaps, revocable made first", true, true, 0 },
	{ "the release leaves it live", false, false, 1 },
};

static const struct cell *cur;
static char buf[64] __attribute__((aligned(64)));
static dma_addr_t handle;
static struct revocable *rev;
static struct device *cur_dev;

/* The reader: its wait id, its waits on the record before it stops. */
static uint64_t reader_wid;
static int reader_records;
static int reader_in;
static int seen_release = -1;

static void unmap_release(void *res)
{
	(void)res;
	if (cur->unmaps) {
		dma_unmap_single(cur_dev, handle, sizeof(buf), DMA_TO_DEVICE);
		handle = DMA_MAPPING_ERROR;
	}
}

static int probe(struct device *dev)
{
	if (cur->rev_first)
		rev = devm_revocable_create(dev, buf, unmap_release);
	handle = dma_map_single(dev, buf, sizeof(buf), DMA_TO_DEVICE);
	if (!cur->rev_first)
		rev = devm_revocable_create(dev, buf, unmap_release);
	/* Checked first, as a driver must (debug mode). */
	if (dma_mapping_error(dev, handle) || !rev)
		return -ENOMEM;
	revocable_get(rev);
	return 0;
}

static struct device_driver hdrv = {
	.name = "debug-handed",
	.bus = &hbus,
	.probe = probe,
};

static int reports(void)
{
	return count_prefix("WARNING: dbg-handed: dma-debug:");
}

/*
 * The unbinding thread: once the reader is in its access and its stop of
 * this thread is on the record, the unbind's revocation would close the
 * loop, and is handed to the reader.
 */
static int unbinder(void *arg)
{
	(void)arg;
	while (!LOAD(reader_in))
		usleep(1000);
	while (devres__wait_records(reader_wid) <= reader_records)
		usleep(1000);
	device_release_driver(cur_dev);
	STORE(seen_release, reports());
	return 0;
}

static void every_cell(void **state)
{
	int failed = 0;

	(void)state;
	assert_int_equal(t_bus_register(&hbus), 0);
	assert_int_equal(t_driver_register(&hdrv), 0);
	devres_set_dma_debug(true);
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		struct devres_ledger before, after;
		struct devres_thread *thr;
		struct device *thr_dev;
		int at_end, warns;

		cur = &cells[i];
		STORE(reader_in, 0);
		STORE(seen_release, -1);
		devres_ledger_snapshot(&before);
		cur_dev = heap_dev(&hbus, "dbg-handed");
		thr_dev = heap_dev(NULL, "dbg-handed-thread");
		assert_non_null(cur_dev);
		assert_non_null(thr_dev);
		start_log_capture();
		assert_int_equal(t_device_add(cur_dev), 0);
		assert_int_equal(t_device_add(thr_dev), 0);
		assert_true(device_is_bound(cur_dev));
		warns = devres_warn_count();
		thr = devm_thread_run(thr_dev, unbinder, NULL, "unbinder");
		assert_false(IS_ERR(thr));
		reader_wid = devres__wait_self();
		reader_records = devres__wait_records(reader_wid);
		assert_non_null(revocable_try_access(rev));
		STORE(reader_in, 1);
		assert_int_equal(devm_thread_stop(thr_dev, thr), 0);
		assert_false(device_is_bound(cur_dev));
		revocable_access_end(rev);
		at_end = reports();
		if (LOAD(seen_release) != 0 || at_end != cur->at_end) {
			print_message("%s: %d reports after the unbind, %d "
				      "after the access, want 0 and %d\n",
				      cur->what, LOAD(seen_release), at_end,
				      cur->at_end);
			failed++;
		}
		/* The reports, and the hand-over's WARN. */
		if (devres_warn_count() - warns != at_end + 1) {
			print_message("%s: %d WARNs\n", cur->what,
				      devres_warn_count() - warns);
			failed++;
		}
		devres_set_log_sink(NULL, NULL);
		if (handle != DMA_MAPPING_ERROR)
			dma_unmap_single(cur_dev, handle, sizeof(buf),
					 DMA_TO_DEVICE);
		revocable_put(rev);
		t_device_del(thr_dev);
		put_device(thr_dev);
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
