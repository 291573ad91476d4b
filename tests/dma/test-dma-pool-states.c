// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a DMA pool in every state of the pool (docs/dma.md,
 * "States of a pool"): live and empty, live with a block out, destroyed
 * by dma_pool_destroy(), destroyed by the device's release (a dmam_ pool
 * whose handle the driver kept). Each cell checks the result and the
 * exact WARN count. A destroyed pool's handle is never read after free
 * (the header's slot is kept, its generation moved on: ASan would see the
 * read it used to make) and stays dead while newer pools come and go in
 * its slot (tests/base/test-handles.c makes a hundred). Then
 * a thread allocating from a pool races its destroy: each call gets a
 * block or NULL with a WARN, never freed memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"
#include "states.h"

enum state {
	EMPTY,
	BUSY,
	DESTROYED,
	RELEASED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"empty",
	"a block out",
	"destroyed",
	"destroyed by the device's release",
};

enum call {
	ALLOC,
	ZALLOC,
	FREE_OWN,     /* dma_pool_free() of its block (BUSY), else of none */
	FREE_FOREIGN, /* dma_pool_free() of another pool's block */
	DESTROY,
	DMAM_DESTROY,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"dma_pool_alloc",	  "dma_pool_zalloc",  "dma_pool_free(own)",
	"dma_pool_free(foreign)", "dma_pool_destroy", "dmam_pool_destroy",
};

/* ret: 1 for a block (allocations), 0 otherwise. */
#define C(r, w) STATES_CELL(r, w)

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* alloc, zalloc, free own, free foreign, destroy, dmam destroy */
	[EMPTY] = { C(1, 0), C(1, 0), C(0, 1), C(0, 1), C(0, 0), C(0, 1) },
	[BUSY] = { C(1, 0), C(1, 0), C(0, 0), C(0, 1), C(0, 1), C(0, 1) },
	[DESTROYED] = { C(0, 1), C(0, 1), C(0, 1), C(0, 1), C(0, 1), C(0, 1) },
	[RELEASED] = { C(0, 1), C(0, 1), C(0, 1), C(0, 1), C(0, 1), C(0, 1) },
};

static struct dma_pool *pool, *other_pool;
static bool leaked;
static void *block, *other_block;
static dma_addr_t handle, other_handle;
static bool pool_gone, block_out;

static void reach(unsigned int s)
{
	pool_gone = block_out = false;
	other_pool = dma_pool_create("other", &tdev, 64, 8, 0);
	assert_non_null(other_pool);
	other_block = dma_pool_alloc(other_pool, GFP_KERNEL, &other_handle);
	assert_non_null(other_block);
	if (s == RELEASED) {
		/* The device's release takes the pool; the other is plain. */
		pool = dmam_pool_create("mine", &other, 64, 8, 0);
		assert_non_null(pool);
		devres_release_all(&other);
		pool_gone = true;
		return;
	}
	pool = dma_pool_create("mine", &tdev, 64, 8, 0);
	assert_non_null(pool);
	if (s == BUSY) {
		block = dma_pool_alloc(pool, GFP_KERNEL, &handle);
		assert_non_null(block);
		block_out = true;
	}
	if (s == DESTROYED) {
		dma_pool_destroy(pool);
		pool_gone = true;
	}
}

static int make(unsigned int c)
{
	dma_addr_t h;
	void *p;

	switch (c) {
	case ALLOC:
	case ZALLOC:
		p = c == ALLOC ? dma_pool_alloc(pool, GFP_KERNEL, &h)
			       : dma_pool_zalloc(pool, GFP_KERNEL, &h);
		if (p)
			dma_pool_free(pool, p, h);
		return p != NULL;
	case FREE_OWN:
		if (block_out) {
			dma_pool_free(pool, block, handle);
			block_out = false;
		} else {
			/* A block never handed out: its address, its bus handle. */
			dma_pool_free(pool, other_block, other_handle);
		}
		return 0;
	case FREE_FOREIGN:
		dma_pool_free(pool, other_block, other_handle);
		return 0;
	case DESTROY:
		dma_pool_destroy(pool);
		/* A block out is leaked by the destroy, as the kernel does. */
		if (!pool_gone && block_out) {
			block_out = false;
			leaked = true;
		}
		pool_gone = true;
		return 0;
	case DMAM_DESTROY:
		dmam_pool_destroy(pool);
		return 0;
	default:
		fail();
	}
	return -1;
}

static void undo(void)
{
	if (block_out)
		dma_pool_free(pool, block, handle);
	if (!pool_gone)
		dma_pool_destroy(pool);
	dma_pool_free(other_pool, other_block, other_handle);
	dma_pool_destroy(other_pool);
	/*
	 * A pool destroyed with a block out leaks that block's chunk, as the
	 * kernel does (the device may still use it).
	 */
	if (leaked) {
		/* The block starts its chunk: hand the chunk back by hand. */
		dma_free_coherent(&tdev, (size_t)getpagesize(), block, handle);
		leaked = false;
	}
}

static const struct states_table pool_states =
	STATES_TABLE(table, state_name, call_name, reach, make, undo,
		     two_dev_setup, dev_teardown);

/* A stale handle stays dead while newer pools come and go. */
static void stale_handle_stays_dead(void **state)
{
	struct dma_pool *stale = dmam_pool_create("stale", &tdev, 64, 8, 0);
	dma_addr_t h;

	(void)state;
	assert_non_null(stale);
	devres_release_all(&tdev);
	for (int i = 0; i < 64; i++) {
		struct dma_pool *p = dma_pool_create("churn", &tdev, 64, 8, 0);

		assert_non_null(p);
		assert_ptr_not_equal(p, stale);
		dma_pool_destroy(p);
	}
	start_capture();
	assert_null(dma_pool_alloc(stale, GFP_KERNEL, &h));
	expect_warn_on("(no device)", "dma_pool_alloc", "was destroyed");
}

static struct dma_pool *race_pool;
static int race_go, race_got, race_refused, race_leaks;
static void *race_last;
static dma_addr_t race_last_h;

static void count_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	if (strstr(text, "busy block(s), leaked"))
		__atomic_add_fetch(&race_leaks, 1, __ATOMIC_RELAXED);
}

/*
 * Allocates and frees until the pool is gone: one refusal ends it. Each
 * block is the first of its chunk (one out at a time), remembered in case
 * the destroy leaked it.
 */
static void *allocator(void *arg)
{
	(void)arg;
	for (;;) {
		dma_addr_t h;
		void *p = dma_pool_alloc(race_pool, GFP_KERNEL, &h);

		if (!p) {
			__atomic_add_fetch(&race_refused, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		race_last = p;
		race_last_h = h;
		memset(p, 0x5a, 64);
		dma_pool_free(race_pool, p, h);
		__atomic_add_fetch(&race_got, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&race_go, 1, __ATOMIC_RELEASE);
	}
}

/*
 * dma_pool_alloc() and dma_pool_free() on one thread racing
 * dma_pool_destroy() on another (the kernel's contract: the driver stops
 * its users first; this one did not). A call gets a block or, once the
 * pool is gone, NULL with a WARN; never memory the destroy freed (ASan),
 * never a lock the destroy held (TSan). A block out at the destroy is
 * leaked with the pool's WARN, as the kernel does, and handed back here.
 */
static void alloc_races_destroy(void **state)
{
	const int rounds = 20;

	(void)state;
	devres_set_log_sink(count_sink, NULL);
	for (int round = 0; round < rounds; round++) {
		int leaks = __atomic_load_n(&race_leaks, __ATOMIC_RELAXED);
		pthread_t t;

		race_pool = dma_pool_create("race", &tdev, 64, 8, 0);
		assert_non_null(race_pool);
		__atomic_store_n(&race_go, 0, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, allocator, NULL), 0);
		/* Destroyed once the user has had a block: mid-use. */
		while (!__atomic_load_n(&race_go, __ATOMIC_ACQUIRE))
			sched_yield();
		dma_pool_destroy(race_pool);
		pthread_join(t, NULL);
		if (__atomic_load_n(&race_leaks, __ATOMIC_RELAXED) != leaks)
			dma_free_coherent(&tdev, (size_t)getpagesize(),
					  race_last, race_last_h);
	}
	devres_set_log_sink(NULL, NULL);
	print_message("blocks %d, refused %d, destroyed busy %d\n", race_got,
		      race_refused, race_leaks);
	assert_int_equal(race_refused, rounds);
	assert_true(race_got >= rounds);
}

int main(void)
{
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS + 2];
	size_t n = states_tests(&pool_states, ids, tests);

	tests[n++] = (struct CMUnitTest){
		.name = "stale handle stays dead",
		.test_func = stale_handle_stays_dead,
		.setup_func = dev_setup,
		.teardown_func = dev_teardown,
	};
	tests[n++] = (struct CMUnitTest){
		.name = "alloc races the destroy",
		.test_func = alloc_races_destroy,
		.setup_func = dev_setup,
		.teardown_func = dev_teardown,
	};
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("dma-pool-states", tests, n, NULL, NULL);
}
