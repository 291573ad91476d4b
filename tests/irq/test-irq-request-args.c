// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A request refused for its own arguments, whatever the line: no handler
 * and no thread function; a NULL handler without IRQF_ONESHOT (the
 * kernel's "Threaded irq requested with handler=NULL and !ONESHOT");
 * IRQF_SHARED without a dev_id; IRQF_NO_AUTOEN with IRQF_SHARED. Each is
 * a driver's bug on every line, and each of the five request calls
 * returns -EINVAL with exactly one WARN naming the call (and the device,
 * for a managed one) and the reason. Only the first WARNed: the other
 * three returned -EINVAL and said nothing. A control row makes the same
 * call with good arguments (0, no WARN). Each cell runs on a line with no
 * handler and on one held by a shared handler of another dev_id; after
 * it nothing of the refused request is left: no node on the device, no
 * handler on the line (the sharer freed, the line destroys with 0), and
 * the fixture's ledger is back at its baseline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

enum args {
	GOOD,		  /* the control: a shared request of a new dev_id */
	NO_HANDLERS,	  /* handler and thread_fn NULL */
	NULL_NO_ONESHOT,  /* handler NULL, a thread_fn, no IRQF_ONESHOT */
	SHARED_NO_ID,	  /* IRQF_SHARED, dev_id NULL */
	SHARED_NO_AUTOEN, /* IRQF_SHARED | IRQF_NO_AUTOEN */
	NR_ARGS
};
static const char *const args_name[NR_ARGS] = {
	"good",
	"no handler, no thread_fn",
	"NULL handler without IRQF_ONESHOT",
	"IRQF_SHARED without dev_id",
	"IRQF_NO_AUTOEN with IRQF_SHARED",
};

enum call {
	REQUEST_IRQ,
	REQUEST_THREADED_IRQ,
	DEVM_REQUEST_IRQ,
	DEVM_REQUEST_THREADED_IRQ,
	DEVM_REQUEST_ANY_CONTEXT_IRQ,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"request_irq",
	"request_threaded_irq",
	"devm_request_irq",
	"devm_request_threaded_irq",
	"devm_request_any_context_irq",
};

enum line_state {
	FREE_LINE,
	SHARED_LINE,
	NR_LINE_STATES
};
static const char *const line_name[NR_LINE_STATES] = { "no handler", "a shared "
								     "handle"
								     "r" };

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* One line of the last WARN, and how many came. */
static char warned[512];
static int nwarned;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (level != DEVRES_LOG_WARNING)
		return;
	nwarned++;
	snprintf(warned, sizeof(warned), "%s", line);
}

/* The call's arguments for a row; the rest is the call's own. */
struct req {
	irq_handler_t handler, thread_fn;
	unsigned long flags;
	void *dev_id;
};

static struct req row_args(enum args a, void *mine)
{
	switch (a) {
	case NO_HANDLERS:
		return (struct req){ NULL, NULL, IRQF_SHARED | IRQF_ONESHOT,
				     mine };
	case NULL_NO_ONESHOT:
		return (struct req){ NULL, handler, IRQF_SHARED, mine };
	case SHARED_NO_ID:
		return (struct req){ handler, NULL, IRQF_SHARED, NULL };
	case SHARED_NO_AUTOEN:
		return (struct req){ handler, NULL,
				     IRQF_SHARED | IRQF_NO_AUTOEN, mine };
	default:
		return (struct req){ handler, NULL, IRQF_SHARED, mine };
	}
}

static bool has_thread_arg(enum call c)
{
	return c == REQUEST_THREADED_IRQ || c == DEVM_REQUEST_THREADED_IRQ;
}

static int call(enum call c, unsigned int irq, const struct req *r)
{
	switch (c) {
	case REQUEST_IRQ:
		return request_irq(irq, r->handler, r->flags, "args",
				   r->dev_id);
	case REQUEST_THREADED_IRQ:
		return request_threaded_irq(irq, r->handler, r->thread_fn,
					    r->flags, "args", r->dev_id);
	case DEVM_REQUEST_IRQ:
		return devm_request_irq(&tdev, irq, r->handler, r->flags,
					"args", r->dev_id);
	case DEVM_REQUEST_THREADED_IRQ:
		return devm_request_threaded_irq(&tdev, irq, r->handler,
						 r->thread_fn, r->flags, "args",
						 r->dev_id);
	default:
		return devm_request_any_context_irq(
			&tdev, irq, r->handler, r->flags, "args", r->dev_id);
	}
}

/* What the WARN must say after its device and call; NULL for none. */
static const char *reason(enum args a, enum call c)
{
	switch (a) {
	case NO_HANDLERS:
		return "no handler and no thread_fn";
	case NULL_NO_ONESHOT:
		/* No thread_fn to give: both are NULL. */
		return has_thread_arg(c) ? "a NULL handler without IRQF_ONESHOT"
					 : "no handler and no thread_fn";
	case SHARED_NO_ID:
		return "IRQF_SHARED without a dev_id";
	case SHARED_NO_AUTOEN:
		return "IRQF_NO_AUTOEN with IRQF_SHARED";
	default:
		return NULL;
	}
}

/* One cell; 0 when it held, else a step's number (printed). */
static int cell(enum args a, enum call c, enum line_state s)
{
	int line = irq_line_create("args"), mine, sharer, rc, warns;
	bool devm = c >= DEVM_REQUEST_IRQ;
	struct req r = row_args(a, &mine);
	const char *why = reason(a, c);
	char head[128];

	if (line <= 0)
		return 1;
	if (s == SHARED_LINE &&
	    request_irq(line, handler, IRQF_SHARED, "sharer", &sharer))
		return 2;
	nwarned = 0;
	warned[0] = 0;
	warns = devres_warn_count();
	devres_set_log_sink(sink, NULL);
	rc = call(c, (unsigned int)line, &r);
	devres_set_log_sink(NULL, NULL);
	if (rc != (why ? -EINVAL : 0))
		return 3;
	if (nwarned != (why ? 1 : 0) || devres_warn_count() - warns != nwarned)
		return 4;
	snprintf(head, sizeof(head),
		 "WARNING: %s: %s: ", devm ? "test-dev" : "(no device)",
		 call_name[c]);
	if (why &&
	    (strncmp(warned, head, strlen(head)) != 0 || !strstr(warned, why)))
		return 5;
	/* The control's handler goes; a refused request left nothing. */
	if (devm && devres_release_all(&tdev) != (why ? 0 : 1))
		return 6;
	if (!devm && !why && !free_irq((unsigned int)line, &mine))
		return 7;
	if (s == SHARED_LINE && !free_irq((unsigned int)line, &sharer))
		return 8;
	return irq_line_destroy(line) == 0 ? 0 : 9;
}

static void every_call_every_bad_argument(void **state)
{
	int failed = 0;

	(void)state;
	for (int a = 0; a < NR_ARGS; a++)
		for (int c = 0; c < NR_CALLS; c++)
			for (int s = 0; s < NR_LINE_STATES; s++) {
				int st = cell((enum args)a, (enum call)c,
					      (enum line_state)s);

				if (!st)
					continue;
				failed++;
				print_error("cell %s / %s / %s: step %d (%s)\n",
					    args_name[a], call_name[c],
					    line_name[s], st, warned);
			}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_call_every_bad_argument,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
