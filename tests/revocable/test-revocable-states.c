// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Every call on a revocable handle in every state of docs/revocable.md
 * ("States of a handle") that one thread can hold still: live (the
 * binding's reference and one of the test's), revoked (the device's
 * resources released, the test's reference kept) and freed (the last
 * reference put; the handle is stale). The calls
 * (tests/revocable/revocable-lifecycle.h): an access (revocable_try_access(),
 * a read of the resource, revocable_access_end() when it got one; 1 for
 * the resource), an end without an access, a get and its put, a put of
 * the test's reference, and the device's release (devres_release_all(),
 * its count). Each cell checks the return and the exact WARN count, then
 * gives everything back (the release, the puts left) and checks that the
 * resource was released exactly once and that no revocable is left
 * (the fixture compares the ledger). "Revoking" is a release waiting for
 * a reader in another thread: tests/revocable/test-revocable-race.c. The
 * same calls two at a time: tests/revocable/test-revocable-pairs.c. The
 * whole binary runs again with DEVRES_REVOCABLE=fallback.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include "testlib.h"
#include "revocable/revocable-lifecycle.h"
#include "states.h"

#define C(r, w) STATES_CELL(r, w)
#define OK STATES_OK

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* access, end, get+put, put, release */
	[LIVE] = { C(1, 0), C(0, 1), OK, OK, C(1, 0) },
	[REVOKED] = { OK, C(0, 1), OK, OK, OK },
	/*
	 * A stale handle: each call WARNs once; the get gives the caller's
	 * value back (no reference taken), whose put WARNs too.
	 */
	[FREED] = { C(0, 1), C(0, 1), C(0, 2), C(0, 1), OK },
};

static void after(void)
{
	int released;

	devres_set_log_sink(states_discard, NULL);
	assert_true(give_back(&released) >= 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(thing.released, 1);
}

static const struct states_table revocable_states =
	STATES_TABLE(table, state_name, call_name, reach, make, after,
		     dev_setup, dev_teardown);

int main(int argc, char **argv)
{
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS + 1];
	size_t n = states_tests(&revocable_states, ids, tests);

	(void)argv;
	/* The child runs the cells alone. */
	if (argc == 1)
		tests[n++] =
			(struct CMUnitTest)cmocka_unit_test(fallback_read_side);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("revocable-states", tests, n, NULL,
				       NULL);
}
