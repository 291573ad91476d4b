// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * Memory stays bounded on a shared device (src/base/slab-shared.c): slots
 * one thread freed into its shard are taken by another thread before a
 * block is mapped. A thread allocates and frees (newest first, so each
 * slot goes to its shard) a few blocks' worth of objects; a second
 * thread, alive at the same time, then allocates as many: the device
 * maps at most one block more. White-box: it counts the slab's blocks.
 * AddressSanitizer builds have no slab (every node is a heap chunk).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include "base/slab.h"
#include "base/slab-test.h"

enum {
	N = 3000 /* 64-byte objects on lines of their own: about 6 blocks */
};

static void *objs[2][N];
static pthread_barrier_t turn;
static size_t blocks_after_first;

static size_t nr_blocks(struct device *dev)
{
	struct devres__slab *s = dev->devres_slab;

	return s ? s->nr_blocks : 0;
}

struct job {
	struct device *dev;
	int id;
};

static void *worker(void *arg)
{
	struct job *j = arg;

	if (j->id == 1)
		pthread_barrier_wait(&turn); /* after the first is done */
	for (int i = 0; i < N; i++)
		objs[j->id][i] = devm_kmalloc(j->dev, 64, GFP_KERNEL);
	if (j->id == 0) {
		for (int i = N - 1; i >= 0; i--)
			devm_kfree(j->dev, objs[0][i]);
		blocks_after_first = nr_blocks(j->dev);
		pthread_barrier_wait(&turn);
	}
	/* Both stay alive until both are done: distinct threads. */
	pthread_barrier_wait(&turn);
	return NULL;
}

static void test_other_shards_before_a_block(void **state)
{
	struct device *dev = *state;
	struct job jobs[2] = { { dev, 0 }, { dev, 1 } };
	pthread_t t[2];

	/* This thread takes the lock first: the workers share the device. */
	devm_kfree(dev, devm_kmalloc(dev, 64, GFP_KERNEL));
	pthread_barrier_init(&turn, NULL, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, &jobs[i]),
				 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&turn);
	for (int i = 0; i < N; i++)
		assert_non_null(objs[1][i]);
	assert_true(blocks_after_first >= 4);
	assert_true(nr_blocks(dev) <= blocks_after_first + 1);
	expect_stats(dev, N, N * 64);
	devres_release_all(dev);
}

int main(void)
{
	return slab_test_run(test_other_shards_before_a_block);
}
