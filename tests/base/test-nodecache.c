// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The per-thread cache of node chunks (src/base/nodecache.c): a chunk
 * comes back zeroed when asked, serves any size of its class, holds what
 * a node grown in place needs, stays within its cap, and goes back to the
 * heap when its thread exits (the memcheck stage sees a leak otherwise).
 * ASan builds cache nothing, so that ASan sees a use after free.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

#ifdef T_ASAN
static const bool cached = false;
#else
static const bool cached = true;
#endif

static int released;

static void count_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	released++;
}

static bool all_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* A chunk given back dirty is zeroed for the next devres_alloc(). */
static void test_reuse_is_zeroed(void **state)
{
	(void)state;
	for (size_t size = 0; size <= 248; size += 8) {
		unsigned char *p = devres_alloc(count_release, size, 0);
		unsigned char *q;

		assert_non_null(p);
		memset(p, 0xa5, size);
		devres_free(p);
		q = devres_alloc(count_release, size, 0);
		assert_non_null(q);
		assert_true(all_zero(q, size));
		/* Cached: the same chunk; under ASan: never at once. */
		if (cached)
			assert_ptr_equal(p, q);
		else
			assert_ptr_not_equal(p, q);
		devres_free(q);
	}
}

/*
 * A chunk serves every size of its class: filled to the brim, which the
 * memcheck stage would report if the chunk were short.
 */
static void test_class_serves_its_sizes(void **state)
{
	struct device *dev = *state;

	(void)dev;
	for (size_t size = 1; size <= 248; size++) {
		unsigned char *p = devres_alloc(count_release, size, 0);

		assert_non_null(p);
		memset(p, 0x5a, size);
		devres_add(dev, p);
	}
	released = 0;
	devres_release_all(dev);
	assert_int_equal(released, 248);
	/* Now every size again, each from a chunk another size left. */
	for (size_t size = 248; size >= 1; size--) {
		unsigned char *p = devres_alloc(count_release, size, 0);

		assert_non_null(p);
		assert_true(all_zero(p, size));
		memset(p, 0x5a, size);
		devres_add(dev, p);
	}
	released = 0;
	devres_release_all(dev);
	assert_int_equal(released, 248);
}

/*
 * A heap node grown in place stays within the room its chunk's class
 * gives, so the chunk, filed by its new size, holds that class's bytes.
 */
static void test_grown_in_place_then_reused(void **state)
{
	struct device *dev = *state;

	for (size_t len = 1; len < 200; len += 7) {
		char src[256];
		char *s, *r;
		unsigned char *p;
		size_t room;

		memset(src, 'x', len);
		src[len] = '\0';
		s = devm_kstrdup(dev, src, 0);
		assert_non_null(s);
		room = malloc_usable_size((char *)s - 16) - 16;
		/* Grow as far as it goes in place; fill it. */
		for (size_t want = len + 1; want <= room; want++) {
			r = devm_krealloc(dev, s, want, 0);
			assert_non_null(r);
			if (r != s) {
				s = r;
				break;
			}
			memset(s, 'y', want);
		}
		devm_kfree(dev, s);
		/* Whatever chunk comes next, every byte asked is ours. */
		for (size_t size = 1; size <= 248; size += 13) {
			p = devres_alloc(count_release, size, 0);
			assert_non_null(p);
			memset(p, 0x11, size);
			devres_free(p);
		}
	}
}

/* The cache keeps at most its cap: beyond it, chunks go back to the heap. */
static void test_cache_is_bounded(void **state)
{
	struct device *dev = *state;
	const int n = 300000; /* 64-byte chunks: 19 MB, over the 16 MiB cap */
	size_t before = mallinfo2().uordblks, after;

	for (int i = 0; i < n; i++) {
		void *p = devres_alloc(count_release, 40, 0);

		assert_non_null(p);
		devres_add(dev, p);
	}
	released = 0;
	devres_release_all(dev);
	assert_int_equal(released, n);
	after = mallinfo2().uordblks;
	assert_true(after < before + ((size_t)17 << 20));
}

#define THREAD_NODES 5000

static void *churn(void *arg)
{
	struct device *dev = arg;

	for (int i = 0; i < THREAD_NODES; i++) {
		void *p = devres_alloc(count_release, (size_t)i % 200, 0);

		if (!p)
			return NULL;
		devres_free(p);
	}
	for (int i = 0; i < THREAD_NODES; i++)
		if (devm_add_action(dev, (void (*)(void *))free, NULL))
			return NULL;
	devres_release_all(dev);
	return arg;
}

/*
 * Threads that cache chunks and exit: their caches go back to the heap
 * (under valgrind, a chunk left behind is a definite leak).
 */
static void test_thread_exit_drains(void **state)
{
	struct device *dev = *state;

	for (int t = 0; t < 4; t++) {
		pthread_t th;
		void *ret = NULL;

		assert_int_equal(pthread_create(&th, NULL, churn, dev), 0);
		assert_int_equal(pthread_join(th, &ret), 0);
		assert_ptr_equal(ret, dev);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reuse_is_zeroed, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_class_serves_its_sizes,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_grown_in_place_then_reused,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_cache_is_bounded,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_thread_exit_drains,
						dev_setup, dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
