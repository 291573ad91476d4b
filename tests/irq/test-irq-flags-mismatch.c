// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A request refused because the line's holder and the request disagree
 * (a holder or a request without IRQF_SHARED, or IRQF_ONESHOT on one side
 * only) is a conflict, not a misuse: -EBUSY and, as the kernel's
 * __setup_irq() pr_err()s, one error line, "Flags mismatch irq <n>.
 * <flags> (<name>) vs. <flags> (<holder's name>)", not counted as a WARN.
 * A request that shares the line says nothing. Table: the holder's flags
 * x the request's x the four requesting calls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

static const unsigned long flags[] = { 0, IRQF_SHARED,
				       IRQF_SHARED | IRQF_ONESHOT };

#define NR_FLAGS 3

enum call {
	REQUEST,
	THREADED,
	DEVM,
	DEVM_THREADED,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = { "request_irq",
						 "request_threaded_irq",
						 "devm_request_irq",
						 "devm_request_threaded_irq" };

/* What the line names: the kernel's request_irq() is a wrapper. */
static const char *const line_func[NR_CALLS] = { "(no device): "
						 "request_threaded_irq",
						 "(no device): "
						 "request_threaded_irq",
						 "test-dev: devm_request_irq",
						 "test-dev: "
						 "devm_request_threaded_irq" };

static int holder_id, my_id;

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static int request(enum call c, int line, unsigned long f)
{
	switch (c) {
	case REQUEST:
		return request_irq(line, handler, f, "mine", &my_id);
	case THREADED:
		return request_threaded_irq(line, handler, handler, f, "mine",
					    &my_id);
	case DEVM:
		return devm_request_irq(&tdev, line, handler, f, "mine",
					&my_id);
	default:
		return devm_request_threaded_irq(&tdev, line, handler, handler,
						 f, "mine", &my_id);
	}
}

static void release(enum call c, int line)
{
	if (c == DEVM || c == DEVM_THREADED)
		devm_free_irq(&tdev, line, &my_id);
	else
		free_irq(line, &my_id);
}

static void every_cell(void **state)
{
	int failed = 0, line = irq_line_create("mismatch");

	(void)state;
	assert_true(line > 0);
	for (int h = 0; h < NR_FLAGS; h++)
		for (int r = 0; r < NR_FLAGS; r++)
			for (int c = 0; c < NR_CALLS; c++) {
				bool refused =
					!(flags[h] & flags[r] & IRQF_SHARED) ||
					flags[h] != flags[r];
				char want[160];
				int ret, warns;

				assert_int_equal(request_irq(line, handler,
							     flags[h], "holder",
							     &holder_id),
						 0);
				snprintf(want, sizeof(want),
					 "%s: Flags mismatch irq %d. %08lx "
					 "(mine) vs. %08lx (holder)",
					 line_func[c], line, flags[r],
					 flags[h]);
				warns = devres_warn_count();
				start_log_capture();
				ret = request((enum call)c, line, flags[r]);
				devres_set_log_sink(NULL, NULL);
				if (ret != (refused ? -EBUSY : 0) ||
				    cap.n != refused ||
				    devres_warn_count() != warns ||
				    (refused &&
				     (strcmp(cap.line[0], want) != 0 ||
				      cap.level[0] != DEVRES_LOG_ERR))) {
					fprintf(stderr,
						"holder %#lx, %s %#lx: %d, "
						"%d line(s): \"%s\"\n",
						flags[h], call_name[c],
						flags[r], ret, cap.n,
						cap.line[0]);
					failed++;
				}
				if (!ret)
					release((enum call)c, line);
				free_irq(line, &holder_id);
			}
	assert_int_equal(irq_line_destroy(line), 0);
	assert_int_equal(failed, 0);
}

/*
 * The holder's name is copied under the line's lock, the holder free to
 * go once it is let go: cut at 63 bytes in the line, the request refused
 * all the same.
 * limit-cell: src/irq/manage.c:mismatch.name
 */
static void long_holder_name(void **state)
{
	int line = irq_line_create("mismatch");
	char name[200], want[256];

	(void)state;
	assert_true(line > 0);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	assert_int_equal(request_irq(line, handler, 0, name, &holder_id), 0);
	snprintf(want, sizeof(want),
		 "(no device): request_threaded_irq: Flags mismatch irq %d. "
		 "%08lx (mine) vs. %08lx (%.63s)",
		 line, 0ul, 0ul, name);
	start_log_capture();
	assert_int_equal(request((enum call)REQUEST, line, 0), -EBUSY);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, 1);
	assert_string_equal(cap.line[0], want);
	free_irq(line, &holder_id);
	assert_int_equal(irq_line_destroy(line), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_cell, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(long_holder_name, irq_setup,
						irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
