/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the tables of calls that replace or unmap a managed
 * mapping by hand: a reservation of NPAGES pages with two managed
 * mappings in it (pages 1-4 and 6-9, devm_mmap() on the test device),
 * then, after the call, the next owner's check: every page not still
 * managed is mapped and written by another owner, and the device's
 * release unmaps only the managed pages, touching none of the others.
 */
#ifndef TESTS_POSIX_MMAP_PAGES_H
#define TESTS_POSIX_MMAP_PAGES_H

#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

#define NPAGES 12
#define RW (PROT_READ | PROT_WRITE)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

static size_t pg;
static char *res; /* the reservation */

static char *at(int page)
{
	return res + (size_t)page * pg;
}

/* 1 when @p's page is mapped. */
static int mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)p, pg, &v) == 0;
}

static void devm_at(int page, int n)
{
	void *p = devm_mmap(&tdev, at(page), (size_t)n * pg, RW,
			    ANON | MAP_FIXED, -1, 0);

	assert_false(IS_ERR(p));
	assert_ptr_equal(p, at(page));
}

/* Whether @page is in a mapping still managed (@keep: bit 0, bit 1). */
static int in_managed(int page, unsigned int keep)
{
	return ((keep & 1) && page >= 1 && page <= 4) ||
	       ((keep & 2) && page >= 6 && page <= 9);
}

static int nodes(void)
{
	struct devres_stats st;

	devres_get_stats(&tdev, &st);
	return (int)st.allocs;
}

/* The reservation and its two managed mappings. */
static void pages_setup(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	res = mmap(NULL, NPAGES * pg, RW, ANON, -1, 0);
	assert_ptr_not_equal(res, MAP_FAILED);
	devm_at(1, 4);
	devm_at(6, 4);
	assert_int_equal(nodes(), 2);
}

/*
 * After the call: @keep's mappings still managed, the rest the next
 * owner's; the device's release unmaps the first and leaves the others
 * mapped and as written, with no WARN. The reservation is unmapped.
 */
static void pages_check_next_owner(unsigned int keep)
{
	assert_int_equal(nodes(), !!(keep & 1) + !!(keep & 2));
	for (int i = 0; i < NPAGES; i++) {
		if (in_managed(i, keep))
			continue;
		if (!mapped(at(i)))
			assert_ptr_equal(mmap(at(i), pg, RW,
					      ANON | MAP_FIXED_NOREPLACE, -1,
					      0),
					 at(i));
		memset(at(i), 0x40 + i, pg);
	}
	start_capture();
	devres_release_all(&tdev);
	expect_no_warn();
	for (int i = 0; i < NPAGES; i++) {
		if (in_managed(i, keep)) {
			assert_false(mapped(at(i)));
			continue;
		}
		assert_true(mapped(at(i)));
		assert_int_equal(at(i)[0], 0x40 + i);
		assert_int_equal(at(i)[pg - 1], 0x40 + i);
	}
	assert_int_equal(munmap(res, NPAGES * pg), 0);
}

#endif /* TESTS_POSIX_MMAP_PAGES_H */
