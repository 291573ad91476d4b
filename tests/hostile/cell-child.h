/* SPDX-License-Identifier: MIT */
/*
 * A cell of a table run in a child process of its own: a cell that hangs
 * (and is ended by its alarm) or crashes, or leaves the library's state
 * broken, fails alone and the next cells start clean. Include after
 * cmocka.h.
 */
#ifndef DEVRES_TESTS_CELL_CHILD_H
#define DEVRES_TESTS_CELL_CHILD_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Runs @cell(@row, @col) in a child, whose exit status is what @cell
 * returns (0 when the cell holds). Returns the child's wait status.
 */
static inline int run_cell_in_child(int (*cell)(int row, int col), int row,
				    int col)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(cell(row, col));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* Whether the child that ended with @st held; names the cell when not. */
static inline bool cell_held(int st, const char *row, const char *col)
{
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return true;
	fprintf(stderr, "cell %s / %s: %s %d\n", row, col,
		WIFSIGNALED(st) ? "killed by signal" : "exit",
		WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return false;
}

#define CELLS_WIDTH_MAX 16

/*
 * Runs every cell of a table, each in a child, up to @width children at
 * a time (at most CELLS_WIDTH_MAX), naming those that failed; fails
 * unless all held.
 */
static inline void run_cells_in_children_wide(int (*one)(int, int),
					      const char *const *rows,
					      int nrows,
					      const char *const *cols,
					      int ncols, int width)
{
	pid_t pid[CELLS_WIDTH_MAX] = { 0 };
	int at[CELLS_WIDTH_MAX] = { 0 };
	int ncells = nrows * ncols, next = 0, running = 0, failed = 0;

	assert_true(width > 0 && width <= CELLS_WIDTH_MAX);
	while (next < ncells || running) {
		int st = 0, slot;
		pid_t done;

		if (next < ncells && running < width) {
			for (slot = 0; pid[slot]; slot++)
				;
			fflush(NULL);
			pid[slot] = fork();
			assert_true(pid[slot] >= 0);
			if (pid[slot] == 0)
				_exit(one(next / ncols, next % ncols));
			at[slot] = next++;
			running++;
			continue;
		}
		done = waitpid(-1, &st, 0);
		assert_true(done > 0);
		for (slot = 0; slot < width && pid[slot] != done; slot++)
			;
		assert_true(slot < width);
		if (!cell_held(st, rows[at[slot] / ncols],
			       cols[at[slot] % ncols]))
			failed++;
		pid[slot] = 0;
		running--;
	}
	if (failed)
		fprintf(stderr, "%d of %d cells failed\n", failed, ncells);
	assert_int_equal(failed, 0);
}

/* run_cells_in_children_wide(), one child at a time. */
static inline void run_cells_in_children(int (*one)(int, int),
					 const char *const *rows, int nrows,
					 const char *const *cols, int ncols)
{
	run_cells_in_children_wide(one, rows, nrows, cols, ncols, 1);
}

#endif /* DEVRES_TESTS_CELL_CHILD_H */
