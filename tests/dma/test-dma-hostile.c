// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Hostile use of the DMA API: release callbacks that re-enter it on their
 * own device, frees from other threads and twice at once, bogus handles by
 * the thousand, DMA ops that lie about their addresses, and a log sink
 * that calls back into the library from a WARN.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

static void *buf_cpu;
static dma_addr_t buf_dma;

/* Runs first at release (added last): frees the managed buffer itself. */
static void free_behind_back(void *data)
{
	dmam_free_coherent(data, 64, buf_cpu, buf_dma);
}

static void test_release_frees_managed(void **state)
{
	struct device *dev = *state;

	buf_cpu = dmam_alloc_coherent(dev, 64, &buf_dma, GFP_KERNEL);
	assert_non_null(buf_cpu);
	assert_int_equal(devm_add_action(dev, free_behind_back, dev), 0);
	/*
	 * The list is detached while it is released: the node is no longer
	 * findable, so dmam_free_coherent refuses (one WARN) and the
	 * buffer is freed once, by its own release.
	 */
	start_capture();
	assert_int_equal(devres_release_all(dev), 3);
	expect_warn("dmam_free_coherent", "is not a managed coherent buffer");
}

static dma_addr_t late_dma;
static void *late_cpu;

/* Added before any DMA, so released after the DMA state: maps anew. */
static void map_during_release(void *data)
{
	struct device *dev = data;
	char b[8];
	dma_addr_t h = dma_map_single(dev, b, sizeof(b), DMA_TO_DEVICE);

	if (!dma_mapping_error(dev, h))
		dma_unmap_single(dev, h, sizeof(b), DMA_TO_DEVICE);
	late_cpu = dmam_alloc_coherent(dev, 10, &late_dma, GFP_KERNEL);
}

static void test_release_maps_again(void **state)
{
	struct device *dev = *state;
	dma_addr_t h;

	assert_int_equal(devm_add_action(dev, map_during_release, dev), 0);
	assert_non_null(dmam_alloc_coherent(dev, 100, &h, GFP_KERNEL));
	start_capture();
	devres_release_all(dev);
	expect_no_warn();
	/* What the action acquired was recorded late, and is still there. */
	assert_non_null(late_cpu);
	assert_ptr_equal(dma_iova_to_virt(dev, late_dma, 10), late_cpu);
	/* The late buffer and its state. */
	assert_int_equal(devres_release_all(dev), 2);
	assert_null(dev->dma_state);
}

static void *free_from_thread(void *arg)
{
	struct device *dev = arg;

	dmam_free_coherent(dev, 64, buf_cpu, buf_dma);
	return NULL;
}

static void test_free_elsewhere_and_twice(void **state)
{
	struct device *dev = *state;
	pthread_t t[2];

	buf_cpu = dmam_alloc_coherent(dev, 64, &buf_dma, GFP_KERNEL);
	assert_int_equal(pthread_create(&t[0], NULL, free_from_thread, dev), 0);
	pthread_join(t[0], NULL);
	assert_null(dma_iova_to_virt(dev, buf_dma, 1));
	/* Twice at once: one frees, the other WARNs. */
	buf_cpu = dmam_alloc_coherent(dev, 64, &buf_dma, GFP_KERNEL);
	start_capture();
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&t[i], NULL, free_from_thread, dev), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	expect_warn("dmam_free_coherent", "is not a managed coherent buffer");
}

static void test_bogus_handles(void **state)
{
	struct device *dev = *state;
	unsigned int seed = 1;
	int warns, hits = 0;
	dma_addr_t h;
	void *p = dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL);

	for (int i = 0; i < 100000; i++) {
		dma_addr_t x = ((dma_addr_t)rand_r(&seed) << 33) ^
			       ((dma_addr_t)rand_r(&seed) << 12) ^
			       (dma_addr_t)rand_r(&seed);

		if (i % 2)
			x = h - 8192 + x % 16384; /* near the real one */
		if (dma_iova_to_virt(dev, x, 1 + i % 64)) {
			assert_true(x >= h && x + 1 + i % 64 <= h + 4096);
			hits++;
		}
	}
	assert_true(hits > 0);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_set_log_sink(NULL, NULL);
	warns = devres_warn_count();
	start_capture();
	for (int i = 0; i < 1000; i++) {
		dma_unmap_single(dev, h + 1 + (dma_addr_t)i, 4, DMA_TO_DEVICE);
		dma_free_coherent(dev, 4096, p, h + 4096 + (dma_addr_t)i);
	}
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_warn_count() - warns, 2000);
	assert_ptr_equal(dma_iova_to_virt(dev, h, 4096), p);
	dma_free_coherent(dev, 4096, p, h);
	start_capture();
	assert_null(dma_iova_to_virt(NULL, h, 1));
	expect_warn_on("(no device)", "dma_iova_to_virt", "NULL device");
}

/* Ops that give every mapping the same bus address. */
static int liar_unmaps;

static int liar_map(struct device *dev, void *cpu, size_t size, size_t align,
		    uint64_t mask, dma_addr_t *ret)
{
	(void)dev;
	(void)cpu;
	(void)size;
	(void)align;
	(void)mask;
	*ret = 0x100000;
	return 0;
}

static void liar_unmap(struct device *dev, dma_addr_t h, void *cpu, size_t size)
{
	(void)dev;
	(void)h;
	(void)cpu;
	(void)size;
	liar_unmaps++;
}

static const struct devres_dma_ops liar = {
	.name = "liar",
	.map = liar_map,
	.unmap = liar_unmap,
};

static void test_lying_ops(void **state)
{
	struct device *dev = *state;
	char b[64];
	dma_addr_t h1, h2;

	set_dma_ops(dev, &liar);
	h1 = dma_map_single(dev, b, 16, DMA_TO_DEVICE);
	assert_int_equal(h1, 0x100000 + (uintptr_t)b % 4096);
	/* Overlapping bus bytes: refused, and the map undone. */
	h2 = dma_map_single(dev, b, 16, DMA_TO_DEVICE);
	assert_int_equal(h2, DMA_MAPPING_ERROR);
	assert_int_equal(liar_unmaps, 1);
	dma_unmap_single(dev, h1, 16, DMA_TO_DEVICE);
	assert_int_equal(liar_unmaps, 2);
	/* Above the mask: refused, undone. */
	assert_int_equal(dma_set_mask(dev, DMA_BIT_MASK(20)), 0);
	h2 = dma_map_single(dev, b, 16, DMA_TO_DEVICE);
	assert_int_equal(h2, DMA_MAPPING_ERROR);
	assert_int_equal(liar_unmaps, 3);
	set_dma_ops(dev, NULL);
}

/* A sink that looks the handle up again, from inside the WARN. */
static struct device *sink_dev;
static int sink_calls;

static void reentrant_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
	sink_calls++;
	(void)dma_iova_to_virt(sink_dev, 0x1234, 1);
	dma_sync_single_for_cpu(sink_dev, 0x1234, 1, DMA_TO_DEVICE);
}

static void test_sink_reenters(void **state)
{
	struct device *dev = *state;
	struct dma_pool *pool = dma_pool_create("s", dev, 32, 0, 0);
	dma_addr_t h;
	void *p = dma_pool_alloc(pool, GFP_KERNEL, &h);

	sink_dev = dev;
	devres_set_log_sink(reentrant_sink, NULL);
	dma_unmap_single(dev, 0x1234, 1, DMA_TO_DEVICE);
	dma_pool_free(pool, p, h + 1);
	/* The first block starts its chunk, which is the pool's. */
	dma_free_coherent(dev, 1, p, h);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(sink_calls, 3);
	dma_pool_free(pool, p, h);
	dma_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_release_frees_managed,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_release_maps_again,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_free_elsewhere_and_twice,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_bogus_handles, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_lying_ops, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_sink_reenters, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
