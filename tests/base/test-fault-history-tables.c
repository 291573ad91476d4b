// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * The fault points of one operation do not depend on what the process
 * did before, for every table that grows behind an operation: a sweep's
 * failure N falls on the same call in every run, and its reproducer
 * (devres_fail_nth(N)) fails it again. test-fault-history checks the
 * device's lookup index; here, one operation per table, each after
 * several histories that leave its table empty, at the edge of a growth,
 * grown, and grown then emptied:
 *
 * - the automatic platform ids (a bitmap of 64-id words): an add of a
 *   PLATFORM_DEVID_AUTO device;
 * - a device's bus address space (its free ranges and spare nodes, its
 *   cache of freed blocks): a dma_alloc_coherent() and its free;
 * - a DMA pool's array of chunks (8, then doubled): a dma_pool_alloc()
 *   that makes a chunk;
 * - the managed descriptors (a table grown by number): a devm_eventfd();
 * - the managed mappings (a sorted array of 16, then doubled): a
 *   devm_mmap();
 * - the managed threads (room for 8, then doubled): a devm_thread_run().
 *
 * Each cell counts the points of its operation after its history; the
 * counts of one operation must all be equal.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include "testlib.h"

#define HISTORIES 4
#define MANY 70 /* past a growth of every table here */

/* The fault points @op passes, none failed. */
static unsigned int points(void (*op)(struct device *), struct device *dev)
{
	unsigned int n;

	devres_fail_nth(UINT_MAX);
	op(dev);
	n = UINT_MAX - devres_fail_nth_get();
	devres_fail_nth(0);
	return n;
}

/* Platform automatic ids. */
static struct platform_device *autos[MANY];

static void auto_add(int i)
{
	autos[i] = platform_device_alloc("fh-auto", PLATFORM_DEVID_AUTO);
	assert_non_null(autos[i]);
	assert_int_equal(platform_device_add(autos[i]), 0);
}

/* Counted: the add of an allocated device, which takes an id. */
static void auto_op(struct device *dev)
{
	(void)dev;
	assert_int_equal(platform_device_add(autos[MANY - 1]), 0);
}

/* @h: 0 none, 1 the word full to its last id, 2 grown, 3 grown, freed. */
static int auto_history(int h)
{
	int n = h == 0 ? 0 : h == 1 ? 63 : MANY - 1;

	for (int i = 0; i < n; i++)
		auto_add(i);
	if (h == 3)
		for (int i = 0; i < n; i++)
			platform_device_unregister(autos[i]);
	return h == 3 ? 0 : n;
}

static void auto_ids(void **state)
{
	unsigned int p[HISTORIES];

	(void)state;
	for (int h = 0; h < HISTORIES; h++) {
		int live = auto_history(h);

		autos[MANY - 1] = platform_device_alloc("fh-auto-op",
							PLATFORM_DEVID_AUTO);
		assert_non_null(autos[MANY - 1]);
		p[h] = points(auto_op, NULL);
		platform_device_unregister(autos[MANY - 1]);
		for (int i = 0; i < live; i++)
			platform_device_unregister(autos[i]);
	}
	print_message("points of an automatic add: %u %u %u %u\n", p[0], p[1],
		      p[2], p[3]);
	for (int h = 1; h < HISTORIES; h++)
		assert_int_equal(p[h], p[0]);
}

/* A device's bus address space. */
static void *bufs[MANY];
static dma_addr_t handles[MANY];

static void coherent_op(struct device *dev)
{
	dma_addr_t h;
	void *p = dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL);

	assert_non_null(p);
	dma_free_coherent(dev, 4096, p, h);
}

/* @h: 0 none, 1 one made and freed (cached), 2 many live, 3 many freed. */
static int coherent_history(struct device *dev, int h)
{
	int n = h == 0 ? 0 : h == 1 ? 1 : MANY;

	for (int i = 0; i < n; i++) {
		/* Sizes that leave free ranges between the blocks. */
		bufs[i] = dma_alloc_coherent(dev, 4096u << (i % 3), &handles[i],
					     GFP_KERNEL);
		assert_non_null(bufs[i]);
	}
	for (int i = 0; i < n; i += h == 2 ? 2 : 1) {
		dma_free_coherent(dev, 4096u << (i % 3), bufs[i], handles[i]);
		bufs[i] = NULL;
	}
	return n;
}

static void coherent(void **state)
{
	unsigned int p[HISTORIES];

	(void)state;
	for (int h = 0; h < HISTORIES; h++) {
		struct device dev;
		int n;

		assert_int_equal(init_dev(&dev, "fh-dma"), 0);
		n = coherent_history(&dev, h);
		p[h] = points(coherent_op, &dev);
		for (int i = 0; i < n; i++)
			if (bufs[i])
				dma_free_coherent(&dev, 4096u << (i % 3),
						  bufs[i], handles[i]);
		put_device(&dev);
	}
	print_message("points of a coherent buffer: %u %u %u %u\n", p[0], p[1],
		      p[2], p[3]);
	for (int h = 1; h < HISTORIES; h++)
		assert_int_equal(p[h], p[0]);
}

/* A DMA pool whose every block is a chunk of its own. */
static struct dma_pool *pool;
static void *blocks[MANY];
static dma_addr_t block_dma[MANY];

static void pool_op(struct device *dev)
{
	(void)dev;
	blocks[MANY - 1] =
		dma_pool_alloc(pool, GFP_KERNEL, &block_dma[MANY - 1]);
	assert_non_null(blocks[MANY - 1]);
}

static void pool_chunks(void **state)
{
	/* None, the array full (8), grown (16 of 16 ... ), grown past. */
	static const int nr[HISTORIES] = { 0, 8, 16, 40 };
	long page = sysconf(_SC_PAGESIZE);
	unsigned int p[HISTORIES];

	(void)state;
	for (int h = 0; h < HISTORIES; h++) {
		struct device dev;

		assert_int_equal(init_dev(&dev, "fh-pool"), 0);
		pool = dma_pool_create("fh", &dev, (size_t)page, 0, 0);
		assert_non_null(pool);
		for (int i = 0; i < nr[h]; i++) {
			blocks[i] =
				dma_pool_alloc(pool, GFP_KERNEL, &block_dma[i]);
			assert_non_null(blocks[i]);
		}
		p[h] = points(pool_op, &dev);
		for (int i = 0; i < nr[h]; i++)
			dma_pool_free(pool, blocks[i], block_dma[i]);
		dma_pool_free(pool, blocks[MANY - 1], block_dma[MANY - 1]);
		dma_pool_destroy(pool);
		put_device(&dev);
	}
	print_message("points of a pool's new chunk: %u %u %u %u\n", p[0], p[1],
		      p[2], p[3]);
	for (int h = 1; h < HISTORIES; h++)
		assert_int_equal(p[h], p[0]);
}

/* The managed descriptors, mappings and threads: one device each time. */
static void fd_op(struct device *dev)
{
	assert_true(devm_eventfd(dev, 0, 0) >= 0);
}

static void map_op(struct device *dev)
{
	assert_true(devm_mmap(dev, NULL, 4096, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1,
			      0) != MAP_FAILED);
}

static int idle(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		(void)devres_thread_sleep(10);
	return 0;
}

static void thread_op(struct device *dev)
{
	struct devres_thread *t = devm_thread_run(dev, idle, NULL, "fh");

	assert_false(IS_ERR_OR_NULL(t));
}

/* @h: 0 none, 1 a few, 2 many live, 3 many released. */
static void managed_history(struct device *dev, void (*op)(struct device *),
			    int h, int many)
{
	int n = h == 0 ? 0 : h == 1 ? 3 : many;

	for (int i = 0; i < n; i++)
		op(dev);
	if (h == 3)
		devres_release_all(dev);
}

static void managed(void (*op)(struct device *), const char *what, int many)
{
	unsigned int p[HISTORIES];

	for (int h = 0; h < HISTORIES; h++) {
		struct device dev;

		assert_int_equal(init_dev(&dev, "fh-posix"), 0);
		managed_history(&dev, op, h, many);
		p[h] = points(op, &dev);
		devres_release_all(&dev);
		put_device(&dev);
	}
	print_message("points of %s: %u %u %u %u\n", what, p[0], p[1], p[2],
		      p[3]);
	for (int h = 1; h < HISTORIES; h++)
		assert_int_equal(p[h], p[0]);
}

static void descriptors(void **state)
{
	(void)state;
	managed(fd_op, "a managed descriptor", MANY);
}

static void mappings(void **state)
{
	(void)state;
	managed(map_op, "a managed mapping", 2 * 16);
}

static void threads(void **state)
{
	(void)state;
	managed(thread_op, "a managed thread", 2 * 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(auto_ids),    cmocka_unit_test(coherent),
		cmocka_unit_test(pool_chunks), cmocka_unit_test(descriptors),
		cmocka_unit_test(mappings),    cmocka_unit_test(threads),
	};

	return cmocka_run_group_tests_name("fault-history-tables", tests, NULL,
					   NULL);
}
