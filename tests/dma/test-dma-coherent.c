// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Coherent buffers and masks: alignment, zeroing, locking, handles that
 * differ from pointers and respect the mask, reuse of freed bus ranges,
 * exhaustion, the managed forms (dmam_free_coherent unrecords before it
 * frees), misuse, and fail-nth at every acquisition.
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))

static void expect_dma(long buffers, long bytes, long maps)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	assert_int_equal(l.dma_buffers - ledger_base.dma_buffers, buffers);
	assert_int_equal(l.dma_bytes - ledger_base.dma_bytes, bytes);
	assert_int_equal(l.dma_maps - ledger_base.dma_maps, maps);
}

static size_t pow2_pages(size_t size)
{
	size_t p = PAGE;

	while (p < size)
		p <<= 1;
	return p;
}

/*
 * The "Locked:" kB of the mapping holding @p, from /proc/self/smaps (the
 * kernel may have merged it with a neighbour: at least the buffer's).
 */
static long locked_kb(const void *p)
{
	unsigned long lo, hi, at = (unsigned long)(uintptr_t)p;
	char line[256];
	long kb = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= at && at < hi;
		if (in && sscanf(line, "Locked: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/*
 * Whether mlock() locks here at all: the sanitizers' mlock() does nothing
 * (ASan says so once on stderr, TSan does not), so a page of our own is
 * locked and looked at first.
 */
static bool mlock_works(void)
{
	static int works = -1;
	void *pg;

	if (works >= 0)
		return works;
	pg = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(pg != MAP_FAILED);
	works = mlock(pg, PAGE) == 0 && locked_kb(pg) >= (long)(PAGE / 1024);
	munlock(pg, PAGE);
	munmap(pg, PAGE);
	return works;
}

static bool may_lock(size_t len)
{
	struct rlimit r;

	return (geteuid() == 0 ||
		(getrlimit(RLIMIT_MEMLOCK, &r) == 0 &&
		 (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= 64 * len))) &&
	       mlock_works();
}

static void test_alloc_shapes(void **state)
{
	static const size_t sizes[] = { 1, 100, 4096, 5000, 12288, 65536 };
	struct device *dev = *state;
	long bytes = 0;
	void *p[6];
	dma_addr_t h[6];

	for (int i = 0; i < 6; i++) {
		size_t len = (sizes[i] + PAGE - 1) & ~(PAGE - 1);
		size_t al = pow2_pages(len);
		unsigned char *c;

		p[i] = dma_alloc_coherent(dev, sizes[i], &h[i], GFP_KERNEL);
		assert_non_null(p[i]);
		c = p[i];
		assert_int_equal((uintptr_t)p[i] % al, 0);
		assert_int_equal(h[i] % al, 0);
		assert_true(h[i] != (uintptr_t)p[i]);
		assert_true(h[i] + sizes[i] - 1 <= DMA_BIT_MASK(32));
		for (size_t k = 0; k < len; k++)
			assert_int_equal(c[k], 0);
		memset(c, 0xa5, len);
		assert_ptr_equal(dma_iova_to_virt(dev, h[i], sizes[i]), p[i]);
		assert_ptr_equal(dma_iova_to_virt(dev, h[i] + sizes[i] - 1, 1),
				 c + sizes[i] - 1);
		/* The device owns the bytes asked for, no more. */
		assert_null(dma_iova_to_virt(dev, h[i], sizes[i] + 1));
		assert_null(dma_iova_to_virt(dev, h[i] - 1, 2));
		assert_null(dma_iova_to_virt(dev, h[i], 0));
		assert_null(dma_iova_to_virt(dev, h[i] + 1, SIZE_MAX));
		if (may_lock(len))
			assert_true(locked_kb(p[i]) >= (long)(len / 1024));
		bytes += (long)len;
		expect_dma(i + 1, bytes, 0);
	}
	for (int i = 0; i < 6; i++)
		dma_free_coherent(dev, sizes[i], p[i], h[i]);
	expect_dma(0, 0, 0);
	for (int i = 0; i < 6; i++)
		assert_null(dma_iova_to_virt(dev, h[i], 1));
}

static void test_masks(void **state)
{
	struct device *dev = *state;
	uint64_t own = 0;

	assert_int_equal(dma_get_mask(dev), DMA_BIT_MASK(32));
	assert_int_equal(dma_set_mask(dev, 0), -EIO);
	assert_int_equal(dma_set_mask(dev, DMA_BIT_MASK(12)), -EIO);
	assert_int_equal(dma_set_coherent_mask(dev, DMA_BIT_MASK(16)), -EIO);
	assert_int_equal(dma_set_mask_and_coherent(dev, DMA_BIT_MASK(8)), -EIO);
	assert_null(dev->dma_mask);
	assert_int_equal(dev->coherent_dma_mask, 0);
	/* No storage of its own: the streaming mask is the coherent one. */
	assert_int_equal(dma_set_mask(dev, DMA_BIT_MASK(40)), 0);
	assert_ptr_equal(dev->dma_mask, &dev->coherent_dma_mask);
	assert_int_equal(dma_get_mask(dev), DMA_BIT_MASK(40));
	assert_int_equal(dev->coherent_dma_mask, DMA_BIT_MASK(40));
	/* With storage of its own, they are apart. */
	dev->dma_mask = &own;
	assert_int_equal(dma_get_mask(dev), DMA_BIT_MASK(32));
	assert_int_equal(dma_set_mask(dev, DMA_BIT_MASK(48)), 0);
	assert_int_equal(own, DMA_BIT_MASK(48));
	assert_int_equal(dev->coherent_dma_mask, DMA_BIT_MASK(40));
	assert_int_equal(dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64)), 0);
	assert_int_equal(own, DMA_BIT_MASK(64));
	assert_int_equal(dev->coherent_dma_mask, DMA_BIT_MASK(64));
	dev->dma_mask = NULL;
	start_capture();
	assert_int_equal(dma_set_mask(NULL, DMA_BIT_MASK(32)), -EINVAL);
	expect_warn_on("(no device)", "dma_set_mask", "NULL device");
}

static void test_mask_honoured_and_exhausted(void **state)
{
	struct device *dev = *state;
	const uint64_t mask = DMA_BIT_MASK(20);
	const size_t n = (size_t)(mask + 1 - 0x10000) / PAGE;
	void **p = calloc(n + 1, sizeof(*p));
	dma_addr_t *h = calloc(n + 1, sizeof(*h)), again;
	void *q;

	assert_non_null(p);
	assert_non_null(h);
	assert_int_equal(dma_set_coherent_mask(dev, mask), 0);
	for (size_t i = 0; i < n; i++) {
		p[i] = dma_alloc_coherent(dev, PAGE, &h[i], GFP_KERNEL);
		assert_non_null(p[i]);
		assert_true(h[i] + PAGE - 1 <= mask);
		assert_true(h[i] >= 0x10000);
		for (size_t k = 0; k < i; k += 37)
			assert_true(h[k] != h[i]);
	}
	/* The space below the mask is full. */
	assert_null(dma_alloc_coherent(dev, PAGE, &again, GFP_KERNEL));
	expect_dma((long)n, (long)(n * PAGE), 0);
	/* A freed range is reused. */
	dma_free_coherent(dev, PAGE, p[n / 2], h[n / 2]);
	q = dma_alloc_coherent(dev, PAGE, &again, GFP_KERNEL);
	assert_non_null(q);
	assert_int_equal(again, h[n / 2]);
	p[n / 2] = q;
	/* Two adjacent free pages merge into room for an aligned pair. */
	assert_null(dma_alloc_coherent(dev, 2 * PAGE, &again, GFP_KERNEL));
	for (size_t i = 0; i < n; i++)
		if (h[i] == 0x20000 || h[i] == 0x21000)
			dma_free_coherent(dev, PAGE, p[i], h[i]), p[i] = NULL;
	q = dma_alloc_coherent(dev, 2 * PAGE, &again, GFP_KERNEL);
	assert_non_null(q);
	assert_int_equal(again, 0x20000);
	dma_free_coherent(dev, 2 * PAGE, q, again);
	for (size_t i = 0; i < n; i++)
		if (p[i])
			dma_free_coherent(dev, PAGE, p[i], h[i]);
	expect_dma(0, 0, 0);
	free(p);
	free(h);
}

static void test_mask_64(void **state)
{
	struct device *dev = *state;
	dma_addr_t h;
	void *p;

	assert_int_equal(dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64)), 0);
	p = dma_alloc_coherent(dev, 3 * PAGE, &h, GFP_KERNEL);
	assert_non_null(p);
	assert_true(h > DMA_BIT_MASK(32));
	assert_true(h != (uintptr_t)p);
	assert_true(h + 3 * PAGE - 1 > h);
	assert_int_equal(h % (4 * PAGE), 0);
	assert_ptr_equal(dma_iova_to_virt(dev, h + PAGE, 2 * PAGE),
			 (char *)p + PAGE);
	dma_free_coherent(dev, 3 * PAGE, p, h);
}

static void test_misuse(void **state)
{
	struct device *dev = *state;
	dma_addr_t h, h2;
	void *p, *q;

	start_capture();
	assert_null(dma_alloc_coherent(dev, 100, NULL, GFP_KERNEL));
	expect_warn("dma_alloc_coherent", "NULL dma_handle");
	/* Past the DMA API's one size limit (test-dma-limits: the class). */
	start_capture();
	assert_null(dma_alloc_coherent(dev, 0, &h, GFP_KERNEL));
	expect_warn("dma_alloc_coherent", "size 0 not in [1, 1073741824]");
	start_capture();
	assert_null(dma_alloc_coherent(dev, SIZE_MAX - 10, &h, GFP_KERNEL));
	expect_warn("dma_alloc_coherent", "not in [1, 1073741824]");
	p = dma_alloc_coherent(dev, 100, &h, GFP_KERNEL);
	q = dma_alloc_coherent(dev, 100, &h2, GFP_KERNEL);
	assert_non_null(p);
	assert_non_null(q);
	start_capture();
	dma_free_coherent(dev, 100, p, 0x1234);
	expect_warn("dma_free_coherent", "is not a coherent buffer");
	start_capture();
	dma_free_coherent(dev, 100, p, h + 1);
	expect_warn("dma_free_coherent", "is not a coherent buffer");
	start_capture();
	dma_free_coherent(dev, 100, q, h);
	expect_warn("dma_free_coherent", "is not");
	/* Nothing was freed: both still reachable. */
	assert_ptr_equal(dma_iova_to_virt(dev, h, 100), p);
	assert_ptr_equal(dma_iova_to_virt(dev, h2, 100), q);
	/* A streaming unmap of a coherent handle. */
	start_capture();
	dma_unmap_single(dev, h, 100, DMA_BIDIRECTIONAL);
	expect_warn("dma_unmap_single", "is a coherent buffer");
	assert_ptr_equal(dma_iova_to_virt(dev, h, 100), p);
	/* Wrong size: freed whole, reported in debug mode only. */
	start_capture();
	dma_free_coherent(dev, 99, p, h);
	expect_no_warn();
	devres_set_dma_debug(true);
	start_capture();
	dma_free_coherent(dev, 4096, q, h2);
	devres_set_dma_debug(false);
	expect_warn("dma_free_coherent", "freed with size 4096, allocated with "
					 "100");
	expect_dma(0, 0, 0);
	/* Double free. */
	start_capture();
	dma_free_coherent(dev, 100, p, h);
	expect_warn("dma_free_coherent", "is not a coherent buffer");
	/* The ops cannot change under live buffers. */
	p = dma_alloc_coherent(dev, 100, &h, GFP_KERNEL);
	start_capture();
	set_dma_ops(dev, devres_dma_pagemap_ops());
	expect_warn("set_dma_ops", "1 mapping(s) still live");
	assert_ptr_equal(get_dma_ops(dev), devres_dma_iova_ops());
	dma_free_coherent(dev, 100, p, h);
	set_dma_ops(dev, devres_dma_pagemap_ops());
	assert_ptr_equal(get_dma_ops(dev), devres_dma_pagemap_ops());
	set_dma_ops(dev, NULL);
	assert_ptr_equal(get_dma_ops(dev), devres_dma_iova_ops());
}

static void test_managed(void **state)
{
	struct device *dev = *state;
	dma_addr_t h[3], hu;
	void *p[3], *u;

	for (int i = 0; i < 3; i++) {
		p[i] = dmam_alloc_coherent(dev, 1000 * (i + 1), &h[i],
					   GFP_KERNEL);
		assert_non_null(p[i]);
	}
	expect_dma(3, (long)(3 * PAGE), 0);
	dmam_free_coherent(dev, 2000, p[1], h[1]);
	expect_dma(2, (long)(2 * PAGE), 0);
	assert_null(dma_iova_to_virt(dev, h[1], 1));
	start_capture();
	dmam_free_coherent(dev, 2000, p[1], h[1]);
	expect_warn("dmam_free_coherent", "is not a managed coherent buffer");
	start_capture();
	dmam_free_coherent(dev, 999, p[0], h[0]);
	expect_warn("dmam_free_coherent", "freed with another size or handle");
	assert_ptr_equal(dma_iova_to_virt(dev, h[0], 1000), p[0]);
	u = dma_alloc_coherent(dev, 10, &hu, GFP_KERNEL);
	start_capture();
	dmam_free_coherent(dev, 10, u, hu);
	expect_warn("dmam_free_coherent", "is not a managed coherent buffer");
	assert_ptr_equal(dma_iova_to_virt(dev, hu, 10), u);
	dma_free_coherent(dev, 10, u, hu);
	/* Two buffers, and the state node. */
	assert_int_equal(devres_release_all(dev), 3);
	expect_dma(0, 0, 0);
	assert_null(dev->dma_state);
}

/* Ops that record, at each unmap, how many nodes the device still has. */
static int allocs_at_unmap = -1;

static int spy_map(struct device *dev, void *cpu, size_t size, size_t align,
		   uint64_t mask, dma_addr_t *ret)
{
	return devres_dma_iova_ops()->map(dev, cpu, size, align, mask, ret);
}

static void spy_unmap(struct device *dev, dma_addr_t h, void *cpu, size_t size)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	allocs_at_unmap = st.allocs;
	devres_dma_iova_ops()->unmap(dev, h, cpu, size);
}

static const struct devres_dma_ops spy_ops = {
	.name = "spy",
	.map = spy_map,
	.unmap = spy_unmap,
};

static void test_free_unrecords_first(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	dma_addr_t h;
	void *p;

	set_dma_ops(dev, &spy_ops);
	p = dmam_alloc_coherent(dev, 64, &h, GFP_KERNEL);
	assert_non_null(p);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 2); /* the state, the buffer */
	dmam_free_coherent(dev, 64, p, h);
	/* The node was gone before the buffer was unmapped. */
	assert_int_equal(allocs_at_unmap, 1);
	set_dma_ops(dev, NULL);
}

/* Every acquisition of an allocation fails cleanly. */
static void test_fail_nth(void **state)
{
	struct device *dev = *state;
	struct devres_ledger before, after;
	unsigned int n;
	dma_addr_t h;
	void *p;

	for (n = 1; n < 100; n++) {
		devres_ledger_snapshot(&before);
		devres_fail_nth(n);
		p = dmam_alloc_coherent(dev, 3 * PAGE, &h, GFP_KERNEL);
		if (devres_fail_nth_get() != 0) {
			devres_fail_nth(0);
			/* Past the last point: it succeeded. */
			assert_non_null(p);
			break;
		}
		/* mlock is best effort: its failure is no failure. */
		if (p) {
			dmam_free_coherent(dev, 3 * PAGE, p, h);
			devres_release_all(dev);
			continue;
		}
		devres_release_all(dev);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	assert_true(n > 4);
	devres_release_all(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alloc_shapes, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_masks, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_mask_honoured_and_exhausted,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_mask_64, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_misuse, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_managed, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_free_unrecords_first,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_fail_nth, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
