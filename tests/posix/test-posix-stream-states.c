// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a managed stream in every state of it: a pointer that was
 * never a stream, a stream opened managed (devm_fopen()) or unmanaged
 * (fopen()), closed by devm_fclose() once or twice, closed by the
 * device's release, closed by hand with fclose(3) (which the library
 * interposes: the node is dropped at that call). Each cell starts from
 * nothing, brings the stream to its state, makes the call once and checks
 * the return, the exact WARN count and what it says, and the device's
 * nodes; a plain stream the call refused is still open and takes a write.
 * A closed stream's FILE is freed: devm_fclose() of it and the device's
 * release must compare the pointer with their nodes and never read it
 * (ASan sees a read). The table is sized by the enums. After the cells,
 * the fclose(3) by hand itself: one WARN at the call, naming the device,
 * devm_fopen() and devm_fclose(), no node left, and a release that finds
 * nothing and WARNs nothing.
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
#include <devres/posix.h>
#include "testlib.h"
#include "posix/posix-states.h"

enum state {
	HAND = NR_POSIX_STATES,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"never a stream",
	"devm opened",
	"opened",
	"closed by devm_fclose",
	"closed twice by devm_fclose",
	"device released",
	"closed by fclose(3)",
};

enum call {
	DEVM_FOPEN,  /* devm_fopen(): a new stream */
	DEVM_FCLOSE, /* devm_fclose() of the state's pointer */
	RELEASE_ALL, /* devres_release_all() of the device (unbind) */
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"devm_fopen",
	"devm_fclose",
	"devres_release_all",
};

#define NOT_MANAGED "is not managed by this device"

/* clang-format off */
/* The return, the WARNs, a piece of the WARN's line, the nodes after. */
#define C(r, w, s, n) { r, w, s, n, false }
#define GONE_ROW                                                            \
	{ C(0, 0, NULL, 1), C(-EINVAL, 1, NOT_MANAGED, 0), C(0, 0, NULL, 0) }

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* devm_fopen, devm_fclose, release all */
	[NEVER] = GONE_ROW,
	[MANAGED] = { C(0, 0, NULL, 2), C(0, 0, NULL, 0), C(1, 0, NULL, 0) },
	[PLAIN] = GONE_ROW,
	[RELEASED] = GONE_ROW,
	[TWICE] = GONE_ROW,
	[UNBOUND] = GONE_ROW,
	[HAND] = GONE_ROW,
};
/* clang-format on */

/* Never a stream: the NEVER state's pointer. */
static char not_a_stream[64];
/* The state's pointer; a plain stream undo() closes. */
static FILE *stream, *plain;

static FILE *open_ok(FILE *f)
{
	assert_non_null(f);
	return f;
}

static void reach(unsigned int s)
{
	plain = NULL;
	switch (s) {
	case NEVER:
		stream = (FILE *)(void *)not_a_stream;
		break;
	case PLAIN:
		stream = plain = open_ok(fopen("/dev/null", "we"));
		break;
	default:
		stream = open_ok(devm_fopen(&tdev, "/dev/null", "w"));
		if (s == RELEASED || s == TWICE)
			assert_int_equal(devm_fclose(&tdev, stream), 0);
		if (s == TWICE)
			assert_int_equal(devm_fclose(&tdev, stream), -EINVAL);
		if (s == UNBOUND)
			assert_int_equal(devres_release_all(&tdev), 1);
		if (s == HAND)
			assert_int_equal(fclose(stream), 0);
		break;
	}
}

static int make(unsigned int c)
{
	switch (c) {
	case DEVM_FOPEN:
		return devm_fopen(&tdev, "/dev/null", "w") ? 0 : -errno;
	case DEVM_FCLOSE:
		return devm_fclose(&tdev, stream);
	case RELEASE_ALL:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * A plain stream the cell did not close is still open and writable
 * (devm_fclose() of it did not touch it); then everything goes.
 */
static void undo(unsigned int s, const struct states_cell *want)
{
	(void)s;
	(void)want;
	if (plain) {
		assert_true(fputs("x", plain) >= 0);
		assert_int_equal(fclose(plain), 0);
	}
	devres_release_all(&tdev);
}

static const struct states_table stream_states =
	STATES_TABLE_LEFT(table, state_name, call_name, reach, make, &tdev,
			  undo, dev_setup, dev_teardown);

/*
 * fclose(3) of a managed stream: caught at the call, one WARN that names
 * the device, the managed call and the one to use; the node is dropped
 * there, so the release has nothing of it left and never reads the freed
 * FILE (ASan). The teardown checks the ledger.
 */
static void fclose_by_hand(void **state)
{
	long warns;
	FILE *f;

	(void)state;
	f = open_ok(devm_fopen(&tdev, "/dev/null", "w"));
	assert_true(fputs("x", f) >= 0);
	assert_int_equal(states_nodes(&tdev), 1);
	warns = devres_warn_count();
	devres_set_log_sink(states_discard, NULL);
	states_warned.n = 0;
	assert_int_equal(fclose(f), 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_warn_count() - warns, 1);
	assert_non_null(strstr(states_warned.text, "test-dev: fclose: a stream "
						   "acquired with "
						   "devm_fopen(): "
						   "use devm_fclose(); "
						   "released "
						   "now"));
	assert_int_equal(states_nodes(&tdev), 0);
	assert_int_equal(devres_release_all(&tdev), 0);
	assert_int_equal(devres_warn_count() - warns, 1);
}

int main(void)
{
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS + 1];
	size_t n = states_tests(&stream_states, ids, tests);

	tests[n++] = (struct CMUnitTest){ .name = "fclose by hand",
					  .test_func = fclose_by_hand,
					  .setup_func = dev_setup,
					  .teardown_func = dev_teardown };
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("posix-stream-states", tests, n, NULL,
				       NULL);
}
