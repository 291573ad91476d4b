// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Register windows and ioremap against memfd-backed windows: a second,
 * independent mapping of the memfd (the "device") proves that writes reach
 * it and that reads see its changes; unaligned and out-of-window requests;
 * a window removed while mapped or claimed; misuse of iounmap; the managed
 * forms, devm_ioremap_resource's errors, and faults at every point.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/platform.h>
#include "testlib.h"
#include "iotest.h"

#define WIN 0x80000000ull
#define WIN_SIZE 0x4000u

static struct io_window win;

static int win_setup(void **state)
{
	if (io_window_add(&win, WIN, WIN_SIZE, "test-window"))
		return -1;
	return dev_setup(state);
}

static int win_teardown(void **state)
{
	int ret = dev_teardown(state);

	if (io_window_remove(&win, WIN, WIN_SIZE))
		ret = -1;
	return ret;
}

static struct devres_ledger snap(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l;
}

static void window_checks(void **state)
{
	int fd = dev_memfd(0x2000), ro;
	char path[64];

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(iomem_window_add(0x90000000, 0, fd, 0, "w"), -EINVAL);
	assert_int_equal(iomem_window_add(~0ull - 0xfff, 0x2000, fd, 0, "w"),
			 -EINVAL);
	assert_int_equal(iomem_window_add(0x90000000, 0x1000, fd, -1, "w"),
			 -EINVAL);
	assert_int_equal(iomem_window_add(0x90000000, 0x1000, fd, 0, NULL),
			 -EINVAL);
	assert_int_equal(iomem_window_add(0x90000000, 0x1000, -1, 0, "w"),
			 -EBADF);
	assert_int_equal(iomem_window_add(0x90000000, 0x1000, 1000, 0, "w"),
			 -EBADF);
	/* The memfd holds 0x2000 bytes: not 0x1000 from 0x1001. */
	assert_int_equal(iomem_window_add(0x90000000, 0x1000, fd, 0x1001, "w"),
			 -EINVAL);
	assert_int_equal(iomem_window_add(0x90000000, 0x3000, fd, 0, "w"),
			 -EINVAL);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	assert_int_equal(iomem_window_add(0x90000000, 0x1000, ro, 0, "w"),
			 -EACCES);
	close(ro);
	/* Overlapping the fixture's window, at either end or inside. */
	assert_int_equal(iomem_window_add(WIN - 0x1000, 0x1001, fd, 0, "w"),
			 -EBUSY);
	assert_int_equal(iomem_window_add(WIN + WIN_SIZE - 1, 0x1000, fd, 0,
					  "w"),
			 -EBUSY);
	assert_int_equal(iomem_window_add(WIN + 0x1000, 0x1000, fd, 0, "w"),
			 -EBUSY);
	close(fd);
}

static void window_fd_and_tree(void **state)
{
	struct devres_ledger before = snap(), after;
	struct fdset fds;
	int fd = dev_memfd(0x2000);
	void *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	fd_snapshot(&fds);
	assert_int_equal(iomem_window_add(0x90000000, 0x2000, fd, 0, "w9"), 0);
	/* The library's own copy of the fd, and it is close-on-exec. */
	assert_int_equal(new_fds_cloexec(&fds), 1);
	after = snap();
	assert_int_equal(after.fds, before.fds + 1);
	/* The caller's fd is the caller's: closing it changes nothing. */
	close(fd);
	f = open_memstream(&buf, &len);
	resource_dump(&iomem_resource, f);
	fclose(f);
	assert_non_null(strstr(buf, "90000000-90001fff : w9\n"));
	free(buf);
	/* Mapped through the library's copy. */
	r = ioremap(0x90001000, 4);
	assert_non_null(r);
	iounmap(r);
	assert_int_equal(iomem_window_remove(0x90000000), 0);
	after = snap();
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	start_capture();
	assert_int_equal(iomem_window_remove(0x90000000), -ENOENT);
	expect_warn_on("(no device)", "iomem_window_remove",
		       "no window at 0x90000000");
}

static void writes_reach_device(void **state)
{
	struct devres_ledger before = snap(), after;
	volatile unsigned char *r;

	(void)state;
	r = ioremap(WIN + 0x100, 0x100);
	assert_non_null(r);
	after = snap();
	assert_int_equal(after.maps, before.maps + 1);
	assert_int_equal(after.map_bytes, before.map_bytes + getpagesize());
	writel(0xdeadbeef, r + 0x10);
	/* Little-endian in the device, whatever the CPU. */
	assert_int_equal(win.devside[0x110], 0xef);
	assert_int_equal(win.devside[0x113], 0xde);
	win.devside[0x120] = 0x5a;
	assert_int_equal(readb(r + 0x20), 0x5a);
	iounmap(r);
	after = snap();
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void unaligned_offsets(void **state)
{
	int fd = dev_memfd(0x3000);
	volatile unsigned char *view = dev_view(fd, 0x3000), *r;
	long page = getpagesize();

	(void)state;
	assert_non_null(view);
	/* The window starts 0x104 bytes into its fd. */
	assert_int_equal(iomem_window_add(0x91000000, 0x2000, fd, 0x104, "w"),
			 0);
	r = ioremap(0x91000003, 9);
	assert_non_null(r);
	assert_int_equal((uintptr_t)r % page, 0x107);
	writeb(0xa5, r);
	assert_int_equal(view[0x107], 0xa5);
	/* Across a page boundary of the fd. */
	iounmap(r);
	r = ioremap(0x91000ef8, 0x10);
	assert_non_null(r);
	writeq(0x0102030405060708ull, r + 4);
	assert_int_equal(view[0x1000], 0x08);
	assert_int_equal(view[0x1007], 0x01);
	iounmap(r);
	assert_int_equal(iomem_window_remove(0x91000000), 0);
	munmap((void *)view, 0x3000);
	close(fd);
}

static void out_of_window(void **state)
{
	struct devres_ledger before = snap(), after;

	(void)state;
	errno = 0;
	assert_null(ioremap(WIN - 0x10, 0x8));
	assert_int_equal(errno, ENXIO);
	/* Starts inside, runs past the end by one byte. */
	assert_null(ioremap(WIN + WIN_SIZE - 4, 5));
	assert_int_equal(errno, ERANGE);
	assert_null(ioremap(WIN - 4, 8));
	assert_int_equal(errno, ENXIO);
	assert_null(ioremap(WIN, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(ioremap(~0ull - 3, 8));
	assert_int_equal(errno, EINVAL);
	/* The last byte alone is fine. */
	iounmap(ioremap(WIN + WIN_SIZE - 1, 1));
	after = snap();
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void remove_while_mapped(void **state)
{
	void *r = ioremap(WIN, 4);

	(void)state;
	assert_non_null(r);
	start_capture();
	assert_int_equal(iomem_window_remove(WIN), -EBUSY);
	expect_warn_on("(no device)", "iomem_window_remove",
		       "window test-window is in use (mapped)");
	/* Still usable. */
	writel(7, r);
	assert_int_equal(win.devside[0], 7);
	iounmap(r);
	/* Now only a busy region holds it. */
	assert_non_null(request_mem_region(WIN + 0x200, 0x10, "drv"));
	start_capture();
	assert_int_equal(iomem_window_remove(WIN), -EBUSY);
	expect_warn_on("(no device)", "iomem_window_remove",
		       "window test-window is in use (busy regions)");
	release_mem_region(WIN + 0x200, 0x10);
}

static void iounmap_misuse(void **state)
{
	unsigned char *r = ioremap(WIN, 0x10);

	(void)state;
	assert_non_null(r);
	start_capture();
	iounmap(r + 1);
	expect_warn_on("(no device)", "iounmap",
		       "is not a mapping from ioremap");
	iounmap(r);
	start_capture();
	iounmap(r);
	expect_warn_on("(no device)", "iounmap",
		       "is not a mapping from ioremap");
	start_capture();
	iounmap(NULL);
	expect_no_warn();
}

static void managed_maps(void **state)
{
	struct device *dev = *state;
	struct devres_ledger before = snap(), after;
	void *a, *b, *c;
	char *text;

	a = devm_ioremap(dev, WIN, 0x10);
	b = devm_ioremap_wc(dev, WIN + 0x1000, 0x10);
	c = devm_ioremap(dev, WIN + 0x2000, 0x10);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	after = snap();
	assert_int_equal(after.maps, before.maps + 3);
	text = dump_to_string(dev);
	assert_int_equal(count_substr(text, "devm_ioremap "), 2);
	assert_int_equal(count_substr(text, "devm_ioremap_wc"), 1);
	free(text);
	writel(0x11223344, b);
	assert_int_equal(win.devside[0x1000], 0x44);
	devm_iounmap(dev, b);
	devm_iounmap(dev, a);
	after = snap();
	assert_int_equal(after.maps, before.maps + 1);
	start_capture();
	devm_iounmap(dev, a);
	expect_warn("devm_iounmap", "is not a managed mapping");
	/* A mapping of its own is not the device's. */
	a = ioremap(WIN, 4);
	start_capture();
	devm_iounmap(dev, a);
	expect_warn("devm_iounmap", "is not a managed mapping");
	iounmap(a);
	errno = 0;
	assert_null(devm_ioremap(dev, WIN + WIN_SIZE, 4));
	assert_int_equal(errno, ENXIO);
	expect_stats(dev, 1, sizeof(void *));
	assert_int_equal(devres_release_all(dev), 1);
	after = snap();
	assert_int_equal(after.maps, before.maps);
	assert_int_equal(after.map_bytes, before.map_bytes);
}

static void map_faults(void **state)
{
	struct device *dev = *state;
	struct devres_ledger before = snap(), after;
	unsigned int n;

	for (n = 1;; n++) {
		void *p;

		devres_fail_nth(n);
		p = devm_ioremap(dev, WIN + 0x10, 0x10);
		if (devres_fail_nth_get() != 0) {
			devres_fail_nth(0);
			assert_non_null(p);
			break;
		}
		assert_null(p);
		assert_int_equal(errno, ENOMEM);
		after = snap();
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	/* The node, the bookkeeping and the mmap. */
	assert_int_equal(n, 4);
	devres_release_all(dev);
}

static void ioremap_resource_errors(void **state)
{
	struct device *dev = *state;
	struct resource io = DEFINE_RES_IO(0x100, 8);
	struct resource mem = DEFINE_RES_MEM_NAMED(WIN + 0x100, 0x100, "regs");
	struct resource nowin = DEFINE_RES_MEM(0xa0000000, 0x100);
	struct devres_ledger before = snap(), after;
	void *a;

	/* Each error is logged against the device, as the kernel logs it. */
	start_log_capture();
	assert_int_equal(PTR_ERR(devm_ioremap_resource(dev, NULL)), -EINVAL);
	assert_int_equal(PTR_ERR(devm_ioremap_resource(dev, &io)), -EINVAL);
	a = devm_ioremap_resource(dev, &mem);
	assert_false(IS_ERR_OR_NULL(a));
	/* Claimed: the same range again is refused. */
	assert_int_equal(PTR_ERR(devm_ioremap_resource(dev, &mem)), -EBUSY);
	after = snap();
	assert_int_equal(after.regions, before.regions + 1);
	/* No window: the region it claimed is given back at once. */
	errno = 0;
	assert_int_equal(PTR_ERR(devm_ioremap_resource(dev, &nowin)), -ENOMEM);
	assert_int_equal(errno, ENXIO);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 4);
	assert_non_null(strstr(cap.line[0], "invalid resource (null)"));
	assert_non_null(strstr(cap.line[1], "invalid resource [0x100-0x107"));
	assert_non_null(strstr(cap.line[2], "can't request region for "
					    "resource"));
	assert_non_null(strstr(cap.line[3], "ioremap failed for resource [mem "
					    "0xa0000000-0xa00000ff]"));
	for (int i = 0; i < 4; i++)
		assert_non_null(strstr(cap.line[i], dev_name(dev)));
	after = snap();
	assert_int_equal(after.regions, before.regions + 1);
	/* The region's node (start, size, claim number) and the mapping's. */
	expect_stats(dev, 2, (int)sizeof(void *) + 24);
	assert_int_equal(devres_release_all(dev), 2);
	start_capture();
	assert_int_equal(PTR_ERR(devm_ioremap_resource(NULL, &mem)), -EINVAL);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 1);
}

static void resource_map_faults(void **state)
{
	struct device *dev = *state;
	struct resource mem = DEFINE_RES_MEM_NAMED(WIN + 0x100, 0x100, "regs");
	struct devres_ledger before = snap(), after;
	unsigned int n;

	for (n = 1;; n++) {
		void *p;

		devres_fail_nth(n);
		p = devm_ioremap_resource(dev, &mem);
		if (devres_fail_nth_get() != 0) {
			devres_fail_nth(0);
			assert_false(IS_ERR(p));
			break;
		}
		assert_true(IS_ERR(p));
		after = snap();
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
		expect_stats(dev, 0, 0);
	}
	/* Region node, region, map node, bookkeeping, mmap. */
	assert_int_equal(n, 6);
	devres_release_all(dev);
}

static void platform_shortcuts(void **state)
{
	struct resource res[] = {
		DEFINE_RES_MEM_NAMED(WIN + 0x1000, 0x100, "ctrl"),
		DEFINE_RES_IRQ(5),
		DEFINE_RES_MEM_NAMED(WIN + 0x2000, 0x100, "data"),
	};
	struct platform_device *pdev;
	struct resource *got = NULL;
	unsigned char *a, *b;

	(void)state;
	pdev = platform_device_register_simple("io-map-dev", 0, res, 3);
	assert_false(IS_ERR(pdev));
	a = devm_platform_ioremap_resource(pdev, 0);
	b = devm_platform_get_and_ioremap_resource(pdev, 1, &got);
	assert_false(IS_ERR(a));
	assert_false(IS_ERR(b));
	assert_ptr_equal(got, &pdev->resource[2]);
	writel(1, a);
	writel(2, b + 0x80);
	assert_int_equal(win.devside[0x1000], 1);
	assert_int_equal(win.devside[0x2080], 2);
	assert_int_equal(
		PTR_ERR(devm_platform_get_and_ioremap_resource(pdev, 2, &got)),
		-EINVAL);
	assert_null(got);
	/* The regions sit inside the device's resources. */
	assert_ptr_equal(pdev->resource[0].child->start, WIN + 0x1000);
	start_capture();
	assert_int_equal(PTR_ERR(devm_platform_ioremap_resource(NULL, 0)),
			 -EINVAL);
	expect_warn_on("(no device)", "devm_platform_ioremap_resource",
		       "NULL device");
	platform_device_unregister(pdev);
}

static void accessor_widths(void **state)
{
	volatile unsigned char *r = ioremap(WIN, 0x40);

	(void)state;
	assert_non_null(r);
	/* Each store changes exactly its bytes, in little-endian order. */
	memset((void *)win.devside, 0xcc, 0x40);
	writeb(0x01, r + 1);
	writew(0x0302, r + 2);
	writel(0x07060504, r + 4);
	writeq(0x0f0e0d0c0b0a0908ull, r + 8);
	assert_int_equal(win.devside[0], 0xcc);
	for (int i = 1; i < 16; i++)
		assert_int_equal(win.devside[i], i);
	assert_int_equal(win.devside[16], 0xcc);
	assert_int_equal(readb(r + 1), 0x01);
	assert_int_equal(readw(r + 2), 0x0302);
	assert_int_equal(readl(r + 4), 0x07060504);
	assert_true(readq(r + 8) == 0x0f0e0d0c0b0a0908ull);
	assert_int_equal(readb_relaxed(r + 1), 0x01);
	assert_int_equal(readw_relaxed(r + 2), 0x0302);
	assert_int_equal(readl_relaxed(r + 4), 0x07060504);
	assert_true(readq_relaxed(r + 8) == 0x0f0e0d0c0b0a0908ull);
	assert_int_equal(ioread8(r + 1), 0x01);
	assert_int_equal(ioread16(r + 2), 0x0302);
	assert_int_equal(ioread32(r + 4), 0x07060504);
	assert_true(ioread64(r + 8) == 0x0f0e0d0c0b0a0908ull);
	/* Big-endian registers. */
	assert_int_equal(ioread16be(r + 2), 0x0203);
	assert_int_equal(ioread32be(r + 4), 0x04050607);
	assert_true(ioread64be(r + 8) == 0x08090a0b0c0d0e0full);
	iowrite16be(0x1122, r + 0x10);
	iowrite32be(0x33445566, r + 0x14);
	iowrite64be(0x778899aabbccddeeull, r + 0x18);
	assert_int_equal(win.devside[0x10], 0x11);
	assert_int_equal(win.devside[0x11], 0x22);
	assert_int_equal(win.devside[0x14], 0x33);
	assert_int_equal(win.devside[0x17], 0x66);
	assert_int_equal(win.devside[0x18], 0x77);
	assert_int_equal(win.devside[0x1f], 0xee);
	writeb_relaxed(0xa1, r + 0x20);
	writew_relaxed(0xa3a2, r + 0x22);
	writel_relaxed(0xa7a6a5a4, r + 0x24);
	writeq_relaxed(0xafaeadacabaaa9a8ull, r + 0x28);
	iowrite8(0xb0, r + 0x30);
	iowrite16(0xb3b2, r + 0x32);
	iowrite32(0xb7b6b5b4, r + 0x34);
	iowrite64(0xbfbebdbcbbbab9b8ull, r + 0x38);
	assert_int_equal(win.devside[0x20], 0xa1);
	assert_int_equal(win.devside[0x21], 0xcc);
	for (int i = 0x22; i < 0x30; i++)
		assert_int_equal(win.devside[i], 0xa0 + i - 0x20);
	assert_int_equal(win.devside[0x30], 0xb0);
	assert_int_equal(win.devside[0x31], 0xcc);
	for (int i = 0x32; i < 0x40; i++)
		assert_int_equal(win.devside[i], 0xb0 + i - 0x30);
	iounmap(r);
}

static void block_copies(void **state)
{
	volatile unsigned char *r = ioremap(WIN + 0x400, 0x100);
	unsigned char src[64], dst[64];

	(void)state;
	assert_non_null(r);
	for (int i = 0; i < 64; i++)
		src[i] = (unsigned char)(i + 1);
	memset((void *)(win.devside + 0x400), 0, 0x100);
	/* Unaligned start, odd length: bytes, words, bytes. */
	memcpy_toio(r + 3, src, 37);
	assert_int_equal(win.devside[0x402], 0);
	assert_memory_equal((const void *)(win.devside + 0x403), src, 37);
	assert_int_equal(win.devside[0x403 + 37], 0);
	memset(dst, 0, sizeof(dst));
	memcpy_fromio(dst, r + 5, 29);
	assert_memory_equal(dst, src + 2, 29);
	assert_int_equal(dst[29], 0);
	memset_io(r + 0x41, 0x7e, 21);
	assert_int_equal(win.devside[0x440], 0);
	for (int i = 0x441; i < 0x441 + 21; i++)
		assert_int_equal(win.devside[i], 0x7e);
	assert_int_equal(win.devside[0x441 + 21], 0);
	memcpy_toio(r, src, 0);
	memset_io(r, 0, 0);
	iounmap(r);
}

#define T(f) cmocka_unit_test_setup_teardown(f, win_setup, win_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(window_checks),	T(window_fd_and_tree),
		T(writes_reach_device), T(unaligned_offsets),
		T(out_of_window),	T(remove_while_mapped),
		T(iounmap_misuse),	T(managed_maps),
		T(map_faults),		T(ioremap_resource_errors),
		T(resource_map_faults), T(platform_shortcuts),
		T(accessor_widths),	T(block_copies),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
