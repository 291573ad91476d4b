// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
/*
 * Every place a line's reference is dropped, with the line destroyed
 * while that reference was its last: irq_line_destroy() of a referenced
 * line without handlers takes it out of the table at once and leaves it
 * to the last drop to free (docs/irq.md, "Lines"). Each row holds the
 * reference somewhere, frees the line's handler and destroys the line
 * from there, then lets go the way its column says: by returning, or by
 * ending its thread (pthread_exit()).
 *
 * - an unmask callback run by enable_irq(), which has no reference of
 *   its own;
 * - an unmask callback run by request_irq() of the first handler, whose
 *   call reference became the handler's;
 * - an unmask callback the dispatcher runs after a delivery;
 * - an unmask callback a oneshot thread function's end runs on its
 *   thread;
 * - a primary handler that releases its device (its managed handler goes
 *   with it), destroys the line, and returns or ends the dispatcher.
 *
 * In each cell the destroy returns 0 and the line's fd is closed (and the
 * fixture's ledger back at its baseline) soon after the cell's calls end;
 * a drop that did not free a doomed line left both for good. And one
 * race: irq_line_raise_wait() waiting on a line whose handler is freed
 * and the line destroyed by another thread, its reference often the last
 * one then.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include "irq/irq-test.h"
#include "base/thread-end.h"

enum holder {
	ENABLE_UNMASK,
	REQUEST_UNMASK,
	DISPATCHER_UNMASK,
	THREAD_UNMASK,
	PRIMARY_HANDLER,
	NR_HOLDERS
};

static const char *const holder_name[NR_HOLDERS] = {
	"unmask by enable_irq()",    "unmask by request_irq()",
	"unmask by the dispatcher",  "unmask by a thread function",
	"primary handler's release",
};

enum end {
	RETURNS,
	ENDS_THREAD,
	NR_ENDS
};

static const char *const end_name[NR_ENDS] = { "returns", "ends its thread" };

static enum holder holder;
static enum end how;
static int line, efd, dev_a;
static int ucalls, target, done, destroy_rc, req_rc;
static char names[NR_HOLDERS * NR_ENDS][80];

static irqreturn_t plain(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* The row's handler goes, the line is destroyed, and the end. */
static void free_destroy_end(void)
{
	if (holder == THREAD_UNMASK || holder == PRIMARY_HANDLER)
		devres_release_all(&tdev);
	else
		assert_non_null(free_irq(line, &dev_a));
	__atomic_store_n(&destroy_rc, irq_line_destroy(line), __ATOMIC_RELEASE);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	if (how == ENDS_THREAD)
		end_thread_by(BY_EXIT);
}

static void unmask(void *ctx)
{
	(void)ctx;
	if (__atomic_add_fetch(&ucalls, 1, __ATOMIC_ACQ_REL) == target)
		free_destroy_end();
}

static irqreturn_t primary(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	free_destroy_end();
	return IRQ_HANDLED;
}

static irqreturn_t thread_fn(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/* The row's calls that may end their thread: on a thread of their own. */
static void *caller(void *arg)
{
	(void)arg;
	switch (holder) {
	case ENABLE_UNMASK:
		enable_irq(line);
		break;
	case REQUEST_UNMASK:
		__atomic_store_n(&req_rc,
				 request_irq(line, plain, 0, "a", &dev_a),
				 __ATOMIC_RELEASE);
		break;
	default:
		break;
	}
	return NULL;
}

static void run_caller(void)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, caller, NULL), 0);
	(void)join_within(t, "the row's call did not end");
}

/* Waits up to 5 s for the process to have @n fds open. */
static bool fds_back_to(int n)
{
	long end = now_ms() + 5000;

	while (count_open_fds() != n) {
		if (now_ms() > end)
			return false;
		poll(NULL, 0, 1);
	}
	return true;
}

static void cell(void **state)
{
	int base = count_open_fds(), warns = devres_warn_count();
	bool masked = holder != PRIMARY_HANDLER;

	(void)state;
	ucalls = done = 0;
	destroy_rc = -1;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	line = masked ? irq_line_attach_masked(efd, unmask, NULL, "masked")
		      : irq_line_attach_fd(efd, "plain");
	assert_true(line > 0);
	alarm(30); /* a cell that hangs fails */
	start_capture();
	switch (holder) {
	case ENABLE_UNMASK:
		/* Not enabled: the request does not unmask, the enable does. */
		target = 1;
		assert_int_equal(request_irq(line, plain, IRQF_NO_AUTOEN, "a",
					     &dev_a),
				 0);
		assert_int_equal(load_int(&ucalls), 0);
		run_caller();
		break;
	case REQUEST_UNMASK:
		/* Attached, then freed by the callback: 0 when it returns. */
		target = 1;
		req_rc = -1;
		run_caller();
		if (how == RETURNS)
			assert_int_equal(load_int(&req_rc), 0);
		break;
	case DISPATCHER_UNMASK:
		target = 2;
		assert_int_equal(request_irq(line, plain, 0, "a", &dev_a), 0);
		assert_int_equal(irq_line_raise(line), 0);
		break;
	case THREAD_UNMASK:
		target = 2;
		assert_int_equal(
			devm_request_threaded_irq(&tdev, line, NULL, thread_fn,
						  IRQF_ONESHOT, "a", &dev_a),
			0);
		assert_int_equal(irq_line_raise(line), 0);
		break;
	case PRIMARY_HANDLER:
		assert_int_equal(devm_request_irq(&tdev, line, primary, 0, "a",
						  &dev_a),
				 0);
		assert_int_equal(irq_line_raise(line), 0);
		break;
	default:
		fail();
	}
	assert_true(wait_at_least(&done, 1));
	assert_int_equal(load_int(&destroy_rc), 0);
	/* Forgotten at once: the number is no line. */
	assert_int_equal(irq_line_raise(line), -EINVAL);
	/* An end of the thread WARNs once, as it unwinds. */
	while (how == ENDS_THREAD && devres_warn_count() == warns)
		poll(NULL, 0, 1);
	close(efd);
	/* The line's own fd (a dup of efd) closed: it was freed. */
	if (!fds_back_to(base))
		fail_msg("%s, %s: the destroyed line was never freed (%d fds "
			 "open, %d before)",
			 holder_name[holder], end_name[how], count_open_fds(),
			 base);
	alarm(0);
	assert_int_equal(devres_warn_count() - warns,
			 how == ENDS_THREAD ? 1 : 0);
}

/*
 * irq_line_raise_wait() holds a reference while it waits for the
 * delivery, which a handler blocked on another line holds up; meanwhile
 * free_irq() and irq_line_destroy() make the line doomed, and the wait,
 * woken, drops what is then often the last reference. Tried a number of
 * times: each must leave no fd behind.
 */
#define RACE_TRIES 40

static int other_line, other_efd, gate, in_block, out_block, raise_rc;

static irqreturn_t blocking(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&in_block, 1);
	while (load_int(&gate))
		poll(NULL, 0, 1);
	add_int(&out_block, 1);
	return IRQ_HANDLED;
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void *raiser(void *arg)
{
	(void)arg;
	__atomic_store_n(&raise_rc, irq_line_raise_wait(line),
			 __ATOMIC_RELEASE);
	return NULL;
}

static void raise_wait_race(void **state)
{
	int base;

	(void)state;
	other_line = attached_line(&other_efd, "blocker");
	assert_true(other_line > 0);
	assert_int_equal(request_irq(other_line, blocking, 0, "b", &dev_a), 0);
	base = count_open_fds();
	__atomic_store_n(&out_block, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < RACE_TRIES; i++) {
		pthread_t t;

		line = attached_line(&efd, "waited");
		assert_true(line > 0);
		assert_int_equal(request_irq(line, plain, 0, "a", &dev_a), 0);
		/* The dispatcher held up in the other line's handler. */
		__atomic_store_n(&in_block, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
		assert_int_equal(irq_line_raise(other_line), 0);
		assert_true(wait_at_least(&in_block, 1));
		assert_int_equal(pthread_create(&t, NULL, raiser, NULL), 0);
		/* Its interrupt written: the wait holds its reference. */
		for (long end = now_ms() + WAIT_MS; !readable(efd);) {
			assert_true(now_ms() < end);
			poll(NULL, 0, 1);
		}
		assert_non_null(free_irq(line, &dev_a));
		assert_int_equal(irq_line_destroy(line), 0);
		(void)join_within(t, "irq_line_raise_wait() did not return");
		assert_int_equal(load_int(&raise_rc), -EAGAIN);
		__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
		assert_true(wait_at_least(&out_block, i + 1));
		close(efd);
		if (!fds_back_to(base))
			fail_msg("try %d: the destroyed line was never freed",
				 i);
	}
	assert_non_null(free_irq(other_line, &dev_a));
	assert_int_equal(irq_line_destroy(other_line), 0);
	close(other_efd);
}

static int cell_setup(void **state)
{
	int i = (int)(intptr_t)*state;

	holder = (enum holder)(i / NR_ENDS);
	how = (enum end)(i % NR_ENDS);
	return dev_setup(state);
}

int main(void)
{
	struct CMUnitTest tests[NR_HOLDERS * NR_ENDS + 1];
	size_t n = 0;

	for (int i = 0; i < NR_HOLDERS * NR_ENDS; i++) {
		snprintf(names[i], sizeof(names[i]), "%s / %s",
			 holder_name[i / NR_ENDS], end_name[i % NR_ENDS]);
		tests[n++] = (struct CMUnitTest){
			.name = names[i],
			.test_func = cell,
			.setup_func = cell_setup,
			.teardown_func = dev_teardown,
			.initial_state = (void *)(intptr_t)i,
		};
	}
	tests[n++] = (struct CMUnitTest){
		.name = "irq_line_raise_wait() / line destroyed meanwhile",
		.test_func = raise_wait_race,
		.setup_func = dev_setup,
		.teardown_func = dev_teardown,
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return _cmocka_run_group_tests("irq-doomed-put", tests, n, NULL, NULL);
}
