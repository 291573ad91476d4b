// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * Read-only mode (pci_sysfs_set_readonly()) switched on while other
 * threads ask write access back over a BAR mapping, as a table: the
 * mapping (a pci_iomap() one of the program's own, a pcim_iomap() one of
 * a node's) times the call the other threads loop on (mprotect(2) and
 * pkey_mprotect(2) with PROT_READ|PROT_WRITE): 4 cells, each in a child
 * of its own under an alarm, each ROUNDS rounds (40; 15 under
 * ThreadSanitizer, a quarter under valgrind) of a fresh mapping, two threads looping on the call,
 * and the switch.
 *
 * Each round: once the switch has returned, no mapping of the fake tree
 * is writable, the threads still looping (each call from then on is
 * refused), and none is once they stopped. Before, a call that had looked
 * at the mode before the switch set it reached the kernel after the
 * switch had protected the mapping, and left it writable: the mode had
 * said no mapping would be.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "child-check.h"
#include "rounds.h"
#include "pcitest.h"
#include "../hostile/cell-child.h"

#define CELL_ALARM_S 60
#define THREADS 2
#ifdef __SANITIZE_THREAD__
#define ROUNDS 15
#else
#define ROUNDS 40
#endif
/* DEVRES_RO_RACE_ROUNDS in the environment: more, for a hunt. */
#define ROUNDS_ENV "DEVRES_RO_RACE_ROUNDS"

enum row {
	R_PLAIN,
	R_MANAGED,
	NR_ROWS
};
enum col {
	C_MPROTECT,
	C_PKEY,
	NR_COLS
};

static const char *const rows[NR_ROWS] = { "pci_iomap", "pcim_iomap" };
static const char *const cols[NR_COLS] = { "mprotect(PROT_READ|PROT_WRITE)",
					   "pkey_mprotect(PROT_READ|PROT_WRITE,"
					   " -1)" };

struct looper {
	pthread_t t;
	int col;
	void *addr;
	bool stop;
};

static void *loop(void *arg)
{
	struct looper *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
		if (l->col == C_MPROTECT)
			(void)mprotect(l->addr, 4096, PROT_READ | PROT_WRITE);
		else
			(void)pkey_mprotect(l->addr, 4096,
					    PROT_READ | PROT_WRITE, -1);
	}
	return NULL;
}

static void quiet(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

/* One round: the mapping, the threads, the switch; 0 when it held. */
static int round_of(struct pci_dev *p, bool managed, int col)
{
	struct looper l[THREADS];
	void *addr;
	int during, after;

	pci_sysfs_set_readonly(false);
	addr = managed ? pcim_iomap(p, 0, 0) : pci_iomap(p, 0, 0);
	CHILD_CHECK(addr);
	for (int i = 0; i < THREADS; i++) {
		l[i] = (struct looper){ .col = col, .addr = addr };
		CHILD_CHECK(!pthread_create(&l[i].t, NULL, loop, &l[i]));
	}
	/* Let them loop a while: a few system calls each. */
	for (int i = 0; i < 20; i++)
		(void)mprotect(addr, 4096, PROT_READ | PROT_WRITE);
	pci_sysfs_set_readonly(true);
	during = tree_writable_maps();
	for (int i = 0; i < THREADS; i++) {
		__atomic_store_n(&l[i].stop, true, __ATOMIC_RELAXED);
		CHILD_CHECK(!pthread_join(l[i].t, NULL));
	}
	after = tree_writable_maps();
	if (during || after)
		fprintf(stderr, "writable: %d after the switch, %d after all\n",
			during, after);
	if (managed)
		pcim_iounmap(p, addr);
	else
		pci_iounmap(p, addr);
	return during || after;
}

static int cell(int row, int col)
{
	bool managed = row == R_MANAGED;
	char name[16];
	unsigned short id = (unsigned short)(0x200 + row * NR_COLS + col);
	struct pci_fake_dev d;
	struct pci_dev *p;

	alarm(CELL_ALARM_S);
	snprintf(name, sizeof(name), "0000:00:%02x.0", 4 + row * NR_COLS + col);
	d = fake_dev(name, 0x1af4, id, 1);
	CHILD_CHECK(pci_fake_add(ft, &d) == 0);
	CHILD_CHECK(pci_bus_scan() >= 1);
	p = pci_get_device(0x1af4, id, NULL);
	CHILD_CHECK(p);
	if (managed)
		CHILD_CHECK(pcim_enable_device(p) == 0);
	/* The refusals' WARNs are many: not written. */
	devres_set_log_sink(quiet, NULL);
	for (long r = 0, n = test_race_rounds(ROUNDS_ENV, ROUNDS); r < n; r++)
		CHILD_CHECK(!round_of(p, managed, col));
	pci_sysfs_set_readonly(false);
	return 0;
}

static void ro_protect_race(void **state)
{
	(void)state;
	run_cells_in_children(cell, rows, NR_ROWS, cols, NR_COLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ro_protect_race, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
