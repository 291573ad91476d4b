// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The devres core's node semantics: allocation, LIFO release, find, get,
 * remove, destroy, release, for-each, re-entry from release callbacks,
 * fail-nth and the ledger. Each test checks that the ledger is back at its
 * baseline and that the device's release ran exactly once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

static void other_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	norder += 1000;
}

static void never_used_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int match_value(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(int *)res == *(int *)data;
}

static int match_even(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)data;
	return *(int *)res % 2 == 0;
}

/* Nodes alive now beyond the ledger's baseline. */
static long nodes_added(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.nodes - ledger_base.nodes;
}

static void test_alloc_zeroed_aligned(void **state)
{
	static const size_t sizes[] = { 1, 7, 16, 24, 100, 4096, 100000 };
	struct devres_ledger l;
	long bytes = 0;
	void *p[7];

	(void)state;
	/* Dirty the heap so that zeroing is not an accident of fresh pages. */
	for (int i = 0; i < 7; i++) {
		char *junk = malloc(sizes[i] + 16);

		assert_non_null(junk);
		memset(junk, 0xa5, sizes[i] + 16);
		free(junk);
	}
	for (int i = 0; i < 7; i++) {
		unsigned char *c = devres_alloc(rec_release, sizes[i], 0);

		assert_non_null(c);
		assert_int_equal((uintptr_t)c % _Alignof(max_align_t), 0);
		for (size_t j = 0; j < sizes[i]; j++)
			assert_int_equal(c[j], 0);
		memset(c, 0xff, sizes[i]);
		p[i] = c;
		bytes += (long)sizes[i];
	}
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - ledger_base.nodes, 7);
	assert_int_equal(l.node_bytes - ledger_base.node_bytes, bytes);
	for (int i = 0; i < 7; i++)
		devres_free(p[i]);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes, ledger_base.nodes);
	assert_int_equal(l.node_bytes, ledger_base.node_bytes);
}

static void test_alloc_too_big(void **state)
{
	(void)state;
	if (sizeof(size_t) > 4)
		assert_null(devres_alloc(rec_release, (size_t)1 << 32, 0));
	assert_null(devres_alloc(rec_release, SIZE_MAX, 0));
}

static void test_free_null_and_unadded(void **state)
{
	struct device *dev = *state;
	int before = devres_warn_count();
	int *p;

	devres_free(NULL);
	p = devres_alloc(rec_release, sizeof(int), GFP_KERNEL);
	assert_non_null(p);
	devres_free(p);
	/* A node taken off the device belongs to the caller again. */
	reset_order();
	p = add_rec(dev, 1);
	assert_ptr_equal(devres_remove(dev, rec_release, NULL, NULL), p);
	devres_free(p);
	assert_int_equal(devres_release_all(dev), 0);
	assert_int_equal(norder, 0);
	assert_int_equal(devres_warn_count(), before);
}

static void test_lifo_release_all(void **state)
{
	struct device *dev = *state;

	reset_order();
	for (int i = 1; i <= 100; i++)
		add_rec(dev, i);
	assert_int_equal(devres_release_all(dev), 100);
	assert_int_equal(norder, 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(order[i], 100 - i);
	/* Nothing is left for a second pass. */
	assert_int_equal(devres_release_all(dev), 0);
	assert_int_equal(norder, 100);
}

static void test_release_all_counts_resources_only(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;

	reset_order();
	add_rec(dev, 1);
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
	add_rec(dev, 2);
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
	add_rec(dev, 3);
	devres_close_group(dev, NULL);
	assert_non_null(devm_kmalloc(dev, 10, GFP_KERNEL));
	devres_ledger_snapshot(&l);
	assert_int_equal(l.groups - ledger_base.groups, 2);
	assert_int_equal(l.nodes - ledger_base.nodes, 4);
	assert_int_equal(devres_release_all(dev), 4);
	assert_int_equal(norder, 3);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 1);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.groups, ledger_base.groups);
	assert_int_equal(l.nodes, ledger_base.nodes);
	assert_int_equal(devres_release_all(dev), 0);
}

static void test_find_newest_match(void **state)
{
	struct device *dev = *state;
	int *a, *b, *c, *o;
	int want = 1;

	assert_null(devres_find(dev, rec_release, NULL, NULL));
	a = add_rec(dev, 1);
	b = add_rec(dev, 2);
	o = devres_alloc(other_release, sizeof(int), GFP_KERNEL);
	assert_non_null(o);
	devres_add(dev, o);
	c = add_rec(dev, 1);

	/* The newest node of this release function, whatever is newer. */
	assert_ptr_equal(devres_find(dev, rec_release, NULL, NULL), c);
	assert_ptr_equal(devres_find(dev, other_release, NULL, NULL), o);
	assert_ptr_equal(devres_find(dev, rec_release, match_value, &want), c);
	assert_ptr_equal(devres_find(dev, rec_release, match_even, NULL), b);
	want = 3;
	assert_null(devres_find(dev, rec_release, match_value, &want));
	/* After the newest match goes, the older one is found. */
	want = 1;
	assert_int_equal(devres_destroy(dev, rec_release, match_value, &want),
			 0);
	assert_ptr_equal(devres_find(dev, rec_release, match_value, &want), a);
	/* A release function never used finds nothing. */
	assert_null(devres_find(dev, never_used_release, NULL, NULL));
}

static void test_get_adds_when_absent(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	int *n;

	reset_order();
	n = devres_alloc(rec_release, sizeof(int), GFP_KERNEL);
	assert_non_null(n);
	*n = 7;
	assert_ptr_equal(devres_get(dev, n, NULL, NULL), n);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	assert_ptr_equal(devres_find(dev, rec_release, NULL, NULL), n);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 7);
}

static void test_get_frees_newcomer(void **state)
{
	struct device *dev = *state;
	struct devres_ledger before, after;
	int *old, *n, *got;
	int want = 2;

	reset_order();
	add_rec(dev, 1);
	old = add_rec(dev, 2);
	devres_ledger_snapshot(&before);
	n = devres_alloc(rec_release, sizeof(int), GFP_KERNEL);
	assert_non_null(n);
	*n = 2;
	got = devres_get(dev, n, match_value, &want);
	assert_ptr_equal(got, old);
	/* The newcomer is gone (ledger) and its release was not called. */
	assert_int_equal(norder, 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);

	/* No match: the newcomer is added. */
	want = 3;
	n = devres_alloc(rec_release, sizeof(int), GFP_KERNEL);
	assert_non_null(n);
	*n = 3;
	assert_ptr_equal(devres_get(dev, n, match_value, &want), n);
	assert_int_equal(devres_release_all(dev), 3);
	assert_int_equal(norder, 3);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 1);
}

static void test_remove_keeps_unreleased(void **state)
{
	struct device *dev = *state;
	int before = devres_warn_count();
	struct devres_stats st;
	int *a, *b, *r;

	reset_order();
	a = add_rec(dev, 1);
	b = add_rec(dev, 2);
	r = devres_remove(dev, rec_release, NULL, NULL);
	assert_ptr_equal(r, b);
	assert_int_equal(*r, 2);
	assert_int_equal(norder, 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	assert_null(devres_find(dev, rec_release, match_value, r));
	/* The removed node can be added again, at the newest position. */
	devres_add(dev, r);
	assert_ptr_equal(devres_remove(dev, rec_release, NULL, NULL), r);
	devres_free(r);
	assert_ptr_equal(devres_remove(dev, rec_release, NULL, NULL), a);
	assert_null(devres_remove(dev, rec_release, NULL, NULL));
	assert_null(devres_remove(dev, other_release, NULL, NULL));
	devres_free(a);
	assert_int_equal(devres_release_all(dev), 0);
	assert_int_equal(norder, 0);
	assert_int_equal(devres_warn_count(), before);
}

static void test_destroy_never_releases(void **state)
{
	struct device *dev = *state;
	int before = devres_warn_count();
	int want = 1;

	reset_order();
	add_rec(dev, 1);
	add_rec(dev, 2);
	assert_int_equal(devres_destroy(dev, rec_release, match_value, &want),
			 0);
	assert_int_equal(norder, 0);
	assert_int_equal(nodes_added(), 1);
	assert_int_equal(devres_destroy(dev, rec_release, match_value, &want),
			 -ENOENT);
	assert_int_equal(devres_destroy(dev, other_release, NULL, NULL),
			 -ENOENT);
	assert_int_equal(devres_warn_count(), before);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 2);
}

static void test_release_calls_release(void **state)
{
	struct device *dev = *state;
	int before = devres_warn_count();
	int want = 1;

	reset_order();
	add_rec(dev, 1);
	add_rec(dev, 2);
	add_rec(dev, 3);
	assert_int_equal(devres_release(dev, rec_release, match_value, &want),
			 0);
	assert_int_equal(norder, 1);
	assert_int_equal(order[0], 1);
	assert_int_equal(nodes_added(), 2);
	assert_int_equal(devres_release(dev, rec_release, match_value, &want),
			 -ENOENT);
	assert_int_equal(devres_release(dev, other_release, NULL, NULL),
			 -ENOENT);
	assert_int_equal(norder, 1);
	assert_int_equal(devres_warn_count(), before);
	/* Without a match, the newest goes. */
	assert_int_equal(devres_release(dev, rec_release, NULL, NULL), 0);
	assert_int_equal(order[1], 3);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(order[2], 2);
}

struct visit {
	int seen[16];
	int n;
};

static void visit_fn(struct device *dev, void *res, void *data)
{
	struct visit *v = data;

	assert_ptr_equal(dev, &tdev);
	v->seen[v->n++] = *(int *)res;
}

static void test_for_each_res(void **state)
{
	struct device *dev = *state;
	struct visit v = { { 0 }, 0 };
	int *o;

	devres_for_each_res(dev, rec_release, NULL, NULL, visit_fn, &v);
	assert_int_equal(v.n, 0);
	for (int i = 1; i <= 5; i++)
		add_rec(dev, i);
	o = devres_alloc(other_release, sizeof(int), GFP_KERNEL);
	assert_non_null(o);
	*o = 99;
	devres_add(dev, o);
	assert_non_null(devm_kmalloc(dev, 4, GFP_KERNEL));

	devres_for_each_res(dev, rec_release, NULL, NULL, visit_fn, &v);
	assert_int_equal(v.n, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(v.seen[i], 5 - i);

	v.n = 0;
	devres_for_each_res(dev, rec_release, match_even, NULL, visit_fn, &v);
	assert_int_equal(v.n, 2);
	assert_int_equal(v.seen[0], 4);
	assert_int_equal(v.seen[1], 2);

	v.n = 0;
	devres_for_each_res(dev, other_release, NULL, NULL, visit_fn, &v);
	assert_int_equal(v.n, 1);
	assert_int_equal(v.seen[0], 99);
	/* for-each changes nothing. */
	assert_int_equal(devres_release_all(dev), 7);
}

/* A release that acquires on its own device, as teardown code may do. */
static void realloc_release(struct device *dev, void *res)
{
	(void)res;
	norder++;
	assert_non_null(devm_kmalloc(dev, 32, GFP_KERNEL));
	add_rec(dev, 42);
}

static void test_release_callback_uses_devres(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	void *r;

	reset_order();
	add_rec(dev, 1);
	r = devres_alloc(realloc_release, 1, GFP_KERNEL);
	assert_non_null(r);
	devres_add(dev, r);
	add_rec(dev, 2);

	assert_int_equal(devres_release_all(dev), 3);
	assert_int_equal(norder, 3);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[2], 1);
	/* What the callback added survived the pass... */
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 2);
	assert_int_equal(st.total_size, 32 + (int)sizeof(int));
	/* ...and goes with the next one. */
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(norder, 4);
	assert_int_equal(order[3], 42);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 0);
}

static void test_release_callback_uses_devres_single(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	void *r;

	reset_order();
	r = devres_alloc(realloc_release, 1, GFP_KERNEL);
	assert_non_null(r);
	devres_add(dev, r);
	/* devres_release() runs the callback unlocked, too. */
	assert_int_equal(devres_release(dev, realloc_release, NULL, NULL), 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 2);
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(order[1], 42);
}

static void test_fail_nth_devres_alloc(void **state)
{
	void *p[5];

	(void)state;
	devres_fail_nth(3);
	assert_int_equal(devres_fail_nth_get(), 3);
	for (int i = 0; i < 5; i++) {
		p[i] = devres_alloc(rec_release, 8, GFP_KERNEL);
		if (i == 2)
			assert_null(p[i]);
		else
			assert_non_null(p[i]);
	}
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_int_equal(nodes_added(), 4);
	for (int i = 0; i < 5; i++)
		devres_free(p[i]);

	devres_fail_nth(1);
	assert_null(devres_alloc(rec_release, 8, GFP_KERNEL));
	p[0] = devres_alloc(rec_release, 8, GFP_KERNEL);
	assert_non_null(p[0]);
	devres_free(p[0]);
	/* 0 disarms. */
	devres_fail_nth(1);
	devres_fail_nth(0);
	p[0] = devres_alloc(rec_release, 8, GFP_KERNEL);
	assert_non_null(p[0]);
	devres_free(p[0]);
}

static void act(void *data)
{
	(*(int *)data)++;
}

static void test_ledger_back_to_baseline(void **state)
{
	struct device *dev = *state;
	struct devres_ledger mid, end;
	int count = 0;

	add_rec(dev, 1);
	assert_non_null(devm_kmalloc(dev, 100, GFP_KERNEL));
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
	assert_int_equal(devm_add_action(dev, act, &count), 0);
	assert_non_null(devm_kstrdup(dev, "hello", GFP_KERNEL));
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
	assert_non_null(devm_krealloc(dev, NULL, 50, GFP_KERNEL));
	devres_ledger_snapshot(&mid);
	assert_int_equal(mid.nodes - ledger_base.nodes, 5);
	assert_int_equal(mid.node_bytes - ledger_base.node_bytes,
			 (long)(sizeof(int) + 100 + sizeof(void *) + 6 + 50));
	assert_int_equal(mid.groups - ledger_base.groups, 2);
	assert_int_equal(devres_release_all(dev), 5);
	assert_int_equal(count, 1);
	devres_ledger_snapshot(&end);
	assert_int_equal(end.nodes, ledger_base.nodes);
	assert_int_equal(end.node_bytes, ledger_base.node_bytes);
	assert_int_equal(end.groups, ledger_base.groups);
}

/* All basic operations on one device are atomic with respect to each other. */
#define NTHREADS 4
#define ROUNDS 2000

static void *hammer(void *arg)
{
	struct device *dev = arg;

	for (int i = 0; i < ROUNDS; i++) {
		void *keep = devm_kmalloc(dev, 8, GFP_KERNEL);
		int *r = devres_alloc(other_release, sizeof(int), 0);

		if (!keep || !r)
			return (void *)1;
		devres_add(dev, r);
		if (devres_destroy(dev, other_release, NULL, NULL))
			return (void *)1;
		devm_kfree(dev, keep);
		if (i % 2 && !devm_kmalloc(dev, 1, GFP_KERNEL))
			return (void *)1;
	}
	return NULL;
}

static void test_threads_atomic(void **state)
{
	struct device *dev = *state;
	pthread_t t[NTHREADS];
	struct devres_stats st;
	int before = devres_warn_count();

	reset_order();
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, dev), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(devres_warn_count(), before);
	assert_int_equal(norder, 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, NTHREADS * ROUNDS / 2);
	assert_int_equal(st.total_size, NTHREADS * ROUNDS / 2);
	assert_int_equal(devres_release_all(dev), NTHREADS * ROUNDS / 2);
}

/*
 * devres_set_log() from any thread, as documented, while other threads log:
 * the flag is read atomically, so TSan sees no race.
 */
static int lines_logged;

static void counting_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
	__atomic_add_fetch(&lines_logged, 1, __ATOMIC_RELAXED);
}

static void *toggle_log(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++)
		devres_set_log(i % 2 == 0);
	devres_set_log(false);
	return NULL;
}

static void test_set_log_from_any_thread(void **state)
{
	struct device *dev = *state;
	pthread_t t[NTHREADS], tog;

	lines_logged = 0;
	devres_set_log_sink(counting_sink, NULL);
	assert_int_equal(pthread_create(&tog, NULL, toggle_log, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, dev), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(pthread_join(tog, NULL), 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_release_all(dev), NTHREADS * ROUNDS / 2);
}

/*
 * Fill, then publish, raced for real: one thread makes
 * filled allocations while another releases everything, as the chaos test
 * allows. A copy, format or zeroing after publication would write into
 * memory the other thread frees: TSan and ASan report it. The returned
 * pointers are never touched: they may be gone already.
 */
static int racing_done;

static void *release_all_loop(void *arg)
{
	while (!__atomic_load_n(&racing_done, __ATOMIC_ACQUIRE))
		devres_release_all(arg);
	return NULL;
}

static void test_fill_races_release_all(void **state)
{
	static const char text[64] = "published only once filled";
	struct device *dev = *state;
	pthread_t t;

	racing_done = 0;
	devres_set_log_sink(counting_sink, NULL);
	assert_int_equal(pthread_create(&t, NULL, release_all_loop, dev), 0);
	for (int i = 0; i < ROUNDS; i++) {
		void *p = devm_kmalloc(dev, 8, GFP_KERNEL);

		devm_kmemdup(dev, text, sizeof(text), GFP_KERNEL);
		devm_kstrdup(dev, text, GFP_KERNEL);
		devm_kasprintf(dev, GFP_KERNEL, "%s %d", text, i);
		/* WARNs when the other thread freed p first. */
		devm_krealloc(dev, p, 200, GFP_KERNEL | __GFP_ZERO);
		devm_get_free_pages(dev, GFP_KERNEL | __GFP_ZERO, 0);
	}
	__atomic_store_n(&racing_done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	devres_set_log_sink(NULL, NULL);
	devres_release_all(dev);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_alloc_zeroed_aligned),
		T(test_alloc_too_big),
		T(test_free_null_and_unadded),
		T(test_lifo_release_all),
		T(test_release_all_counts_resources_only),
		T(test_find_newest_match),
		T(test_get_adds_when_absent),
		T(test_get_frees_newcomer),
		T(test_remove_keeps_unreleased),
		T(test_destroy_never_releases),
		T(test_release_calls_release),
		T(test_for_each_res),
		T(test_release_callback_uses_devres),
		T(test_release_callback_uses_devres_single),
		T(test_fail_nth_devres_alloc),
		T(test_ledger_back_to_baseline),
		T(test_threads_atomic),
		T(test_set_log_from_any_thread),
		T(test_fill_races_release_all),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
