/* SPDX-License-Identifier: MIT */
/*
 * The table of the fixed-limit tests (test-hostile-limits-all.c,
 * test-hostile-limits-inner.c): one cmocka test a cell, named by the
 * limit and where it is, each counting the WARNs from its start, and each
 * ending with no thread left neither joined nor detached (thread-watch.h,
 * where the test has the watch).
 * LIMIT_CELLS_MAIN(cells) after the table.
 */
#ifndef DEVRES_TESTS_LIMIT_CELLS_H
#define DEVRES_TESTS_LIMIT_CELLS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/devres.h>
#include "hostile/thread-watch.h"

struct cell {
	const char *what; /* the limit, and where it is */
	void (*run)(void);
};

static int warns0;

/* The WARNs since the cell began. */
static inline int warns(void)
{
	return devres_warn_count() - warns0;
}

static inline void run_cell(void **state)
{
	const struct cell *c = (const struct cell *)*state;

	print_message("%s\n", c->what);
	warns0 = devres_warn_count();
	c->run();
	assert_int_equal(thread_watch_leaks(c->what), 0);
}

/* The watch catches a leaked thread (a self-test, in a child). */
static inline void thread_watch_cell(void)
{
	assert_int_equal(thread_watch_self_test(), 0);
}

/* Each cell of @cells (a static array) one test; no backtraces. */
#define LIMIT_CELLS_MAIN(cells)                                                \
	int main(void)                                                         \
	{                                                                      \
		struct CMUnitTest tests[sizeof(cells) / sizeof(cells[0])];     \
                                                                               \
		setenv("DEVRES_WARN_BACKTRACE", "0", 1);                       \
		for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)  \
			tests[i] = (struct CMUnitTest){                        \
				.name = cells[i].what,                         \
				.test_func = run_cell,                         \
				.initial_state = (void *)&cells[i]             \
			};                                                     \
		return cmocka_run_group_tests(tests, NULL, NULL);              \
	}

#endif /* DEVRES_TESTS_LIMIT_CELLS_H */
