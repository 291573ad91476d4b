// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Handles kept past their objects: a DMA pool's, a managed thread's and a
 * revocable's. The object is freed and a new object of the same kind is
 * made where it lived (the old one's slot is the first one free, and the
 * two handles differ in the generation alone), a hundred times over: every call with the old handle is refused with one
 * WARN and reads nothing freed (ASan), while the new object works; the
 * old handle is never equal to a new one (with identity by address it
 * was, after 64 pools, or at once for a thread's malloc'd handle). Then a
 * child of fork() uses the parent's handles: a live one is the parent's
 * (one WARN, nothing done), a stale one is stale there too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "testlib.h"

#define GENERATIONS 100

/*
 * Whether two handles name the same slot: they differ only in the
 * generation, bits 24 to 55 (the layout is in src/base/handle.c). White
 * box, so that the test shows the new object is where the old one was.
 */
static bool same_slot(const void *a, const void *b)
{
	return (((uintptr_t)a ^ (uintptr_t)b) & ~(0xffffffffull << 24)) == 0;
}

static void test_pool_stale(void **state)
{
	struct dma_pool *stale = dma_pool_create("old", &tdev, 64, 8, 0);
	dma_addr_t h;
	void *p;

	(void)state;
	assert_non_null(stale);
	dma_pool_destroy(stale);
	for (int i = 0; i < GENERATIONS; i++) {
		struct dma_pool *pool = dma_pool_create("new", &tdev, 64, 8, 0);

		assert_non_null(pool);
		assert_ptr_not_equal(pool, stale);
		assert_true(same_slot(pool, stale));
		start_capture();
		assert_null(dma_pool_alloc(stale, GFP_KERNEL, &h));
		expect_warn_on("(no device)", "dma_pool_alloc",
			       "was destroyed");
		p = dma_pool_alloc(pool, GFP_KERNEL, &h);
		assert_non_null(p);
		start_capture();
		dma_pool_free(stale, p, h);
		expect_warn_on("(no device)", "dma_pool_free", "was destroyed");
		start_capture();
		dma_pool_destroy(stale);
		expect_warn_on("(no device)", "dma_pool_destroy",
			       "destroyed pool");
		/* The new pool is untouched by any of it. */
		dma_pool_free(pool, p, h);
		start_capture();
		dma_pool_destroy(pool);
		expect_no_warn();
	}
}

static int until_stopped(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		(void)devres_thread_sleep(1000);
	return 0;
}

static void test_thread_stale(void **state)
{
	struct devres_thread *stale =
		devm_thread_run(&tdev, until_stopped, NULL, "old");

	(void)state;
	assert_false(IS_ERR_OR_NULL(stale));
	assert_int_equal(devm_thread_stop(&tdev, stale), 0);
	for (int i = 0; i < GENERATIONS; i++) {
		struct devres_thread *t =
			devm_thread_run(&tdev, until_stopped, NULL, "new");

		assert_false(IS_ERR_OR_NULL(t));
		assert_ptr_not_equal(t, stale);
		assert_true(same_slot(t, stale));
		start_capture();
		devres_thread_set_stop_timeout(stale, 5);
		expect_warn_on("(no device)", "devres_thread_set_stop_timeout",
			       "is not a managed thread");
		start_capture();
		assert_int_equal(devm_thread_stop(&tdev, stale), -EINVAL);
		expect_warn("devm_thread_stop", "is not managed by this "
						"device");
		start_capture();
		devres_thread_set_stop_timeout(t, 5000);
		assert_int_equal(devm_thread_stop(&tdev, t), 0);
		expect_no_warn();
	}
}

static int res = 42;

/* A revocable whose binding is gone and whose last reference is put. */
static struct revocable *revocable_dead(void)
{
	struct revocable *h = devm_revocable_create(&tdev, &res, NULL);

	assert_non_null(h);
	assert_ptr_equal(revocable_get(h), h);
	devres_release_all(&tdev);
	revocable_put(h);
	return h;
}

static void test_revocable_stale(void **state)
{
	struct revocable *stale = revocable_dead();

	(void)state;
	for (int i = 0; i < GENERATIONS; i++) {
		struct revocable *h = devm_revocable_create(&tdev, &res, NULL);

		assert_non_null(h);
		assert_ptr_not_equal(h, stale);
		assert_true(same_slot(h, stale));
		start_capture();
		assert_null(revocable_try_access(stale));
		expect_warn_on("(no device)", "revocable_try_access",
			       "is not a live revocable");
		start_capture();
		revocable_put(stale);
		expect_warn_on("(no device)", "revocable_put",
			       "is not a live revocable");
		start_capture();
		/* No reference taken: the caller's value back, as before. */
		assert_ptr_equal(revocable_get(stale), stale);
		expect_warn_on("(no device)", "revocable_get",
			       "is not a live revocable");
		start_capture();
		assert_ptr_equal(revocable_try_access(h), &res);
		revocable_access_end(h);
		expect_no_warn();
		devres_release_all(&tdev);
	}
}

/* In a child: exactly one WARN since start_capture(), naming @func. */
static bool one_warn(const char *func, const char *reason)
{
	return cap.n == 1 && strstr(cap.line[0], func) &&
	       strstr(cap.line[0], reason);
}

/* The child's checks, by number: the exit status says which failed. */
static int child(struct dma_pool *pool, struct dma_pool *dead_pool,
		 struct devres_thread *t, struct devres_thread *dead_t,
		 struct revocable *h, struct revocable *dead_h)
{
	dma_addr_t a;

	start_capture();
	if (dma_pool_alloc(pool, GFP_KERNEL, &a) ||
	    !one_warn("dma_pool_alloc", "belongs to process"))
		return 1;
	start_capture();
	if (dma_pool_alloc(dead_pool, GFP_KERNEL, &a) ||
	    !one_warn("dma_pool_alloc", "was destroyed"))
		return 2;
	start_capture();
	devres_thread_set_stop_timeout(t, 5000);
	if (!one_warn("devres_thread_set_stop_timeout", "belongs to process"))
		return 3;
	start_capture();
	devres_thread_set_stop_timeout(dead_t, 5);
	if (!one_warn("devres_thread_set_stop_timeout", "is not a managed "
							"thread"))
		return 4;
	start_capture();
	if (revocable_try_access(h) || !one_warn("revocable_try_access", "belon"
									 "gs "
									 "to "
									 "proce"
									 "ss"))
		return 5;
	start_capture();
	if (revocable_try_access(dead_h) ||
	    !one_warn("revocable_try_access", "is not a live revocable"))
		return 6;
	return 0;
}

static void test_fork(void **state)
{
	struct dma_pool *dead_pool = dma_pool_create("old", &tdev, 64, 8, 0);
	struct dma_pool *pool;
	struct devres_thread *dead_t, *t;
	struct revocable *dead_h = revocable_dead(), *h;
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(dead_pool);
	dma_pool_destroy(dead_pool);
	dead_t = devm_thread_run(&tdev, until_stopped, NULL, "old");
	assert_false(IS_ERR_OR_NULL(dead_t));
	assert_int_equal(devm_thread_stop(&tdev, dead_t), 0);
	pool = dma_pool_create("live", &tdev, 64, 8, 0);
	assert_non_null(pool);
	t = devm_thread_run(&tdev, until_stopped, NULL, "live");
	assert_false(IS_ERR_OR_NULL(t));
	h = devm_revocable_create(&tdev, &res, NULL);
	assert_non_null(h);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(pool, dead_pool, t, dead_t, h, dead_h));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent's own are untouched. */
	start_capture();
	devres_thread_set_stop_timeout(t, 5000);
	assert_ptr_equal(revocable_try_access(h), &res);
	revocable_access_end(h);
	dma_pool_destroy(pool);
	expect_no_warn();
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = { T(test_pool_stale),
					    T(test_thread_stale),
					    T(test_revocable_stale),
					    T(test_fork) };

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
