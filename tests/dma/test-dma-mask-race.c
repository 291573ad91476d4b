/* ctest-labels: unit tsan */
/*
 * A device's DMA masks set on one thread while another maps: every call
 * that sets a mask (dma_set_mask(), dma_set_coherent_mask(),
 * dma_set_mask_and_coherent()) times every call that reads one
 * (dma_map_single(), dma_map_page(), dma_alloc_coherent(),
 * dmam_alloc_coherent(), dma_pool_alloc() of a new chunk each time,
 * dma_get_mask()), one cell each, in a child of its own under an alarm.
 *
 * The setter flips the masks between 36 and 40 bits; the other thread
 * maps and gives back. Each mapping must honour one of the two masks
 * whole (its last byte at most the wider one), no call may fail or WARN,
 * and the ledger must be back at its baseline after. Before, the masks
 * were plain members read and written on both threads without a lock: a
 * data race, undefined behaviour, which ThreadSanitizer reports in every
 * cell (the cell's child then exits non-zero).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NARROW DMA_BIT_MASK(36)
#define WIDE DMA_BIT_MASK(40)
#define ROUNDS 300
#define BUF 256

typedef int (*set_fn)(struct device *dev, uint64_t mask);

static const set_fn setters[] = {
	dma_set_mask,
	dma_set_coherent_mask,
	dma_set_mask_and_coherent,
};

static const char *const setter_names[] = {
	"dma_set_mask",
	"dma_set_coherent_mask",
	"dma_set_mask_and_coherent",
};

static const char *const user_names[] = {
	"dma_map_single",      "dma_map_page",	 "dma_alloc_coherent",
	"dmam_alloc_coherent", "dma_pool_alloc", "dma_get_mask",
};

struct race {
	struct device *dev;
	set_fn set;
	int stop; /* atomic */
	int bad;  /* failed calls of the setter */
};

static void *flip(void *arg)
{
	struct race *r = arg;

	for (unsigned int i = 0; !__atomic_load_n(&r->stop, __ATOMIC_RELAXED);
	     i++)
		if (r->set(r->dev, i % 2 ? NARROW : WIDE))
			r->bad++;
	return NULL;
}

/* One call of column @col: 0 when it held, else what broke. */
static int use_once(struct device *dev, int col, char *buf)
{
	dma_addr_t h = DMA_MAPPING_ERROR;
	struct dma_pool *pool;
	uint64_t m;
	void *p;

	switch (col) {
	case 0:
		h = dma_map_single(dev, buf, BUF, DMA_TO_DEVICE);
		if (dma_mapping_error(dev, h) || h + BUF - 1 > WIDE)
			return 1;
		dma_unmap_single(dev, h, BUF, DMA_TO_DEVICE);
		return 0;
	case 1:
		h = dma_map_page(dev, (struct page *)buf, 64, BUF,
				 DMA_FROM_DEVICE);
		if (dma_mapping_error(dev, h) || h + BUF - 1 > WIDE)
			return 1;
		dma_unmap_page(dev, h, BUF, DMA_FROM_DEVICE);
		return 0;
	case 2:
		p = dma_alloc_coherent(dev, BUF, &h, GFP_KERNEL);
		if (!p || h + BUF - 1 > WIDE)
			return 2;
		dma_free_coherent(dev, BUF, p, h);
		return 0;
	case 3:
		p = dmam_alloc_coherent(dev, BUF, &h, GFP_KERNEL);
		if (!p || h + BUF - 1 > WIDE)
			return 3;
		dmam_free_coherent(dev, BUF, p, h);
		return 0;
	case 4:
		/* A new pool: its first block maps a new chunk. */
		pool = dma_pool_create("race", dev, BUF, 0, 0);
		p = pool ? dma_pool_alloc(pool, GFP_KERNEL, &h) : NULL;
		if (p)
			dma_pool_free(pool, p, h);
		dma_pool_destroy(pool);
		return !p || h + BUF - 1 > WIDE ? 4 : 0;
	default:
		m = dma_get_mask(dev);
		return m == NARROW || m == WIDE ? 0 : 5;
	}
}

static int cell(int row, int col)
{
	static char buf[8192] __attribute__((aligned(4096)));
	struct race r = { .set = setters[row] };
	struct devres_ledger l0, l1;
	struct device dev;
	pthread_t t;
	int w0, ret = 0;

	alarm(20);
	devres_ledger_snapshot(&l0);
	if (init_dev(&dev, "mask-dev"))
		return 10;
	r.dev = &dev;
	/* Both masks start set, so that every read finds one of the two. */
	if (dma_set_mask_and_coherent(&dev, WIDE))
		return 11;
	w0 = devres_warn_count();
	if (pthread_create(&t, NULL, flip, &r))
		return 12;
	for (int i = 0; i < ROUNDS && !ret; i++)
		ret = use_once(&dev, col, buf);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	if (ret)
		return 20 + ret;
	if (r.bad || devres_warn_count() != w0)
		return 30;
	devres_release_all(&dev);
	put_device(&dev);
	devres_ledger_snapshot(&l1);
	return devres_ledger_diff(&l0, &l1, stderr) ? 40 : 0;
}

static void masks_set_while_mapping(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, setter_names, ARRAY_SIZE(setters),
				   user_names, ARRAY_SIZE(user_names), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(masks_set_while_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
