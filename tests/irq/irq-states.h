/* SPDX-License-Identifier: MIT */
/*
 * The states of an interrupt line and its handler and the calls made on
 * them, as the states and pairs tests name them (docs/irq.md, "States of
 * a line and its handler"): the rows and columns of both tables.
 */
#ifndef DEVRES_TESTS_IRQ_STATES_H
#define DEVRES_TESTS_IRQ_STATES_H

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

#endif /* DEVRES_TESTS_IRQ_STATES_H */
