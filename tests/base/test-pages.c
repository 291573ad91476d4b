// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * Managed pages given back and taken again (src/base/pages.c keeps released
 * blocks for reuse): a block taken again is page-aligned, whole, zeroed
 * when asked although it was written before, and never given to two
 * holders at once, whichever thread releases it; and a child of fork()
 * takes and gives pages while a thread of its parent was doing so.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

#define ORDERS 5 /* one past the orders that are kept */

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static void expect_zero(unsigned long addr, size_t len)
{
	const unsigned char *p = (const unsigned char *)addr;

	for (size_t i = 0; i < len; i++)
		if (p[i])
			fail_msg("byte %zu of %zu is %#x", i, len, p[i]);
}

static void test_reused_block_is_zeroed(void **state)
{
	struct device *dev = *state;

	for (unsigned int ord = 0; ord < ORDERS; ord++) {
		size_t len = page() << ord;
		unsigned long a, z;

		a = devm_get_free_pages(dev, GFP_KERNEL, ord);
		assert_int_not_equal(a, 0);
		memset((void *)a, 0xa5, len);
		devm_free_pages(dev, a);
		z = devm_get_free_pages(dev, GFP_KERNEL | __GFP_ZERO, ord);
		assert_int_not_equal(z, 0);
		assert_int_equal(z % page(), 0);
#ifndef T_ASAN
		/* Kept and taken again at once, newest first... */
		if (ord < ORDERS - 1)
			assert_int_equal(z, a);
#endif
		/* ...and zeroed over its whole length all the same. */
		expect_zero(z, len);
		memset((void *)z, 0x5a, len);
		/* Released by release_all too, and zeroed when taken again. */
		assert_int_equal(devres_release_all(dev), 1);
		z = devm_get_free_pages(dev, GFP_KERNEL | __GFP_ZERO, ord);
		assert_int_not_equal(z, 0);
		expect_zero(z, len);
		assert_int_equal(devres_release_all(dev), 1);
	}
}

/*
 * Blocks released and taken again many times over, each written whole
 * before it goes: a block asked for zeroed is zero, also once blocks come
 * back past the ones that ASan builds hold back (512 pages), which are
 * zeroed when released rather than when taken.
 */
static void test_blocks_reused_many_times_are_zeroed(void **state)
{
	struct device *dev = *state;

	for (unsigned int ord = 0; ord < 2; ord++) {
		size_t len = page() << ord;

		for (int i = 0; i < 3000; i++) {
			unsigned long a = devm_get_free_pages(
				dev, GFP_KERNEL | __GFP_ZERO, ord);

			assert_int_not_equal(a, 0);
			expect_zero(a, len);
			memset((void *)a, 0xa5, len);
			if (i & 1)
				devm_free_pages(dev, a);
			else
				assert_int_equal(devres_release_all(dev), 1);
		}
	}
}

/*
 * Threads that each take a block, fill it with their own mark, check it
 * and give it back; half of them through a reaper's release_all. A block
 * given to two holders at once shows as a mark changed under its holder.
 */
enum {
	THREADS = 4,
	ROUNDS = 2000
};

struct user {
	pthread_t t;
	struct device dev;
	unsigned char mark;
	long bad;
};

static void *use_pages(void *arg)
{
	struct user *u = arg;

	for (int i = 0; i < ROUNDS; i++) {
		unsigned int ord = (unsigned int)i % 3;
		size_t len = page() << ord;
		unsigned char *p = (unsigned char *)devm_get_free_pages(
			&u->dev, GFP_KERNEL, ord);

		if (!p) {
			u->bad++;
			continue;
		}
		memset(p, u->mark, len);
		sched_yield();
		for (size_t j = 0; j < len; j += 64)
			u->bad += p[j] != u->mark;
		if (u->mark & 1)
			devm_free_pages(&u->dev, (unsigned long)p);
		else
			devres_release_all(&u->dev);
	}
	return NULL;
}

static void test_threads_share_the_kept_blocks(void **state)
{
	struct user u[THREADS];

	(void)state;
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(init_dev(&u[i].dev, "pages"), 0);
		u[i].mark = (unsigned char)(0x11 * (i + 1));
		u[i].bad = 0;
	}
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(
			pthread_create(&u[i].t, NULL, use_pages, &u[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(u[i].t, NULL), 0);
		assert_int_equal(u[i].bad, 0);
		assert_int_equal(devres_release_all(&u[i].dev), 0);
		put_device(&u[i].dev);
	}
}

/*
 * fork() while another thread takes and gives pages: the child finds the
 * kept blocks consistent and their lock free. A deadlock ends the child by
 * its alarm, which fails the test; a minute is far beyond what a loaded
 * machine takes for a few page allocations.
 */
static int churning;

static void *churn(void *arg)
{
	struct device *dev = arg;

	while (__atomic_load_n(&churning, __ATOMIC_ACQUIRE)) {
		unsigned long a = devm_get_free_pages(dev, GFP_KERNEL, 0);

		if (a)
			devm_free_pages(dev, a);
	}
	return NULL;
}

static void child_pages(void)
{
	static struct device own;
	int bad = 0;

	alarm(60);
	if (init_dev(&own, "child"))
		_exit(3);
	for (unsigned int ord = 0; ord < ORDERS; ord++) {
		unsigned long a =
			devm_get_free_pages(&own, GFP_KERNEL | __GFP_ZERO, ord);

		if (!a || a % page())
			_exit(4);
		for (size_t i = 0; i < page() << ord; i++)
			bad |= ((unsigned char *)a)[i];
		devm_free_pages(&own, a);
	}
	devres_release_all(&own);
	_exit(bad ? 5 : 0);
}

static void test_fork_while_pages_churn(void **state)
{
	struct device *dev = *state;
	pthread_t t;

	__atomic_store_n(&churning, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, churn, dev), 0);
	for (int i = 0; i < 20; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)
			child_pages();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	__atomic_store_n(&churning, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	devres_release_all(dev);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_reused_block_is_zeroed),
		T(test_blocks_reused_many_times_are_zeroed),
		T(test_threads_share_the_kept_blocks),
		T(test_fork_while_pages_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
