// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=240 */
/*
 * Loops of waits across subsystems: each participant runs in a callback
 * of the library (a managed thread's function, an interrupt thread
 * function, a compat work item's function) and waits there, with one of
 * the library's waiting calls, for the next one's callback to return;
 * the last waits for the first. Every such wait records "this thread
 * waits for that one" in the library's one record of waits, and the wait
 * that would close the loop is refused: devm_thread_stop() -EDEADLK, the
 * void and bool calls with one WARN and no wait (free_irq() leaves the
 * freed handler to its own thread). Before, every loop cell hung.
 *
 * A cell is a chain of kinds: participant i waits with kind[i] for
 * participant i + 1, and, in a loop, the last for the first. Each waits
 * only once the one before it is on the record in its wait, so that the
 * last is the one refused. In the control column the last participant
 * waits for nobody and the test's main thread makes the last kind's wait
 * for the first instead, a chain with no loop: every wait is made, no
 * WARN; the last participant returns once that wait is on the record, so
 * that it is made while the whole chain still waits. Each
 * cell runs in a child under an alarm (a hang fails the cell), with the
 * exact results and WARN count, and the ledger back at its start.
 *
 * The waits for all of a set: flush_workqueue(), drain_workqueue() and
 * destroy_workqueue() wait for every item of a queue (the participant is
 * an item on a queue of its own); they are refused with one WARN and no
 * wait (destroy_workqueue() leaves the queue live, destroyed at the
 * cell's end). flush_delayed_work() waits for an item whose thread still
 * waits for its delay (but the first participant's, due at once): its
 * function runs only once made due by that flush, and then closes the
 * loop. hwrng_unregister() waits for a read in progress (the participant
 * is a managed thread in hwrng_read(), its rng's read method the body):
 * refused, it takes the rng back as from its own read, with one WARN.
 * irq_line_raise_wait() of a line whose thread function is the body:
 * refused, -EDEADLK and one WARN, nothing raised. Every pair with one of
 * those, and rings of three through them.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include "wait-chain.h"

static const char *const pair_rows[NK_OLD * NK_OLD] = {
#define ROW(a, b) "(" #a ", " #b ")"
	ROW(stop, stop),       ROW(stop, free),	    ROW(stop, sync),
	ROW(stop, disable),    ROW(stop, flush),    ROW(stop, cancel),
	ROW(free, stop),       ROW(free, free),	    ROW(free, sync),
	ROW(free, disable),    ROW(free, flush),    ROW(free, cancel),
	ROW(sync, stop),       ROW(sync, free),	    ROW(sync, sync),
	ROW(sync, disable),    ROW(sync, flush),    ROW(sync, cancel),
	ROW(disable, stop),    ROW(disable, free),  ROW(disable, sync),
	ROW(disable, disable), ROW(disable, flush), ROW(disable, cancel),
	ROW(flush, stop),      ROW(flush, free),    ROW(flush, sync),
	ROW(flush, disable),   ROW(flush, flush),   ROW(flush, cancel),
	ROW(cancel, stop),     ROW(cancel, free),   ROW(cancel, sync),
	ROW(cancel, disable),  ROW(cancel, flush),  ROW(cancel, cancel),
#undef ROW
};

static const char *const cols[2] = { "loop", "control" };

static int pair_cell(int row, int col)
{
	int kinds[2] = { row / NK_OLD, row % NK_OLD };

	return chain(kinds, 2, col == 0);
}

static void pairs(void **state)
{
	(void)state;
	run_cells_in_children(pair_cell, pair_rows, NK_OLD * NK_OLD, cols, 2);
}

/* The ordered pairs with a wait for a set or a delay in them. */
#define NSET (NK * NK - NK_OLD * NK_OLD)
static int set_pairs[NSET][2];
static char set_names[NSET][48];
static const char *set_rows[NSET];

static int set_pair_cell(int row, int col)
{
	return chain(set_pairs[row], 2, col == 0);
}

static void set_pairs_all(void **state)
{
	int n = 0;

	(void)state;
	for (int a = 0; a < NK; a++) {
		for (int b = 0; b < NK; b++) {
			if (a < NK_OLD && b < NK_OLD)
				continue;
			set_pairs[n][0] = a;
			set_pairs[n][1] = b;
			snprintf(set_names[n], sizeof(set_names[n]), "(%s, %s)",
				 kind_name[a], kind_name[b]);
			set_rows[n] = set_names[n];
			n++;
		}
	}
	run_cells_in_children(set_pair_cell, set_rows, n, cols, 2);
}

/* Rings of three, each across three subsystems or kinds. */
static const int rings[][3] = {
	{ K_STOP, K_FREE, K_FLUSH },
	{ K_FREE, K_FLUSH, K_STOP },
	{ K_FLUSH, K_STOP, K_SYNC },
	{ K_CANCEL, K_DISABLE, K_STOP },
	{ K_SYNC, K_CANCEL, K_FREE },
	{ K_STOP, K_STOP, K_STOP },
	/* Through the waits for a set or a delay. */
	{ K_FLUSHWQ, K_STOP, K_FREE },
	{ K_DRAINWQ, K_FLUSH, K_SYNC },
	{ K_DESTROYWQ, K_CANCEL, K_STOP },
	{ K_FLUSHD, K_DISABLE, K_FLUSHWQ },
	{ K_STOP, K_FLUSHD, K_DRAINWQ },
	{ K_FLUSHWQ, K_FLUSHWQ, K_FLUSHWQ },
	{ K_FLUSHD, K_FLUSHD, K_FLUSHD },
	{ K_UNREG, K_FLUSHWQ, K_STOP },
	{ K_UNREG, K_UNREG, K_UNREG },
	{ K_RAISE, K_FLUSHWQ, K_UNREG },
	{ K_RAISE, K_RAISE, K_RAISE },
};

static const char *const ring_rows[] = {
	"stop -> free -> flush",
	"free -> flush -> stop",
	"flush -> stop -> sync",
	"cancel -> disable -> stop",
	"sync -> cancel -> free",
	"stop -> stop -> stop",
	"flush_workqueue -> stop -> free",
	"drain_workqueue -> flush -> sync",
	"destroy_workqueue -> cancel -> stop",
	"flush_delayed_work -> disable -> flush_workqueue",
	"stop -> flush_delayed_work -> drain_workqueue",
	"flush_workqueue x 3",
	"flush_delayed_work x 3",
	"hwrng_unregister -> flush_workqueue -> stop",
	"hwrng_unregister x 3",
	"irq_line_raise_wait -> flush_workqueue -> hwrng_unregister",
	"irq_line_raise_wait x 3",
};

static int ring_cell(int row, int col)
{
	return chain(rings[row], 3, col == 0);
}

static void rings_of_three(void **state)
{
	(void)state;
	run_cells_in_children(ring_cell, ring_rows,
			      (int)(sizeof(rings) / sizeof(rings[0])), cols, 2);
}

/*
 * The record's fixed limits, for the compat headers' waits: four nested
 * waits and four nested memberships a thread; one more of each is not
 * recorded, with exactly one WARN, and ends as a recorded one does.
 * limit-cell: src/base/waits.c:nested
 * limit-cell: src/base/waits.c:joined
 */
static int limits_cell(int row, int col)
{
	int w0 = devres_warn_count();

	(void)col;
	alarm(CELL_ALARM_S);
	for (int i = 0; i < 6; i++) {
		if (row == 0 && devres_wait_begin(devres_wait_id(), "limit"))
			return 2;
		if (row == 1)
			devres_wait_join((uintptr_t)&P[0] + (uintptr_t)i);
		if (devres_warn_count() - w0 != (i < 4 ? 0 : 1))
			return 3 + i;
	}
	for (int i = 0; i < 6; i++) {
		if (row == 0)
			devres_wait_end();
		else
			devres_wait_leave();
	}
	/* All ended: a wait for this thread's own sets is no loop now. */
	if (devres_wait_begin_set((uintptr_t)&P[0], "limit"))
		return 10;
	devres_wait_end();
	return devres_warn_count() - w0 == 1 ? 0 : 11;
}

static void limits(void **state)
{
	static const char *const rows[] = { "nested waits", "memberships" };
	static const char *const col[] = { "five and six" };

	(void)state;
	run_cells_in_children(limits_cell, rows, 2, col, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pairs),
		cmocka_unit_test(set_pairs_all),
		cmocka_unit_test(rings_of_three),
		cmocka_unit_test(limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
