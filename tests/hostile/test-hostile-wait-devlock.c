// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=120 */
/*
 * Loops of waits through a device's lock, in the chains of
 * test-hostile-wait-loops (wait-chain.h: participant i waits in a
 * callback of the library, with kind[i], for participant i + 1's
 * callback; in a loop the last for the first; in the control the main
 * thread makes the last wait, and nothing is refused).
 *
 * The driver core holds a device's lock across its probe: the
 * participant a device_attach() waits for is a probe (the body), run by
 * a managed thread that binds the device by hand. A probe that waits
 * there, through any wait of the library, for a thread that waits for
 * its device's lock closes a loop: a managed thread it stops, a handler
 * or a work item it synchronizes or flushes, a reader whose revocation
 * it makes, another probe holding the lock it waits for (two devices
 * locked in opposite orders). With every other kind of wait, both
 * orders: when device_attach() is the last wait, it is refused with one
 * WARN and returns -EDEADLK; when the other wait is the last, that one
 * is refused as its own table says (a revocation is handed to its
 * reader). Before the lock was on the record, every loop cell hung
 * until its alarm.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include "wait-chain.h"

/* Cells at once: they mostly sleep, waiting for each other's threads. */
#define WIDTH 8
#define MAXROWS (2 * NK_ALL + 1)

static int rows_of[MAXROWS][2];
static char row_names[MAXROWS][64];
static const char *row_ptr[MAXROWS];
static int nrows;

static const char *const cols[2] = { "loop", "control" };

static void add_row(int a, int b)
{
	int n = nrows++;

	rows_of[n][0] = a;
	rows_of[n][1] = b;
	snprintf(row_names[n], sizeof(row_names[n]), "(%s, %s)", kind_name[a],
		 kind_name[b]);
	row_ptr[n] = row_names[n];
}

static int cell(int row, int col)
{
	return chain(rows_of[row], 2, col == 0);
}

/* Every kind of wait-chain.h with device_attach(), both orders. */
static void devlock_pairs(void **state)
{
	(void)state;
	nrows = 0;
	for (int a = 0; a < NK_ALL; a++) {
		add_row(a, K_DEVLOCK);
		add_row(K_DEVLOCK, a);
	}
	add_row(K_DEVLOCK, K_DEVLOCK);
	run_cells_in_children_wide(cell, row_ptr, nrows, cols, 2, WIDTH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(devlock_pairs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
