// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a mapping of device memory in every state of the mapping:
 * never made (an address that was never a mapping), made managed
 * (devm_ioremap(), devm_ioremap_wc()), made unmanaged (ioremap(),
 * ioremap_wc()), unmapped by the right
 * call, a managed one unmapped by the wrong one (iounmap(): the WARN names
 * the managed call and the node goes), unmapped twice, unmapped by the
 * device's release (unbound), and an address that another device's
 * mapping holds since: the stale pointer of a driver whose mapping is
 * gone, equal to the new owner's. Each cell starts from nothing, brings
 * the mapping to its state, makes the call once and checks the return,
 * the exact WARN count and, where the cell WARNs, what the line names;
 * then the device holds exactly the nodes the cell left it, the other
 * device's mapping still shows the device's memory and keeps its node
 * unless the call is iounmap() (by address, it cannot tell one owner from
 * another, in the kernel either: it WARNs naming that owner), a plain
 * mapping the cell did not unmap is still there to unmap without a WARN,
 * and the ledger is back at its baseline (no mapping left, no window
 * pinned). The table is sized by the enums.
 */
#define _GNU_SOURCE
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
#include <devres/io.h>
#include <devres/ioport.h>
#include "io/io-states.h"

#define WIN 0x91000000ull
#define WIN_SIZE 0x4000u
/* The mapped range: one page inside the window. */
#define OFF 0x1000u
#define A (WIN + OFF)
#define N 0x1000u

/* The io lifecycle (io/io-states.h), then the write-combining mappings. */
enum state {
	MANAGED_WC = NR_IO_STATES,
	PLAIN_WC,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	[NEVER] = "never mapped",
	[MANAGED] = "devm mapped",
	[MANAGED_WC] = "devm mapped write-combining",
	[PLAIN] = "mapped",
	[PLAIN_WC] = "mapped write-combining",
	[RELEASED] = "unmapped by devm_iounmap",
	[WRONG] = "devm mapped, unmapped by iounmap",
	[TWICE] = "unmapped twice",
	[UNBOUND] = "device released",
	[REOWNED] = "unmapped, the address another device's mapping",
};

enum call {
	IOREMAP,      /* ioremap() of the range */
	DEVM_IOREMAP, /* devm_ioremap() of the range on the device */
	IOUNMAP,      /* iounmap() of the state's address */
	DEVM_IOUNMAP, /* devm_iounmap() of the state's address */
	RELEASE_ALL,  /* devres_release_all() of the device (unbind) */
	IOREMAP_WC,   /* ioremap_wc() of the range */
	DEVM_WC,      /* devm_ioremap_wc() of the range on the device */
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"ioremap",	   "devm_ioremap",	 "iounmap",
	"devm_iounmap",	   "devres_release_all", "ioremap_wc",
	"devm_ioremap_wc",
};

/*
 * What a cell expects: the return (0 for a mapping, -errno for NULL; the
 * count of devres_release_all()), the WARNs, a piece of the WARN's line,
 * the device's nodes after the call, and whether the other device's
 * mapping is gone (only iounmap(), by address, may take it).
 */
/* clang-format off */
#define C(r, w, s, n) STATES_LEFT(r, w, s, n)
#define GONE_ROW                                                            \
	{ C(0, 0, NULL, 0), C(0, 0, NULL, 1),                               \
	  C(0, 1, "is not a mapping from ioremap", 0),                      \
	  C(0, 1, "is not a managed mapping", 0), C(0, 0, NULL, 0),        \
	  C(0, 0, NULL, 0), C(0, 0, NULL, 1) }

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* ioremap, devm_ioremap, iounmap, devm_iounmap, release all,
	 * ioremap_wc, devm_ioremap_wc */
	[NEVER] = GONE_ROW,
	[MANAGED] = { C(0, 0, NULL, 1), C(0, 0, NULL, 2),
		      C(0, 1, "test-dev: iounmap: a mapping acquired with "
			      "devm_ioremap(): use devm_iounmap()", 0),
		      C(0, 0, NULL, 0), C(1, 0, NULL, 0), C(0, 0, NULL, 1),
		      C(0, 0, NULL, 2) },
	[MANAGED_WC] = { C(0, 0, NULL, 1), C(0, 0, NULL, 2),
			 C(0, 1, "test-dev: iounmap: a mapping acquired with "
				 "devm_ioremap_wc(): use devm_iounmap()", 0),
			 C(0, 0, NULL, 0), C(1, 0, NULL, 0), C(0, 0, NULL, 1),
			 C(0, 0, NULL, 2) },
	[PLAIN] = { C(0, 0, NULL, 0), C(0, 0, NULL, 1), C(0, 0, NULL, 0),
		    C(0, 1, "is not a managed mapping", 0), C(0, 0, NULL, 0),
		    C(0, 0, NULL, 0), C(0, 0, NULL, 1) },
	[PLAIN_WC] = { C(0, 0, NULL, 0), C(0, 0, NULL, 1), C(0, 0, NULL, 0),
		       C(0, 1, "is not a managed mapping", 0),
		       C(0, 0, NULL, 0), C(0, 0, NULL, 0), C(0, 0, NULL, 1) },
	[RELEASED] = GONE_ROW,
	[WRONG] = GONE_ROW,
	[TWICE] = GONE_ROW,
	[UNBOUND] = GONE_ROW,
	[REOWNED] = { C(0, 0, NULL, 0), C(0, 0, NULL, 1),
		      STATES_TAKEN(0, 1, "other-dev: iounmap: a mapping "
				 "acquired with devm_ioremap()", 0),
		      C(0, 1, "is not a managed mapping", 0),
		      C(0, 0, NULL, 0), C(0, 0, NULL, 0), C(0, 0, NULL, 1) },
};
/* clang-format on */

/* Never a mapping: the address of the NEVER state. */
static char not_a_mapping[64];
/* The state's address; the plain mappings undo() gives back. */
static void *addr;
static void *plain[3];

static void *map_or_fail(void *p)
{
	assert_non_null(p);
	return p;
}

/* The mapping's calls, for the states of the io lifecycle. */
static void *map_get(void)
{
	return ioremap(A, N);
}

static void map_put(void *p)
{
	iounmap(p);
}

static void *map_devm_get(struct device *dev)
{
	return devm_ioremap(dev, A, N);
}

static void map_devm_put(struct device *dev, void *p)
{
	devm_iounmap(dev, p);
}

static const struct io_states_ops map_ops = {
	.get = map_get,
	.put = map_put,
	.devm_get = map_devm_get,
	.devm_put = map_devm_put,
};

static void reach(unsigned int s)
{
	plain[0] = plain[1] = plain[2] = NULL;
	switch (s) {
	case NEVER:
		addr = not_a_mapping;
		break;
	case MANAGED_WC:
		addr = map_or_fail(devm_ioremap_wc(&tdev, A, N));
		break;
	case PLAIN_WC:
		addr = plain[0] = map_or_fail(ioremap_wc(A, N));
		break;
	default:
		/* In REOWNED, the driver's stale pointer: the new owner's. */
		addr = io_states_reach(&map_ops, s);
		if (s == PLAIN)
			plain[0] = addr;
		break;
	}
}

static int make(unsigned int c)
{
	void *p;

	switch (c) {
	case IOREMAP:
	case IOREMAP_WC:
		p = c == IOREMAP ? ioremap(A, N) : ioremap_wc(A, N);
		if (!p)
			return -errno;
		plain[c == IOREMAP ? 1 : 2] = p;
		return 0;
	case DEVM_IOREMAP:
		return devm_ioremap(&tdev, A, N) ? 0 : -errno;
	case DEVM_WC:
		return devm_ioremap_wc(&tdev, A, N) ? 0 : -errno;
	case IOUNMAP:
		iounmap(addr);
		if (plain[0] == addr)
			plain[0] = NULL;
		return 0;
	case DEVM_IOUNMAP:
		devm_iounmap(&tdev, addr);
		return 0;
	case RELEASE_ALL:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * The other device's mapping, unless the cell took it, still shows the
 * device's memory and keeps its node; the plain mappings left unmap
 * without a WARN (they are still mappings); then everything goes.
 */
static void undo(unsigned int s, const struct states_cell *want)
{
	long before;

	if (io_states_theirs_kept(s, want)) {
		io_states_win.devside[OFF] = 0x5a;
		assert_int_equal(readb(addr), 0x5a);
		writeb(0xa5, addr);
		assert_int_equal(io_states_win.devside[OFF], 0xa5);
	}
	io_states_release();
	before = devres_warn_count();
	for (int i = 0; i < 3; i++)
		if (plain[i])
			iounmap(plain[i]);
	assert_int_equal(devres_warn_count(), before);
}

/* states_setup() keeps the cell's id whatever the fixture sets. */
static int cell_setup(void **state)
{
	return io_states_window_setup(state, WIN, WIN_SIZE);
}

static int cell_teardown(void **state)
{
	return io_states_window_teardown(state, WIN, WIN_SIZE);
}

static const struct states_table io_map_states =
	STATES_TABLE_LEFT(table, state_name, call_name, reach, make, &tdev,
			  undo, cell_setup, cell_teardown);

int main(void)
{
	return states_main("io-map-states", &io_map_states, 1);
}
