// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * Allocations of the library's bookkeeping that back a managed resource,
 * each behind the fault point so that a sweep (fail-nth for every N)
 * fails it as any other allocation of the call: an interrupt line's
 * record (irq_line_create(), which UIO and VFIO vectors are made of).
 * Each injected failure gives a clean error, nothing left behind: the
 * ledger at its baseline. And one that is not: the growth of a device's
 * index of keyed nodes, which no call fails for (without memory the
 * index goes dormant and lookups search), so that the points of a call
 * do not depend on what its device held before (test-fault-history).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdbool.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"

/*
 * fail-nth for N = 1, 2, ...: each N fails the N-th point of the call,
 * until one runs with no point left to fail. Two points: the line's
 * descriptor and its record; before, the record was malloc'd past the
 * fault point, and a sweep found one.
 */
static void line_record(void **state)
{
	struct devres_ledger before, now;
	unsigned int points = 0;

	(void)state;
	devres_ledger_snapshot(&before);
	for (unsigned int n = 1;; n++) {
		unsigned int left;
		int rc;

		devres_fail_nth(n);
		rc = irq_line_create("fault-line");
		left = devres_fail_nth_get();
		devres_fail_nth(0);
		if (left) {
			/* Nothing left to fail: the call went through. */
			assert_true(rc > 0);
			assert_int_equal(irq_line_destroy(rc), 0);
			break;
		}
		points++;
		assert_true(rc == -EMFILE || rc == -ENOMEM);
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
	}
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
	print_message("irq_line_create: %u fault points\n", points);
	assert_int_equal(points, 2);
}

#define BIG 512 /* past the small blocks, so listed in the index */
#define NR 64

/*
 * The index is built by a first lookup, then grows as blocks are added
 * (64 blocks: 16, 32, 64, 128 slots). Each devm_kmalloc() is armed to
 * fail its second fault point: the node is its first and only one, so
 * none fails, the growths included; every block made is found.
 */
static void index_growth(void **state)
{
	void *blocks[NR];
	struct devres_ledger before, now;
	struct devres_stats st;

	(void)state;
	devres_ledger_snapshot(&before);
	blocks[0] = devm_kmalloc(&tdev, BIG, GFP_KERNEL);
	assert_non_null(blocks[0]);
	/* The first lookup: the index is built, and kept from now on. */
	assert_true(devm_is_kmalloc(&tdev, blocks[0]));
	for (int i = 1; i < NR; i++) {
		devres_fail_nth(2);
		blocks[i] = devm_kmalloc(&tdev, BIG, GFP_KERNEL);
		/* One point passed, the second never met. */
		assert_int_equal(devres_fail_nth_get(), 1);
		devres_fail_nth(0);
		assert_non_null(blocks[i]);
	}
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, NR);
	for (int i = 0; i < NR; i++)
		assert_true(devm_is_kmalloc(&tdev, blocks[i]));
	start_capture();
	assert_int_equal(devres_release_all(&tdev), NR);
	expect_no_warn();
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(line_record),
		cmocka_unit_test_setup_teardown(index_growth, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
