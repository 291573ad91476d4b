// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A handler that requests a handler on its own line: the new handler is
 * called from the next interrupt on, not in the delivery that requested
 * it. One called at once could request the next, in the same delivery,
 * for ever (a shared handler that attaches a peer each time it runs hung
 * the dispatcher). Each way a handler can be added from a delivery:
 * request_irq(), request_threaded_irq() and devm_request_irq() of the
 * same line; and a request on another line, whose own delivery is
 * unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

enum how {
	BY_REQUEST,
	BY_THREADED,
	BY_DEVM,
	HOWS
};

static const char *const how_name[HOWS] = {
	"request_irq",
	"request_threaded_irq",
	"devm_request_irq",
};

/* Up to 8 handlers (three deliveries), each with its count of calls. */
#define PEERS 8

static struct {
	enum how how;
	int irq;
	int next;	      /* peers requested */
	int calls[PEERS];     /* each peer's calls */
	int requested[PEERS]; /* in which delivery each was requested */
	int delivery;	      /* deliveries begun, by peer 0's count */
	int errors;
} st;

static irqreturn_t peer(int irq, void *dev_id);

/* The thread function of a threaded peer: nothing to do. */
static irqreturn_t peer_thread(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* Requests the next peer, as @st.how says; called from a delivery. */
static void request_next(void)
{
	int n = st.next;
	int ret;

	if (n >= PEERS)
		return;
	st.next++;
	st.requested[n] = st.delivery;
	switch (st.how) {
	case BY_THREADED:
		ret = request_threaded_irq((unsigned int)st.irq, peer,
					   peer_thread, IRQF_SHARED, "peer",
					   &st.calls[n]);
		break;
	case BY_DEVM:
		ret = devm_request_irq(&tdev, (unsigned int)st.irq, peer,
				       IRQF_SHARED, "peer", &st.calls[n]);
		break;
	default:
		ret = request_irq((unsigned int)st.irq, peer, IRQF_SHARED,
				  "peer", &st.calls[n]);
	}
	if (ret)
		st.errors++;
}

static irqreturn_t peer(int irq, void *dev_id)
{
	int self = (int)((int *)dev_id - st.calls);

	(void)irq;
	if (self == 0)
		st.delivery++;
	st.calls[self]++;
	request_next();
	return IRQ_HANDLED;
}

/* Frees every peer still attached. */
static void free_peers(void)
{
	for (int i = 0; i < st.next; i++)
		if (st.how != BY_DEVM || i == 0)
			(void)free_irq((unsigned int)st.irq, &st.calls[i]);
	devres_release_all(&tdev);
}

static void one_way(enum how how)
{
	int efd;

	memset(&st, 0, sizeof(st));
	st.how = how;
	st.irq = attached_line(&efd, "peers");
	st.next = 1;
	assert_int_equal(request_irq((unsigned int)st.irq, peer, IRQF_SHARED,
				     "peer", &st.calls[0]),
			 0);
	start_capture();
	for (int round = 1; round <= 3; round++) {
		assert_int_equal(irq_line_raise_wait(st.irq), 0);
		/*
		 * One delivery; each peer called requested one more, called
		 * from the next delivery on: the peers double.
		 */
		assert_int_equal(st.delivery, round);
		assert_int_equal(st.next, 1 << round);
		for (int i = 0; i < st.next; i++) {
			int want = st.delivery - st.requested[i];

			if (st.calls[i] != want)
				print_error("%s: round %d, peer %d: %d calls, "
					    "want %d\n",
					    how_name[how], round, i,
					    st.calls[i], want);
			assert_int_equal(st.calls[i], want);
		}
	}
	expect_no_warn();
	assert_int_equal(st.errors, 0);
	free_peers();
	assert_int_equal(irq_line_destroy(st.irq), 0);
	close(efd);
}

static void every_way_waits_for_the_next_interrupt(void **state)
{
	(void)state;
	for (int how = 0; how < HOWS; how++) {
		print_message("%s from a handler of the line\n", how_name[how]);
		one_way((enum how)how);
	}
}

/* A request on another line from a handler: each line's own delivery. */
static int other_calls, own_calls, other_irq;

static irqreturn_t other_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	other_calls++;
	return IRQ_HANDLED;
}

static irqreturn_t requests_other(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	if (!own_calls++ && request_irq((unsigned int)other_irq, other_handler,
					0, "other", &other_calls))
		own_calls = -100;
	return IRQ_HANDLED;
}

static void other_line(void **state)
{
	int efd, ofd, irq;

	(void)state;
	irq = attached_line(&efd, "own");
	other_irq = attached_line(&ofd, "other");
	assert_int_equal(request_irq((unsigned int)irq, requests_other, 0,
				     "own", &own_calls),
			 0);
	assert_int_equal(irq_line_raise_wait(irq), 0);
	assert_int_equal(own_calls, 1);
	assert_int_equal(other_calls, 0);
	assert_int_equal(irq_line_raise_wait(other_irq), 0);
	assert_int_equal(other_calls, 1);
	assert_non_null(free_irq((unsigned int)other_irq, &other_calls));
	assert_non_null(free_irq((unsigned int)irq, &own_calls));
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(irq_line_destroy(other_irq), 0);
	close(efd);
	close(ofd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			every_way_waits_for_the_next_interrupt, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(other_line, dev_setup,
						dev_teardown),
	};

	/* A hang is a failure, not a stuck suite. */
	alarm(60);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
