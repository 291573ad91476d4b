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
#include "revocable/revocable-lifecycle.h"
#include "pairs.h"
#include "rounds.h"

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
	o->after[3] = give_back(&o->after[2]);
	o->after[4] = devres_warn_count() - w0;
}

#ifdef T_TSAN
#define ROUNDS 60
#else
#define ROUNDS 100
#endif

PAIRS_TEST(every_pair_in_every_state, ROUNDS,
	   PAIRS_NAMES(state_name, call_name), .reach = reach, .call = make,
	   .undo = undo)

/*
 * The pairs on the last reference, alone, many rounds: a put or a get
 * that found the handle live acted on it once the other thread's put had
 * dropped its last reference (the count went below zero, or back up on a
 * freed handle), without the WARN either order prints.
 */
static const char *const revoked_only[] = { "revoked" };
static const char *const last_calls[] = { "revocable_get+put", "revocable_"
							       "put" };

static void reach_revoked(unsigned int s)
{
	(void)s;
	reach(REVOKED);
}

static int make_last(unsigned int c)
{
	return make(c ? PUT : GET_PUT);
}

static void last_reference_pairs(void **state)
{
	struct pairs_table t = {
		PAIRS_NAMES(revoked_only, last_calls),
		.reach = reach_revoked,
		.call = make_last,
		.undo = undo,
		.rounds = test_race_rounds("DEVRES_PAIRS_ROUNDS", ROUNDS) * 50,
		/* A get or a put takes tens of nanoseconds. */
		.spread = 64,
	};

	(void)state;
	assert_int_equal(pairs_run(&t), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(last_reference_pairs, dev_setup,
						dev_teardown),
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
