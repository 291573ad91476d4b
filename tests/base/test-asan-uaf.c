// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * AddressSanitizer still sees a use after free of managed memory, although
 * release builds carve small managed memory from per-device blocks and
 * keep node chunks in a per-thread cache: ASan builds do neither, and
 * poison what devm_kfree() leaves in place; nor a read past the end of
 * managed pages, although ASan builds carve them from batches, next to
 * each other. Each case runs in a child,
 * which must die with ASan's report. Without ASan there is nothing to
 * see: the test says so and is skipped (exit 77), never passed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

#ifdef T_ASAN
/*
 * Each case's child dies with ASan's report, and the report's stacks,
 * symbolized, were nine tenths of the test's CPU: 6.6 s of it, and
 * 156 s of wall time at load 17, past the 120 s timeout; with
 * symbolize=0, 0.6 s and 15 s. A child's report is read only for the
 * kind of error it names, which does not need symbols: the addresses
 * stay. ASAN_OPTIONS=symbolize=1 gives them back.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "symbolize=0";
}
#endif

static void release_nothing(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

enum uaf {
	UAF_KFREE,	 /* devm_kfree(), then a read */
	UAF_RELEASE_ALL, /* devres_release_all(), then a read */
	UAF_DEVRES_FREE, /* devres_free() of a devres_alloc() node */
	UAF_NAMED,	 /* a named resource, after release_all */
	UAF_FREE_PAGES,	 /* devm_free_pages(), then a read */
	UAF_PAGES_ALL,	 /* managed pages, after release_all */
	PAGES_PAST,	 /* a read past the end, the next block in use */
};

static volatile char sink;

static __attribute__((unused)) void child(enum uaf how, size_t size)
{
	/* The child's own: the library refuses it its parent's devices. */
	static struct device own;
	struct device *dev = &own;
	volatile char *p;

	if (init_dev(dev, "uaf"))
		_exit(3);

	switch (how) {
	case UAF_KFREE:
		p = devm_kmalloc(dev, size, GFP_KERNEL);
		devm_kfree(dev, (void *)p);
		break;
	case UAF_RELEASE_ALL:
		p = devm_kmalloc(dev, size, GFP_KERNEL);
		devres_release_all(dev);
		break;
	case UAF_DEVRES_FREE:
		p = devres_alloc(release_nothing, size, GFP_KERNEL);
		devres_free((void *)p);
		break;
	case UAF_NAMED:
		p = devres_alloc(release_nothing, size, GFP_KERNEL);
		devres_add(dev, (void *)p);
		devres_release_all(dev);
		break;
	case PAGES_PAST:
		p = (volatile char *)devm_get_free_pages(dev, GFP_KERNEL,
							 size > 1000);
		/* Carved after p: without a guard page, its first byte. */
		if (!devm_get_free_pages(dev, GFP_KERNEL, size > 1000))
			_exit(4);
		sink = p[(size_t)sysconf(_SC_PAGESIZE) << (size > 1000)];
		_exit(0); /* not reached under ASan */
	default:
		/* Released pages are kept for reuse: poisoned meanwhile. */
		p = (volatile char *)devm_get_free_pages(dev, GFP_KERNEL,
							 size > 1000);
		if (how == UAF_FREE_PAGES)
			devm_free_pages(dev, (unsigned long)p);
		else
			devres_release_all(dev);
	}
	sink = p[size / 2];
	_exit(0); /* not reached under ASan */
}

#ifdef T_ASAN
struct uaf_case {
	enum uaf how;
	size_t size;
};

static void run_case(void *arg)
{
	const struct uaf_case *c = arg;

	child(c->how, c->size);
}

/*
 * Runs one case in a child; returns whether ASan reported it. A node
 * devm_kfree() left in place is poisoned: use-after-poison.
 */
static bool caught(enum uaf how, size_t size)
{
	struct uaf_case c = { how, size };

	/*
	 * A node in a block carved with a guard page after it may be
	 * reported as an overflow into the guard instead.
	 */
	return asan_reports(run_case, &c, "heap-use-after-free",
			    "use-after-poison", "heap-buffer-overflow", NULL);
}
#endif

static void test_use_after_free_is_seen(void **state)
{
	static const size_t sizes[] = { 8, 64, 200, 4000 };
	(void)state;
#ifdef T_ASAN
	for (int how = UAF_KFREE; how <= UAF_PAGES_ALL; how++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			if (!caught(how, sizes[i]))
				fail_msg("case %d, %zu B: no ASan report", how,
					 sizes[i]);
#else
	(void)sizes;
#endif
}

/*
 * A read one byte past a block of managed pages (1 and 2 pages), while
 * the block allocated after it is in use: a poisoned guard page lies
 * between them (ASan's redzone reported it when each block was a chunk of
 * its own).
 */
static void test_read_past_pages_is_seen(void **state)
{
	(void)state;
#ifdef T_ASAN
	if (!caught(PAGES_PAST, 8))
		fail_msg("one page: no ASan report");
	if (!caught(PAGES_PAST, 4000))
		fail_msg("two pages: no ASan report");
#endif
}

int main(void)
{
#ifndef T_ASAN
	puts("not an ASan build: nothing to see (skipped)");
	return 77;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_use_after_free_is_seen,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_read_past_pages_is_seen,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
