// SPDX-License-Identifier: MIT
/* ctest-labels: unit dma tsan timeout=60 */
/*
 * The library's own release of a device's DMA resources (what an unbind
 * and a device's release run: its coherent buffers of
 * dmam_alloc_coherent(), its DMA state, and in debug mode the check of
 * the mappings still live) against a DMA call another thread has in
 * progress in the device's ops, one cell each: a dma_map_single() in
 * ops->map, a dma_unmap_single() and a dma_free_coherent() in ops->unmap
 * (ops that park there until the releasing thread sleeps), with and
 * without the debug checks.
 *
 * Each release waits for the call in the ops (they run under the
 * device's DMA lock): the call has left the ops when the release
 * returns, a mapping it made stays live (in debug mode, reported by the
 * check, once) and is unmapped by hand after, with nothing leaked.
 */
#define _GNU_SOURCE /* gettid() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include "testlib.h"
#include "pci/park-hold.h"

enum held {
	MAP,
	UNMAP,
	FREE_COHERENT,
	NR_HELD
};

static const char *const held_name[NR_HELD] = {
	"dma_map_single()",
	"dma_unmap_single()",
	"dma_free_coherent()",
};

struct cell {
	enum held held;
	bool debug;
	char name[96];
};

static const struct cell *cur;
static struct park_hold park;
static int hold_map, hold_unmap;
static bool held_out, working;
static pthread_t worker;
static char buf[4096];
static dma_addr_t handle, coh_handle;
static void *coh;

static void park_if_held(int *hold)
{
	if (park_if(&park, hold))
		__atomic_store_n(&held_out, true, __ATOMIC_RELEASE);
}

static int p_map(struct device *dev, void *cpu, size_t size, size_t align,
		 uint64_t mask, dma_addr_t *ret_handle)
{
	park_if_held(&hold_map);
	return devres_dma_iova_ops()->map(dev, cpu, size, align, mask,
					  ret_handle);
}

static void p_unmap(struct device *dev, dma_addr_t h, void *cpu, size_t size)
{
	park_if_held(&hold_unmap);
	devres_dma_iova_ops()->unmap(dev, h, cpu, size);
}

static const struct devres_dma_ops park_ops = {
	.name = "park",
	.map = p_map,
	.unmap = p_unmap,
};

static void *work(void *arg)
{
	(void)arg;
	switch (cur->held) {
	case MAP:
		handle = dma_map_single(&tdev, buf, sizeof(buf), DMA_TO_DEVICE);
		break;
	case UNMAP:
		dma_unmap_single(&tdev, handle, sizeof(buf), DMA_TO_DEVICE);
		break;
	default:
		dma_free_coherent(&tdev, 4096, coh, coh_handle);
		break;
	}
	return NULL;
}

static void run_cell(void **state)
{
	void *managed;
	dma_addr_t mh;
	bool done;

	(void)state;
	devres_set_dma_debug(cur->debug);
	set_dma_ops(&tdev, &park_ops);
	/* The device's own: a managed buffer its release unmaps. */
	managed = dmam_alloc_coherent(&tdev, 4096, &mh, GFP_KERNEL);
	assert_non_null(managed);
	if (cur->held == UNMAP) {
		handle = dma_map_single(&tdev, buf, sizeof(buf), DMA_TO_DEVICE);
		assert_false(dma_mapping_error(&tdev, handle));
	} else if (cur->held == FREE_COHERENT) {
		coh = dma_alloc_coherent(&tdev, 4096, &coh_handle, GFP_KERNEL);
		assert_non_null(coh);
	}
	park_arm(&park);
	__atomic_store_n(&held_out, false, __ATOMIC_RELEASE);
	__atomic_store_n(cur->held == MAP ? &hold_map : &hold_unmap, 1,
			 __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&worker, NULL, work, NULL), 0);
	working = true;
	park_wait(&park);
	assert_int_equal(park_releaser_start(&park), 0);
	start_capture();
	devres_release_all(&tdev);
	done = __atomic_load_n(&held_out, __ATOMIC_ACQUIRE);
	working = false;
	assert_int_equal(park_releaser_join(&park), 0);
	assert_int_equal(pthread_join(worker, NULL), 0);
	/* The release waited for the call in the ops. */
	assert_true(done);
	if (cur->held == MAP) {
		assert_false(dma_mapping_error(&tdev, handle));
		/* Live at the release: the debug check says so, once. */
		if (cur->debug)
			expect_warn_on("test-dev", "dma-debug",
				       "still live at device release");
		else
			expect_no_warn();
		/* Still the device's, unmapped by hand now. */
		assert_ptr_equal(dma_iova_to_virt(&tdev, handle, 1), buf);
		start_capture();
		dma_unmap_single(&tdev, handle, sizeof(buf), DMA_TO_DEVICE);
		expect_no_warn();
	} else {
		expect_no_warn();
	}
	set_dma_ops(&tdev, NULL);
}

static int cell_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

static int cell_teardown(void **state)
{
	if (working) {
		(void)park_releaser_join(&park);
		(void)pthread_join(worker, NULL);
		working = false;
	}
	devres_set_dma_debug(false);
	return dev_teardown(state);
}

#define NR_CELLS (NR_HELD * 2)

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (park_init(&park))
		return 1;
	for (int d = 0; d < 2; d++)
		for (int h = 0; h < NR_HELD; h++, n++) {
			cells[n] = (struct cell){ (enum held)h, d != 0, "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 cell_teardown,
				 "devres_release_all() while %s is in the "
				 "ops%s",
				 held_name[h], d ? ", debug checks on" : "");
		}
	alarm(50);
	return cmocka_run_group_tests_name("dma-release", tests, NULL, NULL);
}
