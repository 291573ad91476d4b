// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The ledger: what each kind counts, what the diff prints, and that the
 * per-thread tallies add up across threads, live and exited (more at once
 * than there are tallies), and for nodes allocated in one thread and freed
 * in another.
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
#include "rounds.h"

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

/*
 * More threads at once than the ledger keeps tallies for (256): the rest
 * count in its shared fallback. Each takes three nodes and gives one back,
 * and they all end while another thread takes snapshots: a count is seen
 * once whether its thread is alive, ending or gone, and once in the
 * fallback. Nothing counts meanwhile, so every snapshot is exact.
 */
#define MANY 320

struct many {
	pthread_barrier_t barrier;
	void *nodes[MANY][3];
	int stop, wrong;
	long nodes_then, bytes_then;
};

static struct many *many;

static void *many_worker(void *p)
{
	void **n = p;

	for (int i = 0; i < 3; i++)
		n[i] = devres_alloc(node_release, 8, GFP_KERNEL);
	devres_free(n[2]);
	n[2] = NULL;
	pthread_barrier_wait(&many->barrier);
	pthread_barrier_wait(&many->barrier);
	return NULL;
}

static void *many_snapshots(void *p)
{
	struct devres_ledger l;

	(void)p;
	while (!__atomic_load_n(&many->stop, __ATOMIC_ACQUIRE)) {
		devres_ledger_snapshot(&l);
		if (l.nodes != many->nodes_then ||
		    l.node_bytes != many->bytes_then)
			__atomic_add_fetch(&many->wrong, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void more_threads_than_tallies(void **state)
{
	static pthread_t t[MANY];
	struct devres_ledger base, l;
	pthread_t snap;
	/*
	 * The second round meets the tallies taken back as the first
	 * round's threads ended. Valgrind starts a thread in about 20 ms of
	 * CPU, 13 s for both rounds: there, one (snapshot_during_churn's
	 * threads take the tallies sums_across_threads' left).
	 */
	int rounds = test_under_valgrind() ? 1 : 2;

	(void)state;
	many = calloc(1, sizeof(*many));
	assert_non_null(many);
	assert_int_equal(pthread_barrier_init(&many->barrier, NULL, MANY + 1),
			 0);
	for (int round = 0; round < rounds; round++) {
		devres_ledger_snapshot(&base);
		for (int i = 0; i < MANY; i++)
			assert_int_equal(pthread_create(&t[i], NULL,
							many_worker,
							many->nodes[i]),
					 0);
		pthread_barrier_wait(&many->barrier);
		devres_ledger_snapshot(&l);
		assert_int_equal(l.nodes - base.nodes, 2 * MANY);
		assert_int_equal(l.node_bytes - base.node_bytes, 16 * MANY);
		many->nodes_then = l.nodes;
		many->bytes_then = l.node_bytes;
		many->stop = 0;
		assert_int_equal(
			pthread_create(&snap, NULL, many_snapshots, NULL), 0);
		pthread_barrier_wait(&many->barrier);
		for (int i = 0; i < MANY; i++)
			assert_int_equal(pthread_join(t[i], NULL), 0);
		__atomic_store_n(&many->stop, 1, __ATOMIC_RELEASE);
		assert_int_equal(pthread_join(snap, NULL), 0);
		assert_int_equal(many->wrong, 0);
		devres_ledger_snapshot(&l);
		assert_int_equal(l.nodes - base.nodes, 2 * MANY);
		for (int i = 0; i < MANY; i++)
			for (int j = 0; j < 2; j++)
				devres_free(many->nodes[i][j]);
		devres_ledger_snapshot(&l);
		assert_int_equal(devres_ledger_diff(&base, &l, NULL), 0);
	}
	pthread_barrier_destroy(&many->barrier);
	free(many);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_by_kind),
		cmocka_unit_test(diff_prints_what_differs),
		cmocka_unit_test(misuse),
		cmocka_unit_test(sums_across_threads),
		cmocka_unit_test(snapshot_during_churn),
		cmocka_unit_test(more_threads_than_tallies),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
