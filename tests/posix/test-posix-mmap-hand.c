// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * munmap(2), mremap(2) and mmap(2) with MAP_FIXED made by hand over
 * managed mappings, wholly or in part, and over what is not managed.
 *
 * Each case lays out a reservation of NPAGES plain read-write pages with
 * two managed mappings in it: A over pages 1-4 and B over pages 6-9.
 * It makes one call by hand and checks the WARNs it printed (one for each
 * managed mapping the call touched, naming the device, the call, the
 * managed call and devm_munmap()) and the nodes left on the device. Then
 * it plays the next owner of the address range: every page that is not
 * still managed is mapped (a hole is filled, as malloc() would) and
 * written; the device's release follows. Every written page must still be
 * mapped and hold what was written, every page still managed must be gone,
 * and the ledger must be back at its baseline (the fixture's teardown).
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
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

#include "mmap-pages.h"

static char *moved; /* where a case moved pages to, or NULL */
static size_t moved_len;

static void unmap_a(void)
{
	assert_int_equal(munmap(at(1), 4 * pg), 0);
}

static void unmap_head(void)
{
	assert_int_equal(munmap(at(1), pg), 0);
}

static void unmap_tail(void)
{
	assert_int_equal(munmap(at(4), pg), 0);
}

static void unmap_middle(void)
{
	assert_int_equal(munmap(at(2), 2 * pg), 0);
}

/* Less than a page past A's start: the kernel unmaps the whole page. */
static void unmap_short(void)
{
	assert_int_equal(munmap(at(1), 1), 0);
}

static void unmap_superset(void)
{
	assert_int_equal(munmap(at(0), NPAGES * pg), 0);
}

static void unmap_gap(void)
{
	assert_int_equal(munmap(at(5), pg), 0);
}

/* The kernel refuses an unaligned start and unmaps nothing. */
static void unmap_unaligned(void)
{
	assert_int_equal(munmap(at(1) + 1, pg), -1);
	assert_int_equal(errno, EINVAL);
}

/* Page 0 of the address space: nothing managed there. */
static void unmap_null(void)
{
	assert_int_equal(munmap(NULL, pg), 0);
}

/* A length that wraps: the kernel refuses it, nothing is unmapped. */
static __attribute__((unused)) void unmap_wrapping(void)
{
	assert_int_equal(munmap(at(1), SIZE_MAX), -1);
	assert_int_equal(errno, EINVAL);
}

static void fixed(int page, int n, int flags)
{
	void *p = mmap(at(page), (size_t)n * pg, RW, ANON | flags, -1, 0);

	assert_ptr_equal(p, at(page));
}

static void fixed_a(void)
{
	fixed(1, 4, MAP_FIXED);
}

static void fixed_part(void)
{
	fixed(3, 3, MAP_FIXED);
}

static void fixed_gap(void)
{
	fixed(5, 1, MAP_FIXED);
}

static void noreplace_a(void)
{
	void *p = mmap(at(1), 4 * pg, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0);

	assert_ptr_equal(p, MAP_FAILED);
	assert_int_equal(errno, EEXIST);
}

static void shrink_a(void)
{
	assert_ptr_equal(mremap(at(1), 4 * pg, 2 * pg, 0), at(1));
}

static void grow_a(void)
{
	/* Page 5 is emptied first, so that A grows where it is. */
	assert_int_equal(munmap(at(5), pg), 0);
	assert_ptr_equal(mremap(at(1), 4 * pg, 5 * pg, 0), at(1));
}

static void move_a(void)
{
	moved_len = 4 * pg;
	moved = mmap(NULL, moved_len, PROT_NONE, ANON, -1, 0);
	assert_ptr_not_equal(moved, MAP_FAILED);
	assert_ptr_equal(mremap(at(1), 4 * pg, 4 * pg,
				MREMAP_MAYMOVE | MREMAP_FIXED, moved),
			 moved);
}

/* Plain pages moved onto A: A is replaced. */
static void move_onto_a(void)
{
	char *p = mmap(NULL, 2 * pg, RW, ANON, -1, 0);

	assert_ptr_not_equal(p, MAP_FAILED);
	assert_ptr_equal(mremap(p, 2 * pg, 2 * pg,
				MREMAP_MAYMOVE | MREMAP_FIXED, at(2)),
			 at(2));
}

/* The same length, not moved: nothing changes. */
static void remap_same(void)
{
	assert_ptr_equal(mremap(at(1), 4 * pg, 4 * pg, 0), at(1));
}

struct hand_case {
	const char *name;
	void (*call)(void);
	int warns;
	const char *func;  /* the call the WARN names */
	unsigned int keep; /* still managed: bit 0 A, bit 1 B */
};

/* clang-format off */
static const struct hand_case cases[] = {
	{ "munmap whole", unmap_a, 1, "munmap", 2 },
	{ "munmap head", unmap_head, 1, "munmap", 2 },
	{ "munmap tail", unmap_tail, 1, "munmap", 2 },
	{ "munmap middle", unmap_middle, 1, "munmap", 2 },
	{ "munmap one byte", unmap_short, 1, "munmap", 2 },
	{ "munmap over both", unmap_superset, 2, "munmap", 0 },
	{ "munmap unmanaged", unmap_gap, 0, NULL, 3 },
	{ "munmap unaligned", unmap_unaligned, 0, NULL, 3 },
	{ "munmap NULL", unmap_null, 0, NULL, 3 },
/* TSan's own munmap() interceptor aborts on it before the call. */
#ifndef T_TSAN
	{ "munmap wrapping length", unmap_wrapping, 0, NULL, 3 },
#endif
	{ "MAP_FIXED whole", fixed_a, 1, "mmap", 2 },
	{ "MAP_FIXED across A's end", fixed_part, 1, "mmap", 2 },
	{ "MAP_FIXED unmanaged", fixed_gap, 0, NULL, 3 },
	{ "MAP_FIXED_NOREPLACE", noreplace_a, 0, NULL, 3 },
	{ "mremap shrink", shrink_a, 1, "mremap", 2 },
	{ "mremap grow", grow_a, 1, "mremap", 2 },
	{ "mremap move away", move_a, 1, "mremap", 2 },
	{ "mremap onto", move_onto_a, 1, "mremap", 2 },
	{ "mremap same size", remap_same, 0, NULL, 3 },
};
/* clang-format on */

static const struct hand_case *cur;

/* dev_setup() makes *state the device: the case is kept here. */
static int case_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

static void run_case(void **state)
{
	const struct hand_case *c = cur;

	(void)state;
	moved = NULL;
	pages_setup();

	start_capture();
	c->call();
	if (c->warns == 1) {
		expect_warn(c->func, "devm_mmap(): use devm_munmap()");
	} else if (c->warns == 0) {
		expect_no_warn();
	} else {
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(cap.n, c->warns);
		for (int i = 0; i < cap.n; i++)
			assert_non_null(strstr(cap.line[i], "use "
							    "devm_munmap()"));
	}
	pages_check_next_owner(c->keep);
	if (moved)
		assert_int_equal(munmap(moved, moved_len), 0);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tests[i] = (struct CMUnitTest){ cases[i].name, run_case,
						case_setup, dev_teardown,
						(void *)&cases[i] };
	return cmocka_run_group_tests_name("posix-mmap-hand", tests, NULL,
					   NULL);
}
