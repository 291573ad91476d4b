// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A level-triggered line (irq_line_attach_level(), VFIO's INTx): the
 * source masks itself at each interrupt, and the line unmasks it through
 * the unmask eventfd after the handlers ran, and not while it is disabled.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "irq-test.h"

static int handled;

static irqreturn_t count_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&handled, 1);
	return IRQ_HANDLED;
}

/* The unmask writes seen on @fd within @ms milliseconds. */
static uint64_t unmasks(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v = 0;

	if (poll(&p, 1, ms) == 1)
		assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	return v;
}

static void unmasked_after_handler(void **state)
{
	int trig = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int um = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t one = 1;
	int irq;

	(void)state;
	handled = 0;
	irq = irq_line_attach_level(trig, um, "level");
	assert_true(irq > 0);
	assert_int_equal(request_irq((unsigned int)irq, count_handler, 0, "lvl",
				     &handled),
			 0);
	(void)unmasks(um, 200); /* the request lets a source fire again */

	assert_int_equal(write(trig, &one, sizeof(one)), sizeof(one));
	assert_true(wait_at_least(&handled, 1));
	assert_int_equal(unmasks(um, WAIT_MS), 1);

	/* Disabled: handled later, and unmasked only then. */
	disable_irq((unsigned int)irq);
	assert_int_equal(write(trig, &one, sizeof(one)), sizeof(one));
	assert_int_equal(unmasks(um, 200), 0);
	assert_int_equal(load_int(&handled), 1);
	enable_irq((unsigned int)irq);
	assert_true(wait_at_least(&handled, 2));
	assert_int_equal(unmasks(um, WAIT_MS), 1);

	assert_ptr_equal(free_irq((unsigned int)irq, &handled), "lvl");
	assert_int_equal(irq_line_destroy(irq), 0);
	close(trig);
	close(um);
}

static void bad_fds(void **state)
{
	int trig = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(irq_line_attach_level(trig, -1, NULL), -EBADF);
	assert_int_equal(irq_line_attach_level(trig, p[0], NULL), -EBADF);
	/* The source must be an eventfd too. */
	assert_int_equal(irq_line_attach_level(p[0], trig, NULL), -EBADF);
	assert_int_equal(irq_line_attach_level(-1, trig, NULL), -EBADF);
	close(p[0]);
	close(p[1]);
	close(trig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unmasked_after_handler,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(bad_fds, irq_setup,
						irq_teardown),
	};

	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
