// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every public call on an interrupt line and its handler, in every state
 * of the two (docs/irq.md, "States"): the line never made or destroyed,
 * made with no handler, a handler requested (plain or managed), disabled
 * once or twice. Each cell starts from a fresh line, brings it to the
 * state, makes the call once and checks the return value and the exact
 * number of WARNs against the table; then the line must still be in a
 * consistent state: everything left is given back (the device's release,
 * free_irq() of what is still attached, the enables the state owes), the
 * line is destroyed with 0, no handler thread is left, and the ledger is
 * back at its baseline (ASan, TSan, the fixture). The number of cells is
 * states x calls; a call or a state added without its column or row fails
 * to compile (the table is sized by the enums).
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
#include "states.h"
#include "irq/irq-test.h"
#include "irq/irq-states.h"

#define C(r, w) STATES_CELL(r, w)
#define OK STATES_OK

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* request other, same, free, free other, enable, disable, nosync,
	 * synchronize, raise, destroy, devm request, devm free */
	/* A request of a number that is no line fails quietly, as the
	 * kernel's (no descriptor): it is not a misuse of a handler. */
	[NOLINE] = { C(-EINVAL, 0), C(-EINVAL, 0), C(0, 1), C(0, 1), C(0, 1),
		     C(0, 1), C(0, 1), C(0, 1), C(-EINVAL, 0), C(-EINVAL, 1),
		     C(-EINVAL, 0), C(0, 1) },
	[LINE] = { OK, OK, C(0, 1), C(0, 1), C(0, 1), OK, OK, OK, OK, OK, OK,
		   C(0, 1) },
	[REQ] = { C(-EBUSY, 0), C(-EBUSY, 0), OK, C(0, 1), C(0, 1), OK, OK, OK,
		  OK, C(-EBUSY, 1), C(-EBUSY, 0), C(0, 1) },
	[DEVM] = { C(-EBUSY, 0), C(-EBUSY, 0), C(0, 1), C(0, 1), C(0, 1), OK,
		   OK, OK, OK, C(-EBUSY, 1), C(-EBUSY, 0), OK },
	[DIS1] = { C(-EBUSY, 0), C(-EBUSY, 0), OK, C(0, 1), OK, OK, OK, OK, OK,
		   C(-EBUSY, 1), C(-EBUSY, 0), C(0, 1) },
	[DIS2] = { C(-EBUSY, 0), C(-EBUSY, 0), OK, C(0, 1), OK, OK, OK, OK, OK,
		   C(-EBUSY, 1), C(-EBUSY, 0), C(0, 1) },
};

static int mine, theirs, calls;

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&calls, 1);
	return IRQ_HANDLED;
}

static int line;
static bool line_gone;
static int depth; /* disables the state owes an enable for */
static bool plain_mine, plain_theirs, managed;

static void reach(unsigned int s)
{
	line = irq_state_reach(s, "states", handler, &mine, &depth);
	line_gone = s == NOLINE;
	plain_mine = s == REQ || s == DIS1 || s == DIS2;
	managed = s == DEVM;
	plain_theirs = false;
}

static int make(unsigned int c)
{
	unsigned int irq = (unsigned int)line;
	int ret = 0;

	switch (c) {
	case REQUEST_OTHER:
		ret = request_irq(irq, handler, 0, "theirs", &theirs);
		plain_theirs |= ret == 0;
		break;
	case REQUEST_SAME:
		ret = request_irq(irq, handler, 0, "again", &mine);
		plain_mine |= ret == 0;
		break;
	case FREE:
		if (free_irq(irq, &mine))
			plain_mine = managed = false;
		break;
	case FREE_OTHER:
		(void)free_irq(irq, &theirs);
		break;
	case ENABLE:
		enable_irq(irq);
		if (depth)
			depth--;
		break;
	case DISABLE:
		disable_irq(irq);
		depth += !line_gone;
		break;
	case DISABLE_NOSYNC:
		disable_irq_nosync(irq);
		depth += !line_gone;
		break;
	case SYNCHRONIZE:
		synchronize_irq(irq);
		break;
	case RAISE:
		ret = irq_line_raise(line);
		break;
	case DESTROY:
		ret = irq_line_destroy(line);
		line_gone |= ret == 0;
		break;
	case DEVM_REQUEST_OTHER:
		ret = devm_request_irq(&tdev, irq, handler, 0, "theirs",
				       &theirs);
		break;
	case DEVM_FREE:
		devm_free_irq(&tdev, irq, &mine);
		break;
	default:
		fail();
	}
	return ret;
}

/*
 * Gives back whatever the cell left, then the line must be destroyable:
 * no handler, reference or call in progress left on it by the cell.
 */
static void undo(void)
{
	devres_set_log_sink(states_discard, NULL);
	devres_release_all(&tdev);
	if (plain_mine && !line_gone)
		(void)free_irq((unsigned int)line, &mine);
	if (plain_theirs && !line_gone)
		(void)free_irq((unsigned int)line, &theirs);
	devres_set_log_sink(NULL, NULL);
	if (!line_gone)
		assert_int_equal(irq_line_destroy(line), 0);
}

static int cell_setup(void **state)
{
	if (irq_threads_settle())
		return -1;
	return dev_setup(state);
}

static const struct states_table irq_states =
	STATES_TABLE(table, state_name, call_name, reach, make, undo,
		     cell_setup, irq_teardown);

int main(void)
{
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS];
	size_t n = states_tests(&irq_states, ids, tests);

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return _cmocka_run_group_tests("irq-states", tests, n, NULL, NULL);
}
