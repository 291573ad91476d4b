// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a busy region, of the memory space and of the I/O port
 * space, in every state of the region: never requested, requested managed
 * (devm_request_mem_region(), devm_request_region()), requested unmanaged
 * (request_mem_region(), request_region()), given back by the right call,
 * a managed one given back by the wrong one (release_mem_region(),
 * release_region(): the WARN names the managed call and the node goes),
 * given back twice, given back by the device's release (unbound), and
 * requested again by another device after its release. Each cell starts
 * from nothing, brings the region to its state, makes the call once and
 * checks the return, the exact WARN count and, where the cell WARNs, what
 * the line names; then the device holds exactly the nodes the cell left
 * it, the other device's region is intact unless the cell's call releases
 * by address (release_mem_region() and release_region() cannot tell one
 * owner from another, in the kernel either), everything is given back,
 * the range can be requested again and the ledger is at its baseline.
 * devm_ioremap_resource() and its _wc form claim and map a memory range;
 * an I/O port range they refuse (-EINVAL, logged, not a WARN). The table
 * is sized by the enums: a state or a call added without its row or
 * column fails to compile.
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

#define WIN 0x90000000ull
#define WIN_SIZE 0x4000u
/* The region: one page inside the window, so that it can be mapped. */
#define A (WIN + 0x1000u)
#define N 0x1000u

/* The states are the io lifecycle's (io/io-states.h). */
enum {
	NR_STATES = NR_IO_STATES
};
static const char *const state_name[NR_STATES] = {
	[NEVER] = "never requested",
	[MANAGED] = "devm requested",
	[PLAIN] = "requested",
	[RELEASED] = "released by devm_release_mem_region",
	[WRONG] = "devm requested, released by release_mem_region",
	[TWICE] = "released twice",
	[UNBOUND] = "device released",
	[REOWNED] = "released, requested by another device",
};

enum call {
	REQUEST,      /* request_mem_region() */
	DEVM_REQUEST, /* devm_request_mem_region() on the device */
	RELEASE,      /* release_mem_region() */
	DEVM_RELEASE, /* devm_release_mem_region() on the device */
	RELEASE_ALL,  /* devres_release_all() of the device (unbind) */
	IOREMAP_RES,  /* devm_ioremap_resource() of the range */
	IOREMAP_WC,   /* devm_ioremap_resource_wc() of the range */
	NR_CALLS
};

/* The same calls in the two spaces: memory, then I/O ports. */
enum space {
	MEM,
	IO,
	NR_SPACES
};
static const char *const call_name[NR_SPACES][NR_CALLS] = {
	{ "request_mem_region", "devm_request_mem_region", "release_mem_region",
	  "devm_release_mem_region", "devres_release_all",
	  "devm_ioremap_resource", "devm_ioremap_resource_wc" },
	{ "request_region", "devm_request_region", "release_region",
	  "devm_release_region", "devres_release_all",
	  "devm_ioremap_resource(IORESOURCE_IO)",
	  "devm_ioremap_resource_wc(IORESOURCE_IO)" },
};

/*
 * What a cell expects: the return (0 for a pointer, -EBUSY for NULL from
 * a request, the count of devres_release_all()), the WARNs, a piece of
 * the WARN's line, the device's nodes after the call, and whether the
 * other device's region is gone (only a release by address may take it).
 */
/* clang-format off */
#define C(r, w, s, n) STATES_LEFT(r, w, s, n)
#define FREE_ROW(map)                                                  \
	{ C(0, 0, NULL, 0), C(0, 0, NULL, 1),                               \
	  C(0, 1, "no busy region", 0), C(0, 1, "no managed region", 0),   \
	  C(0, 0, NULL, 0), map, map }
#define MAPPED C(0, 0, NULL, 2)
/* An I/O port range is not memory: refused, logged, not a misuse. */
#define NOT_MEM C(-EINVAL, 0, NULL, 0)

static const struct states_cell table[NR_SPACES][NR_STATES][NR_CALLS] = {
	/* request, devm request, release, devm release, release all,
	 * devm_ioremap_resource, its _wc form */
	[MEM] = {
	[NEVER] = FREE_ROW(MAPPED),
	[MANAGED] = { C(-EBUSY, 0, NULL, 1), C(-EBUSY, 0, NULL, 1),
		      C(0, 1, "a region acquired with devm_request_mem_region(): "
			      "use devm_release_mem_region()", 0),
		      C(0, 0, NULL, 0), C(1, 0, NULL, 0),
		      C(-EBUSY, 0, NULL, 1), C(-EBUSY, 0, NULL, 1) },
	[PLAIN] = { C(-EBUSY, 0, NULL, 0), C(-EBUSY, 0, NULL, 0),
		    C(0, 0, NULL, 0), C(0, 1, "no managed region", 0),
		    C(0, 0, NULL, 0), C(-EBUSY, 0, NULL, 0),
		    C(-EBUSY, 0, NULL, 0) },
	[RELEASED] = FREE_ROW(MAPPED),
	[WRONG] = FREE_ROW(MAPPED),
	[TWICE] = FREE_ROW(MAPPED),
	[UNBOUND] = FREE_ROW(MAPPED),
	[REOWNED] = { C(-EBUSY, 0, NULL, 0), C(-EBUSY, 0, NULL, 0),
		      STATES_TAKEN(0, 1, "other-dev: release_mem_region", 0),
		      C(0, 1, "no managed region", 0), C(0, 0, NULL, 0),
		      C(-EBUSY, 0, NULL, 0), C(-EBUSY, 0, NULL, 0) },
	},
	[IO] = {
	[NEVER] = FREE_ROW(NOT_MEM),
	[MANAGED] = { C(-EBUSY, 0, NULL, 1), C(-EBUSY, 0, NULL, 1),
		      C(0, 1, "a region acquired with devm_request_region(): "
			      "use devm_release_region()", 0),
		      C(0, 0, NULL, 0), C(1, 0, NULL, 0),
		      C(-EINVAL, 0, NULL, 1), C(-EINVAL, 0, NULL, 1) },
	[PLAIN] = { C(-EBUSY, 0, NULL, 0), C(-EBUSY, 0, NULL, 0),
		    C(0, 0, NULL, 0), C(0, 1, "no managed region", 0),
		    C(0, 0, NULL, 0), NOT_MEM, NOT_MEM },
	[RELEASED] = FREE_ROW(NOT_MEM),
	[WRONG] = FREE_ROW(NOT_MEM),
	[TWICE] = FREE_ROW(NOT_MEM),
	[UNBOUND] = FREE_ROW(NOT_MEM),
	[REOWNED] = { C(-EBUSY, 0, NULL, 0), C(-EBUSY, 0, NULL, 0),
		      STATES_TAKEN(0, 1, "other-dev: release_region", 0),
		      C(0, 1, "no managed region", 0), C(0, 0, NULL, 0),
		      NOT_MEM, NOT_MEM },
	},
};
/* clang-format on */

/* The calls of a space, and the range the cells use in it. */
struct space_ops {
	struct resource *(*req)(resource_size_t, resource_size_t, const char *);
	struct resource *(*devm_req)(struct device *, resource_size_t,
				     resource_size_t, const char *);
	void (*rel)(resource_size_t, resource_size_t);
	void (*devm_rel)(struct device *, resource_size_t, resource_size_t);
	unsigned long flags;
	resource_size_t a, n;
};

static const struct space_ops spaces[NR_SPACES] = {
	[MEM] = { request_mem_region, devm_request_mem_region,
		  release_mem_region, devm_release_mem_region, IORESOURCE_MEM,
		  A, N },
	[IO] = { request_region, devm_request_region, release_region,
		 devm_release_region, IORESOURCE_IO, 0x3f8, 8 },
};
static const struct space_ops *ops;

/* A plain region the cell made, to be given back by undo(). */
static bool plain;

/* The space's calls on its range, for the states of the io lifecycle. */
static void *region_get(void)
{
	return ops->req(ops->a, ops->n, "mine");
}

static void region_put(void *res)
{
	(void)res;
	ops->rel(ops->a, ops->n);
}

static void *region_devm_get(struct device *dev)
{
	return ops->devm_req(dev, ops->a, ops->n,
			     dev == &tdev ? "mine" : "theirs");
}

static void region_devm_put(struct device *dev, void *res)
{
	(void)res;
	ops->devm_rel(dev, ops->a, ops->n);
}

static const struct io_states_ops region_ops = {
	.get = region_get,
	.put = region_put,
	.devm_get = region_devm_get,
	.devm_put = region_devm_put,
};

static void reach(unsigned int s)
{
	if (s != NEVER)
		(void)io_states_reach(&region_ops, s);
	plain = s == PLAIN;
}

static int make(unsigned int c)
{
	struct resource res = { .start = ops->a,
				.end = ops->a + ops->n - 1,
				.name = "mine",
				.flags = ops->flags };
	void *p;

	switch (c) {
	case REQUEST:
		if (!ops->req(ops->a, ops->n, "again"))
			return -EBUSY;
		plain = true;
		return 0;
	case DEVM_REQUEST:
		return ops->devm_req(&tdev, ops->a, ops->n, "again") ? 0
								     : -EBUSY;
	case RELEASE:
		ops->rel(ops->a, ops->n);
		plain = false;
		return 0;
	case DEVM_RELEASE:
		ops->devm_rel(&tdev, ops->a, ops->n);
		return 0;
	case RELEASE_ALL:
		return devres_release_all(&tdev);
	case IOREMAP_RES:
	case IOREMAP_WC:
		p = c == IOREMAP_RES ? devm_ioremap_resource(&tdev, &res)
				     : devm_ioremap_resource_wc(&tdev, &res);
		return IS_ERR(p) ? (int)PTR_ERR(p) : 0;
	default:
		fail();
	}
	return 0;
}

/*
 * The other device's region, if the cell did not take it, is still
 * claimed and its node still there; then everything goes, and the range
 * must be free: nothing of the cell is left in the tree.
 */
static void undo(unsigned int s, const struct states_cell *want)
{
	struct resource *r;

	if (io_states_theirs_kept(s, want))
		assert_null(ops->req(ops->a, ops->n, "probe"));
	io_states_release();
	if (plain)
		ops->rel(ops->a, ops->n);
	r = ops->req(ops->a, ops->n, "probe");
	assert_non_null(r);
	ops->rel(ops->a, ops->n);
}

static int cell_setup(void **state)
{
	return io_states_window_setup(state, WIN, WIN_SIZE);
}

/* A cell of each space: the space's calls, then the common fixture. */
static int mem_setup(void **state)
{
	ops = &spaces[MEM];
	return cell_setup(state);
}

static int io_setup(void **state)
{
	ops = &spaces[IO];
	return cell_setup(state);
}

static int cell_teardown(void **state)
{
	return io_states_window_teardown(state, WIN, WIN_SIZE);
}

static const struct states_table space_states[NR_SPACES] = {
	[MEM] = STATES_TABLE_LEFT(table[MEM], state_name, call_name[MEM], reach,
				  make, &tdev, undo, mem_setup, cell_teardown),
	[IO] = STATES_TABLE_LEFT(table[IO], state_name, call_name[IO], reach,
				 make, &tdev, undo, io_setup, cell_teardown),
};

int main(void)
{
	return states_main("io-region-states", space_states, NR_SPACES);
}
