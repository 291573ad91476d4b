// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * Every pair of public calls on an interrupt line and its handler, made
 * at once from two threads, in every state of tests/irq/test-irq-states.c
 * (docs/irq.md, "States"), many rounds (DEVRES_PAIRS_ROUNDS). Each pair
 * must end as one of its two serial orders does (tests/pairs.h): the same
 * returns, the same WARNs, and the same line after it: its disable depth
 * (counted by enabling it until enable_irq() WARNs "unbalanced"), the
 * device's nodes, which handlers free_irq() still finds, and whether the
 * line then destroys with 0 (or was destroyed by the pair). A handler
 * left attached, a depth lost by two updates at once, a WARN neither
 * order prints or a hang (alarm) fails the pair; the ledger is back at
 * its baseline after each state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"
#include "irq/irq-test.h"
#include "irq/irq-states.h"

static int mine, theirs;

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static int line;

static void reach(unsigned int s)
{
	line = irq_state_reach(s, "pairs", handler, &mine, NULL);
}

/* Either thread: what it returns is all it records. */
static int make(unsigned int c)
{
	unsigned int irq = (unsigned int)line;

	switch (c) {
	case REQUEST_OTHER:
		return request_irq(irq, handler, 0, "theirs", &theirs);
	case REQUEST_SAME:
		return request_irq(irq, handler, 0, "again", &mine);
	case FREE:
		return free_irq(irq, &mine) != NULL;
	case FREE_OTHER:
		return free_irq(irq, &theirs) != NULL;
	case ENABLE:
		enable_irq(irq);
		return 0;
	case DISABLE:
		disable_irq(irq);
		return 0;
	case DISABLE_NOSYNC:
		disable_irq_nosync(irq);
		return 0;
	case SYNCHRONIZE:
		synchronize_irq(irq);
		return 0;
	case RAISE:
		return irq_line_raise(line);
	case DESTROY:
		return irq_line_destroy(line);
	case DEVM_REQUEST_OTHER:
		return devm_request_irq(&tdev, irq, handler, 0, "theirs",
					&theirs);
	case DEVM_FREE:
		devm_free_irq(&tdev, irq, &mine);
		return 0;
	default:
		fail();
	}
	return 0;
}

static int nodes(void)
{
	struct devres_stats st;

	devres_get_stats(&tdev, &st);
	return (int)st.allocs;
}

/*
 * What the pair left: the device's nodes, the disable depth, which
 * handlers free_irq() finds, what irq_line_destroy() says, and the WARNs
 * all this printed (an enable past the depth prints one; a free of what
 * is not there, a destroy of what is gone, one each).
 */
static void undo(struct pairs_outcome *o)
{
	unsigned int irq = (unsigned int)line;
	int w0 = devres_warn_count(), w;

	o->after[0] = nodes();
	for (int depth = 0; depth < 8; depth++) {
		w = devres_warn_count();
		enable_irq(irq);
		if (devres_warn_count() != w) {
			o->after[1] = depth;
			break;
		}
	}
	devres_release_all(&tdev);
	o->after[2] = free_irq(irq, &mine) != NULL;
	o->after[2] |= (free_irq(irq, &theirs) != NULL) << 1;
	o->after[3] = irq_line_destroy(line);
	o->after[4] = devres_warn_count() - w0;
	if (o->after[3] == -EBUSY) {
		/* Whatever held it, the next round must not inherit it. */
		devres_release_all(&tdev);
		(void)free_irq(irq, &mine);
		(void)free_irq(irq, &theirs);
		(void)irq_line_destroy(line);
	}
}

#ifdef T_TSAN
#define ROUNDS 10
#else
#define ROUNDS 12
#endif

/*
 * free_irq() by hand of the managed handler, made after devm_free_irq()
 * took its node off the device but before it freed the handler: the
 * plain call frees it with its WARN and the managed one finds the node no
 * longer its own and says nothing (src/base/disown.c).
 */
static bool devm_also(unsigned int s, unsigned int a, unsigned int b,
		      const struct pairs_outcome *got,
		      const struct pairs_outcome *ser)
{
	return s == DEVM && pairs_taken(a, b, got, ser, FREE, DEVM_FREE, ~0U);
}

PAIRS_TEST(every_pair_in_every_state, ROUNDS,
	   PAIRS_NAMES(state_name, call_name), .reach = reach, .call = make,
	   .undo = undo, .also = devm_also)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	/* A pair that hangs fails the test instead of its timeout. */
	alarm(100);
	return cmocka_run_group_tests_name("irq-pairs", tests, NULL, NULL);
}
