// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of give-back calls on a mapping of device memory and on a
 * busy region, made at once from two threads, many rounds
 * (DEVRES_PAIRS_ROUNDS), in each state the acquisition can be held in:
 * made managed, made plain, given back (the address or range stale). The
 * mapping's calls: iounmap(), devm_iounmap(), the device's release
 * (devres_release_all()); the region's: release_mem_region(),
 * devm_release_mem_region(), request_mem_region() of the range by
 * another owner (1 when granted), the device's release. Each pair must
 * end as one of its two serial orders does (tests/pairs.h): the same
 * returns and WARNs, the acquisition given back once, the same left
 * after it (what the release then finds, whether the range can be
 * claimed again), or in the third outcome src/base/disown.c documents
 * (the plain call gives back what the release or the managed call had
 * taken off the device but not yet run). The ledger is back at its
 * baseline after each state (no mapping, window pin or claim left).
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
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"
#include "io/iotest.h"

#define BASE 0x7a000000ULL
#define SIZE 4096

#ifdef T_TSAN
#define ROUNDS 40
#else
#define ROUNDS 100
#endif

enum state {
	MANAGED,
	PLAIN,
	GONE,
	NR_STATES
};
static const char *const state_name[NR_STATES] = { "managed", "plain",
						   "given back" };

/* Mappings. */

enum map_call {
	IOUNMAP,
	DEVM_IOUNMAP,
	MAP_RELEASE,
	NR_MAP_CALLS
};
static const char *const map_calls[NR_MAP_CALLS] = { "iounmap", "devm_iounmap",
						     "devres_release_all" };

static void *addr;
static unsigned int map_state;

static void map_reach(unsigned int s)
{
	map_state = s;
	addr = s == MANAGED ? devm_ioremap(&tdev, BASE, SIZE)
			    : ioremap(BASE, SIZE);
	assert_non_null(addr);
	if (s == GONE)
		iounmap(addr);
}

static int map_call(unsigned int c)
{
	switch (c) {
	case IOUNMAP:
		iounmap(addr);
		return 0;
	case DEVM_IOUNMAP:
		devm_iounmap(&tdev, addr);
		return 0;
	case MAP_RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * What the release then finds, and the WARNs of it and of the iounmap()
 * a plain mapping is given back with (one if a call unmapped it).
 */
static void map_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	o->after[0] = devres_release_all(&tdev);
	if (map_state == PLAIN)
		iounmap(addr);
	o->after[1] = devres_warn_count() - w0;
}

static bool map_also(unsigned int s, unsigned int a, unsigned int b,
		     const struct pairs_outcome *got,
		     const struct pairs_outcome *ser)
{
	return s == MANAGED &&
	       pairs_taken(a, b, got, ser, IOUNMAP, DEVM_IOUNMAP, MAP_RELEASE);
}

/* Regions. */

enum region_call {
	RELEASE_REGION,
	DEVM_RELEASE_REGION,
	REQUEST_OTHER,
	REGION_RELEASE,
	NR_REGION_CALLS
};
static const char *const region_calls[NR_REGION_CALLS] = {
	"release_mem_region",
	"devm_release_mem_region",
	"request_mem_region(other)",
	"devres_release_all",
};

static struct resource *other_claim;

static void region_reach(unsigned int s)
{
	other_claim = NULL;
	assert_non_null(s == MANAGED ? devm_request_mem_region(&tdev, BASE,
							       SIZE, "pairs")
				     : request_mem_region(BASE, SIZE, "pairs"));
	if (s == GONE)
		release_mem_region(BASE, SIZE);
}

static int region_call(unsigned int c)
{
	struct resource *r;

	switch (c) {
	case RELEASE_REGION:
		release_mem_region(BASE, SIZE);
		return 0;
	case DEVM_RELEASE_REGION:
		devm_release_mem_region(&tdev, BASE, SIZE);
		return 0;
	case REQUEST_OTHER:
		r = request_mem_region(BASE, SIZE, "other");
		if (r)
			__atomic_store_n(&other_claim, r, __ATOMIC_RELEASE);
		return r != NULL;
	case REGION_RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * What the release then finds, whether the other owner holds the range,
 * whether it can be claimed once all is given back, and the WARNs.
 */
static void region_undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();
	struct resource *r;

	o->after[0] = devres_release_all(&tdev);
	o->after[1] = other_claim != NULL;
	/* The test's plain claim (PLAIN), or the other's: one release each. */
	release_mem_region(BASE, SIZE);
	r = request_mem_region(BASE, SIZE, "again");
	o->after[2] = r != NULL;
	if (r)
		release_mem_region(BASE, SIZE);
	o->after[3] = devres_warn_count() - w0;
}

static bool region_also(unsigned int s, unsigned int a, unsigned int b,
			const struct pairs_outcome *got,
			const struct pairs_outcome *ser)
{
	return s == MANAGED && pairs_taken(a, b, got, ser, RELEASE_REGION,
					   DEVM_RELEASE_REGION, REGION_RELEASE);
}

static struct io_window win;

static int window_setup(void **state)
{
	return io_window_setup(state, &win, BASE, SIZE, "pairs");
}

static int window_teardown(void **state)
{
	return io_window_teardown(state, &win, BASE, SIZE);
}

PAIRS_TEST(map_pairs, ROUNDS, PAIRS_NAMES(state_name, map_calls),
	   .reach = map_reach, .call = map_call, .undo = map_undo,
	   .also = map_also)

PAIRS_TEST(region_pairs, ROUNDS, PAIRS_NAMES(state_name, region_calls),
	   .reach = region_reach, .call = region_call, .undo = region_undo,
	   .also = region_also)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(map_pairs, window_setup,
						window_teardown),
		cmocka_unit_test_setup_teardown(region_pairs, window_setup,
						window_teardown),
	};

	return pairs_group("io-pairs", tests, sizeof(tests) / sizeof(tests[0]));
}
