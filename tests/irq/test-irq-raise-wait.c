// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * irq_line_raise_wait(): it returns once the interrupt it raised was
 * handled, primary handler and woken thread function, so that a test reads
 * its handler's plain counters after it without a race (this test runs
 * under TSan); it does not wait for what cannot be delivered, and refuses
 * to wait from a handler it would wait for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

/* Plain, not atomic: the wait is what orders them. */
struct counts {
	int primary, thread, last_irq;
	int nested_rc;
	int other_irq;
};

static irqreturn_t primary(int irq, void *dev_id)
{
	struct counts *c = dev_id;

	c->primary++;
	c->last_irq = irq;
	return IRQ_HANDLED;
}

static irqreturn_t wake(int irq, void *dev_id)
{
	struct counts *c = dev_id;

	(void)irq;
	c->primary++;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t slow_thread(int irq, void *dev_id)
{
	struct counts *c = dev_id;

	(void)irq;
	poll(NULL, 0, 2); /* still running when a plain raise returns */
	c->thread++;
	return IRQ_HANDLED;
}

static irqreturn_t waits_from_handler(int irq, void *dev_id)
{
	struct counts *c = dev_id;

	(void)irq;
	c->nested_rc = irq_line_raise_wait(c->other_irq);
	c->primary++;
	return IRQ_HANDLED;
}

static void each_raise_is_handled_on_return(void **state)
{
	int irq = irq_line_create("wait");
	struct counts c = { 0 };

	(void)state;
	assert_int_equal(request_irq(irq, primary, 0, "wait", &c), 0);
	for (int i = 1; i <= 500; i++) {
		assert_int_equal(irq_line_raise_wait(irq), 0);
		/* One delivery per raise: nothing was pending to coalesce. */
		assert_int_equal(c.primary, i);
	}
	assert_int_equal(c.last_irq, irq);
	free_irq(irq, &c);
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void thread_function_finished_on_return(void **state)
{
	int irq = irq_line_create("wait-thread");
	struct counts c = { 0 };

	(void)state;
	assert_int_equal(request_threaded_irq(irq, wake, slow_thread,
					      IRQF_ONESHOT, "wait-thread", &c),
			 0);
	for (int i = 1; i <= 20; i++) {
		assert_int_equal(irq_line_raise_wait(irq), 0);
		assert_int_equal(c.primary, i);
		assert_int_equal(c.thread, i);
	}
	free_irq(irq, &c);
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void undeliverable_does_not_wait(void **state)
{
	int irq = irq_line_create("wait-off");
	struct counts c = { 0 };
	int seen;

	(void)state;
	/* No handler: nothing will take it. */
	assert_int_equal(irq_line_raise_wait(irq), -EAGAIN);
	assert_int_equal(request_irq(irq, primary, 0, "wait-off", &c), 0);
	/* Disabled: pending, delivered at enable_irq(). */
	disable_irq(irq);
	assert_int_equal(irq_line_raise_wait(irq), -EAGAIN);
	synchronize_irq(irq);
	seen = c.primary;
	enable_irq(irq);
	assert_int_equal(irq_line_raise_wait(irq), 0);
	assert_true(c.primary >= seen + 1 && c.primary <= seen + 2);
	free_irq(irq, &c);
	assert_int_equal(irq_line_destroy(irq), 0);
	/* Not a line. */
	assert_int_equal(irq_line_raise_wait(irq), -EINVAL);
	assert_int_equal(irq_line_raise_wait(0), -EINVAL);
}

static void from_a_handler_is_refused(void **state)
{
	int irq = irq_line_create("wait-outer"), inner = irq_line_create(NULL);
	struct counts c = { 0 }, o = { 0 };

	(void)state;
	c.other_irq = inner;
	assert_int_equal(request_irq(inner, primary, 0, "wait-inner", &o), 0);
	assert_int_equal(
		request_irq(irq, waits_from_handler, 0, "wait-outer", &c), 0);
	start_capture();
	assert_int_equal(irq_line_raise_wait(irq), 0);
	expect_warn_on("(no device)", "irq_line_raise_wait",
		       "from a handler it would wait for");
	assert_int_equal(c.nested_rc, -EDEADLK);
	assert_int_equal(c.primary, 1);
	free_irq(irq, &c);
	free_irq(inner, &o);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(irq_line_destroy(inner), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(each_raise_is_handled_on_return,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(
			thread_function_finished_on_return, irq_setup,
			irq_teardown),
		cmocka_unit_test_setup_teardown(undeliverable_does_not_wait,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(from_a_handler_is_refused,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
