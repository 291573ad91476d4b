// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile */
/*
 * Counters that a leak of references or a missing enable drives to their
 * limit: a device's reference count saturates with one WARN and the
 * device is never released (rather than freed by a wrapped count); an
 * interrupt line's disable depth and a revocable's references are
 * refused at their limit with one WARN, never wrapped; everything below
 * the limit balances as before.
 *
 * Each test ends with no thread left neither joined nor detached
 * (thread-watch.h), the leak ThreadSanitizer would report. The test is
 * not in the TSan build: one thread, 2^24 and 2^20 calls in a loop, 25 s
 * of CPU there on a loaded machine, with nothing for it to race.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "hostile/thread-watch.h"

static void test_device_refcount_saturates(void **state)
{
	struct device *dev = *state;

	(void)state;
	/* As a leak of 2^30 references would leave it: no loop needed. */
	dev->refcount = INT_MAX / 2 - 2;
	start_capture();
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(get_device(dev), dev);
	expect_warn("get_device", "reference count saturated");
	assert_int_equal(dev->refcount, INT_MAX / 2);
	start_capture();
	for (int i = 0; i < 8; i++)
		put_device(dev);
	expect_no_warn();
	assert_int_equal(dev->refcount, INT_MAX / 2);
	assert_int_equal(tdev_released, 0);
	/* Back to one reference, so that the fixture can release it. */
	dev->refcount = 1;
	assert_int_equal(thread_watch_leaks(__func__), 0);
}

static void test_irq_depth_limit(void **state)
{
	int irq = irq_line_create("depth");

	(void)state;
	assert_true(irq > 0);
	start_capture();
	for (int i = 0; i < 1 << 20; i++)
		disable_irq_nosync((unsigned int)irq);
	expect_no_warn();
	start_capture();
	disable_irq_nosync((unsigned int)irq);
	expect_warn_on("(no device)", "disable_irq_nosync",
		       "disabled 1048576 times without an enable: refused");
	start_capture();
	disable_irq((unsigned int)irq);
	expect_warn_on("(no device)", "disable_irq", "refused");
	/* The refused ones counted nothing: as many enables balance it. */
	start_capture();
	for (int i = 0; i < 1 << 20; i++)
		enable_irq((unsigned int)irq);
	expect_no_warn();
	start_capture();
	enable_irq((unsigned int)irq);
	expect_warn_on("(no device)", "enable_irq", "unbalanced enable");
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(thread_watch_leaks(__func__), 0);
}

static int payload;

static void test_revocable_refs_limit(void **state)
{
	struct device *dev = *state;
	struct revocable *h = devm_revocable_create(dev, &payload, NULL);
	const int max = 1 << 24;

	assert_non_null(h);
	start_capture();
	/* The binding's reference is one: max - 1 more are taken. */
	for (int i = 1; i < max; i++)
		assert_ptr_equal(revocable_get(h), h);
	expect_no_warn();
	start_capture();
	assert_null(revocable_get(h));
	expect_warn_on("(no device)", "revocable_get", "references: refused");
	start_capture();
	for (int i = 1; i < max; i++)
		revocable_put(h);
	expect_no_warn();
	/* Balanced: the binding's reference is left, as before. */
	assert_ptr_equal(revocable_try_access(h), &payload);
	revocable_access_end(h);
	assert_int_equal(thread_watch_leaks(__func__), 0);
}

/* The watch catches a leaked thread (a self-test, in a child). */
static void test_thread_watch(void **state)
{
	(void)state;
	assert_int_equal(thread_watch_self_test(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_watch),
		cmocka_unit_test_setup_teardown(test_device_refcount_saturates,
						dev_setup, dev_teardown),
		cmocka_unit_test(test_irq_depth_limit),
		cmocka_unit_test_setup_teardown(test_revocable_refs_limit,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
