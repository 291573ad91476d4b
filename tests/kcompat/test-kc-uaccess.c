// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * <linux/uaccess.h> as the kernel answers a bad user pointer (NULL, the
 * first page, an ERR_PTR()): copy_to_user() and copy_from_user() leave
 * every byte and copy none (copy_from_user() zeroes its destination, as
 * the kernel zeroes what it could not copy), get_user() gives -EFAULT and
 * a zero value, put_user() -EFAULT and writes nothing, all without a WARN;
 * a bad kernel-side pointer is the driver's bug: one WARN, nothing copied.
 * Good pointers copy, of each width; a zero-byte copy touches neither
 * pointer. test-kc-hostile-args attacks the two copies with the same
 * values from the header's declarations; get_user() and put_user() are
 * macros, and only here.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <linux/err.h>
#include <linux/uaccess.h>
#include "testlib.h"

static void *const bad[] = { NULL, (void *)-EFAULT, (void *)16, (void *)4095 };
#define NBAD (sizeof(bad) / sizeof(bad[0]))

static void test_bad_user_pointer_is_a_short_copy(void **state)
{
	char buf[8];
	int warns = devres_warn_count();

	(void)state;
	for (size_t i = 0; i < NBAD; i++) {
		memset(buf, 'x', sizeof(buf));
		assert_int_equal(copy_to_user(bad[i], buf, sizeof(buf)),
				 sizeof(buf));
		assert_int_equal(copy_from_user(buf, bad[i], sizeof(buf)),
				 sizeof(buf));
		for (size_t j = 0; j < sizeof(buf); j++)
			assert_int_equal(buf[j], 0);
	}
	assert_int_equal(devres_warn_count() - warns, 0);
}

static void test_bad_user_pointer_get_put(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	for (size_t i = 0; i < NBAD; i++) {
		uint8_t v8 = 0xaa;
		uint16_t v16 = 0xaaaa;
		uint32_t v32 = 0xaaaaaaaa;
		uint64_t v64 = 0xaaaaaaaaaaaaaaaaull;

		assert_int_equal(get_user(v8, (uint8_t __user *)bad[i]),
				 -EFAULT);
		assert_int_equal(get_user(v16, (uint16_t __user *)bad[i]),
				 -EFAULT);
		assert_int_equal(get_user(v32, (uint32_t __user *)bad[i]),
				 -EFAULT);
		assert_int_equal(get_user(v64, (uint64_t __user *)bad[i]),
				 -EFAULT);
		assert_int_equal(v8, 0);
		assert_int_equal(v16, 0);
		assert_int_equal(v32, 0);
		assert_true(v64 == 0);
		assert_int_equal(put_user(v32, (uint32_t __user *)bad[i]),
				 -EFAULT);
		assert_int_equal(put_user(v64, (uint64_t __user *)bad[i]),
				 -EFAULT);
	}
	assert_int_equal(devres_warn_count() - warns, 0);
}

static void test_good_pointers_copy(void **state)
{
	char src[16] = "abcdefghijklmno", dst[16] = { 0 };
	uint64_t w64 = 0x0102030405060708ull, r64 = 0;
	int16_t i16 = -2, r16 = 0;
	uint32_t *p;
	uint32_t words[2] = { 1, 2 };
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(copy_to_user(dst, src, sizeof(src)), 0);
	assert_memory_equal(dst, src, sizeof(src));
	memset(dst, 0, sizeof(dst));
	assert_int_equal(copy_from_user(dst, src, 5), 0);
	assert_memory_equal(dst, "abcde\0", 6);
	assert_int_equal(get_user(r64, &w64), 0);
	assert_true(r64 == w64);
	assert_int_equal(put_user(i16, &r16), 0);
	assert_int_equal(r16, -2);
	/* Each argument is evaluated once, as the kernel's macros do. */
	p = words;
	assert_int_equal(put_user(7, p++), 0);
	assert_ptr_equal(p, &words[1]);
	assert_int_equal(get_user(r64, p++), 0);
	assert_ptr_equal(p, &words[2]);
	assert_true(r64 == 2);
	assert_int_equal(words[0], 7);
	assert_int_equal(devres_warn_count() - warns, 0);
}

static void test_zero_bytes_touch_nothing(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	for (size_t i = 0; i < NBAD; i++) {
		assert_int_equal(copy_to_user(bad[i], bad[i], 0), 0);
		assert_int_equal(copy_from_user(bad[i], bad[i], 0), 0);
	}
	assert_int_equal(devres_warn_count() - warns, 0);
}

static void test_bad_kernel_pointer_warns(void **state)
{
	char buf[8] = "1234567";

	(void)state;
	for (size_t i = 0; i < NBAD; i++) {
		int warns = devres_warn_count();

		start_capture();
		assert_int_equal(copy_to_user(buf, bad[i], sizeof(buf)),
				 sizeof(buf));
		assert_int_equal(copy_from_user(bad[i], buf, sizeof(buf)),
				 sizeof(buf));
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(devres_warn_count() - warns, 2);
		assert_int_equal(count_prefix("WARNING: "), 2);
		assert_non_null(strstr(cap.line[0], "copy_to_user"));
		assert_string_equal(buf, "1234567");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_user_pointer_is_a_short_copy),
		cmocka_unit_test(test_bad_user_pointer_get_put),
		cmocka_unit_test(test_good_pointers_copy),
		cmocka_unit_test(test_zero_bytes_touch_nothing),
		cmocka_unit_test(test_bad_kernel_pointer_warns),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
