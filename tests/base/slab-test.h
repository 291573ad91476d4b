/* SPDX-License-Identifier: MIT */
/*
 * What the slab tests share: each is one cmocka test on testlib's test
 * device, skipped (exit 77, never passed) in an AddressSanitizer build,
 * where every node is a heap chunk of its own and the slab has no blocks
 * to count, cache or reuse; and the page-fault count they read to tell a
 * block reused from one mapped again.
 */
#ifndef DEVRES_TESTS_SLAB_TEST_H
#define DEVRES_TESTS_SLAB_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <sys/resource.h>
#include <cmocka.h>
#include "testlib.h"

/* The minor page faults of this process so far. */
static inline long slab_minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static inline int slab_test_run_named(const char *name, CMUnitTestFunction f)
{
	const struct CMUnitTest tests[] = {
		{ .name = name,
		  .test_func = f,
		  .setup_func = dev_setup,
		  .teardown_func = dev_teardown },
	};

#ifdef T_ASAN
	(void)tests;
	puts("an ASan build has no blocks (skipped)");
	return 77;
#else
	return _cmocka_run_group_tests("tests", tests, 1, NULL, NULL);
#endif
}

/*
 * What main() returns: test function @f run on tdev (dev_setup() and
 * dev_teardown()) under its own name, or 77 in an ASan build.
 */
#define slab_test_run(f) slab_test_run_named(#f, f)

#endif /* DEVRES_TESTS_SLAB_TEST_H */
