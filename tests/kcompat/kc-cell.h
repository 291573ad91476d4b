/* SPDX-License-Identifier: MIT */
/*
 * One cell of a table test in a child of its own, under an alarm: a hang
 * or a crash fails that cell alone. The includer has <cmocka.h>.
 */
#ifndef KC_CELL_H
#define KC_CELL_H

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define CELL_ALARM_S 10

/* Runs @cell(@a, @b, @c) in a child: 0 when it exited 0, else 1. */
static inline int in_child(void (*cell)(int, int, int), int a, int b, int c,
			   const char *name)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		alarm(CELL_ALARM_S);
		cell(a, b, c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "cell %s: %s %d\n", name,
			WIFSIGNALED(status) ? "signal" : "exit",
			WIFSIGNALED(status) ? WTERMSIG(status)
					    : WEXITSTATUS(status));
		return 1;
	}
	return 0;
}

/* In a cell: a failed check ends the child with status 1, naming the line. */
#define CHECK(x)                                                               \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "cell: %s:%d: %s\n", __FILE__,         \
				__LINE__, #x);                                 \
			_exit(1);                                              \
		}                                                              \
	} while (0)

#endif /* KC_CELL_H */
