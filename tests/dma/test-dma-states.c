// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Every call on a device's DMA memory in every state the memory can be in
 * (docs/dma.md, "Lifetime of a device's DMA state"), from one thread, one
 * table for a coherent buffer and one for a streaming mapping. The states:
 * live (plain or managed; a mapping by dma_map_single() or dma_map_page()),
 * live past the device's release (its DMA state kept as an orphan for it),
 * freed by the release (a managed buffer's handle kept by the driver),
 * given back by each call, by the wrong call, twice. The calls: every
 * allocation, free, map, unmap and sync of the API, managed and plain, the
 * device model's dma_iova_to_virt(), and the release of the device's
 * resources. Each cell checks the call's result, the exact WARN count,
 * whether the state's buffer or mapping still reaches its memory after
 * the call, and the device's nodes (its DMA state, its managed buffers);
 * then everything left is given back, nothing reaches memory any more,
 * and the fixture finds the ledger at its baseline. The same memory two
 * calls at a time from two threads is tests/dma/test-dma-pairs.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"
#include "states.h"

/*
 * A cell: the call's result @r (1 for "got a buffer" or "reaches its
 * memory", the count of a release, 0 for a void call), whether the state's
 * buffer or mapping reaches its memory after it (@live), @w WARNs, the
 * device's nodes after it (@n). The result and @live are compared as one
 * number, r * 10 + live.
 */
#define E(r, live, w, n) STATES_LEFT((r)*10 + (live), w, NULL, n)

/* Coherent buffers. */

enum buf_state {
	B_PLAIN,
	B_MANAGED,
	B_ORPHAN,
	B_RELEASED,
	B_FREED,
	B_DMAM_FREED,
	B_HAND_FREED,
	B_PLAIN_DMAM_FREED,
	B_TWICE,
	NR_BUF_STATES
};
static const char *const buf_state_name[NR_BUF_STATES] = {
	"plain buffer",
	"managed buffer",
	"plain buffer past the release",
	"managed buffer freed by the release",
	"plain buffer freed",
	"managed buffer freed by dmam_free_coherent",
	"managed buffer freed by dma_free_coherent",
	"plain buffer given to dmam_free_coherent",
	"plain buffer freed twice",
};

enum buf_call {
	B_ALLOC,
	B_DMAM_ALLOC,
	B_FREE,
	B_DMAM_FREE,
	B_UNMAP,
	B_SYNC,
	B_IOVA,
	B_RELEASE,
	NR_BUF_CALLS
};
static const char *const buf_call_name[NR_BUF_CALLS] = {
	"dma_alloc_coherent",	    "dmam_alloc_coherent",
	"dma_free_coherent",	    "dmam_free_coherent",
	"dma_unmap_single(buffer)", "dma_sync_single_for_cpu(buffer)",
	"dma_iova_to_virt(buffer)", "devres_release_all",
};

/* A buffer live, with its DMA state's node (and its own when managed). */
#define B_LIVE(n)                                                              \
	{                                                                      \
		E(1, 1, 0, n), E(1, 1, 0, (n) + 1), E(0, 0, 0, 1),             \
			E(0, 1, 1, n), E(0, 1, 1, n), E(0, 1, 0, n),           \
			E(1, 1, 0, n), E((n) == 1, 1, 0, 0)                    \
	}
/* A buffer gone, its handle stale: the device still has its state (n 1). */
#define B_GONE(n)                                                              \
	{                                                                      \
		E(1, 0, 0, (n) ? (n) : 1), E(1, 0, 0, (n) ? (n) + 1 : 2),      \
			E(0, 0, 1, n), E(0, 0, 1, n), E(0, 0, 1, n),           \
			E(0, 0, 0, n), E(0, 0, 0, n), E(n, 0, 0, 0)            \
	}

static const struct states_cell buf_table[NR_BUF_STATES][NR_BUF_CALLS] = {
	/* alloc, dmam alloc, free, dmam free, unmap, sync, iova, release */
	[B_PLAIN] = B_LIVE(1),
	/*
	 * dma_free_coherent() of a managed buffer: WARN, freed, its node
	 * taken off; the release gives back the buffer and the state.
	 */
	[B_MANAGED] = { E(1, 1, 0, 2), E(1, 1, 0, 3), E(0, 0, 1, 1),
			E(0, 0, 0, 1), E(0, 1, 1, 2), E(0, 1, 0, 2),
			E(1, 1, 0, 2), E(2, 0, 0, 0) },
	/*
	 * The orphan state serves the device's next buffers; it has no node
	 * (a managed buffer's own is the one).
	 */
	[B_ORPHAN] = { E(1, 1, 0, 0), E(1, 1, 0, 1), E(0, 0, 0, 0),
		       E(0, 1, 1, 0), E(0, 1, 1, 0), E(0, 1, 0, 0),
		       E(1, 1, 0, 0), E(0, 1, 0, 0) },
	[B_RELEASED] = B_GONE(0),
	[B_FREED] = B_GONE(1),
	[B_DMAM_FREED] = B_GONE(1),
	[B_HAND_FREED] = B_GONE(1),
	[B_PLAIN_DMAM_FREED] = B_LIVE(1),
	[B_TWICE] = B_GONE(1),
};

/*
 * In debug mode (devres_set_dma_debug()): the first buffer of the device
 * adds a sentinel node that reports, at the device's release, the buffers
 * still live (one WARN, once); a sync of what is no streaming mapping is
 * reported.
 */
#define B_GONE_DEBUG(n)                                                        \
	{                                                                      \
		E(1, 0, 0, (n) ? (n) : 2), E(1, 0, 0, (n) ? (n) + 1 : 3),      \
			E(0, 0, 1, n), E(0, 0, 1, n), E(0, 0, 1, n),           \
			E(0, 0, 1, n), E(0, 0, 0, n), E(n, 0, 0, 0)            \
	}
#define B_LIVE_DEBUG                                                           \
	{                                                                      \
		E(1, 1, 0, 2), E(1, 1, 0, 3), E(0, 0, 0, 2), E(0, 1, 1, 2),    \
			E(0, 1, 1, 2), E(0, 1, 1, 2), E(1, 1, 0, 2),           \
			E(2, 1, 1, 0)                                          \
	}

static const struct states_cell buf_debug[NR_BUF_STATES][NR_BUF_CALLS] = {
	/* alloc, dmam alloc, free, dmam free, unmap, sync, iova, release */
	[B_PLAIN] = B_LIVE_DEBUG,
	[B_MANAGED] = { E(1, 1, 0, 3), E(1, 1, 0, 4), E(0, 0, 1, 2),
			E(0, 0, 0, 2), E(0, 1, 1, 3), E(0, 1, 1, 3),
			E(1, 1, 0, 3), E(3, 0, 0, 0) },
	/* Its leak reported at the release; a new buffer arms a sentinel. */
	[B_ORPHAN] = { E(1, 1, 0, 1), E(1, 1, 0, 2), E(0, 0, 0, 0),
		       E(0, 1, 1, 0), E(0, 1, 1, 0), E(0, 1, 1, 0),
		       E(1, 1, 0, 0), E(0, 1, 0, 0) },
	[B_RELEASED] = B_GONE_DEBUG(0),
	[B_FREED] = B_GONE_DEBUG(2),
	[B_DMAM_FREED] = B_GONE_DEBUG(2),
	[B_HAND_FREED] = B_GONE_DEBUG(2),
	[B_PLAIN_DMAM_FREED] = B_LIVE_DEBUG,
	[B_TWICE] = B_GONE_DEBUG(2),
};

#define BUF 4096
/* A new buffer, of another size than the state's. */
#define NEW_BUF (2 * BUF)
#define MARK 0x5ca1ab1e5ca1ab1eULL

static void *cpu;
static dma_addr_t buf_handle;

static void buf_reach(unsigned int s)
{
	bool managed = s == B_MANAGED || s == B_RELEASED || s == B_DMAM_FREED ||
		       s == B_HAND_FREED;

	if (managed)
		cpu = dmam_alloc_coherent(&tdev, BUF, &buf_handle, GFP_KERNEL);
	else
		cpu = dma_alloc_coherent(&tdev, BUF, &buf_handle, GFP_KERNEL);
	assert_non_null(cpu);
	*(uint64_t *)cpu = MARK;
	switch (s) {
	case B_ORPHAN:
	case B_RELEASED:
		devres_release_all(&tdev);
		break;
	case B_DMAM_FREED:
	case B_PLAIN_DMAM_FREED:
		dmam_free_coherent(&tdev, BUF, cpu, buf_handle);
		break;
	case B_TWICE:
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
		/* fall through */
	case B_FREED:
	case B_HAND_FREED:
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
		break;
	default:
		break;
	}
}

static void buf_reach_debug(unsigned int s)
{
	devres_set_dma_debug(true);
	buf_reach(s);
}

/*
 * The state's buffer, not a new one given the same bus and CPU addresses
 * since (a new DMA state's IOVA space starts where the old one did): new
 * buffers are zeroed, the state's carries a mark.
 */
static bool buf_live(void)
{
	uint64_t *p = dma_iova_to_virt(&tdev, buf_handle, BUF);

	return p && p == cpu && *p == MARK;
}

static int buf_make(unsigned int c)
{
	dma_addr_t h;
	void *p;
	int r = 0;

	switch (c) {
	case B_ALLOC:
		p = dma_alloc_coherent(&tdev, NEW_BUF, &h, GFP_KERNEL);
		if (p)
			dma_free_coherent(&tdev, NEW_BUF, p, h);
		r = p != NULL;
		break;
	case B_DMAM_ALLOC:
		/* Kept: the release gives it back. */
		r = dmam_alloc_coherent(&tdev, NEW_BUF, &h, GFP_KERNEL) != NULL;
		break;
	case B_FREE:
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
		break;
	case B_DMAM_FREE:
		dmam_free_coherent(&tdev, BUF, cpu, buf_handle);
		break;
	case B_UNMAP:
		dma_unmap_single(&tdev, buf_handle, BUF, DMA_BIDIRECTIONAL);
		break;
	case B_SYNC:
		dma_sync_single_for_cpu(&tdev, buf_handle, BUF,
					DMA_BIDIRECTIONAL);
		break;
	case B_IOVA:
		r = buf_live();
		break;
	case B_RELEASE:
		r = devres_release_all(&tdev);
		break;
	default:
		fail();
	}
	return r * 10 + buf_live();
}

/*
 * The release gives back the managed buffers and orphans the state under
 * a plain one; the plain one still live is freed by hand; then nothing
 * reaches the buffer and the device has no DMA state.
 */
static void buf_undo(unsigned int s, const struct states_cell *want)
{
	(void)s;
	(void)want;
	devres_release_all(&tdev);
	devres_set_dma_debug(false);
	if (buf_live())
		dma_free_coherent(&tdev, BUF, cpu, buf_handle);
	assert_false(buf_live());
	assert_null(tdev.dma_state);
}

/* Streaming mappings. */

enum map_state {
	M_SINGLE,
	M_PAGE,
	M_ORPHAN,
	M_UNMAPPED,
	M_PAGE_UNMAPPED,
	M_UNMAPPED_AS_PAGE,
	M_TWICE,
	M_FREED_AS_BUFFER,
	NR_MAP_STATES
};
static const char *const map_state_name[NR_MAP_STATES] = {
	"single mapping",
	"page mapping",
	"single mapping past the release",
	"single mapping unmapped",
	"page mapping unmapped",
	"single mapping unmapped by dma_unmap_page",
	"single mapping unmapped twice",
	"single mapping given to dma_free_coherent",
};

enum map_call {
	M_MAP_SINGLE,
	M_MAP_PAGE,
	M_UNMAP_SINGLE,
	M_UNMAP_PAGE,
	M_SYNC_CPU,
	M_SYNC_DEVICE,
	M_IOVA,
	M_FREE,
	M_DMAM_FREE,
	M_RELEASE,
	NR_MAP_CALLS
};
static const char *const map_call_name[NR_MAP_CALLS] = {
	"dma_map_single",
	"dma_map_page",
	"dma_unmap_single",
	"dma_unmap_page",
	"dma_sync_single_for_cpu",
	"dma_sync_single_for_device",
	"dma_iova_to_virt(mapping)",
	"dma_free_coherent(mapping)",
	"dmam_free_coherent(mapping)",
	"devres_release_all",
};

/*
 * A mapping live, on a state with a node (n 1) or an orphan (n 0): an
 * unmap by either call removes it whole (the kind is checked in debug
 * mode only); a free of its handle WARNs and leaves it.
 */
#define M_LIVE(n)                                                              \
	{                                                                      \
		E(1, 1, 0, n), E(1, 1, 0, n), E(0, 0, 0, n), E(0, 0, 0, n),    \
			E(0, 1, 0, n), E(0, 1, 0, n), E(1, 1, 0, n),           \
			E(0, 1, 1, n), E(0, 1, 1, n), E(n, 1, 0, 0)            \
	}
/* A mapping gone: an unmap or a free WARNs; a sync is checked in debug. */
#define M_GONE                                                                 \
	{                                                                      \
		E(1, 0, 0, 1), E(1, 0, 0, 1), E(0, 0, 1, 1), E(0, 0, 1, 1),    \
			E(0, 0, 0, 1), E(0, 0, 0, 1), E(0, 0, 0, 1),           \
			E(0, 0, 1, 1), E(0, 0, 1, 1), E(1, 0, 0, 0)            \
	}

static const struct states_cell map_table[NR_MAP_STATES][NR_MAP_CALLS] = {
	/* map single, map page, unmap single, unmap page, sync cpu,
	 * sync device, iova, free, dmam free, release */
	[M_SINGLE] = M_LIVE(1),	    [M_PAGE] = M_LIVE(1),
	[M_ORPHAN] = M_LIVE(0),	    [M_UNMAPPED] = M_GONE,
	[M_PAGE_UNMAPPED] = M_GONE, [M_UNMAPPED_AS_PAGE] = M_GONE,
	[M_TWICE] = M_GONE,	    [M_FREED_AS_BUFFER] = M_LIVE(1),
};

/*
 * In debug mode: the first mapping adds the sentinel (n 2); an unmap by
 * the call of the other kind, a sync of what is not live, and the release
 * of the device with a mapping live are reported.
 */
#define M_LIVE_DEBUG(n, single, page)                                          \
	{                                                                      \
		E(1, 1, 0, (n) ? (n) : 1), E(1, 1, 0, (n) ? (n) : 1),          \
			E(0, 0, single, n), E(0, 0, page, n), E(0, 1, 0, n),   \
			E(0, 1, 0, n), E(1, 1, 0, n), E(0, 1, 1, n),           \
			E(0, 1, 1, n), E(n, 1, (n) > 0, 0)                     \
	}
#define M_GONE_DEBUG                                                           \
	{                                                                      \
		E(1, 0, 0, 2), E(1, 0, 0, 2), E(0, 0, 1, 2), E(0, 0, 1, 2),    \
			E(0, 0, 1, 2), E(0, 0, 1, 2), E(0, 0, 0, 2),           \
			E(0, 0, 1, 2), E(0, 0, 1, 2), E(2, 0, 0, 0)            \
	}

static const struct states_cell map_debug[NR_MAP_STATES][NR_MAP_CALLS] = {
	/* map single, map page, unmap single, unmap page, sync cpu,
	 * sync device, iova, free, dmam free, release */
	[M_SINGLE] = M_LIVE_DEBUG(2, 0, 1),
	[M_PAGE] = M_LIVE_DEBUG(2, 1, 0),
	/* Its leak reported at the release; a new mapping arms a sentinel. */
	[M_ORPHAN] = M_LIVE_DEBUG(0, 0, 1),
	[M_UNMAPPED] = M_GONE_DEBUG,
	[M_PAGE_UNMAPPED] = M_GONE_DEBUG,
	[M_UNMAPPED_AS_PAGE] = M_GONE_DEBUG,
	[M_TWICE] = M_GONE_DEBUG,
	[M_FREED_AS_BUFFER] = M_LIVE_DEBUG(2, 0, 1),
};

#define PAGES 4096
#define MAP 256
#define OFFSET 64

static char pages[2 * PAGES] __attribute__((aligned(PAGES)));
static void *mapped;
static dma_addr_t map_handle;
static bool as_page;

static void map_reach(unsigned int s)
{
	as_page = s == M_PAGE || s == M_PAGE_UNMAPPED;
	mapped = pages + OFFSET;
	if (as_page)
		map_handle = dma_map_page(&tdev, (struct page *)pages, OFFSET,
					  MAP, DMA_TO_DEVICE);
	else
		map_handle = dma_map_single(&tdev, mapped, MAP, DMA_TO_DEVICE);
	assert_int_equal(dma_mapping_error(&tdev, map_handle), 0);
	switch (s) {
	case M_ORPHAN:
		devres_release_all(&tdev);
		break;
	case M_TWICE:
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		/* fall through */
	case M_UNMAPPED:
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		break;
	case M_PAGE_UNMAPPED:
	case M_UNMAPPED_AS_PAGE:
		dma_unmap_page(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		break;
	case M_FREED_AS_BUFFER:
		dma_free_coherent(&tdev, MAP, mapped, map_handle);
		break;
	default:
		break;
	}
}

static void map_reach_debug(unsigned int s)
{
	devres_set_dma_debug(true);
	map_reach(s);
}

static bool map_live(void)
{
	return dma_iova_to_virt(&tdev, map_handle, MAP) == mapped;
}

static int map_make(unsigned int c)
{
	dma_addr_t h;
	int r = 0;

	switch (c) {
	case M_MAP_SINGLE:
	case M_MAP_PAGE:
		/* Another buffer of the same pages, unmapped at once. */
		if (c == M_MAP_SINGLE)
			h = dma_map_single(&tdev, pages + PAGES, MAP,
					   DMA_FROM_DEVICE);
		else
			h = dma_map_page(&tdev, (struct page *)(pages + PAGES),
					 0, MAP, DMA_FROM_DEVICE);
		r = !dma_mapping_error(&tdev, h);
		if (r && c == M_MAP_SINGLE)
			dma_unmap_single(&tdev, h, MAP, DMA_FROM_DEVICE);
		else if (r)
			dma_unmap_page(&tdev, h, MAP, DMA_FROM_DEVICE);
		break;
	case M_UNMAP_SINGLE:
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		break;
	case M_UNMAP_PAGE:
		dma_unmap_page(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		break;
	case M_SYNC_CPU:
		dma_sync_single_for_cpu(&tdev, map_handle, MAP, DMA_TO_DEVICE);
		break;
	case M_SYNC_DEVICE:
		dma_sync_single_for_device(&tdev, map_handle, MAP,
					   DMA_TO_DEVICE);
		break;
	case M_IOVA:
		r = map_live();
		break;
	case M_FREE:
		dma_free_coherent(&tdev, MAP, mapped, map_handle);
		break;
	case M_DMAM_FREE:
		dmam_free_coherent(&tdev, MAP, mapped, map_handle);
		break;
	case M_RELEASE:
		r = devres_release_all(&tdev);
		break;
	default:
		fail();
	}
	return r * 10 + map_live();
}

/* The mapping still live is unmapped by its own call; then none is. */
static void map_undo(unsigned int s, const struct states_cell *want)
{
	(void)s;
	(void)want;
	devres_release_all(&tdev);
	devres_set_dma_debug(false);
	if (map_live() && as_page)
		dma_unmap_page(&tdev, map_handle, MAP, DMA_TO_DEVICE);
	else if (map_live())
		dma_unmap_single(&tdev, map_handle, MAP, DMA_TO_DEVICE);
	assert_false(map_live());
	assert_null(tdev.dma_state);
}

static const struct states_table tables[] = {
	STATES_TABLE_LEFT(buf_table, buf_state_name, buf_call_name, buf_reach,
			  buf_make, &tdev, buf_undo, dev_setup, dev_teardown),
	STATES_TABLE_LEFT(map_table, map_state_name, map_call_name, map_reach,
			  map_make, &tdev, map_undo, dev_setup, dev_teardown),
	STATES_TABLE_LEFT(buf_debug, buf_state_name, buf_call_name,
			  buf_reach_debug, buf_make, &tdev, buf_undo, dev_setup,
			  dev_teardown),
	STATES_TABLE_LEFT(map_debug, map_state_name, map_call_name,
			  map_reach_debug, map_make, &tdev, map_undo, dev_setup,
			  dev_teardown),
};

int main(void)
{
	return states_main("dma-states", tables,
			   sizeof(tables) / sizeof(tables[0]));
}
