// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Interrupt lines and plain request_irq(): numbers, raising and
 * coalescing, disable depth, IRQF_NO_AUTOEN, shared lines, UIO-style fds,
 * close-on-exec, the dispatcher's start and stop, and bad arguments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

struct hctx {
	int calls;
	int irq;
	irqreturn_t ret;
};

static irqreturn_t count_handler(int irq, void *dev_id)
{
	struct hctx *h = dev_id;

	__atomic_store_n(&h->irq, irq, __ATOMIC_RELAXED);
	add_int(&h->calls, 1);
	return h->ret ? h->ret : IRQ_HANDLED;
}

static void lines_and_numbers(void **state)
{
	int a = irq_line_create("a"), b = irq_line_create(NULL);
	struct hctx h = { 0 };

	(void)state;
	assert_true(a > 0);
	assert_true(b > 0);
	assert_int_not_equal(a, b);
	assert_int_equal(irq_line_raise(a), 0);
	assert_int_equal(irq_line_destroy(a), 0);
	/* A destroyed line is gone for every call. */
	assert_int_equal(irq_line_raise(a), -EINVAL);
	assert_int_equal(request_irq(a, count_handler, 0, "x", &h), -EINVAL);
	start_capture();
	assert_int_equal(irq_line_destroy(a), -EINVAL);
	expect_warn_on("(no device)", "irq_line_destroy", "is not a line");
	/* Numbers are not reused at once. */
	a = irq_line_create("again");
	assert_true(a > b);
	assert_int_equal(irq_line_destroy(a), 0);
	assert_int_equal(irq_line_destroy(b), 0);
	assert_int_equal(irq_line_raise(0), -EINVAL);
	assert_int_equal(irq_line_raise(-3), -EINVAL);
	assert_int_equal(irq_line_attach_fd(-1, "x"), -EBADF);
	assert_int_equal(irq_line_attach_fd(987, "x"), -EBADF);
}

static void handler_runs_in_dispatcher(void **state)
{
	struct hctx h = { 0 };
	int irq = irq_line_create("run");

	(void)state;
	assert_true(wait_threads(irq_threads_base));
	assert_int_equal(request_irq(irq, count_handler, 0, "run-dev", &h), 0);
	/* The dispatcher started with the first request. */
	assert_int_equal(nr_threads(), irq_threads_base + 1);
	/* Handled when it returns: no wait loop needed. */
	assert_int_equal(irq_line_raise_wait(irq), 0);
	assert_int_equal(load_int(&h.calls), 1);
	assert_int_equal(__atomic_load_n(&h.irq, __ATOMIC_RELAXED), irq);
	assert_string_equal(free_irq(irq, &h), "run-dev");
	/* ... and is joined with the last free. */
	assert_true(wait_threads(irq_threads_base));
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void everything_is_cloexec(void **state)
{
	struct hctx h = { 0 };
	/* Inherited fds may lack it; none of ours may. */
	int base = count_fds_without_cloexec();
	int efd, a = irq_line_create("c1"), b = attached_line(&efd, "c2");

	(void)state;
	assert_int_equal(request_irq(a, count_handler, 0, "c", &h), 0);
	assert_int_equal(request_threaded_irq(b, NULL, count_handler,
					      IRQF_ONESHOT, "c", &h),
			 0);
	assert_int_equal(count_fds_without_cloexec(), base);
	free_irq(a, &h);
	free_irq(b, &h);
	assert_int_equal(irq_line_destroy(a), 0);
	assert_int_equal(irq_line_destroy(b), 0);
	close(efd);
}

static void raises_coalesce_while_disabled(void **state)
{
	struct hctx h = { 0 };
	int efd, irq = attached_line(&efd, "co");

	(void)state;
	assert_int_equal(request_irq(irq, count_handler, 0, "co", &h), 0);
	disable_irq(irq);
	for (int i = 0; i < 5; i++)
		assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_consumed(efd));
	synchronize_irq(irq);
	assert_int_equal(load_int(&h.calls), 0);
	/* Delivered when enabled again, once for the five. */
	enable_irq(irq);
	assert_true(wait_at_least(&h.calls, 1));
	synchronize_irq(irq);
	assert_int_equal(load_int(&h.calls), 1);
	free_irq(irq, &h);
	assert_int_equal(irq_line_destroy(irq), 0);
	close(efd);
}

static void disable_depth(void **state)
{
	struct hctx h = { 0 };
	int efd, irq = attached_line(&efd, "depth");

	(void)state;
	assert_int_equal(request_irq(irq, count_handler, 0, "depth", &h), 0);
	disable_irq_nosync(irq);
	disable_irq(irq);
	enable_irq(irq);
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_consumed(efd));
	synchronize_irq(irq);
	assert_int_equal(load_int(&h.calls), 0);
	enable_irq(irq);
	assert_true(wait_at_least(&h.calls, 1));
	start_capture();
	enable_irq(irq);
	expect_warn_on("(no device)", "enable_irq", "unbalanced enable");
	/* Still enabled, once. */
	assert_int_equal(irq_line_raise_wait(irq), 0);
	assert_int_equal(load_int(&h.calls), 2);
	free_irq(irq, &h);
	assert_int_equal(irq_line_destroy(irq), 0);
	close(efd);
}

static void no_autoen_and_early_raises(void **state)
{
	struct hctx h = { 0 };
	int efd, irq = attached_line(&efd, "auto");

	(void)state;
	/* Raised before any handler: dropped by the request. */
	assert_int_equal(irq_line_raise(irq), 0);
	assert_int_equal(
		request_irq(irq, count_handler, IRQF_NO_AUTOEN, "na", &h), 0);
	assert_true(wait_consumed(efd));
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_consumed(efd));
	synchronize_irq(irq);
	assert_int_equal(load_int(&h.calls), 0);
	enable_irq(irq);
	assert_true(wait_at_least(&h.calls, 1));
	synchronize_irq(irq);
	assert_int_equal(load_int(&h.calls), 1);
	free_irq(irq, &h);
	/* Pending interrupts of a freed line are dropped. */
	assert_int_equal(irq_line_raise(irq), 0);
	assert_int_equal(request_irq(irq, count_handler, 0, "na", &h), 0);
	assert_true(wait_consumed(efd));
	synchronize_irq(irq);
	assert_int_equal(load_int(&h.calls), 1);
	free_irq(irq, &h);
	assert_int_equal(irq_line_destroy(irq), 0);
	close(efd);
}

static void three_sharers(void **state)
{
	struct hctx h[3] = { { 0 } }, x = { 0 };
	int irq = irq_line_create("shared");

	(void)state;
	h[1].ret = IRQ_NONE;
	for (int i = 0; i < 3; i++)
		assert_int_equal(request_irq(irq, count_handler, IRQF_SHARED,
					     "sh", &h[i]),
				 0);
	/* Every sharer must agree, and name itself. */
	assert_int_equal(request_irq(irq, count_handler, 0, "x", &x), -EBUSY);
	assert_int_equal(request_irq(irq, count_handler, IRQF_SHARED, "x",
				     NULL),
			 -EINVAL);
	assert_int_equal(request_threaded_irq(irq, NULL, count_handler,
					      IRQF_SHARED | IRQF_ONESHOT, "x",
					      &x),
			 -EBUSY);
	assert_int_equal(irq_line_raise_wait(irq), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(load_int(&h[i].calls), 1);
	assert_non_null(free_irq(irq, &h[1]));
	assert_int_equal(irq_line_raise_wait(irq), 0);
	assert_int_equal(load_int(&h[0].calls), 2);
	assert_int_equal(load_int(&h[2].calls), 2);
	assert_int_equal(load_int(&h[1].calls), 1);
	start_capture();
	assert_null(free_irq(irq, &h[1]));
	expect_warn_on("(no device)", "free_irq", "no handler with dev_id");
	/* A line held without IRQF_SHARED takes nobody else. */
	free_irq(irq, &h[0]);
	free_irq(irq, &h[2]);
	assert_int_equal(request_irq(irq, count_handler, 0, "x", &x), 0);
	assert_int_equal(request_irq(irq, count_handler, IRQF_SHARED, "x",
				     &h[0]),
			 -EBUSY);
	free_irq(irq, &x);
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void bad_requests(void **state)
{
	struct hctx h = { 0 };
	struct devres_ledger before, after;
	int irq = irq_line_create("bad");

	(void)state;
	devres_ledger_snapshot(&before);
	start_capture();
	assert_int_equal(request_threaded_irq(irq, NULL, NULL, 0, "b", &h),
			 -EINVAL);
	expect_warn_on("(no device)", "request_threaded_irq",
		       "no handler and no thread_fn");
	start_capture();
	assert_int_equal(request_threaded_irq(irq, NULL, count_handler, 0, "b",
					      &h),
			 -EINVAL);
	expect_warn_on("(no device)", "request_threaded_irq",
		       "a NULL handler without IRQF_ONESHOT");
	start_capture();
	assert_int_equal(request_irq(irq, count_handler,
				     IRQF_SHARED | IRQF_NO_AUTOEN, "b", &h),
			 -EINVAL);
	expect_warn_on("(no device)", "request_irq",
		       "IRQF_NO_AUTOEN with IRQF_SHARED");
	assert_int_equal(request_irq(0, count_handler, 0, "b", &h), -EINVAL);
	assert_int_equal(request_irq(5000, count_handler, 0, "b", &h), -EINVAL);
	/* Injected failures: the allocation, then each dispatcher part. */
	for (unsigned int n = 1; n <= 5; n++) {
		devres_fail_nth(n);
		assert_true(request_irq(irq, count_handler, 0, "b", &h) < 0);
		assert_int_equal(devres_fail_nth_get(), 0);
	}
	devres_fail_nth(0);
	assert_true(wait_threads(irq_threads_base));
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	devres_fail_nth(1);
	/* Its fault point is the eventfd: out of fds. */
	assert_int_equal(irq_line_create("f"), -EMFILE);
	devres_fail_nth(0);
	start_capture();
	assert_null(free_irq(irq, &h));
	expect_warn_on("(no device)", "free_irq", "no handler");
	start_capture();
	assert_null(free_irq(4000, &h));
	expect_warn_on("(no device)", "free_irq", "is not a line");
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void destroy_with_handlers(void **state)
{
	struct hctx h = { 0 };
	int irq = irq_line_create("busy");

	(void)state;
	assert_int_equal(request_irq(irq, count_handler, 0, "busy", &h), 0);
	start_capture();
	assert_int_equal(irq_line_destroy(irq), -EBUSY);
	expect_warn_on("(no device)", "irq_line_destroy", "handlers attached");
	/* The line still works. */
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&h.calls, 1));
	free_irq(irq, &h);
	assert_int_equal(irq_line_destroy(irq), 0);
}

static void uio_fd(void **state)
{
	struct hctx h = { 0 };
	uint32_t v = 0, count = 1;
	struct pollfd p;
	int sv[2], irq;

	(void)state;
	/* A UIO device as seen from the driver: 4-byte counts, write 1. */
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	irq = irq_line_attach_fd(sv[0], "uio");
	assert_true(irq > 0);
	assert_int_equal(irq_line_raise(irq), -EOPNOTSUPP);
	assert_int_equal(request_irq(irq, count_handler, 0, "uio", &h), 0);
	/* The request enables the device's interrupt. */
	p = (struct pollfd){ .fd = sv[1], .events = POLLIN };
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_int_equal(read(sv[1], &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 1);
	for (int i = 1; i <= 3; i++) {
		count = (uint32_t)i;
		assert_int_equal(write(sv[1], &count, sizeof(count)),
				 sizeof(count));
		assert_true(wait_at_least(&h.calls, i));
		/* Handled: re-enabled. */
		assert_int_equal(poll(&p, 1, WAIT_MS), 1);
		v = 0;
		assert_int_equal(read(sv[1], &v, sizeof(v)), sizeof(v));
		assert_int_equal(v, 1);
	}
	/* Disabled: no re-enable until enable_irq(), then handled. */
	disable_irq(irq);
	assert_int_equal(write(sv[1], &count, sizeof(count)), sizeof(count));
	assert_true(wait_consumed(sv[0]));
	assert_int_equal(poll(&p, 1, 50), 0);
	assert_int_equal(load_int(&h.calls), 3);
	enable_irq(irq);
	assert_true(wait_at_least(&h.calls, 4));
	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_int_equal(read(sv[1], &v, sizeof(v)), sizeof(v));
	free_irq(irq, &h);
	assert_int_equal(irq_line_destroy(irq), 0);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Every number in use: the next line is refused with one WARN.
 * limit-cell: src/irq/internal.h:irq_dispatcher.in_set
 * limit-cell: src/irq/internal.h:irq_dispatcher.replay
 * limit-cell: src/irq/internal.h:irq_dispatcher.set_fd
 */
static void numbers_run_out(void **state)
{
	static int irqs[1100];
	int n = 0, ret;

	(void)state;
	start_capture();
	while ((ret = irq_line_create("many")) > 0 && n < 1100)
		irqs[n++] = ret;
	if (ret == -EMFILE) {
		while (n)
			irq_line_destroy(irqs[--n]);
		skip(); /* too few descriptors allowed here */
	}
	assert_int_equal(ret, -ENOSPC);
	expect_warn_on("(no device)", "irq_line_create",
		       "all 1023 line numbers are in use");
	/* The lines that exist are all usable; one freed is reused. */
	assert_int_equal(irq_line_raise(irqs[n - 1]), 0);
	assert_int_equal(irq_line_destroy(irqs[0]), 0);
	ret = irq_line_create("again");
	assert_int_equal(ret, irqs[0]);
	irqs[0] = ret;
	while (n)
		assert_int_equal(irq_line_destroy(irqs[--n]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lines_and_numbers, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(handler_runs_in_dispatcher,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(everything_is_cloexec,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(raises_coalesce_while_disabled,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(disable_depth, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(no_autoen_and_early_raises,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(three_sharers, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(bad_requests, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(destroy_with_handlers,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(numbers_run_out, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(uio_fd, irq_setup,
						irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
