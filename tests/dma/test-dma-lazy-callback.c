// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The unmanaged DMA calls that make the device's DMA state on first use
 * (dma_map_single(), dma_map_page(), dma_alloc_coherent(), a plain pool's
 * dma_pool_alloc()), and in debug mode its check of the binding, each a
 * node of the device, called from a devres_for_each_res() callback or a
 * devres_find() or devres_get() match of that device, where the device's
 * list is the thread's own and no node can be added to it. x the state:
 * none yet, made already (debug off), made already with debug switched
 * on since (its check's node still to make). Where a node is needed the
 * call is refused before anything is made: one WARN naming it, the
 * kernel's error return, and once the device is released the ledger at
 * its start; where none is, it works with no WARN. Before, the state was
 * made and its node refused by devres_add(), which WARNed in its own
 * name: the node and the state were leaked. Each cell in a child under
 * an alarm.
 */
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
#include <devres/fault.h>
#include "testlib.h"
#include "kcompat/kc-cell.h"

enum call {
	MAP_SINGLE,
	MAP_PAGE,
	ALLOC_COHERENT,
	POOL_ALLOC,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"dma_map_single", "dma_map_page", "dma_alloc_coherent", "dma_pool_alloc"
};

enum state {
	NO_STATE,
	STATE,
	STATE_DEBUG,
	NR_STATES
};

static const char *const state_name[NR_STATES] = { "no DMA state", "DMA state",
						   "DMA state, debug switched "
						   "on" };

enum ctx {
	FOR_EACH,
	FIND,
	GET,
	NR_CTX
};

static const char *const ctx_name[NR_CTX] = { "for-each callback",
					      "devres_find match",
					      "devres_get match" };

static enum call which;
static struct dma_pool *pool;
static char buf[256] __attribute__((aligned(64)));
static dma_addr_t handle;
static void *cpu;
static bool made;

static void do_call(void)
{
	switch (which) {
	case MAP_SINGLE:
		handle = dma_map_single(&tdev, buf, 64, DMA_TO_DEVICE);
		made = handle != DMA_MAPPING_ERROR;
		break;
	case MAP_PAGE:
		handle = dma_map_page(&tdev, (struct page *)buf, 0, 64,
				      DMA_TO_DEVICE);
		made = handle != DMA_MAPPING_ERROR;
		break;
	case ALLOC_COHERENT:
		cpu = dma_alloc_coherent(&tdev, 4096, &handle, GFP_KERNEL);
		made = cpu != NULL;
		break;
	default:
		cpu = dma_pool_alloc(pool, GFP_KERNEL, &handle);
		made = cpu != NULL;
		break;
	}
}

static void undo_call(void)
{
	if (!made)
		return;
	if (which == MAP_SINGLE)
		dma_unmap_single(&tdev, handle, 64, DMA_TO_DEVICE);
	else if (which == MAP_PAGE)
		dma_unmap_page(&tdev, handle, 64, DMA_TO_DEVICE);
	else if (which == ALLOC_COHERENT)
		dma_free_coherent(&tdev, 4096, cpu, handle);
	else
		dma_pool_free(pool, cpu, handle);
}

static void helper_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void each(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	do_call();
}

static int match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	do_call();
	return 0;
}

static void cell(int call, int state, int ctx)
{
	struct devres_ledger before, after;
	struct devres_stats st;
	char head[96];
	void *h;
	int warns, nodes;
	dma_addr_t d;

	alarm(CELL_ALARM_S);
	which = (enum call)call;
	devres_ledger_snapshot(&before);
	CHECK(!init_dev(&tdev, "test-dev"));
	if (which == POOL_ALLOC) {
		pool = dma_pool_create("lazy", &tdev, 64, 8, 0);
		CHECK(pool);
	}
	if (state != NO_STATE) {
		/* The state's node made outside: a mapping made and gone. */
		d = dma_map_single(&tdev, buf + 128, 64, DMA_TO_DEVICE);
		CHECK(d != DMA_MAPPING_ERROR);
		dma_unmap_single(&tdev, d, 64, DMA_TO_DEVICE);
	}
	if (state == STATE_DEBUG)
		devres_set_dma_debug(true);
	h = devres_alloc(helper_release, 8, GFP_KERNEL);
	CHECK(h);
	devres_add(&tdev, h);
	devres_get_stats(&tdev, &st);
	nodes = st.allocs;
	start_capture();
	warns = devres_warn_count();
	if (ctx == FOR_EACH) {
		devres_for_each_res(&tdev, helper_release, NULL, NULL, each,
				    NULL);
	} else if (ctx == FIND) {
		CHECK(!devres_find(&tdev, helper_release, match, NULL));
	} else {
		h = devres_alloc(helper_release, 8, GFP_KERNEL);
		CHECK(h && devres_get(&tdev, h, match, NULL) == h);
		nodes++;
	}
	devres_set_log_sink(NULL, NULL);
	if (state == STATE) {
		if (cap.n)
			fprintf(stderr, "%s / %s / %s: \"%s\"\n",
				call_name[call], state_name[state],
				ctx_name[ctx], cap.line[0]);
		CHECK(made && !cap.n && devres_warn_count() == warns);
	} else {
		snprintf(head, sizeof(head),
			 "WARNING: test-dev: %s: ", call_name[call]);
		if (cap.n != 1 || strncmp(cap.line[0], head, strlen(head)) != 0)
			fprintf(stderr, "%s / %s / %s: %d line(s): \"%s\"\n",
				call_name[call], state_name[state],
				ctx_name[ctx], cap.n, cap.line[0]);
		CHECK(!made);
		CHECK(cap.n == 1 && devres_warn_count() - warns == 1);
		CHECK(!strncmp(cap.line[0], head, strlen(head)));
		CHECK(strstr(cap.line[0], "match or for-each callback"));
	}
	devres_get_stats(&tdev, &st);
	CHECK(st.allocs == nodes);
	undo_call();
	devres_set_dma_debug(false);
	if (pool)
		dma_pool_destroy(pool);
	devres_release_all(&tdev);
	put_device(&tdev);
	devres_ledger_snapshot(&after);
	CHECK(!devres_ledger_diff(&before, &after, stderr));
}

static void every_cell(void **state)
{
	int failed = 0;
	char name[128];

	(void)state;
	for (int c = 0; c < NR_CALLS; c++)
		for (int s = 0; s < NR_STATES; s++)
			for (int x = 0; x < NR_CTX; x++) {
				snprintf(name, sizeof(name), "%s / %s / %s",
					 call_name[c], state_name[s],
					 ctx_name[x]);
				failed += in_child(cell, c, s, x, name);
			}
	if (failed)
		fprintf(stderr, "%d of %d cells failed\n", failed,
			NR_CALLS * NR_STATES * NR_CTX);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
