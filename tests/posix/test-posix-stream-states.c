// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a managed stream in every state of it: a pointer that was
 * never a stream, a stream opened managed (devm_fopen()) or unmanaged
 * (fopen()), closed by devm_fclose() once or twice, closed by the
 * device's release. Each cell starts from nothing, brings the stream to
 * its state, makes the call once and checks the return, the exact WARN
 * count and what it says, and the device's nodes; a plain stream the call
 * refused is still open and takes a write. A closed stream's FILE is
 * freed: devm_fclose() of it must compare the pointer with its nodes and
 * never read it (ASan sees a read). Not in the table: fclose(3) of a
 * managed stream, which frees the FILE behind the library's back, and
 * which no check can make safe (docs/posix.md). The table is sized by the
 * enums.
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
#include "states.h"

enum state {
	NEVER,
	MANAGED,
	PLAIN,
	CLOSED,
	TWICE,
	UNBOUND,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"never a stream",
	"devm opened",
	"opened",
	"closed by devm_fclose",
	"closed twice by devm_fclose",
	"device released",
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
	[CLOSED] = GONE_ROW,
	[TWICE] = GONE_ROW,
	[UNBOUND] = GONE_ROW,
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
		if (s == CLOSED || s == TWICE)
			assert_int_equal(devm_fclose(&tdev, stream), 0);
		if (s == TWICE)
			assert_int_equal(devm_fclose(&tdev, stream), -EINVAL);
		if (s == UNBOUND)
			assert_int_equal(devres_release_all(&tdev), 1);
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

int main(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return states_run("posix-stream-states", &stream_states, 1);
}
