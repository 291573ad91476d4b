// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The short devm_kfree() of a shared device (slab_drop_newest() in
 * src/base/slab.h): a slot freed there keeps its bit in its block's
 * bitmap while it waits on its thread's list, and its counts go to the
 * thread's shard. So:
 *  - freeing it again, or reallocating it, WARNs as for any pointer that
 *    is not a managed allocation, changes nothing, and the slot comes
 *    back intact to the thread's next allocation;
 *  - freed newest first, oldest first and from the middle, by two
 *    threads, the device's counts (devres_get_stats(), the list check,
 *    the number devres_release_all() returns) and the ledger come back
 *    exactly.
 * AddressSanitizer builds have no slab (every node is a heap chunk).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "base/slab-test.h"

enum {
	OBJ = 64,
	N = 300
};

static pthread_barrier_t turn;
static unsigned char *freed;
static unsigned char *again;

/* Frees a slot, lets the main thread misuse it, then takes it back. */
static void *owner(void *arg)
{
	struct device *dev = arg;

	freed = devm_kmalloc(dev, OBJ, GFP_KERNEL);
	if (freed)
		memset(freed, 0x5a, OBJ);
	devm_kfree(dev, freed);
	pthread_barrier_wait(&turn);
	pthread_barrier_wait(&turn);
	again = devm_kmalloc(dev, OBJ, GFP_KERNEL);
	if (again)
		memset(again, 0xa5, OBJ);
	pthread_barrier_wait(&turn);
	pthread_barrier_wait(&turn);
	devm_kfree(dev, again);
	return NULL;
}

static void test_freed_slot_refused(void **state)
{
	struct device *dev = *state;
	long warns;
	pthread_t t;

	/* This thread takes the lock first: the worker shares the device. */
	devm_kfree(dev, devm_kmalloc(dev, OBJ, GFP_KERNEL));
	pthread_barrier_init(&turn, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, owner, dev), 0);
	pthread_barrier_wait(&turn);
	assert_non_null(freed);
	warns = devres_warn_count();
	devm_kfree(dev, freed);
	assert_null(devm_krealloc(dev, freed, 2 * OBJ, GFP_KERNEL));
	assert_int_equal(devres_warn_count() - warns, 2);
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_check(dev), 0);
	pthread_barrier_wait(&turn);
	pthread_barrier_wait(&turn);
	/* The worker's slot came back to it, whole, and is listed again. */
	assert_ptr_equal(again, freed);
	expect_stats(dev, 1, OBJ);
	for (int k = 0; k < OBJ; k++)
		assert_int_equal(again[k], 0xa5);
	pthread_barrier_wait(&turn);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&turn);
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_check(dev), 0);
	assert_int_equal(devres_warn_count() - warns, 2);
	assert_int_equal(devres_release_all(dev), 0);
}

struct job {
	struct device *dev;
	void *obj[N];
};

/*
 * Allocates N objects; frees the newest third newest first (the short
 * path), every other one of the oldest third (killed in place, their
 * slots unmarked), and keeps the rest.
 */
static void *mixed(void *arg)
{
	struct job *j = arg;

	pthread_barrier_wait(&turn);
	for (int i = 0; i < N; i++)
		j->obj[i] =
			devm_kmalloc(j->dev, OBJ + (i % 3) * 16, GFP_KERNEL);
	for (int i = N - 1; i >= 2 * N / 3; i--) {
		devm_kfree(j->dev, j->obj[i]);
		j->obj[i] = NULL;
	}
	for (int i = 0; i < N / 3; i += 2) {
		devm_kfree(j->dev, j->obj[i]);
		j->obj[i] = NULL;
	}
	pthread_barrier_wait(&turn);
	return NULL;
}

static void test_counts_come_back(void **state)
{
	struct device *dev = *state;
	struct devres_ledger before, after;
	static struct job jobs[2];
	int live = 0, bytes = 0;
	pthread_t t[2];
	long warns = devres_warn_count();

	devres_ledger_snapshot(&before);
	devm_kfree(dev, devm_kmalloc(dev, OBJ, GFP_KERNEL));
	pthread_barrier_init(&turn, NULL, 2);
	for (int i = 0; i < 2; i++) {
		jobs[i].dev = dev;
		assert_int_equal(pthread_create(&t[i], NULL, mixed, &jobs[i]),
				 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&turn);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < N; k++)
			if (jobs[i].obj[k]) {
				live++;
				bytes += OBJ + (k % 3) * 16;
			}
	assert_int_equal(live, 2 * (N - N / 3 - N / 6));
	expect_stats(dev, live, bytes);
	assert_int_equal(devres_check(dev), 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(after.nodes - before.nodes, live);
	assert_int_equal(after.node_bytes - before.node_bytes, bytes);
	/* Nothing but slab nodes: released without a walk, by the counts. */
	assert_int_equal(devres_release_all(dev), live);
	devres_ledger_snapshot(&after);
	assert_int_equal(after.nodes, before.nodes);
	assert_int_equal(after.node_bytes, before.node_bytes);
	assert_int_equal(devres_warn_count(), warns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_freed_slot_refused,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_counts_come_back,
						dev_setup, dev_teardown),
	};

#ifdef T_ASAN
	(void)tests;
	puts("an ASan build has no blocks (skipped)");
	return 77;
#else
	return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
