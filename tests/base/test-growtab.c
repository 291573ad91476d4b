// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box timeout=60 */
/*
 * The growable two-level table of the descriptor tables
 * (src/base/growtab.c): slots found where they were made, chunks not
 * made skipped whole, tops doubled with readers looking on; and every
 * allocation it can be refused (the first top, a grown top, a chunk), in
 * a table with a static first top (the library's own descriptors) and in
 * one without (the managed ones): the index is not given a slot, the
 * refusal is counted, and one WARN says so, once.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "testlib.h"
#include "base/subsys.h"

#define SHIFT 4
#define CHUNK (1u << SHIFT)

struct slot {
	unsigned int v;
	unsigned int pad[3];
};

static struct slot first[CHUNK];
static void *first_chunks[2];
static struct devres__growtop first_top;

/* A table like own-fd.c's (@with_top) or like posix/fd-table.c's. */
static void table_init(struct devres__growtab *t, bool with_top,
		       unsigned int shift, size_t slot_size)
{
	*t = (struct devres__growtab){
		.shift = shift,
		.slot_size = slot_size,
		.first_n = 2,
		.name = "test table",
	};
	if (with_top) {
		memset(first, 0, sizeof(first));
		memset(first_chunks, 0, sizeof(first_chunks));
		first_chunks[0] = first;
		first_top = (struct devres__growtop){ 2, NULL, first_chunks };
		t->top = &first_top;
	}
}

/* The memory a table made (the static first top and chunk are not). */
static void table_free(struct devres__growtab *t)
{
	struct devres__growtop *top = t->top, *older;

	for (unsigned int k = 0; top && k < top->n; k++)
		if (top->chunk[k] && top->chunk[k] != (void *)first)
			free(top->chunk[k]);
	for (; top && top != &first_top; top = older) {
		older = top->older;
		free(top);
	}
}

static void found_where_made(bool with_top)
{
	static const unsigned int idx[] = { 0,	 1,    15,   16,   17,
					    100, 1000, 4095, 70000 };
	struct devres__growtab t;

	table_init(&t, with_top, SHIFT, sizeof(struct slot));
	for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
		struct slot *s = devres__growtab_make(&t, idx[i]);

		assert_non_null(s);
		s->v = idx[i] + 1;
	}
	for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++) {
		struct slot *s = devres__growtab_get(&t, idx[i]);

		assert_non_null(s);
		assert_int_equal(s->v, idx[i] + 1);
		assert_ptr_equal(devres__growtab_make(&t, idx[i]), s);
	}
	/* Each outgrown top kept, its successor at least twice its room. */
	for (struct devres__growtop *top = t.top; top->older; top = top->older)
		assert_true(top->n >= 2 * top->older->n);
	assert_int_equal(t.failed, 0);
	table_free(&t);
}

static void found_with_top(void **state)
{
	(void)state;
	found_where_made(true);
}

static void found_without_top(void **state)
{
	(void)state;
	found_where_made(false);
}

/* next() visits every slot of each chunk made, none of the others. */
static void next_skips_chunks(void **state)
{
	struct devres__growtab t;
	unsigned int seen = 0, i;
	struct slot *s;

	(void)state;
	table_init(&t, false, SHIFT, sizeof(*s));
	i = 0;
	assert_null(devres__growtab_next(&t, &i, UINT_MAX));
	/* Chunks 1 and 3 of 4. */
	devres__growtab_make(&t, CHUNK + 3);
	devres__growtab_make(&t, 3 * CHUNK);
	for (i = 0; (s = devres__growtab_next(&t, &i, UINT_MAX)); i++) {
		assert_true((i >= CHUNK && i < 2 * CHUNK) ||
			    (i >= 3 * CHUNK && i < 4 * CHUNK));
		assert_ptr_equal(s, devres__growtab_get(&t, i));
		seen++;
		if (i == UINT_MAX)
			break;
	}
	assert_int_equal(seen, 2 * CHUNK);
	/* A range that ends inside a chunk not made, and one inside one. */
	i = 2 * CHUNK;
	assert_null(devres__growtab_next(&t, &i, 3 * CHUNK - 1));
	i = 0;
	assert_non_null(devres__growtab_next(&t, &i, CHUNK));
	assert_int_equal(i, CHUNK);
	/* zero() clears every slot made. */
	((struct slot *)devres__growtab_get(&t, 3 * CHUNK + 2))->v = 7;
	devres__growtab_zero(&t);
	assert_int_equal(
		((struct slot *)devres__growtab_get(&t, 3 * CHUNK + 2))->v, 0);
	table_free(&t);
}

/* ---- readers while it grows ---- */

#define GROW_TO 20000u

static struct devres__growtab grow_t;
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int made_to;

static void *reader(void *arg)
{
	unsigned int bad = 0, to;

	(void)arg;
	do {
		to = __atomic_load_n(&made_to, __ATOMIC_ACQUIRE);
		for (unsigned int i = 0; i < to; i += 97) {
			struct slot *s = devres__growtab_get(&grow_t, i);

			if (!s ||
			    __atomic_load_n(&s->v, __ATOMIC_RELAXED) != i + 1)
				bad++;
		}
	} while (to < GROW_TO);
	return (void *)(uintptr_t)bad;
}

static void readers_while_growing(void **state)
{
	pthread_t th[2];
	void *bad;

	(void)state;
	table_init(&grow_t, false, SHIFT, sizeof(struct slot));
	made_to = 0;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader, NULL), 0);
	for (unsigned int i = 0; i < GROW_TO; i++) {
		struct slot *s;

		pthread_mutex_lock(&grow_lock);
		s = devres__growtab_make(&grow_t, i);
		pthread_mutex_unlock(&grow_lock);
		assert_non_null(s);
		__atomic_store_n(&s->v, i + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&made_to, i + 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(th[i], &bad), 0);
		assert_int_equal((uintptr_t)bad, 0);
	}
	table_free(&grow_t);
}

/* ---- every allocation refused, in each kind of table ---- */

enum what {
	FIRST_TOP,
	GROWN_TOP,
	CHUNK_MADE
};

static const char *const what_name[] = {
	[FIRST_TOP] = "the first top made",
	[GROWN_TOP] = "a top grown from a made one",
	[CHUNK_MADE] = "a chunk",
};

struct cell {
	bool with_top;
	enum what what;
	char name[64];
};

/*
 * A table whose @c->what cannot be had, and the index that needs it: a
 * chunk whose size is past what memory can hold; a top for an index past
 * what one can hold (shift 0, the last index: 2^32 chunks).
 */
static unsigned int refusing(const struct cell *c, struct devres__growtab *t)
{
	if (c->what == CHUNK_MADE) {
		table_init(t, c->with_top, SHIFT, SIZE_MAX / 4);
		/* Chunk 0 of the static top is made: chunk 1. */
		return CHUNK + 1;
	}
	table_init(t, c->with_top, 0, sizeof(struct slot));
	if (c->what == GROWN_TOP) {
		/* Past the first top's room of 2 chunks: one made. */
		assert_non_null(devres__growtab_make(t, 0));
		assert_non_null(devres__growtab_make(t, 2));
		assert_non_null(t->top->older);
	}
	return UINT_MAX;
}

static void run_cell(void **state)
{
	const struct cell *c = *state;
	struct devres__growtop *top;
	struct devres__growtab t;
	unsigned int i = refusing(c, &t);
	char why[64];

	top = t.top;
	start_capture();
	assert_null(devres__growtab_make(&t, i));
	/*
	 * Nothing changed (but a first top made for a chunk refused), the
	 * refusal counted; no WARN under the owner's lock.
	 */
	if (top || c->what != CHUNK_MADE)
		assert_ptr_equal(t.top, top);
	assert_null(devres__growtab_get(&t, i));
	assert_int_equal(t.failed, 1);
	expect_no_warn();
	start_capture();
	devres__growtab_warn(&t);
	snprintf(why, sizeof(why), "fd %u not recorded: no memory", i);
	expect_warn_on("(no device)", "test table", why);
	/* Counted again, not said again. */
	start_capture();
	assert_null(devres__growtab_make(&t, i));
	devres__growtab_warn(&t);
	assert_int_equal(t.failed, 2);
	expect_no_warn();
	/* What could be had still can. */
	if (c->what != CHUNK_MADE) {
		assert_non_null(devres__growtab_make(&t, 1));
		assert_int_equal(t.failed, 2);
	}
	table_free(&t);
}

#define NR_CELLS 6

static struct cell cells[NR_CELLS];

int main(void)
{
	struct CMUnitTest tests[NR_CELLS + 4] = {
		cmocka_unit_test(found_with_top),
		cmocka_unit_test(found_without_top),
		cmocka_unit_test(next_skips_chunks),
		cmocka_unit_test(readers_while_growing),
	};
	size_t n = 0;

	for (int with_top = 0; with_top < 2; with_top++)
		for (enum what w = FIRST_TOP; w <= CHUNK_MADE; w++, n++) {
			cells[n] = (struct cell){ with_top != 0, w, "" };
			add_cell(&tests[4 + n], &cells[n], run_cell, NULL, NULL,
				 "%s refused, %s", what_name[w],
				 with_top ? "static first top" : "no top");
		}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("growtab", tests, 4 + n, NULL, NULL);
}
