// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The unmask callback of a masked line (irq_line_attach_masked(), the UIO
 * backend's INTx) is the program's code, and it called the library's
 * interrupt calls on its own line: enable_irq(), disable_irq(),
 * synchronize_irq(), free_irq(), request_irq(), irq_line_raise_wait(),
 * irq_line_destroy(), and it ended its thread. Each ran under the line's
 * lock, which each call then waited for: the dispatcher (or the thread
 * requesting the first handler) hung for ever, and every later call on
 * the line with it. Now each row, made from the unmask the dispatcher runs
 * after an interrupt and from the one request_irq() runs for the first
 * handler, returns what it would return elsewhere (a WARN only where the
 * call is a misuse anywhere, or would wait for the thread it runs on),
 * and the line then still delivers, frees and is destroyed; the device
 * fixture's teardown checks the ledger (handlers, fds). An alarm fails a
 * row that hangs. And a callback that ends its thread inside a free_irq()
 * or after a delivery that freed a handler leaves nothing of either:
 * irq_line_destroy() returns 0, the ledger is back.
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
#include <devres/fault.h>
#include "irq/irq-test.h"
#include "base/thread-end.h"

enum call {
	NOTHING,
	DISABLE_NOSYNC,
	DISABLE,
	SYNCHRONIZE,
	ENABLE_UNBALANCED,
	FREE_OWN,
	REQUEST_ANOTHER,
	RAISE,
	RAISE_WAIT,
	DESTROY,
	EXIT,
};

enum place {
	DISPATCHER,
	REQUEST,
	THREAD
};

static enum place where;

struct row {
	const char *name;
	enum call call;
	const char *func, *reason; /* the WARN, or NULL for none */
};

static const struct row rows[] = {
	{ "nothing", NOTHING, NULL, NULL },
	{ "disable_irq_nosync", DISABLE_NOSYNC, NULL, NULL },
	{ "disable_irq", DISABLE, NULL, NULL },
	{ "synchronize_irq", SYNCHRONIZE, NULL, NULL },
	{ "enable_irq unbalanced", ENABLE_UNBALANCED, "enable_irq",
	  "unbalanced enable" },
	{ "free_irq", FREE_OWN, NULL, NULL },
	{ "request_irq of another", REQUEST_ANOTHER, NULL, NULL },
	{ "irq_line_raise", RAISE, NULL, NULL },
	{ "irq_line_raise_wait", RAISE_WAIT, "irq_line_raise_wait",
	  "it would wait for" },
	{ "irq_line_destroy", DESTROY, "irq_line_destroy",
	  "handlers attached" },
	{ "pthread_exit", EXIT, "irq_line_attach_masked",
	  "its unmask callback ended the thread" },
};

static const struct row *cur;
static int line, efd;
static int target; /* the unmask call that makes the row's call */
static int ucalls, done, calls, others;
static int dev_a, dev_b;
static long ret;    /* what the row's call returned */
static int req_ret; /* what the first request_irq() returned */

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	add_int(dev_id == &dev_a ? &calls : &others, 1);
	return IRQ_HANDLED;
}

/*
 * A handler: in THREAD, a oneshot thread function alone, whose end
 * unmasks the line on its thread.
 */
static int req(const char *name, void *dev_id)
{
	if (where == THREAD)
		return request_threaded_irq(line, NULL, handler,
					    IRQF_SHARED | IRQF_ONESHOT, name,
					    dev_id);
	return request_irq(line, handler, IRQF_SHARED, name, dev_id);
}

static void do_call(void)
{
	switch (cur->call) {
	case NOTHING:
		break;
	case DISABLE_NOSYNC:
		disable_irq_nosync(line);
		break;
	case DISABLE:
		disable_irq(line);
		break;
	case SYNCHRONIZE:
		synchronize_irq(line);
		break;
	case ENABLE_UNBALANCED:
		enable_irq(line);
		break;
	case FREE_OWN:
		ret = free_irq(line, &dev_a) != NULL;
		break;
	case REQUEST_ANOTHER:
		ret = req("b", &dev_b);
		break;
	case RAISE:
		ret = irq_line_raise(line);
		break;
	case RAISE_WAIT:
		ret = irq_line_raise_wait(line);
		break;
	case DESTROY:
		ret = irq_line_destroy(line);
		break;
	case EXIT:
		__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
		pthread_exit(NULL);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

static void unmask(void *ctx)
{
	(void)ctx;
	if (__atomic_add_fetch(&ucalls, 1, __ATOMIC_ACQ_REL) == target)
		do_call();
}

static void *requester(void *arg)
{
	(void)arg;
	req_ret = req("a", &dev_a);
	return NULL;
}

/*
 * On the handler's own thread (THREAD) the callback's calls are ones from
 * its thread function: those that would wait for that thread are refused,
 * as there (docs/misuse.md).
 */
static bool own_thread_refuses(const struct row *r, enum place place)
{
	return place == THREAD &&
	       (r->call == DISABLE || r->call == SYNCHRONIZE ||
		r->call == FREE_OWN);
}

static void run_row(const struct row *r, enum place place)
{
	bool refused = own_thread_refuses(r, place);
	pthread_t t;
	int before;

	cur = r;
	where = place;
	ucalls = done = calls = others = 0;
	ret = req_ret = -1;
	/* The first unmask comes with the first handler, the next after an
	 * interrupt. */
	target = place == REQUEST ? 1 : 2;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	line = irq_line_attach_masked(efd, unmask, NULL, "masked");
	assert_true(line > 0);
	alarm(20); /* a row that hangs fails */
	start_capture();
	assert_int_equal(pthread_create(&t, NULL, requester, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* Ended inside the unmask it runs, it returned nothing. */
	if (place != REQUEST || r->call != EXIT)
		assert_int_equal(req_ret, 0);
	if (place != REQUEST)
		assert_int_equal(irq_line_raise(line), 0);
	/* The row's call done (or its thread ended inside it). */
	assert_true(wait_at_least(&done, 1));
	/* A thread that ends WARNs as it unwinds, after done. */
	if (r->reason)
		assert_true(wait_at_least(&cap.n, 1));
	if (refused)
		expect_warn_on("(no device)", r->name,
			       "called from its own handler, would wait for "
			       "itself");
	else if (r->reason)
		expect_warn_on("(no device)", r->func, r->reason);
	else
		expect_no_warn();
	if (refused) {
		/* Nothing done: the handler stays, the line enabled. */
		assert_true(r->call != FREE_OWN || ret == 0);
	} else
		switch (r->call) {
		case FREE_OWN:
			assert_int_equal(ret, 1);
			assert_int_equal(req("a", &dev_a), 0);
			break;
		case REQUEST_ANOTHER:
		case RAISE:
			assert_int_equal(ret, 0);
			break;
		case RAISE_WAIT:
			assert_int_equal(ret, -EDEADLK);
			break;
		case DESTROY:
			assert_int_equal(ret, -EBUSY);
			break;
		case DISABLE:
		case DISABLE_NOSYNC:
			enable_irq(line);
			break;
		default:
			break;
		}
	/* The line still delivers, to each handler it has. */
	assert_true(wait_at_least(&ucalls, target));
	before = load_int(&calls);
	assert_int_equal(irq_line_raise_wait(line), 0);
	/*
	 * Not to a thread function whose thread ended (as after one that
	 * ends it itself), but the wait above did not wait for it.
	 */
	if (place == THREAD && r->call == EXIT)
		assert_int_equal(load_int(&calls), before);
	else
		assert_true(load_int(&calls) > before);
	if (r->call == REQUEST_ANOTHER)
		assert_true(load_int(&others) > 0);
	/* And is freed and destroyed, nothing of it kept. */
	assert_non_null(free_irq(line, &dev_a));
	if (r->call == REQUEST_ANOTHER)
		assert_non_null(free_irq(line, &dev_b));
	assert_int_equal(irq_line_destroy(line), 0);
	alarm(0);
	close(efd);
}

static void from_dispatcher(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s\n", rows[i].name);
		run_row(&rows[i], DISPATCHER);
	}
}

static void from_thread(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s\n", rows[i].name);
		run_row(&rows[i], THREAD);
	}
}

static void from_request(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s\n", rows[i].name);
		run_row(&rows[i], REQUEST);
	}
}

/*
 * The unmask callback ends its thread where a call still owed something
 * after it: a free_irq() on the caller's own thread (the call's line
 * reference and the freed handler were lost: irq_line_destroy() returned
 * -EBUSY for good), and the dispatcher after a delivery in which a
 * handler was freed (the handler was never reaped). end_how: 1
 * pthread_exit(), 2 a cancellation.
 */
static int end_how;		 /* how the callback ends its thread */
static int gate, in_handler;	 /* the blocking handler's gate */
static int ender_tid, ender_set; /* the freeing thread, once it runs */
static pthread_t ender;
static int ended, released, freer_returned, sync_returned;

static void end_thread(void)
{
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
	end_thread_by(end_how == 1 ? BY_EXIT : BY_CANCEL);
}

static void unmask_on_freer(void *ctx)
{
	(void)ctx;
	if (load_int(&ender_set) && pthread_equal(pthread_self(), ender) &&
	    !load_int(&ended))
		end_thread();
}

static irqreturn_t blocking(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	if (load_int(&gate)) {
		add_int(&in_handler, 1);
		while (load_int(&gate))
			poll(NULL, 0, 1);
	}
	return IRQ_HANDLED;
}

static void *freer(void *arg)
{
	(void)arg;
	ender = pthread_self();
	__atomic_store_n(&ender_tid, (int)gettid(), __ATOMIC_RELEASE);
	__atomic_store_n(&ender_set, 1, __ATOMIC_RELEASE);
	(void)free_irq(line, &dev_b);
	__atomic_store_n(&freer_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The thread @tid sleeps (in the free's wait for the delivery). */
static bool task_sleeps(int tid)
{
	char path[64], buf[256], *p;
	long end = now_ms() + WAIT_MS;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	while (now_ms() < end) {
		if (load_int(&sync_returned))
			return false;
		f = fopen(path, "re");
		if (f) {
			p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')')
						       : NULL;
			fclose(f);
			if (p && p[1] == ' ' && p[2] == 'S')
				return true;
		}
		poll(NULL, 0, 1);
	}
	return false;
}

/*
 * One try: a delivery blocked in handler a, free_irq() of b on a thread
 * of its own, which waits for the delivery to end; the interrupt it read
 * left the line masked, so the free's end unmasks it, on its thread,
 * and the callback ends that thread. False when the free got in before
 * the delivery (the unmask then ran elsewhere): try again.
 */
static bool free_ends_once(void)
{
	pthread_t t;

	ended = ender_set = ender_tid = freer_returned = in_handler = 0;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	line = irq_line_attach_masked(efd, unmask_on_freer, NULL, "masked");
	assert_true(line > 0);
	assert_int_equal(request_irq(line, blocking, IRQF_SHARED, "a", &dev_a),
			 0);
	assert_int_equal(request_irq(line, handler, IRQF_SHARED, "b", &dev_b),
			 0);
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	assert_int_equal(irq_line_raise(line), 0);
	assert_true(wait_at_least(&in_handler, 1));
	start_capture();
	assert_int_equal(pthread_create(&t, NULL, freer, NULL), 0);
	assert_true(wait_at_least(&ender_set, 1));
	assert_true(task_sleeps(load_int(&ender_tid)));
	__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (!load_int(&ended)) {
		/* b freed before the delivery: clean up, try again. */
		assert_int_equal(load_int(&freer_returned), 1);
		expect_no_warn();
		assert_non_null(free_irq(line, &dev_a));
		assert_int_equal(irq_line_destroy(line), 0);
		close(efd);
		return false;
	}
	assert_int_equal(load_int(&freer_returned), 0);
	expect_warn_on("(no device)", "irq_line_attach_masked",
		       "its unmask callback ended the thread");
	/* b is gone, and nothing of it or of the call kept. */
	start_capture();
	assert_null(free_irq(line, &dev_b));
	expect_warn_on("(no device)", "free_irq", "no handler with dev_id");
	assert_int_equal(irq_line_raise_wait(line), 0);
	assert_non_null(free_irq(line, &dev_a));
	assert_int_equal(irq_line_destroy(line), 0);
	close(efd);
	return true;
}

static void ends_inside_free(void **state)
{
	int tries;

	(void)state;
	for (end_how = 1; end_how <= 2; end_how++) {
		print_message("%s\n", end_how == 1 ? "pthread_exit" : "cancel");
		alarm(60);
		for (tries = 0; tries < 50 && !free_ends_once(); tries++)
			;
		assert_true(tries < 50);
		alarm(0);
	}
}

/* Handler b frees the device's handlers (an unbind from a handler). */
static irqreturn_t releasing(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	if (!load_int(&released)) {
		devres_release_all(&tdev);
		__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
	}
	return IRQ_HANDLED;
}

static void unmask_after_release(void *ctx)
{
	(void)ctx;
	if (load_int(&released) && !load_int(&ended))
		end_thread();
}

/*
 * On the dispatcher: pthread_exit() only, as a cancellation is never
 * acted on there (it runs with cancellation disabled).
 */
static void ends_after_reap(void **state)
{
	(void)state;
	end_how = 1;
	alarm(20);
	ended = released = 0;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	line = irq_line_attach_masked(efd, unmask_after_release, NULL,
				      "masked");
	assert_true(line > 0);
	assert_int_equal(devm_request_irq(&tdev, line, handler, IRQF_SHARED,
					  "a", &dev_a),
			 0);
	assert_int_equal(request_irq(line, releasing, IRQF_SHARED, "b", &dev_b),
			 0);
	start_capture();
	assert_int_equal(irq_line_raise(line), 0);
	assert_true(wait_at_least(&ended, 1));
	assert_true(wait_at_least(&cap.n, 1));
	/* The dispatcher goes on; a was reaped, b still delivers. */
	assert_int_equal(irq_line_raise_wait(line), 0);
	expect_warn_on("(no device)", "irq_line_attach_masked",
		       "its unmask callback ended the thread");
	assert_non_null(free_irq(line, &dev_b));
	assert_int_equal(irq_line_destroy(line), 0);
	close(efd);
	alarm(0);
}

/*
 * synchronize_irq() waits for an unmask callback running on another
 * thread, also on a line whose handlers were requested and freed before
 * (each reference put miscounted the callbacks running, so that none
 * was waited for).
 */
static int unmask_gate, in_unmask;

static void unmask_blocking(void *ctx)
{
	(void)ctx;
	if (load_int(&unmask_gate)) {
		add_int(&in_unmask, 1);
		while (load_int(&unmask_gate))
			poll(NULL, 0, 1);
	}
}

static void *syncer(void *arg)
{
	(void)arg;
	__atomic_store_n(&ender_tid, (int)gettid(), __ATOMIC_RELEASE);
	__atomic_store_n(&ender_set, 1, __ATOMIC_RELEASE);
	synchronize_irq(line);
	__atomic_store_n(&sync_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void sync_waits_after_frees(void **state)
{
	pthread_t t;

	(void)state;
	alarm(30);
	ender_set = in_unmask = sync_returned = 0;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	line = irq_line_attach_masked(efd, unmask_blocking, NULL, "masked");
	assert_true(line > 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(request_irq(line, handler, 0, "a", &dev_a), 0);
		assert_non_null(free_irq(line, &dev_a));
	}
	assert_int_equal(request_irq(line, handler, 0, "a", &dev_a), 0);
	__atomic_store_n(&unmask_gate, 1, __ATOMIC_RELEASE);
	assert_int_equal(irq_line_raise(line), 0);
	assert_true(wait_at_least(&in_unmask, 1));
	assert_int_equal(pthread_create(&t, NULL, syncer, NULL), 0);
	assert_true(wait_at_least(&ender_set, 1));
	assert_true(task_sleeps(load_int(&ender_tid)) ||
		    load_int(&sync_returned));
	/* Asleep in its wait for the callback, not returned. */
	assert_int_equal(load_int(&sync_returned), 0);
	__atomic_store_n(&unmask_gate, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(load_int(&sync_returned), 1);
	assert_non_null(free_irq(line, &dev_a));
	assert_int_equal(irq_line_destroy(line), 0);
	close(efd);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(from_dispatcher, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(from_request, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(from_thread, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ends_inside_free, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ends_after_reap, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(sync_waits_after_frees,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: the backtraces would be captured with them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
