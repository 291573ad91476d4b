// SPDX-License-Identifier: MIT
/* ctest-labels: tsan stress timeout=600 */
/*
 * The unhandled-interrupt detector: a line whose handlers return IRQ_NONE
 * for 99,900 of a window of 100,000 interrupts is disabled with one WARN;
 * at 99,899 it is not. The handler raises its own line again, so that each
 * of the 100,000 interrupts is one handler call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

#define WINDOW 100000

struct chain {
	int irq;
	int handled; /* the first this many calls say IRQ_HANDLED */
	int calls;
};

static irqreturn_t chain_handler(int irq, void *dev_id)
{
	struct chain *c = dev_id;
	int n = load_int(&c->calls) + 1;

	add_int(&c->calls, 1);
	if (n < WINDOW)
		irq_line_raise(irq);
	return n <= c->handled ? IRQ_HANDLED : IRQ_NONE;
}

static void run_window(int handled, bool want_disabled)
{
	struct chain c = { 0 };
	int efd, warns;

	c.irq = attached_line(&efd, "stuck");
	c.handled = handled;
	start_capture();
	warns = devres_warn_count();
	assert_int_equal(request_irq(c.irq, chain_handler, 0, "stuck", &c), 0);
	assert_int_equal(irq_line_raise(c.irq), 0);
	assert_true(wait_at_least(&c.calls, WINDOW));
	synchronize_irq(c.irq);
	assert_int_equal(load_int(&c.calls), WINDOW);
	assert_int_equal(devres_warn_count() - warns, want_disabled ? 1 : 0);
	/* Disabled or not, as a driver sees it: does the next one arrive? */
	assert_int_equal(irq_line_raise(c.irq), 0);
	assert_true(wait_consumed(efd));
	synchronize_irq(c.irq);
	assert_int_equal(load_int(&c.calls),
			 want_disabled ? WINDOW : WINDOW + 1);
	if (want_disabled) {
		expect_warn_on("(no device)", "note_interrupt", "nobody cared");
		/* enable_irq() brings it back, with what was held back. */
		enable_irq(c.irq);
		assert_true(wait_at_least(&c.calls, WINDOW + 1));
	} else {
		expect_no_warn();
	}
	free_irq(c.irq, &c);
	assert_int_equal(irq_line_destroy(c.irq), 0);
	close(efd);
}

static void nobody_cared_disables(void **state)
{
	(void)state;
	run_window(WINDOW - 99900, true);
}

static void one_less_is_fine(void **state)
{
	(void)state;
	run_window(WINDOW - 99899, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(nobody_cared_disables,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(one_less_is_fine, irq_setup,
						irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
