// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A request of a number that is not an interrupt line is an error, not a
 * misuse: each of the five request calls, on a number never handed out,
 * on a line's number once it is destroyed, on 0, on the first number past
 * the last a line can have and on the largest unsigned value, returns
 * -EINVAL with no WARN, as the kernel's request_threaded_irq() does for a
 * number without a descriptor (a driver asking for an optional interrupt
 * checks the error; nothing is wrong with it). Nothing is left: no node on
 * the device, no handler, no dispatcher thread, the ledger at its
 * baseline. The calls that act on a handler of such a number (free_irq()
 * and the others) do WARN: they name one that cannot have been requested.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

static int mine;

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static irqreturn_t thread_fn(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* Each request call on @irq: -EINVAL, no WARN, nothing on the device. */
static void requests_fail_quietly(unsigned int irq)
{
	struct devres_stats st;
	int before = devres_warn_count();

	assert_int_equal(request_irq(irq, handler, 0, "x", &mine), -EINVAL);
	assert_int_equal(request_threaded_irq(irq, handler, thread_fn, 0, "x",
					      &mine),
			 -EINVAL);
	assert_int_equal(devm_request_irq(&tdev, irq, handler, 0, "x", &mine),
			 -EINVAL);
	assert_int_equal(devm_request_threaded_irq(&tdev, irq, NULL, thread_fn,
						   IRQF_ONESHOT, "x", &mine),
			 -EINVAL);
	assert_int_equal(devm_request_any_context_irq(&tdev, irq, handler, 0,
						      "x", &mine),
			 -EINVAL);
	assert_int_equal(devres_warn_count(), before);
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 0);
}

static void never_handed_out(void **state)
{
	int line = irq_line_create("probe");

	(void)state;
	/* Numbers are handed out in order: the next one is not a line yet. */
	assert_true(line > 0);
	requests_fail_quietly((unsigned int)line + 1);
	assert_int_equal(irq_line_destroy(line), 0);
}

static void destroyed(void **state)
{
	int line = irq_line_create("gone");

	(void)state;
	assert_true(line > 0);
	assert_int_equal(irq_line_destroy(line), 0);
	requests_fail_quietly((unsigned int)line);
}

static void out_of_range(void **state)
{
	(void)state;
	requests_fail_quietly(0);
	requests_fail_quietly(1024);
	requests_fail_quietly(UINT_MAX);
}

/* The calls on a handler of such a number name a misuse: they WARN. */
static void handler_calls_warn(void **state)
{
	int line = irq_line_create("gone");
	int before;

	(void)state;
	assert_true(line > 0);
	assert_int_equal(irq_line_destroy(line), 0);
	before = devres_warn_count();
	start_capture();
	assert_null(free_irq((unsigned int)line, &mine));
	devm_free_irq(&tdev, (unsigned int)line, &mine);
	assert_int_equal(devres_warn_count(), before + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(never_handed_out, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(destroyed, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(out_of_range, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(handler_calls_warn, irq_setup,
						irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
