// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat pci tsan */
/*
 * The kernel's unmanaged BAR claims, pci_request_region(),
 * pci_release_region() and their plural forms, as a driver of
 * <linux/pci.h> calls them, as a table of cells: each on a tree of its
 * own, in a child of its own. A claim is made inside the BAR the scan
 * placed in the resource tree, as pcim_request_region()'s: a BAR the scan
 * left out, because a hostile `resource` gave it another device's range,
 * is refused (-EBUSY, no WARN) and never claimed inside that device's
 * BAR (whose own driver then got -EBUSY); its release is refused with a
 * WARN and leaves the other device's claim. A claim made twice is
 * -EBUSY, a release made twice or of a BAR never claimed WARNs once, and
 * the plural forms are all or nothing. pci_ioremap_bar() maps the BAR's
 * own file, as pci_iomap(): with no window of the board, over a window of
 * the process at the BAR's numbers (which it leaves alone) and for a BAR
 * left out for overlap (A's file is not written); in read-only mode it
 * is refused (NULL, no WARN). Before, it mapped whatever window covered
 * the BAR's numbers, writable in read-only mode, and nothing without one.
 * The ledger is back at its baseline at the end of each cell (the
 * fixture's teardown).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <linux/pci.h>
#include <devres/device.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include "testlib.h"
#include "pci/pcitest.h"
#include "hostile/cell-child.h"
#include "pci/ro-cell.h"

#define A "0000:00:05.0"
#define B "0000:00:06.0"

static struct pci_dev *a, *b;

/* Line 0 of B's `resource` says A's BAR 0: the scan leaves it out. */
static int b_bar0_is_a_bar0(void)
{
	char buf[4096], out[4096], *line = buf, *nl;
	ssize_t n = fake_read(B, "resource", buf, sizeof(buf));
	char first[128];
	int o;

	if (n <= 0 || fake_read(A, "resource", first, sizeof(first)) <= 0)
		return -1;
	nl = strchr(first, '\n');
	if (!nl)
		return -1;
	nl[1] = '\0';
	nl = strchr(line, '\n');
	if (!nl)
		return -1;
	o = snprintf(out, sizeof(out), "%s%s", first, nl + 1);
	return fake_overwrite(B, "resource", out, (size_t)o);
}

/* A's BAR @bar is free: a claim of its numbers is made, and given back. */
static bool free_range(struct pci_dev *p, int bar)
{
	struct resource *r = request_mem_region(
		pci_resource_start(p, bar), pci_resource_len(p, bar), "probe");

	if (!r)
		return false;
	release_mem_region(pci_resource_start(p, bar),
			   pci_resource_len(p, bar));
	return true;
}

static int c_claim_twice(void)
{
	int bad = 0;

	CHECK(pci_request_region(a, 0, "a") == 0);
	CHECK(pci_request_region(a, 0, "a") == -EBUSY);
	pci_release_region(a, 0);
	CHECK(free_range(a, 0));
	return bad;
}

static int c_left_out_claim(void)
{
	int bad = 0;

	CHECK(pci_request_region(b, 0, "b") == -EBUSY);
	/* Not inside A's BAR: A's own claim is made. */
	CHECK(pci_request_region(a, 0, "a") == 0);
	pci_release_region(a, 0);
	CHECK(free_range(a, 0));
	return bad;
}

static int c_left_out_release(void)
{
	int bad = 0, w;

	CHECK(pci_request_region(a, 0, "a") == 0);
	w = devres_warn_count();
	pci_release_region(b, 0);
	CHECK(devres_warn_count() == w + 1);
	/* A's claim is still A's. */
	CHECK(!free_range(a, 0));
	pci_release_region(a, 0);
	CHECK(devres_warn_count() == w + 1);
	CHECK(free_range(a, 0));
	return bad;
}

static int c_release_twice(void)
{
	int bad = 0, w;

	CHECK(pci_request_region(a, 0, "a") == 0);
	w = devres_warn_count();
	pci_release_region(a, 0);
	CHECK(devres_warn_count() == w);
	pci_release_region(a, 0);
	CHECK(devres_warn_count() == w + 1);
	CHECK(free_range(a, 0));
	return bad;
}

static int c_release_never(void)
{
	int bad = 0, w = devres_warn_count();

	pci_release_region(a, 0);
	CHECK(devres_warn_count() == w + 1);
	CHECK(free_range(a, 0));
	return bad;
}

static int c_regions_all_or_nothing(void)
{
	resource_size_t s1 = pci_resource_start(a, 1);
	int bad = 0;

	CHECK(request_mem_region(s1, pci_resource_len(a, 1), "program"));
	CHECK(pci_request_regions(a, "a") == -EBUSY);
	/* BAR 0, claimed before BAR 1 was refused, was given back. */
	CHECK(free_range(a, 0));
	release_mem_region(s1, pci_resource_len(a, 1));
	return bad;
}

static int c_regions_left_out(void)
{
	int bad = 0;

	CHECK(pci_request_regions(b, "b") == -EBUSY);
	CHECK(free_range(b, 1));
	CHECK(pci_request_regions(a, "a") == 0);
	pci_release_regions(a);
	CHECK(free_range(a, 0) && free_range(a, 1));
	return bad;
}

static int c_regions_released(void)
{
	int bad = 0, w;

	CHECK(pci_request_regions(a, "a") == 0);
	CHECK(!free_range(a, 0) && !free_range(a, 1));
	w = devres_warn_count();
	pci_release_regions(a);
	CHECK(devres_warn_count() == w);
	CHECK(free_range(a, 0) && free_range(a, 1));
	/* Twice: one WARN for each BAR no longer claimed. */
	pci_release_regions(a);
	CHECK(devres_warn_count() == w + 2);
	return bad;
}

#define MARK 0x6b6b9494u

/* The first word of file @file of device @name. */
static uint32_t first_word(const char *name, const char *file)
{
	char path[4096];
	uint32_t v = 0;
	int fd;

	if (pci_fake_path(ft, name, file, path, sizeof(path)))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, &v, 4, 0) != 4)
		v = 0;
	close(fd);
	return v;
}

/*
 * A window of the process over BAR 0's numbers of @p, backed by a memfd
 * (another device's registers, to the resource tree): its fd, or -1.
 */
static int window_over(struct pci_dev *p)
{
	int fd = memfd_create("other-window", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 4096) ||
	    iomem_window_add(pci_resource_start(p, 0), 4096, fd, 0,
			     "other-window")) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static uint32_t window_word(int fd)
{
	uint32_t v = 0;

	return pread(fd, &v, 4, 0) == 4 ? v : 0;
}

static void window_gone(struct pci_dev *p, int fd)
{
	(void)iomem_window_remove(pci_resource_start(p, 0));
	close(fd);
}

/* Mapped from @p's own file, whatever window covers its numbers. */
static int ioremap_bar_own_file(struct pci_dev *p, const char *name, int fd)
{
	void __iomem *m = pci_ioremap_bar(p, 0);
	int bad = 0, w = devres_warn_count();

	CHECK(m != NULL);
	if (!m)
		return bad;
	writel(MARK, m);
	CHECK(first_word(name, "resource0") == MARK);
	if (fd >= 0)
		CHECK(window_word(fd) != MARK);
	iounmap(m);
	CHECK(devres_warn_count() == w);
	return bad;
}

static int c_ioremap_bar(void)
{
	/* No board window: the BAR's file is enough. */
	return ioremap_bar_own_file(a, A, -1);
}

static int c_ioremap_bar_window(void)
{
	int fd = window_over(b), bad = 0;

	CHECK(fd >= 0);
	if (fd < 0)
		return bad;
	bad += ioremap_bar_own_file(b, B, fd);
	window_gone(b, fd);
	return bad;
}

static int c_ioremap_bar_left_out(void)
{
	char path[4096];
	int fd = -1, bad = 0;

	/* The board's window of A's BAR 0: A's own file, at its numbers. */
	if (!pci_fake_path(ft, A, "resource0", path, sizeof(path)))
		fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	if (fd < 0)
		return bad;
	CHECK(iomem_window_add(pci_resource_start(a, 0), 4096, fd, 0,
			       "a-bar0") == 0);
	/* B's BAR 0 says A's numbers: A's file is not written. */
	bad += ioremap_bar_own_file(b, B, fd);
	window_gone(a, fd);
	return bad;
}

static int c_ioremap_bar_readonly(void)
{
	int fd = window_over(b), bad = 0, w = devres_warn_count();
	void __iomem *m;

	CHECK(fd >= 0);
	if (fd < 0)
		return bad;
	pci_sysfs_set_readonly(true);
	m = pci_ioremap_bar(b, 0);
	CHECK(m == NULL);
	if (m)
		iounmap(m);
	CHECK(devres_warn_count() == w);
	window_gone(b, fd);
	return bad;
}

static const struct row {
	const char *name;
	int (*run)(void);
	bool b_left_out;
} rows[] = {
	{ "claim twice", c_claim_twice, false },
	{ "claim of a BAR left out for overlap", c_left_out_claim, true },
	{ "release of a BAR left out, another's claim there",
	  c_left_out_release, true },
	{ "release twice", c_release_twice, false },
	{ "release never claimed", c_release_never, false },
	{ "pci_request_regions all or nothing", c_regions_all_or_nothing,
	  false },
	{ "pci_request_regions with a BAR left out", c_regions_left_out, true },
	{ "pci_release_regions, twice", c_regions_released, false },
	{ "pci_ioremap_bar", c_ioremap_bar, false },
	{ "pci_ioremap_bar over another's window", c_ioremap_bar_window,
	  false },
	{ "pci_ioremap_bar of a BAR left out for overlap",
	  c_ioremap_bar_left_out, true },
	{ "pci_ioremap_bar in read-only mode", c_ioremap_bar_readonly, false },
};

#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static int one_cell(int row, int col)
{
	struct pci_fake_dev da = fake_dev(A, 0x1af4, 0x1000, 2);
	struct pci_fake_dev db = fake_dev(B, 0x1af4, 0x1001, 2);
	int bad = 0;

	(void)col;
	alarm(20);
	if (pci_setup(NULL) || pci_fake_add(ft, &da) || pci_fake_add(ft, &db))
		return 100;
	if (rows[row].b_left_out && b_bar0_is_a_bar0())
		return 101;
	if (pci_bus_scan() != 2)
		return 102;
	a = pci_get_device(0x1af4, 0x1000, NULL);
	b = pci_get_device(0x1af4, 0x1001, NULL);
	if (!a || !b)
		return 103;
	bad += rows[row].run();
	pci_dev_put(a);
	pci_dev_put(b);
	CHECK(pci_teardown(NULL) == 0);
	return bad;
}

static void every_cell(void **state)
{
	static const char *const cols[] = { "once" };
	const char *names[NROWS];

	(void)state;
	for (int i = 0; i < NROWS; i++)
		names[i] = rows[i].name;
	run_cells_in_children(one_cell, names, NROWS, cols, 1);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
