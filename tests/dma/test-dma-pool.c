// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * DMA pools: size, alignment and boundary over thousands of blocks (on the
 * CPU side and the bus side), blocks reachable by the device and disjoint,
 * reuse after free, zeroing, bad parameters, frees into the wrong pool,
 * double frees, destroying a pool with busy blocks (WARN, leaked on
 * purpose), and the managed forms.
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
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))
#define NBLK 3000

struct blk {
	unsigned char *cpu;
	dma_addr_t dma;
};

static int by_cpu(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static void check_pool(struct device *dev, size_t size, size_t align,
		       size_t boundary)
{
	struct dma_pool *pool =
		dma_pool_create("t", dev, size, align, boundary);
	struct blk *b = calloc(NBLK, sizeof(*b));
	size_t a = align ? align : 1;
	unsigned int seed = (unsigned int)(size * 31 + align);

	assert_non_null(pool);
	assert_non_null(b);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < NBLK; i++) {
			if (b[i].cpu)
				continue;
			b[i].cpu = dma_pool_alloc(pool, GFP_KERNEL, &b[i].dma);
			assert_non_null(b[i].cpu);
			assert_int_equal((uintptr_t)b[i].cpu % a, 0);
			assert_int_equal(b[i].dma % a, 0);
			assert_true(b[i].dma != (uintptr_t)b[i].cpu);
			if (boundary)
				assert_int_equal(b[i].dma / boundary,
						 (b[i].dma + size - 1) /
							 boundary);
			/* The device reaches the block, and the block only. */
			assert_ptr_equal(dma_iova_to_virt(dev, b[i].dma, size),
					 b[i].cpu);
			memset(b[i].cpu, i & 0xff, size);
		}
		/* Disjoint: sorted by address, each ends before the next. */
		qsort(b, NBLK, sizeof(*b), by_cpu);
		for (int i = 1; i < NBLK; i++)
			assert_true(b[i - 1].cpu + size <= b[i].cpu);
		/* Free a random half; the next round refills it. */
		for (int i = 0; i < NBLK; i++) {
			if (rand_r(&seed) & 1) {
				dma_pool_free(pool, b[i].cpu, b[i].dma);
				b[i].cpu = NULL;
			}
		}
	}
	for (int i = 0; i < NBLK; i++)
		if (b[i].cpu)
			dma_pool_free(pool, b[i].cpu, b[i].dma);
	start_capture();
	dma_pool_destroy(pool);
	expect_no_warn();
	free(b);
}

static void test_layouts(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;

	check_pool(dev, 64, 64, 0);
	check_pool(dev, 24, 8, 256);
	check_pool(dev, 100, 32, 4096);
	check_pool(dev, 1000, 16, 2048);
	check_pool(dev, 3, 0, 0);
	check_pool(dev, 5000, 4096, 0);
	check_pool(dev, 5000, 128, 8192);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_buffers, ledger_base.dma_buffers);
}

static void test_zalloc(void **state)
{
	struct device *dev = *state;
	struct dma_pool *pool = dma_pool_create("z", dev, 200, 8, 0);
	dma_addr_t h, h2;
	unsigned char *p;

	p = dma_pool_alloc(pool, GFP_KERNEL, &h);
	memset(p, 0xff, 200);
	dma_pool_free(pool, p, h);
	/* The same block again, dirty unless zeroed. */
	assert_ptr_equal(dma_pool_alloc(pool, GFP_KERNEL, &h2), p);
	assert_int_equal(h2, h);
	assert_int_equal(p[199], 0xff);
	dma_pool_free(pool, p, h);
	assert_ptr_equal(dma_pool_zalloc(pool, GFP_KERNEL, &h2), p);
	for (int i = 0; i < 200; i++)
		assert_int_equal(p[i], 0);
	dma_pool_free(pool, p, h2);
	dma_pool_destroy(pool);
}

static void test_bad_params(void **state)
{
	struct device *dev = *state;

	/* Each refusal WARNs and says which argument and why. */
	start_capture();
	assert_null(dma_pool_create("x", dev, 0, 8, 0));
	expect_warn("dma_pool_create", "block size 0 not in");
	start_capture();
	assert_null(dma_pool_create("x", dev, 64, 3, 0));
	expect_warn("dma_pool_create", "alignment 3 is not a power of two");
	start_capture();
	assert_null(dma_pool_create("x", dev, 64, (size_t)1 << 40, 0));
	expect_warn("dma_pool_create", "is not a power of two up to");
	start_capture();
	assert_null(dma_pool_create("x", dev, 64, 1ul << 31, 0));
	expect_warn("dma_pool_create", "is not a power of two up to");
	start_capture();
	assert_null(dma_pool_create("x", dev, (1ul << 30) + 1, 8, 0));
	expect_warn("dma_pool_create", "not in [1, 1073741824]");
	start_capture();
	assert_null(dma_pool_create("x", dev, 64, 8, 32));
	expect_warn("dma_pool_create", "boundary 32 is not a power of two of "
				       "at least the block size 64");
	start_capture();
	assert_null(dma_pool_create("x", dev, 64, 8, 100));
	expect_warn("dma_pool_create", "boundary 100");
	start_capture();
	assert_null(dma_pool_create("x", dev, SIZE_MAX, 8, 0));
	expect_warn("dma_pool_create", "block size");
	start_capture();
	assert_null(dma_pool_create(NULL, dev, 64, 8, 0));
	expect_warn("dma_pool_create", "NULL name");
	start_capture();
	assert_null(dmam_pool_create(NULL, dev, 64, 8, 0));
	expect_warn("dmam_pool_create", "NULL name");
	start_capture();
	assert_null(dma_pool_create("x", NULL, 64, 8, 0));
	expect_warn_on("(no device)", "dma_pool_create", "NULL device");
	dma_pool_destroy(NULL);
}

static void test_wrong_frees(void **state)
{
	struct device *dev = *state;
	struct dma_pool *a = dma_pool_create("a", dev, 64, 64, 0);
	struct dma_pool *b = dma_pool_create("b", dev, 64, 64, 0);
	dma_addr_t ha, hb, hc;
	char *pa, *pb, *pc;

	pa = dma_pool_alloc(a, GFP_KERNEL, &ha);
	pb = dma_pool_alloc(b, GFP_KERNEL, &hb);
	start_capture();
	dma_pool_free(a, pb, hb);
	expect_warn("dma_pool_free", "is not a block of pool a");
	/* A chunk's first block has the chunk's addresses: still the pool's. */
	start_capture();
	dma_free_coherent(dev, PAGE, pa, ha);
	expect_warn("dma_free_coherent", "(a pool's)");
	assert_ptr_equal(dma_iova_to_virt(dev, ha, 64), pa);
	start_capture();
	dma_pool_free(a, pa + 8, ha + 8);
	expect_warn("dma_pool_free", "is not a block start in pool a");
	start_capture();
	dma_pool_free(a, pa, hb);
	expect_warn("dma_pool_free", "on the bus, not");
	start_capture();
	dma_pool_free(a, pa, ha);
	dma_pool_free(b, pb, hb);
	expect_no_warn();
	start_capture();
	dma_pool_free(a, pa, ha);
	expect_warn("dma_pool_free", "freed twice (pool a)");
	/* The pool is intact: the block comes back, once. */
	pc = dma_pool_alloc(a, GFP_KERNEL, &hc);
	assert_ptr_equal(pc, pa);
	assert_ptr_not_equal(dma_pool_alloc(a, GFP_KERNEL, &hb), pa);
	dma_pool_free(a, pc, hc);
	dma_pool_free(a, (char *)pa + 64, hb);
	start_capture();
	assert_null(dma_pool_alloc(a, GFP_KERNEL, NULL));
	expect_warn("dma_pool_alloc", "NULL handle");
	dma_pool_destroy(a);
	dma_pool_destroy(b);
}

static void test_destroy_busy(void **state)
{
	struct device *dev = *state;
	struct dma_pool *pool = dma_pool_create("busy", dev, 512, 0, 0);
	struct devres_ledger l;
	dma_addr_t h[3];
	char *p[3];

	for (int i = 0; i < 3; i++)
		p[i] = dma_pool_alloc(pool, GFP_KERNEL, &h[i]);
	dma_pool_free(pool, p[1], h[1]);
	dma_pool_free(pool, p[2], h[2]);
	start_capture();
	dma_pool_destroy(pool);
	expect_warn("dma_pool_destroy", "pool busy destroyed with 1 busy "
					"block(s), leaked");
	/* Leaked, not freed: the device can still reach it. */
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_buffers - ledger_base.dma_buffers, 1);
	assert_ptr_equal(dma_iova_to_virt(dev, h[0], 512), p[0]);
	p[0][0] = 1;
	/* The first block starts its chunk: hand the chunk back by hand. */
	dma_free_coherent(dev, PAGE, p[0], h[0]);
}

static void test_managed_pools(void **state)
{
	struct device *dev = *state;
	struct dma_pool *a, *b, *u;
	struct devres_ledger l;
	dma_addr_t h;
	void *p;

	a = dmam_pool_create("ma", dev, 32, 32, 0);
	b = dmam_pool_create("mb", dev, 32, 32, 0);
	assert_non_null(a);
	assert_non_null(b);
	p = dma_pool_alloc(a, GFP_KERNEL, &h);
	dma_pool_free(a, p, h);
	p = dma_pool_alloc(b, GFP_KERNEL, &h);
	dma_pool_free(b, p, h);
	dmam_pool_destroy(a);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_buffers - ledger_base.dma_buffers, 1);
	u = dma_pool_create("u", dev, 32, 32, 0);
	start_capture();
	dmam_pool_destroy(u);
	expect_warn("dmam_pool_destroy", "is not a managed pool");
	dma_pool_destroy(u);
	/* b and the DMA state. */
	assert_int_equal(devres_release_all(dev), 2);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_buffers, ledger_base.dma_buffers);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layouts, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_zalloc, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_bad_params, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_wrong_frees, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_destroy_busy, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_managed_pools, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
