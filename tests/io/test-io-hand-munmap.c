// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A plain ioremap() mapping given back by the program's own munmap() (or
 * moved away by its mremap()) before its iounmap(): no record follows a
 * plain mapping, so the library still lists it, and its range may be
 * another owner's by the time iounmap() or pci_iounmap() comes. Each of
 * ioremap() and ioremap_wc() (mapped at an offset inside a page, so that
 * the address given out is not the page's) times iounmap() and
 * pci_iounmap(), times what the program did to it: nothing, munmap(),
 * munmap() then an anonymous mapping of its own over the range, mremap()
 * of it elsewhere then its own mapping over the old range: 16 cells, each
 * in a process of its own under an alarm.
 *
 * The plain unmap leaves the range alone unless it still is the window's
 * file at the same offset: one WARN in the unmap's name when it was
 * unmapped behind the library's back, none when not, and the program's
 * mapping there keeps its pages. Before, the unmap unmapped whatever was
 * at the address (the program's page, then read: SIGSEGV) and said
 * nothing.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/pci.h>
#include "iotest.h"
#include "child-check.h"
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10
#define WIN 0x94000000ull
#define WIN_SIZE 0x4000u
#define AT 0x1010u /* inside the second page of the window */
#define LEN 0x40u

enum row {
	R_IOREMAP_IOUNMAP,
	R_IOREMAP_PCI,
	R_WC_IOUNMAP,
	R_WC_PCI,
	NR_ROWS
};
enum col {
	H_NONE,
	H_MUNMAP,
	H_OVER,
	H_MOVED,
	NR_COLS
};

static const char *const rows[NR_ROWS] = { "ioremap/iounmap",
					   "ioremap/pci_iounmap",
					   "ioremap_wc/iounmap",
					   "ioremap_wc/pci_iounmap" };
static const char *const cols[NR_COLS] = { "untouched", "munmap",
					   "munmap, then another mapping",
					   "mremap away, then another "
					   "mapping" };

/* The program's own page over @page: 0, and filled with 0x5a. */
static int map_over(void *page, size_t len)
{
	void *p = mmap(page, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0);

	if (p != page)
		return -1;
	memset(p, 0x5a, len);
	return 0;
}

/* Whether @page is mapped: mincore() says ENOMEM when not. */
static bool mapped(void *page, size_t len)
{
	unsigned char vec[4];

	return mincore(page, len, vec) == 0;
}

static int cell(int row, int col)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	bool wc = row == R_WC_IOUNMAP || row == R_WC_PCI;
	bool pci = row == R_IOREMAP_PCI || row == R_WC_PCI;
	struct io_window w;
	void *addr, *base, *moved = NULL;
	volatile unsigned char *p;
	int warns;

	alarm(CELL_ALARM_S);
	CHILD_CHECK(page <= 0x1000u);
	CHILD_CHECK(!io_window_add(&w, WIN, WIN_SIZE, "hand-munmap"));
	addr = wc ? ioremap_wc(WIN + AT, LEN) : ioremap(WIN + AT, LEN);
	CHILD_CHECK(addr);
	base = (void *)((uintptr_t)addr & ~(uintptr_t)(page - 1));
	CHILD_CHECK(addr != base);
	writel(0x11223344u, addr);
	CHILD_CHECK(w.devside[AT] == 0x44);

	if (col == H_MUNMAP || col == H_OVER)
		CHILD_CHECK(!munmap(base, page));
	if (col == H_MOVED) {
		moved = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
		CHILD_CHECK(moved != MAP_FAILED);
		CHILD_CHECK(mremap(base, page, page,
				   MREMAP_MAYMOVE | MREMAP_FIXED,
				   moved) == moved);
	}
	if (col == H_OVER || col == H_MOVED)
		CHILD_CHECK(!map_over(base, page));

	start_capture();
	if (pci)
		pci_iounmap(NULL, addr);
	else
		iounmap(addr);
	warns = count_prefix("WARNING:");
	if (col == H_NONE) {
		CHILD_CHECK(warns == 0);
		CHILD_CHECK(!mapped(base, page));
	} else {
		if (warns != 1)
			fprintf(stderr, "%d WARNs\n", warns);
		CHILD_CHECK(warns == 1);
		CHILD_CHECK(
			strstr(cap.line[0], pci ? "pci_iounmap" : "iounmap"));
	}
	if (col == H_MUNMAP)
		CHILD_CHECK(!mapped(base, page));
	if (col == H_OVER || col == H_MOVED) {
		/* The program's page: still there, its bytes its own. */
		CHILD_CHECK(mapped(base, page));
		p = base;
		CHILD_CHECK(p[0] == 0x5a && p[page - 1] == 0x5a);
		CHILD_CHECK(!munmap(base, page));
	}
	if (moved)
		CHILD_CHECK(!munmap(moved, page));
	return 0;
}

static void hand_munmap(void **state)
{
	(void)state;
	run_cells_in_children(cell, rows, NR_ROWS, cols, NR_COLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hand_munmap),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
