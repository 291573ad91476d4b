/* SPDX-License-Identifier: MIT */
/*
 * The states of an interrupt line and its handler and the calls made on
 * them, as the states and pairs tests name them (docs/irq.md, "States of
 * a line and its handler"): the rows and columns of both tables, and how
 * a fresh line is brought to a row. Include after cmocka.h and testlib.h.
 */
#ifndef DEVRES_TESTS_IRQ_STATES_H
#define DEVRES_TESTS_IRQ_STATES_H

#include <devres/irq.h>

enum state {
	NOLINE,
	LINE,
	REQ,
	DEVM,
	DIS1,
	DIS2,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"no line",	  "line",	"requested",
	"devm requested", "disabled 1", "disabled 2",
};

enum call {
	REQUEST_OTHER,	    /* request_irq() of another dev_id, not shared */
	REQUEST_SAME,	    /* request_irq() of the same dev_id again */
	FREE,		    /* free_irq() of the state's dev_id */
	FREE_OTHER,	    /* free_irq() of a dev_id never requested */
	ENABLE,		    /* enable_irq() */
	DISABLE,	    /* disable_irq() */
	DISABLE_NOSYNC,	    /* disable_irq_nosync() */
	SYNCHRONIZE,	    /* synchronize_irq() */
	RAISE,		    /* irq_line_raise() */
	DESTROY,	    /* irq_line_destroy() */
	DEVM_REQUEST_OTHER, /* devm_request_irq() of another dev_id */
	DEVM_FREE,	    /* devm_free_irq() of the state's dev_id */
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"request_irq(other)", "request_irq(same)", "free_irq",
	"free_irq(other)",    "enable_irq",	   "disable_irq",
	"disable_irq_nosync", "synchronize_irq",   "irq_line_raise",
	"irq_line_destroy",   "devm_request_irq",  "devm_free_irq",
};

/*
 * Makes a line named @name and brings it to state @s, asserting each
 * step: destroyed again (NOLINE: its number stale), left alone (LINE),
 * @handler of @dev_id requested ("mine") by request_irq() and disabled
 * as often as the state says (REQ, DIS1, DIS2), or by devm_request_irq()
 * on tdev (DEVM). Returns the line; *@ret_depth, if given, is the
 * disables made.
 */
static inline int irq_state_reach(unsigned int s, const char *name,
				  irq_handler_t handler, void *dev_id,
				  int *ret_depth)
{
	int line = irq_line_create(name), depth = 0;

	assert_true(line > 0);
	switch (s) {
	case NOLINE:
		assert_int_equal(irq_line_destroy(line), 0);
		break;
	case LINE:
		break;
	case DIS2:
		depth++;
		/* fall through */
	case DIS1:
		depth++;
		/* fall through */
	case REQ:
		assert_int_equal(request_irq((unsigned int)line, handler, 0,
					     "mine", dev_id),
				 0);
		for (int i = 0; i < depth; i++)
			disable_irq((unsigned int)line);
		break;
	case DEVM:
		assert_int_equal(devm_request_irq(&tdev, (unsigned int)line,
						  handler, 0, "mine", dev_id),
				 0);
		break;
	default:
		fail();
	}
	if (ret_depth)
		*ret_depth = depth;
	return line;
}

#endif /* DEVRES_TESTS_IRQ_STATES_H */
