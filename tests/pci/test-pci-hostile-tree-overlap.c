// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * BAR ranges of a hostile `resource` that overlap something the process
 * already has in its resource tree, as a table: device B's BAR given A's
 * range, a part of it, a range around it, one across its end; B's BAR 1
 * given B's BAR 0; B's BAR 0 given the range of a region the program
 * claimed. A BAR is placed in the tree only where nothing is (as the
 * kernel claims a BAR): one that overlaps is not placed, and each cell
 * checks on a tree of its own that
 *
 * - a region claim of the overlapping BAR is refused (-EBUSY) with one
 *   line naming the device and the BAR, and no WARN; before, it was made
 *   inside A's BAR (or over it), and A's own driver then got -EBUSY;
 * - pcim_request_all_regions() of B is refused and leaves nothing
 *   claimed, and B's BARs that do not overlap are claimed as ever;
 * - A claims its BAR, before B's attempt and after it;
 * - B's BAR is mapped from B's own resourceN: a mark written through
 *   the mapping is in B's file, not in A's;
 * - the program's region is still its own, and the ledger is back at its
 *   baseline (the fixture's teardown).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include "testlib.h"
#include "pcitest.h"

#define A "0000:00:05.0"
#define B "0000:00:06.0"
#define MARK 0x6b6b9494u
#define PROGRAM 0xd0000000ull /* a region of the program's, 4 KiB */

/* A's BARs are at 0xc0000000 and 0xc0001000, B's at 0xc0002000, ...3000. */
static const struct row {
	const char *name;
	int bar; /* B's BAR given the range */
	unsigned long long start, end;
	int a_bar; /* A's BAR it overlaps, or -1 */
} rows[] = {
	{ "B's BAR 0 is A's BAR 0", 0, 0xc0000000, 0xc0000fff, 0 },
	{ "B's BAR 0 inside A's BAR 0", 0, 0xc0000800, 0xc0000bff, 0 },
	{ "B's BAR 0 around A's BARs", 0, 0xbffff000, 0xc0001fff, 0 },
	{ "B's BAR 0 across A's BAR 0's end", 0, 0xc0000800, 0xc00017ff, 0 },
	{ "B's BAR 1 is B's BAR 0", 1, 0xc0002000, 0xc0002fff, -1 },
	{ "B's BAR 0 is the program's region", 0, PROGRAM, PROGRAM + 0xfff,
	  -1 },
};

/* Line @bar of B's `resource` now says [@start, @end], a memory BAR. */
static void set_line(int bar, unsigned long long start, unsigned long long end)
{
	char buf[4096], out[4096], *line = buf;
	ssize_t n = fake_read(B, "resource", buf, sizeof(buf));
	size_t o = 0;

	assert_true(n > 0);
	for (int i = 0; *line; i++) {
		char *nl = strchr(line, '\n');

		assert_non_null(nl);
		*nl = '\0';
		if (i == bar)
			o += (size_t)snprintf(
				out + o, sizeof(out) - o,
				"0x%016llx 0x%016llx "
				"0x%016llx\n",
				start, end, (unsigned long long)IORESOURCE_MEM);
		else
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s\n",
					      line);
		line = nl + 1;
	}
	assert_int_equal(fake_overwrite(B, "resource", out, o), 0);
}

static uint32_t first_word(const char *name, const char *file)
{
	char path[4096];
	uint32_t v = 0;
	int fd;

	assert_int_equal(pci_fake_path(ft, name, file, path, sizeof(path)), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &v, 4, 0), 4);
	close(fd);
	return v;
}

static int lines_of_b(int bar)
{
	char head[128];
	int n = 0;

	snprintf(head, sizeof(head),
		 "pci " B ": BAR %d is not in the resource tree", bar);
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += strstr(cap.line[i], head) != NULL;
	return n;
}

/* Asserts what holds either way; returns how many claims went wrong. */
static int cell(const struct row *r, bool a_first)
{
	struct pci_fake_dev a = fake_dev(A, 0x1af4, 0x10, 2);
	struct pci_fake_dev b = fake_dev(B, 0x1af4, 0x20, 2);
	struct resource *prog = NULL;
	int b_other = r->bar ? 0 : 1;
	struct pci_dev *pa, *pb;
	void __iomem *m;
	char file[16];
	int warns, ret, all, bad = 0;

	assert_int_equal(pci_setup(NULL), 0);
	if (r->a_bar < 0 && r->start == PROGRAM) {
		prog = request_mem_region(PROGRAM, 0x1000, "program");
		assert_non_null(prog);
	}
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_fake_add(ft, &b), 0);
	set_line(r->bar, r->start, r->end);
	/* B's file holds the BAR as its line says, so that it maps. */
	snprintf(file, sizeof(file), "resource%d", r->bar);
	if (r->end - r->start + 1 > 4096) {
		char path[4096];

		assert_int_equal(pci_fake_path(ft, B, file, path, sizeof(path)),
				 0);
		assert_int_equal(truncate(path, (off_t)(r->end - r->start + 1)),
				 0);
	}
	assert_int_equal(pci_bus_scan(), 2);
	pa = pci_get_device(0x1af4, 0x10, NULL);
	pb = pci_get_device(0x1af4, 0x20, NULL);
	assert_non_null(pa);
	assert_non_null(pb);
	assert_int_equal(pci_resource_start(pb, r->bar), r->start);

	if (a_first && r->a_bar >= 0) {
		ret = pcim_request_region(pa, r->a_bar, "a");
		if (ret) {
			fprintf(stderr, "%s: A's own claim %d\n", r->name, ret);
			bad++;
		}
	}
	warns = devres_warn_count();
	start_log_capture();
	ret = pcim_request_region(pb, r->bar, "b");
	all = pcim_request_all_regions(pb, "b");
	devres_set_log_sink(NULL, NULL);
	if (ret != -EBUSY || all != -EBUSY || cap.n != 2 ||
	    lines_of_b(r->bar) != 2) {
		fprintf(stderr, "%s%s: B's claims %d, %d; %d lines, %d B's\n",
			r->name, a_first ? " (A first)" : "", ret, all, cap.n,
			lines_of_b(r->bar));
		bad++;
	}
	assert_int_equal(devres_warn_count(), warns);
	/* All or nothing: B's other BAR was given back. */
	if (r->bar == 1) {
		assert_int_equal(pcim_request_region(pb, b_other, "b"), 0);
		pcim_release_region(pb, b_other);
	}
	if (!a_first && r->a_bar >= 0) {
		ret = pcim_request_region(pa, r->a_bar, "a");
		if (ret) {
			fprintf(stderr, "%s: A's claim %d after B's\n", r->name,
				ret);
			bad++;
		}
	}

	/* Mapped from B's own file, whatever its range says. */
	m = pcim_iomap(pb, r->bar, 0);
	assert_non_null(m);
	writel(MARK, m);
	assert_int_equal(first_word(B, file), MARK);
	assert_int_not_equal(first_word(A, "resource0"), MARK);
	assert_int_not_equal(first_word(A, "resource1"), MARK);
	assert_int_not_equal(first_word(B, b_other ? "resource1" : "resource0"),
			     MARK);

	devres_release_all(&pa->dev);
	devres_release_all(&pb->dev);
	pci_dev_put(pa);
	pci_dev_put(pb);
	if (prog) {
		/* Still the program's: its release takes it. */
		release_mem_region(PROGRAM, 0x1000);
		prog = request_mem_region(PROGRAM, 0x1000, "again");
		assert_non_null(prog);
		release_mem_region(PROGRAM, 0x1000);
	}
	assert_int_equal(pci_teardown(NULL), 0);
	return bad;
}

static void every_overlap(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bad += cell(&rows[i], false);
		bad += cell(&rows[i], true);
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_overlap),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
