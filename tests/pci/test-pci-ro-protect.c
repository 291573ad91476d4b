// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * Read-only mode (pci_sysfs_set_readonly()) against a protection that asks
 * write access back over a BAR mapping made before the switch, as a table:
 * the mapping (a pci_iomap() one of the program's own, which no record of
 * managed mappings names, or a pcim_iomap() one of a node's) times where
 * the call is made (the process that mapped it, or a child of fork(),
 * whose table of records is empty and whose copy of the mapping reaches
 * the same device) (a row), times the call (a column): mprotect(2) with
 * PROT_READ|PROT_WRITE, with PROT_WRITE alone, with
 * PROT_READ|PROT_WRITE|PROT_EXEC, pkey_mprotect(2) with the default key,
 * and mremap(2) moving it, copying it (an old length of 0) or growing it
 * (a copy or a moved mapping is the program's, which a later mprotect()
 * makes writable). 28 cells, each in a child of its own under an alarm.
 *
 * Each cell: the call is refused with EPERM and one WARN naming the
 * device, the call and the call that made the mapping; no mapping of the
 * fake tree is writable after it, and the mapping is still there. Before,
 * a pci_iomap() mapping (in the mapping process or a child) and a
 * pcim_iomap() one in a child were made writable again without a word,
 * and any of them copied or moved by mremap(), then made writable: the
 * mode had said no mapping would be.
 *
 * unmapped_by_hand: a pci_iomap() mapping unmapped by the program with
 * munmap(2), and its address given to an anonymous mapping of another
 * owner, before the switch: the switch leaves the other owner's pages
 * writable (before, it made them read-only), its mprotect() of them goes
 * through without a WARN, and the pci_iounmap() that follows leaves them
 * mapped (before, it unmapped them).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "child-check.h"
#include "pcitest.h"
#include "../hostile/cell-child.h"

#define A "0000:00:04.0"
#define CELL_ALARM_S 10

enum row {
	R_PLAIN,
	R_MANAGED,
	R_PLAIN_CHILD,
	R_MANAGED_CHILD,
	NR_ROWS
};
enum col {
	C_RW,
	C_W,
	C_RWX,
	C_PKEY,
	C_MOVE,
	C_COPY,
	C_GROW,
	NR_COLS
};

static const char *const rows[NR_ROWS] = { "pci_iomap", "pcim_iomap",
					   "pci_iomap, in a child",
					   "pcim_iomap, in a child" };
static const char *const cols[NR_COLS] = { "mprotect(PROT_READ|PROT_WRITE)",
					   "mprotect(PROT_WRITE)",
					   "mprotect(PROT_READ|PROT_WRITE|PROT_"
					   "EXEC)",
					   "pkey_mprotect(PROT_READ|PROT_WRITE,"
					   " -1)",
					   "mremap(MREMAP_MAYMOVE|MREMAP_"
					   "FIXED)",
					   "mremap(0 bytes: a copy)",
					   "mremap(grown)" };

/* Each cell's function, of its own on the tree all cells share. */
static char name[16];
static unsigned short id;

static struct pci_dev *scan(void)
{
	struct pci_fake_dev d = fake_dev(name, 0x1af4, id, 1);
	struct pci_dev *p;

	CHILD_CHECK(pci_fake_add(ft, &d) == 0);
	CHILD_CHECK(pci_bus_scan() >= 1);
	p = pci_get_device(0x1af4, id, NULL);
	CHILD_CHECK(p);
	return p;
}

/* mremap(2) of the mapping: -1 when it failed, else 0. */
static int remap(int col, void *addr)
{
	void *to = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			0),
	     *ret;

	CHILD_CHECK(to != MAP_FAILED);
	if (col == C_MOVE)
		ret = mremap(addr, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
			     to);
	else if (col == C_COPY)
		ret = mremap(addr, 0, 4096, MREMAP_MAYMOVE);
	else
		ret = mremap(addr, 4096, 8192, MREMAP_MAYMOVE);
	return ret == MAP_FAILED ? -1 : 0;
}

static int call(int col, void *addr)
{
	switch (col) {
	case C_RW:
		return mprotect(addr, 4096, PROT_READ | PROT_WRITE);
	case C_W:
		return mprotect(addr, 4096, PROT_WRITE);
	case C_RWX:
		return mprotect(addr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
	case C_PKEY:
		return pkey_mprotect(addr, 4096, PROT_READ | PROT_WRITE, -1);
	default:
		return remap(col, addr);
	}
}

/* The call refused, with its WARN; nothing of the tree writable. */
static int refused(int col, void *addr, bool managed)
{
	const char *func = col == C_PKEY   ? "pkey_mprotect"
			   : col >= C_MOVE ? "mremap"
					   : "mprotect";
	char want[96];
	int ret;

	start_capture();
	errno = 0;
	ret = call(col, addr);
	CHILD_CHECK(ret == -1 && errno == EPERM);
	snprintf(want, sizeof(want), "WARNING: %s: %s: ", name, func);
	CHILD_CHECK(count_prefix("WARNING:") == 1);
	if (count_prefix(want) != 1)
		fprintf(stderr, "%s\n", cap.line[0]);
	CHILD_CHECK(count_prefix(want) == 1);
	CHILD_CHECK(strstr(cap.line[0], managed ? "acquired with pcim_iomap()"
						: "acquired with pci_iomap()"));
	CHILD_CHECK(tree_writable_maps() == 0);
	/* Still where it was, read-only: only the mapping's own pages. */
	CHILD_CHECK(!mprotect(addr, 4096, PROT_READ));
	CHILD_CHECK(count_prefix("WARNING:") == 1);
	return 0;
}

static int cell(int row, int col)
{
	bool managed = row == R_MANAGED || row == R_MANAGED_CHILD;
	struct pci_dev *p;
	void *addr;
	int st = 0;
	pid_t pid;

	alarm(CELL_ALARM_S);
	id = (unsigned short)(0x100 + row * NR_COLS + col);
	snprintf(name, sizeof(name), "0000:00:%02x.0", 4 + row * NR_COLS + col);
	p = scan();
	if (managed) {
		CHILD_CHECK(pcim_enable_device(p) == 0);
		addr = pcim_iomap(p, 0, 0);
	} else {
		addr = pci_iomap(p, 0, 0);
	}
	CHILD_CHECK(addr);
	CHILD_CHECK(tree_writable_maps() == 1);
	pci_sysfs_set_readonly(true);
	CHILD_CHECK(tree_writable_maps() == 0);
	if (row == R_PLAIN || row == R_MANAGED)
		return refused(col, addr, managed);
	fflush(NULL);
	pid = fork();
	CHILD_CHECK(pid >= 0);
	if (pid == 0)
		_exit(refused(col, addr, managed));
	CHILD_CHECK(waitpid(pid, &st, 0) == pid);
	CHILD_CHECK(WIFEXITED(st) && !WEXITSTATUS(st));
	return 0;
}

static void ro_protect_table(void **state)
{
	(void)state;
	run_cells_in_children(cell, rows, NR_ROWS, cols, NR_COLS);
}

/* Whether the page at @addr is mapped writable, from /proc/self/maps. */
static bool page_writable(const void *addr)
{
	char line[512];
	bool w = false;
	FILE *f = fopen("/proc/self/maps", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    (uintptr_t)addr >= lo && (uintptr_t)addr < hi)
			w = perms[1] == 'w';
	}
	fclose(f);
	return w;
}

static void unmapped_by_hand(void **state)
{
	struct pci_fake_dev d = fake_dev(A, 0x1af4, 0x10, 1);
	struct pci_dev *p;
	char *addr, *theirs;

	(void)state;
	alarm(CELL_ALARM_S);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(p);
	addr = pci_iomap(p, 0, 0);
	assert_non_null(addr);
	assert_int_equal(munmap(addr, 4096), 0);
	theirs = mmap(addr, 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	assert_ptr_equal(theirs, addr);
	start_capture();
	pci_sysfs_set_readonly(true);
	assert_true(page_writable(theirs));
	theirs[0] = 'x';
	assert_int_equal(mprotect(theirs, 4096, PROT_READ), 0);
	assert_int_equal(mprotect(theirs, 4096, PROT_READ | PROT_WRITE), 0);
	/* The plain release of what was unmapped leaves theirs mapped. */
	pci_iounmap(p, addr);
	expect_no_warn();
	assert_true(page_writable(theirs));
	theirs[1] = 'y';
	assert_int_equal(theirs[0], 'x');
	assert_int_equal(munmap(theirs, 4096), 0);
	pci_dev_put(p);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ro_protect_table, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(unmapped_by_hand, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
