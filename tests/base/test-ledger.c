// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The ledger: what each kind counts, what the diff prints, and that the
 * per-thread tallies add up across threads, live and exited, and for nodes
 * allocated in one thread and freed in another.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>

#define NTHREADS 4
#define PER_THREAD 200

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void counts_by_kind(void **state)
{
	struct devres_ledger base, l;
	struct device dev = { .release = dev_release };
	void *res, *p, *id;

	(void)state;
	device_initialize(&dev);
	devres_ledger_snapshot(&base);

	res = devres_alloc(node_release, 24, GFP_KERNEL);
	assert_non_null(res);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, 1);
	assert_int_equal(l.node_bytes - base.node_bytes, 24);
	assert_int_equal(devres_ledger_diff(&base, &l, NULL), 2);

	/* On a device or not, a node counts the same. */
	devres_add(&dev, res);
	id = devres_open_group(&dev, NULL, GFP_KERNEL);
	assert_non_null(id);
	p = devm_kmalloc(&dev, 100, GFP_KERNEL);
	assert_non_null(p);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, 2);
	assert_int_equal(l.node_bytes - base.node_bytes, 124);
	assert_int_equal(l.groups - base.groups, 1);

	/* A reallocation changes bytes, not nodes. */
	p = devm_krealloc(&dev, p, 5000, GFP_KERNEL);
	assert_non_null(p);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, 2);
	assert_int_equal(l.node_bytes - base.node_bytes, 5024);

	assert_int_equal(devres_release_group(&dev, id), 1);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, 1);
	assert_int_equal(l.groups, base.groups);
	assert_int_equal(devres_release_all(&dev), 1);
	devres_ledger_snapshot(&l);
	assert_int_equal(devres_ledger_diff(&base, &l, NULL), 0);
	assert_int_equal(memcmp(&base, &l, sizeof(l)), 0);
	put_device(&dev);
}

static void diff_prints_what_differs(void **state)
{
	struct devres_ledger a = { 0 }, b = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	a.nodes = 5;
	b.nodes = 6;
	a.map_bytes = 8192;
	b.map_bytes = 4096;
	b.devices = 1;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(devres_ledger_diff(&a, &b, f), 3);
	assert_int_equal(devres_ledger_diff(&a, &a, f), 0);
	fclose(f);
	assert_string_equal(buf, "  nodes: 5 -> 6 (+1)\n"
				 "  map_bytes: 8192 -> 4096 (-4096)\n"
				 "  devices: 0 -> 1 (+1)\n");
	free(buf);
	/* Silent with no FILE, same count. */
	assert_int_equal(devres_ledger_diff(&b, &a, NULL), 3);
}

static void misuse(void **state)
{
	struct devres_ledger a = { 0 };
	int warns;

	(void)state;
	warns = devres_warn_count();
	assert_int_equal(devres_ledger_diff(NULL, &a, NULL), -EINVAL);
	assert_int_equal(devres_ledger_diff(&a, NULL, NULL), -EINVAL);
	devres_ledger_snapshot(NULL);
	assert_int_equal(devres_warn_count() - warns, 3);
}

struct shared {
	pthread_barrier_t barrier;
	void *nodes[NTHREADS][PER_THREAD];
};

struct worker {
	struct shared *sh;
	int index;
};

static void *worker(void *p)
{
	struct worker *w = p;
	struct shared *sh = w->sh;
	void **mine = sh->nodes[w->index];
	void **next = sh->nodes[(w->index + 1) % NTHREADS];

	for (int i = 0; i < PER_THREAD; i++)
		mine[i] = devres_alloc(node_release, 8, GFP_KERNEL);
	pthread_barrier_wait(&sh->barrier); /* main counts them, live */
	pthread_barrier_wait(&sh->barrier);
	/* Free half of the neighbour's: allocated there, freed here. */
	for (int i = 0; i < PER_THREAD / 2; i++) {
		devres_free(next[i]);
		next[i] = NULL;
	}
	pthread_barrier_wait(&sh->barrier); /* main counts again */
	pthread_barrier_wait(&sh->barrier);
	return NULL;
}

static void sums_across_threads(void **state)
{
	struct shared *sh = calloc(1, sizeof(*sh));
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	struct devres_ledger base, l;

	(void)state;
	assert_non_null(sh);
	assert_int_equal(pthread_barrier_init(&sh->barrier, NULL, NTHREADS + 1),
			 0);
	devres_ledger_snapshot(&base);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .sh = sh, .index = i };
		assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	pthread_barrier_wait(&sh->barrier);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, NTHREADS * PER_THREAD);
	assert_int_equal(l.node_bytes - base.node_bytes,
			 8 * NTHREADS * PER_THREAD);
	pthread_barrier_wait(&sh->barrier);

	pthread_barrier_wait(&sh->barrier);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, NTHREADS * PER_THREAD / 2);
	pthread_barrier_wait(&sh->barrier);

	/* Exited threads leave their counts behind. */
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.nodes - base.nodes, NTHREADS * PER_THREAD / 2);
	assert_int_equal(l.node_bytes - base.node_bytes,
			 8 * NTHREADS * PER_THREAD / 2);

	/* Freed by a thread that allocated none of them. */
	for (int i = 0; i < NTHREADS; i++)
		for (int j = 0; j < PER_THREAD; j++)
			devres_free(sh->nodes[i][j]);
	devres_ledger_snapshot(&l);
	assert_int_equal(devres_ledger_diff(&base, &l, NULL), 0);
	pthread_barrier_destroy(&sh->barrier);
	free(sh);
}

static void *churn(void *p)
{
	struct device dev = { .release = dev_release };

	(void)p;
	device_initialize(&dev);
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 10; i++)
			devm_kmalloc(&dev, 16, GFP_KERNEL);
		devres_release_all(&dev);
	}
	put_device(&dev);
	return NULL;
}

/* Snapshots taken during churn stay within what can be alive at once. */
static void snapshot_during_churn(void **state)
{
	struct devres_ledger base, l;
	pthread_t t[NTHREADS];

	(void)state;
	devres_ledger_snapshot(&base);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (int k = 0; k < 1000; k++) {
		devres_ledger_snapshot(&l);
		assert_in_range(l.nodes - base.nodes, 0, NTHREADS * 10);
	}
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	devres_ledger_snapshot(&l);
	assert_int_equal(devres_ledger_diff(&base, &l, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_by_kind),
		cmocka_unit_test(diff_prints_what_differs),
		cmocka_unit_test(misuse),
		cmocka_unit_test(sums_across_threads),
		cmocka_unit_test(snapshot_during_churn),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
