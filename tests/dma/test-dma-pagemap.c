// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
#define _GNU_SOURCE
/*
 * The physical-address DMA ops: a handle is the physical address that
 * /proc/self/pagemap gives for the memory, checked against the test's own
 * read of it. Skipped (77) where frame numbers read as 0 (no
 * CAP_SYS_ADMIN) or pagemap cannot be read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))

/*
 * Every open() of the process comes here first (the executable's symbol
 * wins over libc's), so the test sees the flags the library opens
 * pagemap with.
 */
static int pagemap_opens, pagemap_cloexec;

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	/* The calling thread's: the main thread's is gone after its end. */
	if (strcmp(path, "/proc/thread-self/pagemap") == 0) {
		pagemap_opens++;
		pagemap_cloexec += (flags & O_CLOEXEC) != 0;
	}
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* The physical address of @p, 0 when not readable. */
static uint64_t phys_of(const void *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, sizeof(e),
		  (off_t)((uintptr_t)p / PAGE * sizeof(e))) != sizeof(e))
		e = 0;
	close(fd);
	if (!(e >> 63) || !(e & ((1ULL << 55) - 1)))
		return 0;
	return (e & ((1ULL << 55) - 1)) * PAGE + (uintptr_t)p % PAGE;
}

static void test_coherent_and_streaming(void **state)
{
	struct device *dev = *state;
	dma_addr_t h, hs, hs2;
	char *p, *buf;

	int opens;

	set_dma_ops(dev, devres_dma_pagemap_ops());
	assert_int_equal(dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64)), 0);
	opens = pagemap_opens;
	p = dma_alloc_coherent(dev, 100, &h, GFP_KERNEL);
	assert_non_null(p);
	/* The library opened pagemap once, close-on-exec. */
	assert_int_equal(pagemap_opens, opens + 1);
	assert_int_equal(pagemap_cloexec, pagemap_opens);
	assert_int_equal(h, phys_of(p));
	assert_ptr_equal(dma_iova_to_virt(dev, h + 10, 90), p + 10);
	assert_null(dma_iova_to_virt(dev, h, 101));

	buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	assert_int_equal(mlock(buf, PAGE), 0);
	hs = dma_map_single(dev, buf + 64, 128, DMA_TO_DEVICE);
	assert_false(dma_mapping_error(dev, hs));
	assert_int_equal(hs, phys_of(buf + 64));
	/* Without an IOMMU, the same bytes have one bus address. */
	hs2 = dma_map_single(dev, buf + 100, 8, DMA_TO_DEVICE);
	assert_true(dma_mapping_error(dev, hs2));
	hs2 = dma_map_single(dev, buf + 192, 8, DMA_TO_DEVICE);
	assert_false(dma_mapping_error(dev, hs2));
	assert_int_equal(hs2, hs + 128);
	dma_unmap_single(dev, hs2, 8, DMA_TO_DEVICE);
	dma_unmap_single(dev, hs, 128, DMA_TO_DEVICE);
	munmap(buf, PAGE);
	dma_free_coherent(dev, 100, p, h);
	set_dma_ops(dev, NULL);
}

static void test_mask_and_contiguity(void **state)
{
	struct device *dev = *state;
	dma_addr_t h;
	char *p;

	set_dma_ops(dev, devres_dma_pagemap_ops());
	/* Below the lowest physical page of any buffer: refused. */
	assert_int_equal(dma_set_coherent_mask(dev, DMA_BIT_MASK(13)), 0);
	assert_null(dma_alloc_coherent(dev, 100, &h, GFP_KERNEL));
	assert_int_equal(errno, EIO);
	assert_int_equal(dma_set_coherent_mask(dev, DMA_BIT_MASK(64)), 0);
	/* Several pages: only when the frames happen to be contiguous. */
	p = dma_alloc_coherent(dev, 16 * PAGE, &h, GFP_KERNEL);
	if (p) {
		for (size_t i = 0; i < 16; i++)
			assert_int_equal(phys_of(p + i * PAGE), h + i * PAGE);
		dma_free_coherent(dev, 16 * PAGE, p, h);
	} else {
		assert_int_equal(errno, EIO);
	}
	set_dma_ops(dev, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_coherent_and_streaming,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_mask_and_contiguity,
						dev_setup, dev_teardown),
	};
	char *probe = malloc(1);

	*(volatile char *)probe = 1;
	if (!phys_of(probe)) {
		free(probe);
		fprintf(stderr, "pagemap shows no frame numbers: skipped\n");
		return 77;
	}
	free(probe);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
