// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a managed mapping in every state of it: an address never
 * mapped, mapped managed (devm_mmap()) or unmanaged (mmap()), unmapped by
 * devm_munmap() once or twice, by the device's release, and by hand:
 * munmap(2) and left empty, munmap(2) and the address mapped again by
 * another owner (from another file, from the same file at the same
 * offset, anonymous memory where the managed one was anonymous too, as
 * malloc() does for a large block), or mremap(2) moving it away. The
 * library sees those calls: each WARNs once, there, naming the device and
 * devm_munmap(), and takes the node off the device. The same done with a
 * raw system call goes past the library: there the release's check of
 * /proc/self/maps is all there is.
 * Each cell starts from nothing, brings the mapping to its state, makes
 * the call once and checks the return, the exact WARN count and what the
 * WARN says; then the device holds the nodes the table says, the other
 * owner's mapping at the address is still mapped and still its own (a byte
 * written through it reads back, through the file too), everything is
 * given back and the ledger is at its baseline. The release must act on
 * the mapping it made, not on an address; two raw system call rows say
 * where it cannot (the same file at the same offset, anonymous memory:
 * nothing in /proc/self/maps tells them apart), and check that this is
 * exactly what happens. The table is sized by the enums.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "posix/posix-states.h"

#define LEN 0x2000u

enum state {
	BEHIND = NR_POSIX_STATES,
	REMAP_OTHER,
	REMAP_SAME,
	REMAP_ANON,
	MOVED,
	RAW_BEHIND,
	RAW_REMAP_OTHER,
	RAW_REMAP_SAME,
	RAW_REMAP_ANON,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"never mapped",
	"devm mapped",
	"mapped",
	"unmapped by devm_munmap",
	"unmapped twice by devm_munmap",
	"device released",
	"unmapped by munmap(2)",
	"munmap(2), mapped again from another file",
	"munmap(2), mapped again from the same file and offset",
	"anonymous, munmap(2), mapped again anonymous",
	"moved away by mremap(2)",
	"unmapped by the munmap system call",
	"munmap system call, mapped again from another file",
	"munmap system call, mapped again from the same file and offset",
	"anonymous, munmap system call, mapped again anonymous",
};

enum call {
	DEVM_MMAP,   /* devm_mmap(): a new mapping */
	DEVM_MUNMAP, /* devm_munmap() of the state's address */
	RELEASE_ALL, /* devres_release_all() of the device (unbind) */
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"devm_mmap",
	"devm_munmap",
	"devres_release_all",
};

/*
 * What a cell expects: the return (a new mapping is 0; the count of
 * devres_release_all()), the WARNs, a piece of the WARN's line, and the
 * device's nodes after the call.
 */
#define NOT_MAPPED "is not mapped by this device"
#define BEHIND_BACK "was unmapped behind the library's back"
#define LEFT_MAPPED "now is another mapping: left mapped"

/* clang-format off */
#define C(r, w, s, n) { r, w, s, n, false }
#define GONE_ROW { C(0, 0, NULL, 1), C(0, 1, NOT_MAPPED, 0), C(0, 0, NULL, 0) }
#define BEHIND_ROW                                                          \
	{ C(0, 0, NULL, 2), C(0, 1, BEHIND_BACK, 0), C(1, 1, BEHIND_BACK, 0) }
/* The node is stale, the address another owner's: never unmapped. */
#define REMAP_ROW                                                           \
	{ C(0, 0, NULL, 2), C(0, 1, LEFT_MAPPED, 0), C(1, 1, LEFT_MAPPED, 0) }
#define LIMIT_ROW                                                           \
	{ C(0, 0, NULL, 2), { 0, 0, NULL, 0, true }, { 1, 0, NULL, 0, true } }

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* devm_mmap, devm_munmap, release all */
	[NEVER] = GONE_ROW,
	[MANAGED] = { C(0, 0, NULL, 2), C(0, 0, NULL, 0), C(1, 0, NULL, 0) },
	[PLAIN] = GONE_ROW,
	[RELEASED] = GONE_ROW,
	[TWICE] = GONE_ROW,
	[UNBOUND] = GONE_ROW,
	/* The node went at the call by hand, which WARNed (reach()). */
	[BEHIND] = GONE_ROW,
	[REMAP_OTHER] = GONE_ROW,
	[REMAP_SAME] = GONE_ROW,
	[REMAP_ANON] = GONE_ROW,
	[MOVED] = GONE_ROW,
	/* Past the library: the release's check of /proc/self/maps. */
	/* A new mapping there proves the old one gone: its node goes. */
	[RAW_BEHIND] = { C(0, 1, BEHIND_BACK, 1), C(0, 1, BEHIND_BACK, 0),
			 C(1, 1, BEHIND_BACK, 0) },
	[RAW_REMAP_OTHER] = REMAP_ROW,
	/*
	 * Known limit (docs/posix.md): the same file at the same offset, and
	 * anonymous memory, look the same in /proc/self/maps as what the
	 * device mapped, and the other owner's mapping is unmapped.
	 */
	[RAW_REMAP_SAME] = LIMIT_ROW,
	[RAW_REMAP_ANON] = LIMIT_ROW,
};
/* clang-format on */

/* Two files to map: the device's, and another. */
static int memfd[2];
/* Never a mapping: the NEVER state's address. */
static char not_a_mapping[64];
/*
 * The state's address; the other owner's mapping there (or NULL), and a
 * plain mapping undo() unmaps (PLAIN's, or where MOVED put the managed
 * one).
 */
static char *addr, *theirs, *plain;

static char *map_ok(void *p)
{
	assert_true(p != MAP_FAILED && !IS_ERR(p) && p);
	return p;
}

static char *devm_map(bool anon)
{
	if (anon)
		return map_ok(devm_mmap(&tdev, NULL, LEN,
					PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	return map_ok(devm_mmap(&tdev, NULL, LEN, PROT_READ | PROT_WRITE,
				MAP_SHARED, memfd[0], 0));
}

/* Another owner's mapping at @at, where the device's was. */
static void remap(int fd)
{
	int flags = MAP_FIXED_NOREPLACE |
		    (fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED);

	theirs = map_ok(mmap(addr, LEN, PROT_READ | PROT_WRITE, flags, fd, 0));
	assert_ptr_equal(theirs, addr);
}

/*
 * A plain call on the managed mapping: exactly one WARN, at the call,
 * naming the device, the call, devm_mmap() and devm_munmap(); the node is
 * off the device there and then.
 */
static void warned_once(long before, const char *call)
{
	assert_int_equal(devres_warn_count() - before, 1);
	assert_non_null(strstr(states_warned.text, "test-dev"));
	assert_non_null(strstr(states_warned.text, call));
	assert_non_null(strstr(states_warned.text, "devm_mmap()"));
	assert_non_null(strstr(states_warned.text, "use devm_munmap()"));
	assert_int_equal(states_nodes(&tdev), 0);
}

static void raw_munmap(void)
{
	assert_int_equal(syscall(SYS_munmap, addr, LEN), 0);
}

static void reach(unsigned int s)
{
	long before;

	theirs = plain = NULL;
	switch (s) {
	case NEVER:
		addr = not_a_mapping;
		return;
	case PLAIN:
		addr = plain = map_ok(mmap(NULL, LEN, PROT_READ | PROT_WRITE,
					   MAP_SHARED, memfd[0], 0));
		return;
	default:
		break;
	}
	addr = devm_map(s == REMAP_ANON || s == RAW_REMAP_ANON);
	before = devres_warn_count();
	states_warned.n = 0;
	switch (s) {
	case RELEASED:
		devm_munmap(&tdev, addr, LEN);
		break;
	case TWICE:
		devm_munmap(&tdev, addr, LEN);
		devm_munmap(&tdev, addr, LEN);
		break;
	case UNBOUND:
		assert_int_equal(devres_release_all(&tdev), 1);
		break;
	case BEHIND:
		assert_int_equal(munmap(addr, LEN), 0);
		warned_once(before, "munmap(");
		break;
	case REMAP_OTHER:
	case REMAP_SAME:
	case REMAP_ANON:
		assert_int_equal(munmap(addr, LEN), 0);
		warned_once(before, "munmap(");
		remap(s == REMAP_OTHER	? memfd[1]
		      : s == REMAP_SAME ? memfd[0]
					: -1);
		break;
	case RAW_BEHIND:
		raw_munmap();
		break;
	case RAW_REMAP_OTHER:
	case RAW_REMAP_SAME:
	case RAW_REMAP_ANON:
		raw_munmap();
		remap(s == RAW_REMAP_OTHER  ? memfd[1]
		      : s == RAW_REMAP_SAME ? memfd[0]
					    : -1);
		break;
	case MOVED:
		/* Moved into a place the test holds, so that it surely moves. */
		plain = map_ok(mmap(NULL, LEN, PROT_NONE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		plain = map_ok(mremap(addr, LEN, LEN,
				      MREMAP_MAYMOVE | MREMAP_FIXED, plain));
		assert_ptr_not_equal(plain, addr);
		warned_once(before, "mremap(");
		break;
	default:
		break;
	}
}

static int make(unsigned int c)
{
	switch (c) {
	case DEVM_MMAP:
		(void)devm_map(false);
		return 0;
	case DEVM_MUNMAP:
		devm_munmap(&tdev, addr, LEN);
		return 0;
	case RELEASE_ALL:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * The other owner's mapping is still mapped and its own: a byte written
 * through it reads back through it and, for a file, through the file.
 * Then everything goes.
 */
static void undo(unsigned int s, const struct states_cell *want)
{
	unsigned char b = 0;

	if (theirs && want->other) {
		/* Gone: the address is free (MAP_FIXED_NOREPLACE succeeds). */
		assert_ptr_equal(map_ok(mmap(theirs, LEN, PROT_NONE,
					     MAP_PRIVATE | MAP_ANONYMOUS |
						     MAP_FIXED_NOREPLACE,
					     -1, 0)),
				 theirs);
	} else if (theirs) {
		theirs[LEN - 1] = 0x5a;
		assert_int_equal(theirs[LEN - 1], 0x5a);
		if (s != REMAP_ANON && s != RAW_REMAP_ANON) {
			int fd = memfd[s == REMAP_OTHER || s == RAW_REMAP_OTHER
					       ? 1
					       : 0];

			assert_int_equal(pread(fd, &b, 1, LEN - 1), 1);
			assert_int_equal(b, 0x5a);
		}
	}
	devres_release_all(&tdev);
	if (theirs)
		assert_int_equal(munmap(theirs, LEN), 0);
	if (plain)
		assert_int_equal(munmap(plain, LEN), 0);
}

/* states_setup() keeps the cell's id whatever the fixture sets. */
static int cell_setup(void **state)
{
	int ret;

	for (int i = 0; i < 2; i++) {
		memfd[i] = memfd_create("states", MFD_CLOEXEC);
		if (memfd[i] < 0 || ftruncate(memfd[i], LEN))
			return -1;
	}
	ret = dev_setup(state);
	return ret;
}

static int cell_teardown(void **state)
{
	int ret = dev_teardown(state);

	close(memfd[0]);
	close(memfd[1]);
	return ret;
}

static const struct states_table mmap_states =
	STATES_TABLE_LEFT(table, state_name, call_name, reach, make, &tdev,
			  undo, cell_setup, cell_teardown);

int main(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return states_run("posix-mmap-states", &mmap_states, 1);
}
