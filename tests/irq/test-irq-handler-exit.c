// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A primary handler that ends the thread it runs on, the dispatcher:
 * pthread_exit(), or a cancellation it asks for itself and then meets a
 * cancellation point. The dispatcher is the library's thread and serves
 * every line: it used to die with the handler, the line stayed "running"
 * for ever (synchronize_irq() and free_irq() of it never returned) and no
 * other line got an interrupt again.
 *
 * Now the exit gets one WARN, the interrupt it was handling is done, the
 * dispatcher goes on in a new thread (every line, the handler's own
 * included, keeps getting its interrupts), and free_irq() returns. A
 * cancellation never ends the dispatcher: a handler's cancellation points
 * are not ones (as a hard interrupt handler cannot be killed), so the
 * handler that asks for one simply returns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

static int calls, other_calls, after_cancel;

enum how {
	EXIT,
	CANCEL
};

static irqreturn_t ending(int irq, void *dev_id)
{
	enum how how = (enum how)(intptr_t)dev_id;
	int n = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);

	(void)irq;
	/* The first interrupt ends the thread; later ones are handled. */
	if (n > 1)
		return IRQ_HANDLED;
	if (how == EXIT)
		pthread_exit(NULL);
	pthread_cancel(pthread_self());
	/* A cancellation point: not one on the dispatcher. */
	poll(NULL, 0, 1);
	pthread_testcancel();
	__atomic_add_fetch(&after_cancel, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static irqreturn_t bystander(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&other_calls, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static void ends_dispatcher(enum how how)
{
	int a = irq_line_create("ending"), b = irq_line_create("other");

	alarm(30);
	calls = other_calls = after_cancel = 0;
	assert_true(a > 0 && b > 0);
	assert_int_equal(
		request_irq(a, ending, 0, "ending", (void *)(intptr_t)how), 0);
	assert_int_equal(request_irq(b, bystander, 0, "other", NULL), 0);
	start_capture();
	assert_int_equal(irq_line_raise(a), 0);
	assert_true(wait_at_least(&calls, 1));
	/* The interrupt is done: this returns. */
	synchronize_irq(a);
	if (how == EXIT)
		expect_warn_on("(no device)", "irq_dispatch",
			       "the handler 'ending' ended the dispatcher "
			       "thread");
	else
		expect_no_warn();
	assert_int_equal(load_int(&after_cancel), how == CANCEL);

	/* Both lines are served again, by the dispatcher's new thread. */
	start_capture();
	assert_int_equal(irq_line_raise(b), 0);
	assert_true(wait_at_least(&other_calls, 1));
	assert_int_equal(irq_line_raise(a), 0);
	assert_true(wait_at_least(&calls, 2));
	synchronize_irq(a);
	synchronize_irq(b);
	assert_string_equal(free_irq(a, (void *)(intptr_t)how), "ending");
	assert_string_equal(free_irq(b, NULL), "other");
	expect_no_warn();
	assert_int_equal(irq_line_destroy(a), 0);
	assert_int_equal(irq_line_destroy(b), 0);
	alarm(0);
}

static void handler_exits(void **state)
{
	(void)state;
	ends_dispatcher(EXIT);
}

static void handler_cancels_itself(void **state)
{
	(void)state;
	ends_dispatcher(CANCEL);
}

static int thread_calls;

static irqreturn_t wake_it(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

/* Asks for its own cancellation and returns before any cancel point. */
static irqreturn_t cancels_then_returns(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	if (__atomic_add_fetch(&thread_calls, 1, __ATOMIC_RELAXED) == 1)
		pthread_cancel(pthread_self());
	return IRQ_HANDLED;
}

/*
 * A thread function that asks for its thread's cancellation and returns:
 * the request must not act at a cancellation point of the library's own
 * loop (the wait for the next wake, which holds the line's lock when it
 * acts: it used to end the thread with the lock held, and every later
 * call on the line waited for ever). It acts inside the function's next
 * call at the latest, where an end of the thread is caught (one WARN).
 */
static void thread_function_cancels_itself(void **state)
{
	int irq = irq_line_create("tcancel");

	(void)state;
	alarm(30);
	thread_calls = 0;
	assert_int_equal(request_threaded_irq(irq, wake_it,
					      cancels_then_returns,
					      IRQF_ONESHOT, "tcancel", NULL),
			 0);
	start_log_capture();
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&thread_calls, 1));
	synchronize_irq(irq);
	/* The line still works: its primary runs, its lock is free. */
	assert_int_equal(irq_line_raise(irq), 0);
	synchronize_irq(irq);
	disable_irq(irq);
	enable_irq(irq);
	assert_string_equal(free_irq(irq, NULL), "tcancel");
	devres_set_log_sink(NULL, NULL);
	/* At most the thread's end, WARNed once; nothing else. */
	assert_true(cap.n <= 1);
	if (cap.n)
		assert_non_null(strstr(cap.line[0], "ended its thread"));
	assert_int_equal(irq_line_destroy(irq), 0);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(handler_exits, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(handler_cancels_itself,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(thread_function_cancels_itself,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
