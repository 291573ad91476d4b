// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=120 */
/*
 * Loops of waits through a revocation and through an interrupt line's
 * unmask callback, in the chains of test-hostile-wait-loops (wait-chain.h:
 * participant i waits in a callback of the library, with kind[i], for
 * participant i + 1's callback; in a loop the last for the first; in the
 * control the main thread makes the last wait, and nothing is refused).
 *
 * A revocation (the release of a device that holds a revocable) waits
 * until every access in progress has ended: the participant it waits for
 * is a managed thread inside an access, its body within the access. A
 * reader that waits there, through any wait of the library, for the
 * thread revoking closes a loop. With every other kind of wait, both
 * orders: when the revocation is the last wait, it is refused with one
 * WARN and handed to the reader, which releases the resource as its
 * access ends (the release count and the releasing thread checked);
 * when the other wait is the last, that one is refused as its own table
 * says. A revoker that is itself inside an access never waits (its
 * revocation is finished as its own access ends): the pair of two
 * revocations makes no WARN.
 *
 * A masked line's unmask callback runs on a oneshot handler's thread
 * after its thread function, and synchronize_irq() of the line waits for
 * it: the callback, waiting for the thread that synchronizes, closes a
 * loop. With every kind of wait (the revocation too), both orders; not
 * (irq_line_raise_wait, unmask), a raise-and-wait from an unmask callback
 * being refused anywhere.
 *
 * Every cell in a child under an alarm, run a few at a time: before the
 * waits were recorded, every loop cell hung until its alarm.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include "wait-chain.h"

/* Cells at once: they mostly sleep, waiting for each other's threads. */
#define WIDTH 8
#define MAXROWS (2 * NK_ALL + 1)

static int rows_of[2][MAXROWS][2];
static char row_names[2][MAXROWS][64];
static const char *row_ptr[2][MAXROWS];
static int nrows[2];
static int table; /* the table the cells run from */

static const char *const cols[2] = { "loop", "control" };

static void add_row(int t, int a, int b)
{
	int n = nrows[t]++;

	rows_of[t][n][0] = a;
	rows_of[t][n][1] = b;
	snprintf(row_names[t][n], sizeof(row_names[t][n]), "(%s, %s)",
		 kind_name[a], kind_name[b]);
	row_ptr[t][n] = row_names[t][n];
}

/* Every kind with @k, both orders, and @k with itself. */
static void make_rows(int t, int k)
{
	nrows[t] = 0;
	for (int a = 0; a < NK_ALL; a++) {
		if (a == k)
			continue;
		if (!(k == K_SYNCU && a == K_RAISE))
			add_row(t, a, k);
		add_row(t, k, a);
	}
	add_row(t, k, k);
}

static int cell(int row, int col)
{
	return chain(rows_of[table][row], 2, col == 0);
}

/* The table @t's cells, WIDTH children at a time. */
static void run_table(int t)
{
	table = t;
	run_cells_in_children_wide(cell, row_ptr[t], nrows[t], cols, 2, WIDTH);
}

static void revoke_pairs(void **state)
{
	(void)state;
	make_rows(0, K_REVOKE);
	run_table(0);
}

static void unmask_pairs(void **state)
{
	(void)state;
	make_rows(1, K_SYNCU);
	run_table(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(revoke_pairs),
		cmocka_unit_test(unmask_pairs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
