// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The DMA API's arguments at and past their limits, every call of the
 * same shape in one table.
 *
 * Every size, alignment and boundary a call grants memory or bus space
 * for (dma_alloc_coherent(), dmam_alloc_coherent(), dma_map_single(),
 * dma_map_page(), dma_pool_create() and dmam_pool_create(), each of their
 * size arguments) against the one limit of <devres/dma.h>,
 * DEVRES_DMA_SIZE_MAX: up to it the call works, past it (and at 0, where
 * 0 is no "none") it fails with one WARN naming the call, the argument
 * and the limit. Before, a pool's boundary had no limit, and a coherent
 * buffer or a mapping of any size was granted (gigabytes populated) or
 * refused in silence.
 *
 * Every map call given a buffer that is no user-space address: the NULL
 * page, a non-canonical address (bits 47 to 63 not all equal), the
 * kernel's half, a buffer that runs off the end of the user half or wraps
 * the address space. Each is one WARN and DMA_MAPPING_ERROR, nothing
 * mapped. Before, the non-canonical and kernel addresses were mapped, and
 * a wrapping range refused in silence.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"

#define LIMIT DEVRES_DMA_SIZE_MAX
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A reservation of the largest size, for the mappings at the limit. */
static void *big;

/* One call with one size argument @v; true when it granted it. */
struct size_call {
	const char *name;
	const char *warn_func; /* the function its WARN names */
	const char *arg;
	bool zero_ok;	  /* 0 means "none" */
	size_t heavy_max; /* largest size a cell may grant (populated memory) */
	bool (*call)(struct device *dev, size_t v);
};

/* A coherent buffer of @v bytes, plain or @managed, made and freed. */
static bool coherent_of(struct device *dev, size_t v, bool managed)
{
	dma_addr_t h;
	void *p = managed ? dmam_alloc_coherent(dev, v, &h, GFP_KERNEL)
			  : dma_alloc_coherent(dev, v, &h, GFP_KERNEL);

	if (p && managed)
		dmam_free_coherent(dev, v, p, h);
	else if (p)
		dma_free_coherent(dev, v, p, h);
	return p;
}

static bool coherent(struct device *dev, size_t v)
{
	return coherent_of(dev, v, false);
}

static bool managed_coherent(struct device *dev, size_t v)
{
	return coherent_of(dev, v, true);
}

static bool map_single(struct device *dev, size_t v)
{
	dma_addr_t h = dma_map_single(dev, big, v, DMA_TO_DEVICE);

	if (dma_mapping_error(dev, h))
		return false;
	dma_unmap_single(dev, h, v, DMA_TO_DEVICE);
	return true;
}

static bool map_page(struct device *dev, size_t v)
{
	dma_addr_t h =
		dma_map_page(dev, (struct page *)big, 0, v, DMA_TO_DEVICE);

	if (dma_mapping_error(dev, h))
		return false;
	dma_unmap_page(dev, h, v, DMA_TO_DEVICE);
	return true;
}

/* A pool of @size, @align and @boundary, made and destroyed. */
static bool pool(struct device *dev, bool managed, size_t size, size_t align,
		 size_t boundary)
{
	struct dma_pool *p;

	if (managed) {
		p = dmam_pool_create("limits", dev, size, align, boundary);
		if (p)
			dmam_pool_destroy(p);
	} else {
		p = dma_pool_create("limits", dev, size, align, boundary);
		if (p)
			dma_pool_destroy(p);
	}
	return p;
}

/* clang-format off */
#define POOL_CALLS(m, pfx)                                                     \
	static bool pfx##_size(struct device *d, size_t v)                     \
	{ return pool(d, m, v, 0, 0); }                                        \
	static bool pfx##_align(struct device *d, size_t v)                    \
	{ return pool(d, m, 64, v, 0); }                                       \
	static bool pfx##_boundary(struct device *d, size_t v)                 \
	{ return pool(d, m, 64, 8, v); }
POOL_CALLS(false, pool)
POOL_CALLS(true, mpool)

static const struct size_call size_calls[] = {
	{ "dma_alloc_coherent", "dma_alloc_coherent", "size", false, 1 << 20, coherent },
	{ "dmam_alloc_coherent", "dmam_alloc_coherent", "size", false, 1 << 20, managed_coherent },
	{ "dma_map_single", "dma_map_single", "size", false, SIZE_MAX, map_single },
	{ "dma_map_page", "dma_map_page", "size", false, SIZE_MAX, map_page },
	{ "dma_pool_create", "dma_pool_create", "size", false, SIZE_MAX, pool_size },
	{ "dma_pool_create", "dma_pool_create", "align", true, SIZE_MAX, pool_align },
	{ "dma_pool_create", "dma_pool_create", "boundary", true, SIZE_MAX, pool_boundary },
	{ "dmam_pool_create", "dmam_pool_create", "size", false, SIZE_MAX, mpool_size },
	{ "dmam_pool_create", "dmam_pool_create", "align", true, SIZE_MAX, mpool_align },
	{ "dmam_pool_create", "dmam_pool_create", "allocation", true, SIZE_MAX, mpool_boundary },
};
/* clang-format on */

static const struct {
	size_t v;
	const char *name;
} sizes[] = {
	{ 0, "0" },
	{ (size_t)1 << 20, "2^20" },
	{ LIMIT, "the limit" },
	{ LIMIT + 1, "the limit + 1" },
	{ (size_t)1 << 31, "2^31" },
	{ (size_t)1 << 40, "2^40" },
	{ SIZE_MAX / 2 + 1, "2^63" },
	{ SIZE_MAX, "SIZE_MAX" },
};

static void test_sizes_at_the_limit(void **state)
{
	struct device *dev = *state;
	int failed = 0, ran = 0;
	char line[256];

	for (size_t i = 0; i < ARRAY_SIZE(size_calls); i++) {
		const struct size_call *c = &size_calls[i];

		for (size_t j = 0; j < ARRAY_SIZE(sizes); j++) {
			size_t v = sizes[j].v;
			bool valid = v <= LIMIT && (v || c->zero_ok);
			int w0 = devres_warn_count();
			bool ok;

			if (valid && v > c->heavy_max)
				continue;
			start_capture();
			ok = c->call(dev, v);
			ran++;
			snprintf(line, sizeof(line),
				 "WARNING: test-dev: %s: ", c->warn_func);
			if (ok == valid &&
			    devres_warn_count() - w0 == (valid ? 0 : 1) &&
			    (valid ||
			     (cap.n == 1 &&
			      !strncmp(cap.line[0], line, strlen(line)) &&
			      strstr(cap.line[0], "1073741824"))))
				continue;
			failed++;
			fprintf(stderr, "FAIL %s(%s = %s): %s, %d WARNs%s%s\n",
				c->name, c->arg, sizes[j].name,
				ok ? "granted" : "refused",
				devres_warn_count() - w0, cap.n ? ": " : "",
				cap.n ? cap.line[0] : "");
		}
	}
	fprintf(stderr, "%d cells, %d failed\n", ran, failed);
	assert_int_equal(failed, 0);
}

/* A map call given a buffer address @a of @size bytes. */
struct map_call {
	const char *name;
	dma_addr_t (*map)(struct device *dev, uintptr_t a, size_t size);
};

static dma_addr_t by_single(struct device *dev, uintptr_t a, size_t size)
{
	return dma_map_single(dev, (void *)a, size, DMA_TO_DEVICE);
}

static dma_addr_t by_page(struct device *dev, uintptr_t a, size_t size)
{
	return dma_map_page(dev, (struct page *)a, 0, size, DMA_TO_DEVICE);
}

/* A real page, the buffer at an offset from it. */
static dma_addr_t by_offset(struct device *dev, uintptr_t a, size_t size)
{
	uintptr_t page = (uintptr_t)big;

	return dma_map_page(dev, (struct page *)big, a - page, size,
			    DMA_TO_DEVICE);
}

static const struct map_call map_calls[] = {
	{ "dma_map_single", by_single },
	{ "dma_map_page", by_page },
	{ "dma_map_page", by_offset },
};

static const struct {
	uintptr_t a;
	size_t size;
	const char *name;
	const char *why; /* in the WARN */
} addrs[] = {
	{ 0x10, 64, "the NULL page", "bad pointer" },
	{ 0xfc0, 64, "the NULL page's end", "bad pointer" },
	{ 0x0000800000000000, 64, "2^47", "outside user space" },
	{ 0x0000800000001000, 4096, "2^47 + a page", "outside user space" },
	{ 0x00ff000000000000, 64, "bits 48-55", "outside user space" },
	{ 0x7fff000000000000, 64, "bits 48-62", "outside user space" },
	{ 0xffff000000000000, 64, "0xffff000000000000", "outside user space" },
	{ 0xffff800000000000, 64, "the kernel's half", "outside user space" },
	{ 0x8000000000000000, 64, "2^63", "outside user space" },
	{ 0x00007ffffffff000, 0x2000, "across 2^47", "outside user space" },
	{ UINTPTR_MAX - 8191, 16384, "around the end", "outside user space" },
};

/*
 * Whether [@a, @a + @size) may be user space here: on x86-64 with
 * five-level paging (LA57), where user addresses have 56 bits, and
 * elsewhere, where the library checks only that it does not wrap.
 */
static bool maybe_user(uintptr_t a, size_t size)
{
#if defined(__x86_64__)
	unsigned int eax, ebx, ecx, edx;

	return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) &&
	       (ecx & (1u << 16)) && a + size - 1 >= a &&
	       !((a + size - 1) >> 56);
#else
	return a + size - 1 >= a;
#endif
}

static void test_map_addresses(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l0, l1;
	int failed = 0, ran = 0, l0_warns;
	char line[256];

	devres_ledger_snapshot(&l0);
	for (size_t i = 0; i < ARRAY_SIZE(map_calls); i++) {
		const struct map_call *c = &map_calls[i];

		for (size_t j = 0; j < ARRAY_SIZE(addrs); j++) {
			int w0 = devres_warn_count();
			dma_addr_t h;

			/* An offset cannot name an address below the page. */
			if ((c->map == by_offset &&
			     addrs[j].a < (uintptr_t)big) ||
			    (!strcmp(addrs[j].why, "outside user space") &&
			     maybe_user(addrs[j].a, addrs[j].size)))
				continue;
			start_capture();
			h = c->map(dev, addrs[j].a, addrs[j].size);
			ran++;
			snprintf(line, sizeof(line),
				 "WARNING: test-dev: %s: ", c->name);
			if (h == DMA_MAPPING_ERROR &&
			    devres_warn_count() - w0 == 1 && cap.n == 1 &&
			    !strncmp(cap.line[0], line, strlen(line)) &&
			    strstr(cap.line[0], addrs[j].why))
				continue;
			failed++;
			fprintf(stderr, "FAIL %s(%s): %s, %d WARNs%s%s\n",
				c->name, addrs[j].name,
				h == DMA_MAPPING_ERROR ? "refused" : "mapped",
				devres_warn_count() - w0, cap.n ? ": " : "",
				cap.n ? cap.line[0] : "");
			if (h != DMA_MAPPING_ERROR)
				dma_unmap_single(dev, h, addrs[j].size,
						 DMA_TO_DEVICE);
		}
	}
	devres_ledger_snapshot(&l1);
	fprintf(stderr, "%d cells, %d failed\n", ran, failed);
	assert_int_equal(failed, 0);
	assert_int_equal(l1.dma_maps, l0.dma_maps);
	l0_warns = devres_warn_count();
	/* A user-space buffer still maps, by each call. */
	for (size_t i = 0; i < ARRAY_SIZE(map_calls); i++) {
		dma_addr_t h = map_calls[i].map(dev, (uintptr_t)big + 4096, 64);

		assert_false(dma_mapping_error(dev, h));
		if (map_calls[i].map == by_single)
			dma_unmap_single(dev, h, 64, DMA_TO_DEVICE);
		else
			dma_unmap_page(dev, h, 64, DMA_TO_DEVICE);
	}
	assert_int_equal(devres_warn_count(), l0_warns);
}

static int group_setup(void **state)
{
	(void)state;
	big = mmap(NULL, LIMIT, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return big == MAP_FAILED ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return munmap(big, LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sizes_at_the_limit,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_map_addresses, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
