// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * The library's own blocks (src/base/blocks.c, a device's index table):
 * a block is zeroed over the whole length asked for, although the block it
 * reuses was written before. ASan builds keep released blocks for reuse:
 * there, a block freed is the one given again for its size class, only
 * the length asked for is usable (the rest of it stays poisoned), and a
 * read of a block while it is kept is reported by ASan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "testlib.h"
#include "../src/base/blocks.h"

static void expect_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			fail_msg("byte %zu of %zu is %#x", i, len, p[i]);
}

static void test_zeroed_after_reuse(void **state)
{
	static const size_t lens[] = { 64, 100, 2080, 4128, 65568, 1 << 20 };

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (int round = 0; round < 3; round++) {
			unsigned char *p = devres__block_zalloc(lens[i]);

			assert_non_null(p);
			expect_zero(p, lens[i]);
			memset(p, 0xa5, lens[i]);
			devres__block_free(p);
		}
	}
	devres__block_free(NULL);
}

#ifdef T_ASAN
#include <sanitizer/asan_interface.h>

static void test_kept_and_given_again(void **state)
{
	unsigned char *p, *q;

	(void)state;
	p = devres__block_zalloc(4128);
	assert_non_null(p);
	assert_false(__asan_address_is_poisoned(p + 4127));
	assert_true(__asan_address_is_poisoned(p + 4128));
	devres__block_free(p);
	assert_true(__asan_address_is_poisoned(p));
	assert_true(__asan_address_is_poisoned(p + 4127));
	/* The same class (4 KiB to 8 KiB), a smaller length. */
	q = devres__block_zalloc(4100);
	assert_ptr_equal(q, p);
	assert_false(__asan_address_is_poisoned(q + 4099));
	assert_true(__asan_address_is_poisoned(q + 4100));
	devres__block_free(q);
}

static volatile unsigned char sink;

static void read_kept_block(void *arg)
{
	unsigned char *p = devres__block_zalloc(70000);

	(void)arg;
	if (!p)
		_exit(3);
	devres__block_free(p);
	sink = p[35000];
}

static void test_read_while_kept_is_reported(void **state)
{
	(void)state;
	assert_true(
		asan_reports(read_kept_block, NULL, "use-after-poison", NULL));
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zeroed_after_reuse),
#ifdef T_ASAN
		cmocka_unit_test(test_kept_and_given_again),
		cmocka_unit_test(test_read_while_kept_is_reported),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
