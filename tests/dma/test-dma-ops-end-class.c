// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A device's DMA ops (set_dma_ops()) end their thread, by pthread_exit()
 * or by a cancellation met at a cancellation point, inside every DMA
 * entry point that runs them: each map (a streaming map, a coherent
 * buffer, plain or managed, a pool's new chunk, plain or managed) and
 * each unmap (a streaming unmap, a coherent buffer's free, plain,
 * managed, managed freed by hand or unmapped by hand with munmap(), a
 * pool's destroy, plain or managed, and the device's release of a
 * managed buffer or pool, and a destroy whose every chunk's ops end the
 * thread again as it unwinds).
 *
 * Each row runs the entry point on a thread of its own and checks, once
 * the thread is joined: one WARN from the ops a time they ended the
 * thread, and only the WARNs the entry point makes anyway (a managed
 * buffer taken back by hand, a release callback that ended its thread);
 * the ledger back where it was before the resource was acquired (a map
 * that ended acquired nothing; an unmap that ended gave everything back);
 * nothing left on the device and no live mapping (set_dma_ops() changes
 * the ops quietly); and the device's DMA, its pools and the process's
 * munmap() going on (an alarm fails a row that hangs on a lock the dead
 * thread kept). The fixture's teardown checks the ledger again.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"
#include "base/thread-end.h"

#define PG 4096
#define OPS_WARN "WARNING: test-dev: dma_ops: the DMA ops 'end-ops' ended"

/* How the ops end the thread: BY_EXIT or BY_CANCEL (thread-end.h). */
static int end_how;
/* The next maps or unmaps that end the thread, each but the first by exit. */
static int end_maps, end_unmaps;

static void end_thread(void)
{
	int how = end_how;

	/* Later ends come from inside the unwinding: pthread_exit(). */
	end_how = BY_EXIT;
	end_thread_by((enum ending)how);
	pthread_exit(NULL);
}

static int end_map(struct device *dev, void *cpu, size_t size, size_t align,
		   uint64_t mask, dma_addr_t *ret_handle)
{
	/* Before the ops map anything: nothing of theirs is left. */
	if (end_maps) {
		end_maps--;
		end_thread();
	}
	return devres_dma_iova_ops()->map(dev, cpu, size, align, mask,
					  ret_handle);
}

static void end_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		      size_t size)
{
	/* Given back first, as ops that end after their work would. */
	devres_dma_iova_ops()->unmap(dev, handle, cpu, size);
	if (end_unmaps) {
		end_unmaps--;
		end_thread();
	}
}

static const struct devres_dma_ops end_ops = {
	.name = "end-ops",
	.map = end_map,
	.unmap = end_unmap,
};

/* What a row acquires first and its entry point works on. */
static char sbuf[256];
static void *buf;
static dma_addr_t h;
static struct dma_pool *pool;
static int state_nodes; /* the device's nodes once its DMA state is made */

enum entry {
	MAP_SINGLE,
	MAP_PAGE,
	ALLOC_COHERENT,
	DMAM_ALLOC_COHERENT,
	POOL_ALLOC,
	DMAM_POOL_ALLOC,
	UNMAP_SINGLE,
	UNMAP_PAGE,
	FREE_COHERENT,
	DMAM_FREE_COHERENT,
	FREE_BY_HAND,
	MUNMAP_BY_HAND,
	POOL_DESTROY,
	DMAM_POOL_DESTROY,
	RELEASE_BUFFER,
	RELEASE_POOL,
	POOL_DESTROY_EVERY_CHUNK,
};

struct row {
	const char *name;
	enum entry entry;
	bool in_map; /* the ops end in a map, else in an unmap */
	int ends;    /* how many times the ops end the thread */
	int warns;   /* WARNs the entry point makes besides the ops' */
};

static const struct row rows[] = {
	{ "dma_map_single", MAP_SINGLE, true, 1, 0 },
	{ "dma_map_page", MAP_PAGE, true, 1, 0 },
	{ "dma_alloc_coherent", ALLOC_COHERENT, true, 1, 0 },
	{ "dmam_alloc_coherent", DMAM_ALLOC_COHERENT, true, 1, 0 },
	{ "dma_pool_alloc", POOL_ALLOC, true, 1, 0 },
	{ "dma_pool_alloc of a dmam_ pool", DMAM_POOL_ALLOC, true, 1, 0 },
	{ "dma_unmap_single", UNMAP_SINGLE, false, 1, 0 },
	{ "dma_unmap_page", UNMAP_PAGE, false, 1, 0 },
	{ "dma_free_coherent", FREE_COHERENT, false, 1, 0 },
	{ "dmam_free_coherent", DMAM_FREE_COHERENT, false, 1, 0 },
	{ "dma_free_coherent of a dmam_ buffer", FREE_BY_HAND, false, 1, 1 },
	{ "munmap of a dmam_ buffer", MUNMAP_BY_HAND, false, 1, 1 },
	{ "dma_pool_destroy", POOL_DESTROY, false, 1, 0 },
	{ "dmam_pool_destroy", DMAM_POOL_DESTROY, false, 1, 1 },
	{ "release of a dmam_ buffer", RELEASE_BUFFER, false, 1, 1 },
	{ "release of a dmam_ pool", RELEASE_POOL, false, 1, 1 },
	{ "dma_pool_destroy, every chunk", POOL_DESTROY_EVERY_CHUNK, false, 3,
	  0 },
};
#define NR_ROWS (sizeof(rows) / sizeof(rows[0]))

/* A pool of one page a block, so a chunk a block, with 3 chunks cached. */
static struct dma_pool *pool_of_three(bool managed)
{
	struct dma_pool *p = managed ? dmam_pool_create("end", &tdev, PG, PG, 0)
				     : dma_pool_create("end", &tdev, PG, PG, 0);
	dma_addr_t hs[3];
	void *bs[3];

	assert_non_null(p);
	for (int i = 0; i < 3; i++) {
		bs[i] = dma_pool_alloc(p, 0, &hs[i]);
		assert_non_null(bs[i]);
	}
	for (int i = 0; i < 3; i++)
		dma_pool_free(p, bs[i], hs[i]);
	return p;
}

/* What an unmap row gives back, acquired with the ops not ending. */
static void acquire(enum entry e)
{
	switch (e) {
	case UNMAP_SINGLE:
		h = dma_map_single(&tdev, sbuf, sizeof(sbuf), DMA_TO_DEVICE);
		assert_int_not_equal(h, DMA_MAPPING_ERROR);
		break;
	case UNMAP_PAGE:
		h = dma_map_page(&tdev, (struct page *)sbuf, 16, 64,
				 DMA_FROM_DEVICE);
		assert_int_not_equal(h, DMA_MAPPING_ERROR);
		break;
	case FREE_COHERENT:
		buf = dma_alloc_coherent(&tdev, PG, &h, 0);
		assert_non_null(buf);
		break;
	case DMAM_FREE_COHERENT:
	case FREE_BY_HAND:
	case MUNMAP_BY_HAND:
	case RELEASE_BUFFER:
		buf = dmam_alloc_coherent(&tdev, PG, &h, 0);
		assert_non_null(buf);
		break;
	case POOL_DESTROY:
	case POOL_DESTROY_EVERY_CHUNK:
		pool = pool_of_three(false);
		break;
	case DMAM_POOL_DESTROY:
	case RELEASE_POOL:
		pool = pool_of_three(true);
		break;
	case POOL_ALLOC:
		pool = dma_pool_create("end", &tdev, 64, 8, 0);
		assert_non_null(pool);
		break;
	case DMAM_POOL_ALLOC:
		pool = dmam_pool_create("end", &tdev, 64, 8, 0);
		assert_non_null(pool);
		break;
	default:
		break;
	}
}

static void *entry(void *arg)
{
	const struct row *r = arg;
	dma_addr_t got;

	switch (r->entry) {
	case MAP_SINGLE:
		(void)dma_map_single(&tdev, sbuf, sizeof(sbuf), DMA_TO_DEVICE);
		break;
	case MAP_PAGE:
		(void)dma_map_page(&tdev, (struct page *)sbuf, 16, 64,
				   DMA_FROM_DEVICE);
		break;
	case ALLOC_COHERENT:
		(void)dma_alloc_coherent(&tdev, PG, &got, 0);
		break;
	case DMAM_ALLOC_COHERENT:
		(void)dmam_alloc_coherent(&tdev, PG, &got, 0);
		break;
	case POOL_ALLOC:
	case DMAM_POOL_ALLOC:
		(void)dma_pool_alloc(pool, 0, &got);
		break;
	case UNMAP_SINGLE:
		dma_unmap_single(&tdev, h, sizeof(sbuf), DMA_TO_DEVICE);
		break;
	case UNMAP_PAGE:
		dma_unmap_page(&tdev, h, 64, DMA_FROM_DEVICE);
		break;
	case FREE_COHERENT:
	case FREE_BY_HAND:
		dma_free_coherent(&tdev, PG, buf, h);
		break;
	case DMAM_FREE_COHERENT:
		dmam_free_coherent(&tdev, PG, buf, h);
		break;
	case MUNMAP_BY_HAND:
		(void)munmap(buf, PG);
		break;
	case POOL_DESTROY:
	case POOL_DESTROY_EVERY_CHUNK:
		dma_pool_destroy(pool);
		break;
	case DMAM_POOL_DESTROY:
		dmam_pool_destroy(pool);
		break;
	case RELEASE_BUFFER:
	case RELEASE_POOL:
		devres_release_all(&tdev);
		break;
	}
	/* Reached only if the ops did not end the thread. */
	return (void *)1;
}

/* The device's DMA, its pools and munmap() go on after the row. */
static void goes_on(const struct row *r)
{
	struct devres_stats st;
	dma_addr_t got, hh;
	void *p, *q;

	start_capture();
	/* No live mapping left: the ops change quietly. */
	set_dma_ops(&tdev, NULL);
	expect_no_warn();
	assert_null(tdev.dma_ops);
	set_dma_ops(&tdev, &end_ops);
	hh = dma_map_single(&tdev, sbuf, sizeof(sbuf), DMA_TO_DEVICE);
	assert_int_not_equal(hh, DMA_MAPPING_ERROR);
	dma_unmap_single(&tdev, hh, sizeof(sbuf), DMA_TO_DEVICE);
	if (r->entry == POOL_ALLOC || r->entry == DMAM_POOL_ALLOC) {
		/* Its lock let go: the pool works, and is destroyed whole. */
		p = dma_pool_alloc(pool, 0, &got);
		assert_non_null(p);
		dma_pool_free(pool, p, got);
		if (r->entry == POOL_ALLOC)
			dma_pool_destroy(pool);
		else
			dmam_pool_destroy(pool);
		expect_no_warn();
	} else if (r->entry == POOL_DESTROY || r->entry == DMAM_POOL_DESTROY ||
		   r->entry == POOL_DESTROY_EVERY_CHUNK) {
		/* Destroyed: its handle is dead. */
		start_capture();
		dma_pool_destroy(pool);
		expect_warn_on("(no device)", "dma_pool_destroy",
			       "destroyed pool");
	} else if (r->entry == MUNMAP_BY_HAND) {
		/*
		 * The thread ended before its munmap(): the buffer is off
		 * the device, its pages the caller's, to unmap without a
		 * WARN.
		 */
		assert_int_equal(munmap(buf, PG), 0);
		expect_no_warn();
	}
	/* The table of managed mappings is not left locked. */
	q = dmam_alloc_coherent(&tdev, PG, &got, 0);
	assert_non_null(q);
	start_capture();
	assert_int_equal(munmap(q, PG), 0);
	expect_warn_on("test-dev", "munmap",
		       "acquired with dmam_alloc_coherent");
	/* Nothing left on the device but its DMA state. */
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, state_nodes);
	set_dma_ops(&tdev, NULL);
}

static void run(const struct row *r, int how)
{
	struct devres_ledger before, now;
	struct devres_stats st;
	pthread_t t;
	void *ret;

	alarm(20); /* a row that hangs fails */
	/* The device's release takes its DMA state too: none yet. */
	devres_release_all(&tdev);
	devres_ledger_snapshot(&before);
	set_dma_ops(&tdev, &end_ops);
	/* Else the device's DMA state is made first, to stay. */
	h = dma_map_single(&tdev, sbuf, sizeof(sbuf), DMA_TO_DEVICE);
	dma_unmap_single(&tdev, h, sizeof(sbuf), DMA_TO_DEVICE);
	devres_get_stats(&tdev, &st);
	state_nodes = st.allocs;
	if (r->entry != RELEASE_BUFFER && r->entry != RELEASE_POOL)
		devres_ledger_snapshot(&before);
	acquire(r->entry);
	/* A managed pool's rows count from the pool made. */
	if (r->entry == POOL_ALLOC || r->entry == DMAM_POOL_ALLOC)
		devres_ledger_snapshot(&before);
	start_capture();
	end_how = how;
	if (r->in_map)
		end_maps = r->ends;
	else
		end_unmaps = r->ends;
	assert_int_equal(pthread_create(&t, NULL, entry, (void *)r), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_true(ret != (void *)1);
	assert_int_equal(end_maps + end_unmaps, 0);
	assert_int_equal(count_prefix(OPS_WARN), r->ends);
	if (count_prefix("WARNING: ") != r->ends + r->warns)
		fail_msg("%d WARNs, want %d", count_prefix("WARNING: "),
			 r->ends + r->warns);
	devres_ledger_snapshot(&now);
	/* The memory of a buffer unmapped by hand is still the caller's. */
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
	goes_on(r);
	alarm(0);
}

static void row(void **state)
{
	const struct row *r = *state;

	run(r, 1);
	run(r, 2);
}

static int row_setup(void **state)
{
	void *r = *state;
	int ret = dev_setup(state);

	*state = r;
	return ret;
}

int main(void)
{
	struct CMUnitTest tests[NR_ROWS];

	for (size_t i = 0; i < NR_ROWS; i++)
		tests[i] = (struct CMUnitTest){
			.name = rows[i].name,
			.test_func = row,
			.setup_func = row_setup,
			.teardown_func = dev_teardown,
			.initial_state = (void *)&rows[i],
		};
	/* One line a WARN: the backtraces would be captured with them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("dma-ops-end-class", tests, NR_ROWS,
				       NULL, NULL);
}
