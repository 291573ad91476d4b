// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of calls on a revocable handle, made at once from two
 * threads, in every state of docs/revocable.md ("States of a handle")
 * a test can hold still: live (the binding's reference and one of the
 * test's), revoked (the device's resources released, the test's
 * reference kept) and freed (the last reference put). The calls: an
 * access (revocable_try_access(), a read of the resource and
 * revocable_access_end() when it got one), an end without an access, a
 * get and its put, a put of the test's reference, and the device's
 * release (devres_release_all()). Many rounds (DEVRES_PAIRS_ROUNDS);
 * each pair must end as one of its two serial orders does
 * (tests/pairs.h): the same returns and WARNs, the resource released as
 * often (once, or not yet), and the handle in the same state after:
 * accessible or not, freed or holding the same number of references.
 * The ledger's count of live revocables is back at its baseline after
 * each state. The whole binary runs again with DEVRES_REVOCABLE=fallback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"

enum state {
	LIVE,
	REVOKED,
	FREED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = { "live", "revoked", "freed" };

enum call {
	ACCESS,
	END,
	GET_PUT,
	PUT,
	RELEASE,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"revocable_try_access+end", "revocable_access_end",
	"revocable_get+put",	    "revocable_put",
	"devres_release_all",
};

struct thing {
	int value;
	int released;
};

static struct thing thing;
static struct revocable *h;

static void thing_release(void *res)
{
	struct thing *t = res;

	__atomic_add_fetch(&t->released, 1, __ATOMIC_ACQ_REL);
}

static void reach(unsigned int s)
{
	thing.value = 42;
	thing.released = 0;
	h = devm_revocable_create(&tdev, &thing, thing_release);
	assert_non_null(h);
	assert_ptr_equal(revocable_get(h), h);
	if (s == LIVE)
		return;
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(thing.released, 1);
	if (s == FREED)
		revocable_put(h);
}

static int make(unsigned int c)
{
	struct thing *t;

	switch (c) {
	case ACCESS:
		t = revocable_try_access(h);
		if (!t)
			return 0;
		/* Released under an access: the value is gone. */
		if (__atomic_load_n(&t->released, __ATOMIC_ACQUIRE) ||
		    t->value != 42) {
			revocable_access_end(h);
			return -1;
		}
		revocable_access_end(h);
		return 1;
	case END:
		revocable_access_end(h);
		return 0;
	case GET_PUT:
		revocable_put(revocable_get(h));
		return 0;
	case PUT:
		revocable_put(h);
		return 0;
	case RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * What the pair left: the releases of the resource, whether an access
 * gets it, what the device's release then finds, how many puts free the
 * handle (a freed handle's access WARNs), and the WARNs of all this.
 */
static void undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count(), w;
	struct thing *t;

	o->after[0] = __atomic_load_n(&thing.released, __ATOMIC_ACQUIRE);
	w = devres_warn_count();
	t = revocable_try_access(h);
	o->after[1] = t ? 1 : devres_warn_count() != w ? -1 : 0;
	if (t)
		revocable_access_end(h);
	o->after[2] = devres_release_all(&tdev);
	for (int puts = 0; puts < 4; puts++) {
		w = devres_warn_count();
		t = revocable_try_access(h);
		if (t)
			revocable_access_end(h);
		if (devres_warn_count() != w) {
			o->after[3] = puts;
			break;
		}
		revocable_put(h);
	}
	o->after[4] = devres_warn_count() - w0;
}

#ifdef T_TSAN
#define ROUNDS 60
#else
#define ROUNDS 100
#endif

static void every_pair_in_every_state(void **state)
{
	struct pairs_table t = {
		PAIRS_NAMES(state_name, call_name),
		.reach = reach,
		.call = make,
		.undo = undo,
		.rounds = test_rounds("DEVRES_PAIRS_ROUNDS", ROUNDS),
	};

	(void)state;
	assert_int_equal(pairs_run(&t), 0);
}

/* Every pair again, on the fallback read side. */
static void fallback_read_side(void **state)
{
	char *err = NULL;
	int status;

	(void)state;
	status = run_self("DEVRES_REVOCABLE=fallback", &err, "--child", NULL);
	if (status)
		fprintf(stderr, "%s", err);
	free(err);
	assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						dev_setup, dev_teardown),
		cmocka_unit_test(fallback_read_side),
	};
	/* The child runs all but the last test. */
	size_t n = sizeof(tests) / sizeof(tests[0]) - (argc > 1);

	(void)argv;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	/* A pair that hangs fails the test instead of its timeout. */
	alarm(100);
	return _cmocka_run_group_tests("revocable-pairs", tests, n, NULL, NULL);
}
