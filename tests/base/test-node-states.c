// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * A node the caller holds, in every state it can be in, given to every
 * call that takes one: made by devres_alloc(), added to a device, taken
 * back by devres_remove(), freed, and pointers that never were a node (a
 * buffer on the stack, one from malloc(), a pointer inside a node's
 * data). devres_add(), devres_free() and devres_get() take a node that is
 * the caller's and live; anything else is one WARN and no effect: nothing
 * freed twice, nothing listed that is not a node, nothing of another node
 * touched. A chunk that serves another node since its free cannot be told
 * from that node (the kernel cannot either); ASan reports the use then.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"

static int released;

static void count_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	released++;
}

static int match_any(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	return 1;
}

enum nstate {
	N_MADE,
	N_ADDED,
	N_REMOVED,
	N_FREED,
	N_STACK,
	N_HEAP,
	N_INSIDE
};
enum call {
	C_ADD,
	C_FREE,
	C_GET
};

static const char *const nstate_names[] = {
	"made",		"added",	 "removed",	  "freed",
	"on the stack", "from malloc()", "inside a node",
};
static const char *const call_names[] = { "devres_add", "devres_free",
					  "devres_get" };

/* What each call says of a node in each state; NULL: no WARN. */
static const char *want(enum nstate st, enum call c)
{
	switch (st) {
	case N_MADE:
	case N_REMOVED:
		return NULL;
	case N_ADDED:
		return c == C_FREE ? "is still on a device"
				   : "is already added";
	default:
		return "is not a live node of devres_alloc() (freed already?)";
	}
}

static struct device *dev;
static char *inside_of;	 /* the node whose data N_INSIDE points into */
static char *heap_block; /* the block N_HEAP points into */

/* A pointer in state @st; @stack is the caller's buffer. */
static void *reach(enum nstate st, void *stack)
{
	void *res;

	switch (st) {
	case N_STACK:
		return (char *)stack + 32;
	case N_HEAP:
		/* Inside the block: what is before it is the heap's. */
		heap_block = calloc(1, 64);
		assert_non_null(heap_block);
		return heap_block + 32;
	case N_INSIDE:
		inside_of = devres_alloc(count_release, 64, GFP_KERNEL);
		assert_non_null(inside_of);
		return inside_of + 32;
	default:
		break;
	}
	res = devres_alloc(count_release, 16, GFP_KERNEL);
	assert_non_null(res);
	if (st == N_ADDED || st == N_REMOVED)
		devres_add(dev, res);
	if (st == N_REMOVED)
		assert_ptr_equal(devres_remove(dev, count_release, NULL, NULL),
				 res);
	if (st == N_FREED)
		devres_free(res);
	return res;
}

/*
 * Gives back what reach() made and is still the test's: a live node the
 * call took is the device's (added) or gone (freed).
 */
static void finish(enum nstate st)
{
	if (st == N_HEAP)
		free(heap_block);
	if (st == N_INSIDE)
		devres_free(inside_of);
	devres_release_all(dev);
}

static void every_state_every_call(void **state)
{
	struct devres_ledger base, now;

	(void)state;
	devres_ledger_snapshot(&base);
	for (int st = N_MADE; st <= N_INSIDE; st++) {
		for (int c = C_ADD; c <= C_GET; c++) {
			char stack[96] = { 0 };
			const char *why = want(st, c);
			int released0;
			void *res;

			released = 0;
			res = reach(st, stack);
			released0 = released;
			start_capture();
			if (c == C_ADD)
				devres_add(dev, res);
			else if (c == C_FREE)
				devres_free(res);
			else
				assert_ptr_equal(devres_get(dev, res, match_any,
							    NULL),
						 why ? NULL : res);
			print_message("%s of a node %s: %s\n", call_names[c],
				      nstate_names[st], why ? why : "ok");
			/* devres_free() has no device to name. */
			if (why)
				expect_warn_on(c == C_FREE ? "(no device)"
							   : "test-dev",
					       call_names[c], why);
			else
				expect_no_warn();
			/* Nothing released by the call itself. */
			assert_int_equal(released, released0);
			finish((enum nstate)st);
			/* The node the device holds, released once. */
			assert_int_equal(released - released0,
					 (st == N_ADDED ||
					  (!why && c != C_FREE)));
		}
	}
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
}

/* A node freed twice between other nodes' uses: their data untouched. */
static void double_free_touches_no_other(void **state)
{
	char *a, *b, *c;

	(void)state;
	a = devres_alloc(count_release, 24, GFP_KERNEL);
	b = devres_alloc(count_release, 24, GFP_KERNEL);
	assert_non_null(a);
	assert_non_null(b);
	devres_free(a);
	start_capture();
	devres_free(a);
	expect_warn_on("(no device)", "devres_free",
		       "is not a live node of devres_alloc()");
	/* Freed once: the next two nodes are two chunks, not one. */
	c = devres_alloc(count_release, 24, GFP_KERNEL);
	assert_non_null(c);
	memset(c, 0x5a, 24);
	memset(b, 0xa5, 24);
	assert_int_equal((unsigned char)c[0], 0x5a);
	devres_free(b);
	devres_free(c);
}

static int setup(void **state)
{
	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	dev = heap_dev(NULL, "test-dev");
	return dev ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	put_device(dev);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_state_every_call),
		cmocka_unit_test(double_free_touches_no_other),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
