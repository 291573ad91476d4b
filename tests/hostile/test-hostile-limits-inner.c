// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile white-box timeout=60 */
/*
 * The fixed limits of the library's inner records that no public call
 * reaches in a test's time, one cell each, in the shape of
 * test-hostile-limits-all.c: driven to the limit (no WARN), one past it
 * (exactly one WARN), then used correctly again (no WARN, nothing lost).
 * The state at the limit is set in the record itself (white box); the
 * calls that cross it are the library's own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include "testlib.h"
#include "hostile/limit-cells.h"
#include "base/subsys.h"

/* A kind of its own: tags 1 to 3 are the library's. */
static struct devres__handles table = { .tag = 120, .size = 16 };

/* A slot's generation: the 32 bits at the start of its 16-byte head. */
static uint32_t *gen_of(void *obj)
{
	return (uint32_t *)((unsigned char *)obj - 16);
}

/*
 * A slot of the table of handles lives 2^31 times: its generation, odd
 * while an object lives in it, moves on at each free and each new
 * object. The slot's first handle (generation 1) is kept; the slot is
 * taken to its last life (generation 2^32 - 1), which works; its free
 * retires the slot (one WARN) rather than letting the next object take
 * generation 1 again, where the first handle found it. Then new objects
 * take other slots, and neither old handle finds anything.
 */
static void handle_generations(void)
{
	void *first, *last, *next, *obj, *obj2;
	bool used, stale;

	first = devres__handle_new(&table, &obj, &used);
	assert_non_null(first);
	assert_true(devres__handle_obj(&table, first, NULL) == obj);
	devres__handle_del(&table, obj);
	/* 2^31 - 1 lives later: free, the next life its last. */
	assert_int_equal(*gen_of(obj), 2);
	*gen_of(obj) = UINT32_MAX - 1;
	last = devres__handle_new(&table, &obj2, &used);
	assert_true(obj2 == obj);
	assert_true(devres__handle_obj(&table, last, NULL) == obj);
	assert_null(devres__handle_obj(&table, first, NULL));
	assert_int_equal(warns(), 0);
	/* One past: the slot is retired. */
	devres__handle_del(&table, obj);
	assert_int_equal(warns(), 1);
	next = devres__handle_new(&table, &obj2, &used);
	assert_non_null(next);
	assert_true(obj2 != obj);
	assert_null(devres__handle_obj(&table, first, NULL));
	assert_null(devres__handle_obj(&table, last, &stale));
	assert_true(stale);
	assert_true(devres__handle_obj(&table, next, NULL) == obj2);
	devres__handle_del(&table, obj2);
	assert_int_equal(warns(), 1);
}

static const struct cell cells[] = {
	{ "handle.c: lives of a slot of the table of handles",
	  handle_generations },
};

LIMIT_CELLS_MAIN(cells)
