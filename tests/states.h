/* SPDX-License-Identifier: MIT */
/*
 * The runner of a states test: every public call on an object, in every
 * state the object can be in, each pair (a cell) its own cmocka test.
 *
 * A states test describes its object with a struct states_table:
 *
 *   - the states (rows) and the calls (columns), each with a name for the
 *     report ("<state> / <call>");
 *   - the table of what each cell expects: the call's return (0 for a void
 *     call, or whatever the test's @call makes of it: 1 for "got a block")
 *     and the exact number of WARNs the call prints;
 *   - @reach: brings a fresh object to a state (it asserts each step);
 *   - @call: makes one call, once, and returns what is compared with the
 *     table;
 *   - @after: gives back whatever the cell left and checks the object is
 *     consistent (it can be destroyed, nothing is left running);
 *   - @setup and @teardown: the cmocka fixture of each cell (testlib.h's
 *     dev_setup() and dev_teardown(), or the test's own).
 *
 * Each cell runs @setup, @reach, counts the WARNs around @call (their text
 * goes to a sink that drops it: the count is what is checked), compares
 * return and count with the table, prints the cell's name and both pairs
 * when they differ, then runs @after and @teardown. Declare the table as
 * "static const struct states_cell table[NR_STATES][NR_CALLS]" indexed by
 * enums: a state or a call added without its row or column fails to
 * compile.
 *
 * Use:
 *
 *	static const struct states_table my_states =
 *		STATES_TABLE(table, state_name, call_name, reach, call,
 *			     after, dev_setup, dev_teardown);
 *	...
 *	static struct states_id ids[NR_STATES * NR_CALLS];
 *	struct CMUnitTest tests[NR_STATES * NR_CALLS];
 *	size_t n = states_tests(&my_states, ids, tests);
 *	return _cmocka_run_group_tests("my-states", tests, n, NULL, NULL);
 *
 * A test that has more than the cells (a race, a stale handle) sizes
 * @tests for them and adds them after the cells. One that has only the
 * cells calls states_run(), which does the above for one table or more.
 *
 * A table that also checks the first WARN's line and what the call left
 * (the nodes of a device) fills the cells' @says and @left (STATES_LEFT()
 * and STATES_TAKEN() cells) and is made with STATES_TABLE_LEFT(): its
 * @undo, told the state and the cell, replaces @after. A test whose cells
 * are all it has returns states_main() from main().
 */
#ifndef DEVRES_TESTS_STATES_H
#define DEVRES_TESTS_STATES_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/devres.h>

/*
 * What a cell expects: what @call returns, and how many WARNs it prints;
 * optionally a piece of the first WARN's line (@says, NULL: not checked),
 * what the table's @left counts after the call (@left), and whether the
 * call took what another owner held (@other, for the table's @undo).
 */
struct states_cell {
	int ret;
	int warns;
	const char *says;
	int left;
	bool other;
};

/*
 * A cell of a table made with STATES_TABLE_LEFT(): return @r, @w WARNs,
 * the first saying @says, @left nodes after the call; STATES_TAKEN() when
 * the call also took what the other owner held.
 */
/* clang-format off */
#define STATES_CELL(r, w) { (r), (w) }
#define STATES_LEFT(r, w, says, left) { (r), (w), (says), (left), false }
#define STATES_TAKEN(r, w, says, left) { (r), (w), (says), (left), true }
/* clang-format on */
#define STATES_OK STATES_CELL(0, 0)

struct states_table {
	unsigned int nr_states, nr_calls;
	const char *const *state_name;	 /* nr_states names */
	const char *const *call_name;	 /* nr_calls names */
	const struct states_cell *cells; /* [nr_states][nr_calls], by row */
	void (*reach)(unsigned int state);
	int (*call)(unsigned int call);
	void (*after)(void);
	CMFixtureFunction setup, teardown;
	/* Optional: its nodes after the call are compared with the cell's @left. */
	struct device *left;
	/* Optional, instead of @after: it is told the state and the cell. */
	void (*undo)(unsigned int state, const struct states_cell *want);
};

/*
 * A struct states_table of @cells, a two-dimensional array of struct
 * states_cell ([state][call]) whose sizes give the counts, with names
 * @states and @calls and the functions as above.
 */
#define STATES_TABLE(cells_, states, calls, reach_, call_, after_, setup_,     \
		     teardown_)                                                \
	{                                                                      \
		.nr_states = sizeof(cells_) / sizeof((cells_)[0]),             \
		.nr_calls = sizeof((cells_)[0]) / sizeof((cells_)[0][0]),      \
		.state_name = (states), .call_name = (calls),                  \
		.cells = &(cells_)[0][0], .reach = (reach_), .call = (call_),  \
		.after = (after_), .setup = (setup_), .teardown = (teardown_), \
	}

/*
 * As STATES_TABLE, with @left_ (the device whose nodes the cells' @left
 * counts) and @undo_ in place of @after; the cells' @says are checked too.
 */
#define STATES_TABLE_LEFT(cells_, states, calls, reach_, call_, left_, undo_,  \
			  setup_, teardown_)                                   \
	{                                                                      \
		.nr_states = sizeof(cells_) / sizeof((cells_)[0]),             \
		.nr_calls = sizeof((cells_)[0]) / sizeof((cells_)[0][0]),      \
		.state_name = (states), .call_name = (calls),                  \
		.cells = &(cells_)[0][0], .reach = (reach_), .call = (call_),  \
		.left = (left_), .undo = (undo_), .setup = (setup_),           \
		.teardown = (teardown_),                                       \
	}

/* The nodes @dev holds: what most tables count for the cells' @left. */
static inline int states_nodes(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return (int)st.allocs;
}

/* One cell: the cmocka test's state. */
struct states_id {
	const struct states_table *t;
	unsigned int s, c;
	char name[96];
};

/* The first WARN of the call, for the cell's @says; the rest is dropped. */
static struct {
	char text[256];
	int n;
} states_warned;

static inline void states_discard(void *ctx, int level, const char *text)
{
	(void)ctx;
	if (level == DEVRES_LOG_WARNING && !states_warned.n++)
		snprintf(states_warned.text, sizeof(states_warned.text), "%s",
			 text);
}

static inline void states_run_cell(void **state)
{
	const struct states_id *id = *state;
	const struct states_table *t = id->t;
	const struct states_cell *want = &t->cells[id->s * t->nr_calls + id->c];
	long before, warns;
	int ret;

	/* Tables with @undo drop the WARNs of @reach and @undo too. */
	if (t->undo)
		devres_set_log_sink(states_discard, NULL);
	t->reach(id->s);
	before = devres_warn_count();
	devres_set_log_sink(states_discard, NULL);
	states_warned.n = 0;
	states_warned.text[0] = '\0';
	ret = t->call(id->c);
	if (!t->undo)
		devres_set_log_sink(NULL, NULL);
	warns = devres_warn_count() - before;
	if (ret != want->ret || warns != want->warns)
		print_error("%s: %d and %ld WARN(s), want %d and %d\n",
			    id->name, ret, warns, want->ret, want->warns);
	assert_int_equal(ret, want->ret);
	assert_int_equal(warns, want->warns);
	if (want->says && !strstr(states_warned.text, want->says))
		print_error("%s: WARN \"%s\" does not say \"%s\"\n", id->name,
			    states_warned.text, want->says);
	if (want->says)
		assert_non_null(strstr(states_warned.text, want->says));
	if (t->left) {
		int left = states_nodes(t->left);

		if (left != want->left)
			print_error("%s: %d left, want %d\n", id->name, left,
				    want->left);
		assert_int_equal(left, want->left);
	}
	if (t->undo) {
		t->undo(id->s, want);
		devres_set_log_sink(NULL, NULL);
	} else {
		t->after();
	}
}

/* The fixture may set *state (testlib's do): the cell's id is kept. */
static inline int states_setup(void **state)
{
	struct states_id *id = *state;
	int ret = id->t->setup ? id->t->setup(state) : 0;

	*state = id;
	return ret;
}

static inline int states_teardown(void **state)
{
	struct states_id *id = *state;

	return id->t->teardown ? id->t->teardown(state) : 0;
}

/*
 * Fills @ids and @tests (both nr_states x nr_calls long) with one test a
 * cell, states in order, each with its calls in order. Returns how many.
 */
static inline size_t states_tests(const struct states_table *t,
				  struct states_id *ids,
				  struct CMUnitTest *tests)
{
	size_t n = 0;

	for (unsigned int s = 0; s < t->nr_states; s++) {
		for (unsigned int c = 0; c < t->nr_calls; c++, n++) {
			ids[n].t = t;
			ids[n].s = s;
			ids[n].c = c;
			snprintf(ids[n].name, sizeof(ids[n].name), "%s / %s",
				 t->state_name[s], t->call_name[c]);
			tests[n] = (struct CMUnitTest){
				.name = ids[n].name,
				.test_func = states_run_cell,
				.setup_func = states_setup,
				.teardown_func = states_teardown,
				.initial_state = &ids[n],
			};
		}
	}
	return n;
}

/*
 * Runs the cells of @nr tables in @tables, in order, as the cmocka group
 * @group. Returns what cmocka returns (the failed tests), 1 without
 * memory for the list.
 */
static inline int states_run(const char *group,
			     const struct states_table *tables, size_t nr)
{
	size_t cells = 0, n = 0;
	struct states_id *ids;
	struct CMUnitTest *tests;
	int ret = 1;

	for (size_t i = 0; i < nr; i++)
		cells += (size_t)tables[i].nr_states * tables[i].nr_calls;
	ids = calloc(cells, sizeof(*ids));
	tests = calloc(cells, sizeof(*tests));
	if (ids && tests) {
		for (size_t i = 0; i < nr; i++)
			n += states_tests(&tables[i], ids + n, tests + n);
		ret = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
	}
	free(tests);
	free(ids);
	return ret;
}

/*
 * What a states test's main() returns: states_run() of its tables, with
 * the WARNs' backtraces off (the cells count WARNs, a backtrace each would
 * only be noise).
 */
static inline int states_main(const char *group,
			      const struct states_table *tables, size_t nr)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return states_run(group, tables, nr);
}

#endif /* DEVRES_TESTS_STATES_H */
