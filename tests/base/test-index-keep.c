// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * The device's index across devres_release_all() (src/base/index.c): a
 * small table stays with the device, emptied and dormant, and the next
 * lookup builds the index in it; nothing released before is found in it
 * (the new nodes often have the old ones' addresses); a device never looked up in again does not index its new resources; a
 * large table goes at once. put_device() frees a dormant table: the ASan
 * build's leak check sees one that is left behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "../src/base/node.h"

#define FEW 10
#define MANY 300 /* past a table of 256 slots at three quarters full */
/* Past the slab's sizes: a heap node of its own, named in the index. */
#define SIZE 300

static void fill(struct device *dev, void **p, int n)
{
	for (int i = 0; i < n; i++) {
		p[i] = devm_kmalloc(dev, SIZE, GFP_KERNEL);
		assert_non_null(p[i]);
	}
}

static long indexed(struct device *dev)
{
	long n;

	devres__lock_slow(dev, __func__);
	n = devres__index_count(dev);
	unlock_dev(dev);
	return n;
}

static void test_small_table_kept_and_reused(void **state)
{
	struct device *dev = *state;
	void *p[FEW], *q[FEW], *table;

	fill(dev, p, FEW);
	assert_int_equal(indexed(dev), -1); /* not built before a lookup */
	devm_kfree(dev, p[0]);
	assert_int_equal(indexed(dev), FEW - 1);
	table = dev->devres_index;
	assert_non_null(table);

	assert_int_equal(devres_release_all(dev), FEW - 1);
	/* Kept, but dormant: not an index of anything. */
	assert_ptr_equal(dev->devres_index, table);
	assert_int_equal(indexed(dev), -1);
	assert_int_equal(devres_check(dev), 0); /* and empty */

	fill(dev, q, FEW);
	/* Not looked up in since: the adds do not index. */
	assert_int_equal(indexed(dev), -1);
	/*
	 * Each lookup finds the node it names. The old nodes' memory is
	 * often the new ones' (the heap hands the same chunks out again): an
	 * entry of the old index left in the table would be found first,
	 * and the wrong node unlinked (or, under ASan, read after free).
	 */
	start_capture();
	for (int i = 0; i < FEW; i++) {
		devm_kfree(dev, q[i]);
		/* The first lookup built the index in the same table. */
		assert_ptr_equal(dev->devres_index, table);
		assert_int_equal(indexed(dev), FEW - 1 - i);
		assert_int_equal(devres_check(dev), 0);
	}
	expect_no_warn();
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_release_all(dev), 0);
	assert_int_equal(devres_check(dev), 0);
}

static void test_large_table_freed(void **state)
{
	struct device *dev = *state;
	static void *p[MANY];

	fill(dev, p, MANY);
	devm_kfree(dev, p[MANY - 1]);
	assert_int_equal(indexed(dev), MANY - 1);
	assert_int_equal(devres_release_all(dev), MANY - 1);
	assert_null(dev->devres_index);
	assert_int_equal(devres_check(dev), 0);
}

static void test_released_device_frees_dormant_table(void **state)
{
	struct device *dev = heap_dev(NULL, "index-keep");
	void *p[FEW];

	(void)state;
	assert_non_null(dev);
	fill(dev, p, FEW);
	devm_kfree(dev, p[2]);
	assert_int_equal(devres_release_all(dev), FEW - 1);
	assert_non_null(dev->devres_index);
	/* The leak check of the ASan build fails the test if it stays. */
	put_device(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_small_table_kept_and_reused,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_large_table_freed,
						dev_setup, dev_teardown),
		cmocka_unit_test(test_released_device_frees_dormant_table),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
