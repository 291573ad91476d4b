// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of calls on a device's DMA memory, made at once from two
 * threads, many rounds (DEVRES_PAIRS_ROUNDS), in each state the memory
 * can be held in: a plain coherent buffer and a streaming mapping live;
 * the same with a managed (dmam_) buffer; both live after the device's
 * release, which kept its DMA state as an orphan for them
 * (docs/dma.md, "Lifetime of a device's DMA state"); both given back,
 * their handles stale. The calls: dma_free_coherent() and
 * dmam_free_coherent() of the buffer, dma_unmap_single() and
 * dma_sync_single_for_cpu() of the mapping, dma_iova_to_virt() of each,
 * and the device's release (devres_release_all()). Each pair must end as
 * one of its two serial orders does (tests/pairs.h): the same returns,
 * the same WARNs (a free or unmap of what is gone is one, never two
 * frees of one buffer), and the same memory after (which handles still
 * reach their memory, what the device's release and the plain frees then
 * find); the ledger's DMA counts are back at their baseline after each
 * state. Then a pool (docs/dma.md, "States of a pool"): live and empty,
 * live with a block out, managed with a block out, destroyed; the calls
 * dma_pool_alloc(), dma_pool_free() of the state's block,
 * dma_pool_destroy(), dmam_pool_destroy() and the device's release.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"

enum state {
	PLAIN,
	MANAGED,
	ORPHAN,
	GONE,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"plain buffer, mapping",
	"managed buffer, mapping",
	"both past the release",
	"both given back",
};

enum call {
	FREE,
	DMAM_FREE,
	UNMAP,
	SYNC,
	IOVA_BUF,
	IOVA_MAP,
	RELEASE,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"dma_free_coherent",	    "dmam_free_coherent",
	"dma_unmap_single",	    "dma_sync_single_for_cpu",
	"dma_iova_to_virt(buffer)", "dma_iova_to_virt(mapping)",
	"devres_release_all",
};

#define BUF 4096
#define MAP 256

static char streamed[MAP] __attribute__((aligned(64)));
static void *cpu;
static dma_addr_t buf_handle, map_handle;

static void reach(unsigned int s)
{
	if (s == MANAGED)
		cpu = dmam_alloc_coherent(&tdev, BUF, &buf_handle, GFP_KERNEL);
	else
		cpu = dma_alloc_coherent(&tdev, BUF, &buf_handle, GFP_KERNEL);
	assert_non_null(cpu);
	map_handle = dma_map_single(&tdev, streamed, MAP, DMA_TO_DEVICE);
	assert_int_equal(dma_mapping_error(&tdev, map_handle), 0);
	if (s == ORPHAN || s == GONE)
		devres_release_all(&tdev);
	if (s == GONE) {
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
	}
}

static int make(unsigned int c)
{
	switch (c) {
	case FREE:
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
		return 0;
	case DMAM_FREE:
		dmam_free_coherent(&tdev, BUF, cpu, buf_handle);
		return 0;
	case UNMAP:
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		return 0;
	case SYNC:
		dma_sync_single_for_cpu(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		return 0;
	case IOVA_BUF:
		return dma_iova_to_virt(&tdev, buf_handle, BUF) == cpu;
	case IOVA_MAP:
		return dma_iova_to_virt(&tdev, map_handle, MAP) ==
		       (void *)streamed;
	case RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * What the pair left: which handles still reach their memory, what the
 * device's release then finds, and the WARNs of giving back the rest with
 * the plain calls (one for each that was already gone).
 */
static void undo(struct pairs_outcome *o)
{
	int w0;

	o->after[0] = dma_iova_to_virt(&tdev, buf_handle, BUF) == cpu;
	o->after[1] = dma_iova_to_virt(&tdev, map_handle, MAP) ==
		      (void *)streamed;
	o->after[2] = devres_release_all(&tdev);
	w0 = devres_warn_count();
	if (o->after[0])
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
	if (o->after[1])
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
	o->after[3] = devres_warn_count() - w0;
	/* Nothing reaches either any more. */
	o->after[4] = dma_iova_to_virt(&tdev, buf_handle, BUF) != NULL ||
		      dma_iova_to_virt(&tdev, map_handle, MAP) != NULL;
}

#ifdef T_TSAN
#define ROUNDS 40
#else
#define ROUNDS 60
#endif

/* Pools. */

enum pool_state {
	EMPTY,
	BLOCK,
	POOL_MANAGED,
	DESTROYED,
	NR_POOL_STATES
};
static const char *const pool_states[NR_POOL_STATES] = {
	"live, empty",
	"live, a block out",
	"managed, a block out",
	"destroyed",
};

enum pool_call {
	ALLOC,
	POOL_FREE,
	DESTROY,
	DMAM_DESTROY,
	POOL_RELEASE,
	NR_POOL_CALLS
};
static const char *const pool_calls[NR_POOL_CALLS] = {
	"dma_pool_alloc",    "dma_pool_free",	   "dma_pool_destroy",
	"dmam_pool_destroy", "devres_release_all",
};

#define BLOCK_SIZE 64

static struct dma_pool *pool;
static void *blk, *got[2];
static dma_addr_t blk_h, got_h[2];
static int ngot;

static void pool_reach(unsigned int s)
{
	ngot = 0;
	blk = NULL;
	blk_h = 0;
	if (s == POOL_MANAGED)
		pool = dmam_pool_create("pairs", &tdev, BLOCK_SIZE, BLOCK_SIZE,
					0);
	else
		pool = dma_pool_create("pairs", &tdev, BLOCK_SIZE, BLOCK_SIZE,
				       0);
	assert_non_null(pool);
	if (s == BLOCK || s == POOL_MANAGED) {
		blk = dma_pool_alloc(pool, GFP_KERNEL, &blk_h);
		assert_non_null(blk);
	}
	if (s == DESTROYED)
		dma_pool_destroy(pool);
}

static int pool_call(unsigned int c)
{
	dma_addr_t h;
	void *p;
	int i;

	switch (c) {
	case ALLOC:
		p = dma_pool_alloc(pool, GFP_KERNEL, &h);
		if (p) {
			i = __atomic_fetch_add(&ngot, 1, __ATOMIC_ACQ_REL);
			got[i] = p;
			got_h[i] = h;
		}
		return p != NULL;
	case POOL_FREE:
		dma_pool_free(pool, blk, blk_h);
		return 0;
	case DESTROY:
		dma_pool_destroy(pool);
		return 0;
	case DMAM_DESTROY:
		dmam_pool_destroy(pool);
		return 0;
	case POOL_RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/* The chunk of a leaked block handed back by hand; whether there was one. */
static int chunk_back(void *p, dma_addr_t h)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *start = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
	dma_addr_t hstart = h & ~(dma_addr_t)(page - 1);

	if (!p || dma_iova_to_virt(&tdev, hstart, page) != start)
		return 0;
	dma_free_coherent(&tdev, page, start, hstart);
	return 1;
}

/*
 * What the pair left: the blocks it got, what the release then finds,
 * the chunks a destroy leaked under a block still out (handed back by
 * hand here, as the pool states test does), and the WARNs of giving back
 * the rest: the blocks to the pool and the pool destroyed, each a WARN
 * when the pool is gone.
 */
static void pool_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = ngot;
	o->after[1] = devres_release_all(&tdev);
	for (int i = 0; i < ngot; i++)
		dma_pool_free(pool, got[i], got_h[i]);
	dma_pool_destroy(pool);
	o->after[2] = chunk_back(blk, blk_h);
	for (int i = 0; i < ngot; i++)
		o->after[2] += chunk_back(got[i], got_h[i]);
	o->after[3] = devres_warn_count() - w0;
}

PAIRS_TEST(pool_pairs, ROUNDS, PAIRS_NAMES(pool_states, pool_calls),
	   .reach = pool_reach, .call = pool_call, .undo = pool_undo)

PAIRS_TEST(every_pair_in_every_state, ROUNDS,
	   PAIRS_NAMES(state_name, call_name), .reach = reach, .call = make,
	   .undo = undo)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(pool_pairs, dev_setup,
						dev_teardown),
	};

	return pairs_group("dma-pairs", tests,
			   sizeof(tests) / sizeof(tests[0]));
}
