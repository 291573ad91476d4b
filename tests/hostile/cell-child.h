/* SPDX-License-Identifier: MIT */
/*
 * A cell of a table run in a child process of its own: a cell that hangs
 * (and is ended by its alarm) or crashes, or leaves the library's state
 * broken, fails alone and the next cells start clean. Include after
 * cmocka.h.
 */
#ifndef DEVRES_TESTS_CELL_CHILD_H
#define DEVRES_TESTS_CELL_CHILD_H

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

/*
 * Runs every cell of a table, each in a child, naming those that failed;
 * fails unless all held.
 */
static inline void run_cells_in_children(int (*one)(int, int),
					 const char *const *rows, int nrows,
					 const char *const *cols, int ncols)
{
	int failed = 0;

	for (int row = 0; row < nrows; row++) {
		for (int col = 0; col < ncols; col++) {
			int st = run_cell_in_child(one, row, col);

			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "cell %s / %s: %s %d\n",
					rows[row], cols[col],
					WIFSIGNALED(st) ? "killed by signal"
							: "exit",
					WIFSIGNALED(st) ? WTERMSIG(st)
							: WEXITSTATUS(st));
				failed++;
			}
		}
	}
	if (failed)
		fprintf(stderr, "%d of %d cells failed\n", failed,
			nrows * ncols);
	assert_int_equal(failed, 0);
}

#endif /* DEVRES_TESTS_CELL_CHILD_H */
