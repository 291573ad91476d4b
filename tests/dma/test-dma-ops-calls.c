// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A device's DMA ops (set_dma_ops()) are the program's code, run with the
 * device's DMA lock and the DMA states' read lock held. A DMA call made
 * from them, on the same device or another, waited for one of those
 * locks for ever: the same device's lock, or the states' write lock that
 * set_dma_ops() and a device's first DMA state take. Each row makes one
 * DMA call from inside the ops' map, then from inside their unmap: it is
 * refused with exactly one WARN naming the call and the device whose ops
 * run, returns its error, and changes nothing; the mapping that ran the
 * ops is made (or given back) as usual, and the same call made outside
 * the ops then works. And ops that end their thread inside a map
 * (pthread_exit(), a cancellation) leave the locks released and the
 * device's DMA working; inside an unmap, the unmapping call's counts
 * and memory are given back too. An alarm fails a row that hangs; the
 * fixture's teardown checks the ledger.
 */
/* pthread_timedjoin_np(), in thread-end.h */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"
#include "base/thread-end.h"

enum call {
	MAP_SINGLE,
	MAP_OTHER,
	MAP_PAGE,
	UNMAP_SINGLE,
	ALLOC_COHERENT,
	FREE_COHERENT,
	DMAM_ALLOC_COHERENT,
	DMAM_FREE_COHERENT,
	POOL_CREATE,
	DMAM_POOL_CREATE,
	POOL_ALLOC,
	POOL_ZALLOC,
	POOL_FREE,
	POOL_DESTROY,
	DMAM_POOL_DESTROY,
	SET_OPS,
	SET_OPS_OTHER,
	IOVA_TO_VIRT,
	SYNC_FOR_CPU,
};

struct row {
	const char *name; /* the call, as its WARN names it */
	enum call call;
	const char *dev; /* the device its WARN names */
};

static const struct row rows[] = {
	{ "dma_map_single", MAP_SINGLE, "test-dev" },
	{ "dma_map_single", MAP_OTHER, "other-dev" },
	{ "dma_map_page", MAP_PAGE, "test-dev" },
	{ "dma_unmap_single", UNMAP_SINGLE, "test-dev" },
	{ "dma_alloc_coherent", ALLOC_COHERENT, "test-dev" },
	{ "dma_free_coherent", FREE_COHERENT, "test-dev" },
	{ "dmam_alloc_coherent", DMAM_ALLOC_COHERENT, "test-dev" },
	{ "dmam_free_coherent", DMAM_FREE_COHERENT, "test-dev" },
	{ "dma_pool_create", POOL_CREATE, "test-dev" },
	{ "dmam_pool_create", DMAM_POOL_CREATE, "test-dev" },
	{ "dma_pool_alloc", POOL_ALLOC, "test-dev" },
	{ "dma_pool_alloc", POOL_ZALLOC, "test-dev" },
	{ "dma_pool_free", POOL_FREE, "test-dev" },
	{ "dma_pool_destroy", POOL_DESTROY, "(no device)" },
	{ "dmam_pool_destroy", DMAM_POOL_DESTROY, "test-dev" },
	{ "set_dma_ops", SET_OPS, "test-dev" },
	{ "set_dma_ops", SET_OPS_OTHER, "other-dev" },
	{ "dma_iova_to_virt", IOVA_TO_VIRT, "test-dev" },
	{ "dma_sync_single_for_cpu", SYNC_FOR_CPU, "test-dev" },
};

static const struct row *cur;
static bool in_map; /* the row's call is made in map, else in unmap */
static int armed;   /* the next map or unmap makes the row's call */
static long bad;    /* the row's call returned something it should not */
static struct dma_pool *pool, *mpool;
static void *cbuf, *mbuf, *pbuf;
static dma_addr_t ch, mh, ph, made; /* made: a mapping of buf2 */
static char buf[64], buf2[64];

static void do_call(void)
{
	dma_addr_t h = 0;
	void *p = NULL;

	switch (cur->call) {
	case MAP_SINGLE:
		bad = dma_map_single(&tdev, buf2, 64, DMA_TO_DEVICE) !=
		      DMA_MAPPING_ERROR;
		break;
	case MAP_OTHER:
		bad = dma_map_single(&other, buf2, 64, DMA_TO_DEVICE) !=
		      DMA_MAPPING_ERROR;
		break;
	case MAP_PAGE:
		bad = dma_map_page(&tdev, (struct page *)buf2, 0, 64,
				   DMA_TO_DEVICE) != DMA_MAPPING_ERROR;
		break;
	case UNMAP_SINGLE:
		dma_unmap_single(&tdev, made, 64, DMA_TO_DEVICE);
		break;
	case ALLOC_COHERENT:
		bad = dma_alloc_coherent(&tdev, 4096, &h, 0) != NULL;
		break;
	case FREE_COHERENT:
		dma_free_coherent(&tdev, 4096, cbuf, ch);
		break;
	case DMAM_ALLOC_COHERENT:
		bad = dmam_alloc_coherent(&tdev, 4096, &h, 0) != NULL;
		break;
	case DMAM_FREE_COHERENT:
		dmam_free_coherent(&tdev, 4096, mbuf, mh);
		break;
	case POOL_CREATE:
		bad = dma_pool_create("x", &tdev, 64, 8, 0) != NULL;
		break;
	case DMAM_POOL_CREATE:
		bad = dmam_pool_create("x", &tdev, 64, 8, 0) != NULL;
		break;
	case POOL_ALLOC:
		bad = dma_pool_alloc(pool, 0, &h) != NULL;
		break;
	case POOL_ZALLOC:
		bad = dma_pool_zalloc(pool, 0, &h) != NULL;
		break;
	case POOL_FREE:
		dma_pool_free(pool, pbuf, ph);
		break;
	case POOL_DESTROY:
		dma_pool_destroy(pool);
		break;
	case DMAM_POOL_DESTROY:
		dmam_pool_destroy(mpool);
		break;
	case SET_OPS:
		set_dma_ops(&tdev, NULL);
		break;
	case SET_OPS_OTHER:
		set_dma_ops(&other, NULL);
		break;
	case IOVA_TO_VIRT:
		p = dma_iova_to_virt(&tdev, made, 64);
		bad = p != NULL;
		break;
	case SYNC_FOR_CPU:
		dma_sync_single_for_cpu(&tdev, made, 64, DMA_FROM_DEVICE);
		break;
	}
}

/* The ops end their thread at the next map: BY_EXIT or BY_CANCEL. */
static int ending;

static int my_map(struct device *dev, void *cpu, size_t size, size_t align,
		  uint64_t mask, dma_addr_t *ret_handle)
{
	int ret = devres_dma_iova_ops()->map(dev, cpu, size, align, mask,
					     ret_handle);

	end_thread_by((enum ending)ending);

	if (armed && in_map) {
		armed = 0;
		do_call();
	}
	return ret;
}

/* The ops end their thread at the next unmap: BY_EXIT or BY_CANCEL. */
static int ending_unmap;

static void my_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		     size_t size)
{
	if (ending_unmap) {
		/* Given back first, as ops that end after their work would. */
		devres_dma_iova_ops()->unmap(dev, handle, cpu, size);
		end_thread_by((enum ending)ending_unmap);
	}
	if (armed && !in_map) {
		armed = 0;
		do_call();
	}
	devres_dma_iova_ops()->unmap(dev, handle, cpu, size);
}

static const struct devres_dma_ops my_ops = {
	.name = "test-ops",
	.map = my_map,
	.unmap = my_unmap,
};

/* What each row may act on, made before its ops run. */
static void prepare(void)
{
	cbuf = dma_alloc_coherent(&tdev, 4096, &ch, 0);
	mbuf = dmam_alloc_coherent(&tdev, 4096, &mh, 0);
	pool = dma_pool_create("p", &tdev, 64, 8, 0);
	mpool = dmam_pool_create("mp", &tdev, 64, 8, 0);
	assert_non_null(cbuf);
	assert_non_null(mbuf);
	assert_non_null(pool);
	assert_non_null(mpool);
	pbuf = dma_pool_alloc(pool, 0, &ph);
	assert_non_null(pbuf);
	made = dma_map_single(&tdev, buf2, 64, DMA_TO_DEVICE);
	assert_int_equal(dma_mapping_error(&tdev, made), 0);
}

/* Nothing the row's call touched changed: each goes as usual now. */
static void check_and_finish(void)
{
	assert_ptr_equal(get_dma_ops(&tdev), &my_ops);
	assert_ptr_equal(dma_iova_to_virt(&tdev, made, 64), buf2);
	dma_unmap_single(&tdev, made, 64, DMA_TO_DEVICE);
	dma_pool_free(pool, pbuf, ph);
	dma_pool_destroy(pool);
	dmam_pool_destroy(mpool);
	dma_free_coherent(&tdev, 4096, cbuf, ch);
	dmam_free_coherent(&tdev, 4096, mbuf, mh);
	set_dma_ops(&tdev, NULL);
	set_dma_ops(&other, NULL);
}

static void run_row(const struct row *r, bool map)
{
	dma_addr_t h;

	cur = r;
	in_map = map;
	bad = 0;
	alarm(20); /* a row that hangs fails */
	set_dma_ops(&tdev, &my_ops);
	prepare();
	start_capture();
	armed = 1;
	h = dma_map_single(&tdev, buf, 64, DMA_TO_DEVICE);
	assert_int_equal(dma_mapping_error(&tdev, h), 0);
	dma_unmap_single(&tdev, h, 64, DMA_TO_DEVICE);
	assert_int_equal(armed, 0);
	expect_warn_on(r->dev, r->name,
		       "called from the DMA ops of test-dev, which run under "
		       "its DMA lock: refused");
	assert_int_equal(bad, 0);
	check_and_finish();
	alarm(0);
}

static void from_map(void **state)
{
	(void)state;
	devres_set_dma_debug(true);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s (%s)\n", rows[i].name, rows[i].dev);
		run_row(&rows[i], true);
	}
	devres_set_dma_debug(false);
}

static void from_unmap(void **state)
{
	(void)state;
	devres_set_dma_debug(true);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s (%s)\n", rows[i].name, rows[i].dev);
		run_row(&rows[i], false);
	}
	devres_set_dma_debug(false);
}

static void *mapper(void *arg)
{
	(void)arg;
	(void)dma_map_single(&tdev, buf, 64, DMA_TO_DEVICE);
	return NULL;
}

/*
 * The ops end the thread inside a map: the locks they ran under are
 * released (they were left held: every later DMA call on the device, and
 * the device's release, waited for ever), the mapping in hand freed.
 */
static void ops_end_thread(void **state)
{
	dma_addr_t h;
	pthread_t t;

	(void)state;
	for (ending = 1; ending <= 2; ending++) {
		print_message("%s\n", ending == 1 ? "pthread_exit" : "cancel");
		alarm(20);
		set_dma_ops(&tdev, &my_ops);
		start_capture();
		assert_int_equal(pthread_create(&t, NULL, mapper, NULL), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		expect_warn_on("test-dev", "dma_ops",
			       "the DMA ops 'test-ops' ended the thread");
		ending += 10; /* the ops no longer end the thread */
		h = dma_map_single(&tdev, buf, 64, DMA_TO_DEVICE);
		ending -= 10;
		assert_int_not_equal(h, DMA_MAPPING_ERROR);
		dma_unmap_single(&tdev, h, 64, DMA_TO_DEVICE);
		set_dma_ops(&tdev, NULL);
		assert_null(tdev.dma_ops);
		alarm(0);
	}
	ending = 0;
}

enum unmapper {
	UNMAP_STREAMING,
	FREE_PLAIN,
	FREE_MANAGED_BY_HAND
};

static const char *const unmapper_name[] = {
	"dma_unmap_single",
	"dma_free_coherent",
	"dma_free_coherent of a dmam_ buffer",
};

static enum unmapper which;
static void *ubuf;
static dma_addr_t uh;

static void *unmapper(void *arg)
{
	(void)arg;
	if (which == UNMAP_STREAMING)
		dma_unmap_single(&tdev, uh, 64, DMA_TO_DEVICE);
	else
		dma_free_coherent(&tdev, 4096, ubuf, uh);
	return NULL;
}

/*
 * The ops end the thread inside an unmap: a streaming unmap, a coherent
 * buffer's free, a managed one's free by hand. What the unmapping call
 * had left to do after the ops is done as the thread unwinds: the
 * ledger's mappings, buffers and bytes are back where they were before
 * the mapping (the buffer's memory unmapped, ASan's leak check clean),
 * the managed buffer's node gone with its WARN, the device has no live
 * mapping (set_dma_ops() changes the ops without a WARN) and its DMA
 * goes on. Before, each of those counts stayed up for good.
 */
static void ops_end_thread_in_unmap(void **state)
{
	struct devres_ledger before, now;
	dma_addr_t h;
	pthread_t t;
	int end;

	(void)state;
	for (end = 1; end <= 2; end++) {
		for (which = UNMAP_STREAMING; which <= FREE_MANAGED_BY_HAND;
		     which++) {
			print_message("%s, %s\n", unmapper_name[which],
				      end == 1 ? "pthread_exit" : "cancel");
			alarm(20);
			set_dma_ops(&tdev, &my_ops);
			/* The device's DMA state is made first, to stay. */
			h = dma_map_single(&tdev, buf2, 64, DMA_TO_DEVICE);
			dma_unmap_single(&tdev, h, 64, DMA_TO_DEVICE);
			devres_ledger_snapshot(&before);
			if (which == UNMAP_STREAMING) {
				uh = dma_map_single(&tdev, buf, 64,
						    DMA_TO_DEVICE);
				assert_int_not_equal(uh, DMA_MAPPING_ERROR);
			} else if (which == FREE_PLAIN) {
				ubuf = dma_alloc_coherent(&tdev, 4096, &uh, 0);
			} else {
				ubuf = dmam_alloc_coherent(&tdev, 4096, &uh, 0);
			}
			if (which != UNMAP_STREAMING)
				assert_non_null(ubuf);
			start_capture();
			ending_unmap = end;
			assert_int_equal(
				pthread_create(&t, NULL, unmapper, NULL), 0);
			assert_int_equal(pthread_join(t, NULL), 0);
			ending_unmap = 0;
			assert_int_equal(count_prefix("WARNING: test-dev: "
						      "dma_ops: the DMA ops "
						      "'test-ops' ended the "
						      "thread"),
					 1);
			/* By hand: the node's WARN, no other. */
			assert_int_equal(count_prefix("WARNING: "),
					 which == FREE_MANAGED_BY_HAND ? 2 : 1);
			devres_ledger_snapshot(&now);
			assert_int_equal(
				devres_ledger_diff(&before, &now, stderr), 0);
			/* No live mapping left: the ops change quietly. */
			start_capture();
			set_dma_ops(&tdev, NULL);
			expect_no_warn();
			assert_null(tdev.dma_ops);
			set_dma_ops(&tdev, &my_ops);
			h = dma_map_single(&tdev, buf, 64, DMA_TO_DEVICE);
			assert_int_not_equal(h, DMA_MAPPING_ERROR);
			dma_unmap_single(&tdev, h, 64, DMA_TO_DEVICE);
			set_dma_ops(&tdev, NULL);
			alarm(0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(from_map, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(from_unmap, two_dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ops_end_thread, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ops_end_thread_in_unmap,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: the backtraces would be captured with them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
