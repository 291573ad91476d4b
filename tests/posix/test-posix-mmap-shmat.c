// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * shmat(2) with SHM_REMAP over managed mappings: a System V segment put
 * over the range, as mmap(2) with MAP_FIXED puts a new mapping there. The
 * library defines shmat() as it defines mmap(): a call that replaces any
 * page of a managed mapping WARNs once per mapping, at the call, naming
 * the device, shmat, the managed call and devm_munmap(), and takes the
 * node off the device. Before, the segment went over the mapping unseen,
 * the node stayed on the device, and its release found another object at
 * the address: a WARN then, at the wrong place, the mapping's other pages
 * left mapped for ever.
 *
 * Each case lays out a reservation of NPAGES plain read-write pages with
 * two managed mappings in it, A over pages 1-4 and B over pages 6-9, as
 * tests/posix/test-posix-mmap-hand.c does, and makes one shmat() by hand:
 * over all of A, across A's end, over both, over a page of neither, at an
 * address SHM_RND rounds down into A, with a segment shorter than a page
 * (the kernel maps the whole page); and the calls that replace nothing:
 * without SHM_REMAP, at an unaligned address without SHM_RND, with no
 * address, and of a segment that does not exist (each fails with
 * EINVAL). Then it plays the next owner of the range: every page that is
 * not still managed is mapped (the segment's pages are already) and
 * written; the device's release follows, with no WARN. Every written page
 * must still be mapped and hold what was written, every page still
 * managed must be gone, and the ledger must be back at its baseline (the
 * fixture's teardown).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
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
#include <sys/shm.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

#include "mmap-pages.h"

/*
 * shmat() of a new segment of @size bytes at @addr: the address it
 * returns, or NULL with errno. The segment is marked for removal at
 * once: it goes with its last detach (the reservation's munmap()).
 */
static void *attach(size_t size, const void *addr, int flags)
{
	int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	void *p;
	int err;

	assert_true(id >= 0);
	p = shmat(id, addr, flags);
	err = errno;
	assert_int_equal(shmctl(id, IPC_RMID, NULL), 0);
	errno = err;
	return p == (void *)-1 ? NULL : p;
}

static void remap(int page, int n)
{
	assert_ptr_equal(attach((size_t)n * pg, at(page), SHM_REMAP), at(page));
}

static void remap_a(void)
{
	remap(1, 4);
}

static void remap_across(void)
{
	remap(3, 3);
}

static void remap_both(void)
{
	remap(0, 10);
}

static void remap_gap(void)
{
	remap(5, 1);
}

/* SHM_RND: the address rounded down to SHMLBA, inside A. */
static void remap_rounded(void)
{
	assert_ptr_equal(attach(pg, at(2) + 100, SHM_REMAP | SHM_RND), at(2));
}

/* 100 bytes: the kernel attaches the whole page. */
static void remap_short(void)
{
	assert_ptr_equal(attach(100, at(4), SHM_REMAP), at(4));
}

static void refused(const void *addr, int flags)
{
	assert_null(attach(pg, addr, flags));
	assert_int_equal(errno, EINVAL);
}

/* Without SHM_REMAP the kernel refuses a mapped range. */
static void no_remap(void)
{
	refused(at(1), 0);
}

static void unaligned(void)
{
	refused(at(1) + 1, SHM_REMAP);
}

/* SHM_REMAP needs an address. */
static void no_address(void)
{
	refused(NULL, SHM_REMAP);
}

static void no_segment(void)
{
	assert_ptr_equal(shmat(-1, at(1), SHM_REMAP), (void *)-1);
	assert_int_equal(errno, EINVAL);
}

struct shm_case {
	const char *name;
	void (*call)(void);
	int warns;
	unsigned int keep; /* still managed: bit 0 A, bit 1 B */
};

/* clang-format off */
static const struct shm_case cases[] = {
	{ "SHM_REMAP whole", remap_a, 1, 2 },
	{ "SHM_REMAP across A's end", remap_across, 1, 2 },
	{ "SHM_REMAP over both", remap_both, 2, 0 },
	{ "SHM_REMAP unmanaged", remap_gap, 0, 3 },
	{ "SHM_REMAP|SHM_RND into A", remap_rounded, 1, 2 },
	{ "SHM_REMAP of less than a page", remap_short, 1, 2 },
	{ "without SHM_REMAP", no_remap, 0, 3 },
	{ "unaligned without SHM_RND", unaligned, 0, 3 },
	{ "SHM_REMAP without an address", no_address, 0, 3 },
	{ "SHM_REMAP of no segment", no_segment, 0, 3 },
};
/* clang-format on */

static const struct shm_case *cur;

/* dev_setup() makes *state the device: the case is kept here. */
static int case_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

static void run_case(void **state)
{
	const struct shm_case *c = cur;

	(void)state;
	pages_setup();

	start_capture();
	c->call();
	if (c->warns == 1) {
		expect_warn("shmat", "devm_mmap(): use devm_munmap()");
	} else if (c->warns == 0) {
		expect_no_warn();
	} else {
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(cap.n, c->warns);
		for (int i = 0; i < cap.n; i++) {
			assert_non_null(strstr(cap.line[i], ": shmat: shmat("));
			assert_non_null(strstr(cap.line[i], "use "
							    "devm_munmap()"));
		}
	}
	pages_check_next_owner(c->keep);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];
	int id = shmget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	size_t n = 0;

	/* A kernel without System V IPC (or a sandbox that denies it). */
	if (id < 0) {
		printf("SKIP: shmget: %s\n", strerror(errno));
		return 77;
	}
	(void)shmctl(id, IPC_RMID, NULL);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* valgrind places a segment itself when given no address. */
		if (cases[i].call == no_address && under_valgrind())
			continue;
		tests[n++] = (struct CMUnitTest){ cases[i].name, run_case,
						  case_setup, dev_teardown,
						  (void *)&cases[i] };
	}
	return _cmocka_run_group_tests("posix-mmap-shmat", tests, n, NULL,
				       NULL);
}
