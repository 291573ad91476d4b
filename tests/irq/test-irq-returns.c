// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * What a primary handler and a thread function return, one cell each: the
 * values of their contract, and values outside it (an unknown bit, a bit
 * of the contract with an unknown one, a negative errno, -1, INT_MIN,
 * INT_MAX; IRQ_WAKE_THREAD from a thread function). A primary handler's
 * value outside IRQ_NONE | IRQ_HANDLED | IRQ_WAKE_THREAD is the kernel's
 * "bogus return value": one WARN a delivery naming the handler, no thread
 * woken (whatever bits it has), and the line goes on. A thread function's
 * outside IRQ_NONE | IRQ_HANDLED: one WARN a run, ignored. Each cell
 * delivers twice, with and without IRQF_ONESHOT, and checks that the
 * second interrupt arrives: the line was left neither masked nor disabled.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

enum who {
	PRIMARY,	  /* the primary handler returns the value */
	PRIMARY_NOTHREAD, /* the same, with no thread function */
	THREAD_FN,	  /* the thread function does, woken */
};

struct value {
	int ret;
	bool valid;
};

#define BAD_PRIMARY "not IRQ_NONE, IRQ_HANDLED or IRQ_WAKE_THREAD"
#define BAD_THREAD "not IRQ_NONE or IRQ_HANDLED: ignored"

static const struct value primary_values[] = {
	{ IRQ_NONE, true },
	{ IRQ_HANDLED, true },
	{ IRQ_WAKE_THREAD, true },
	{ IRQ_HANDLED | IRQ_WAKE_THREAD, true },
	{ 4, false },
	{ IRQ_WAKE_THREAD | 4, false },
	{ -EIO, false },
	{ -1, false },
	{ INT_MIN, false },
	{ INT_MAX, false },
};

static const struct value thread_values[] = {
	{ IRQ_NONE, true },
	{ IRQ_HANDLED, true },
	{ IRQ_WAKE_THREAD, false },
	{ IRQ_HANDLED | IRQ_WAKE_THREAD, false },
	{ 4, false },
	{ -EIO, false },
	{ -1, false },
	{ INT_MIN, false },
};

struct cell {
	enum who who;
	struct value v;
	bool oneshot;
	char name[96];
};

struct ctx {
	const struct cell *c;
	int primaries, threads;
};

static irqreturn_t primary(int irq, void *dev_id)
{
	struct ctx *x = dev_id;

	(void)irq;
	add_int(&x->primaries, 1);
	return x->c->who == THREAD_FN ? IRQ_WAKE_THREAD
				      : (irqreturn_t)x->c->v.ret;
}

static irqreturn_t thread_fn(int irq, void *dev_id)
{
	struct ctx *x = dev_id;

	(void)irq;
	add_int(&x->threads, 1);
	return x->c->who == THREAD_FN ? (irqreturn_t)x->c->v.ret : IRQ_HANDLED;
}

/* Threads each delivery wakes, WARNs each delivery gives, and their text. */
static void expected(const struct cell *c, int *threads, int *warns,
		     const char **func, const char **reason)
{
	*threads = 0;
	*warns = c->v.valid ? 0 : 2;
	*func = c->who == THREAD_FN ? "irq_thread" : "irq_dispatch";
	*reason = c->who == THREAD_FN ? BAD_THREAD : BAD_PRIMARY;
	switch (c->who) {
	case THREAD_FN:
		*threads = 1;
		break;
	case PRIMARY:
		if (c->v.valid && (c->v.ret & IRQ_WAKE_THREAD))
			*threads = 1;
		break;
	case PRIMARY_NOTHREAD:
		/* The WARN of its own, once a handler (test-irq-thread). */
		if (c->v.ret == IRQ_WAKE_THREAD ||
		    c->v.ret == (IRQ_HANDLED | IRQ_WAKE_THREAD)) {
			*warns = 1;
			*func = "irq_wake_thread";
			*reason = "IRQ_WAKE_THREAD from a handler without a "
				  "thread function";
		}
		break;
	}
}

static const struct cell *cur;

static int cell_setup(void **state)
{
	cur = *state;
	return irq_setup(state);
}

static void run_cell(void **state)
{
	const struct cell *c = cur;
	struct ctx x = { .c = c };
	int efd, irq, threads, warns, base;
	const char *func, *reason;
	char head[64], value[32];

	expected(c, &threads, &warns, &func, &reason);
	(void)state;
	irq = attached_line(&efd, "ret");
	base = devres_warn_count();
	start_capture();
	assert_int_equal(request_threaded_irq(
				 irq, primary,
				 c->who == PRIMARY_NOTHREAD ? NULL : thread_fn,
				 c->oneshot ? IRQF_ONESHOT : 0, "ret", &x),
			 0);
	for (int i = 1; i <= 2; i++) {
		assert_int_equal(irq_line_raise(irq), 0);
		assert_true(wait_at_least(&x.primaries, i));
		synchronize_irq(irq);
		assert_int_equal(load_int(&x.primaries), i);
		assert_int_equal(load_int(&x.threads), i * threads);
	}
	free_irq(irq, &x);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, warns);
	assert_int_equal(devres_warn_count() - base, warns);
	snprintf(head, sizeof(head), "WARNING: (no device): %s: ", func);
	snprintf(value, sizeof(value), "returned %d, ", c->v.ret);
	for (int i = 0; i < warns; i++) {
		if (strncmp(cap.line[i], head, strlen(head)) ||
		    !strstr(cap.line[i], reason) ||
		    (!c->v.valid && !strstr(cap.line[i], value)))
			print_error("want \"%s...%s%s\", got \"%s\"\n", head,
				    c->v.valid ? "" : value, reason,
				    cap.line[i]);
		assert_memory_equal(cap.line[i], head, strlen(head));
		assert_non_null(strstr(cap.line[i], reason));
		if (!c->v.valid)
			assert_non_null(strstr(cap.line[i], value));
	}
	assert_int_equal(irq_line_destroy(irq), 0);
	close(efd);
}

#define NR_CELLS (2 * (2 * N(primary_values) + N(thread_values)))

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];
static const char *const who_names[] = { "handler", "handler, no thread_fn",
					 "thread_fn" };

static size_t add(size_t n, enum who who, const struct value *v, bool os)
{
	cells[n] = (struct cell){ who, *v, os, "" };
	add_cell(&tests[n], &cells[n], run_cell, cell_setup, irq_teardown,
		 "%s returns %d (%s)%s", who_names[who], v->ret,
		 v->valid ? "valid" : "invalid", os ? ", oneshot" : "");
	return n + 1;
}

int main(void)
{
	size_t n = 0;

	for (int os = 0; os <= 1; os++) {
		for (size_t i = 0; i < N(primary_values); i++) {
			n = add(n, PRIMARY, &primary_values[i], os);
			n = add(n, PRIMARY_NOTHREAD, &primary_values[i], os);
		}
		for (size_t i = 0; i < N(thread_values); i++)
			n = add(n, THREAD_FN, &thread_values[i], os);
	}
	assert_true(n == NR_CELLS);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests_name("irq-returns", tests, NULL, NULL);
}
