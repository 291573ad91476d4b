// SPDX-License-Identifier: MIT
/* ctest-labels: tsan stress timeout=600 */
/*
 * free_irq(): once it returns the handler is not running and never runs
 * again (2,000 cycles against a raiser at full rate, IRQ_FREE_CYCLES to
 * change it, with the handler's memory freed at once, so ASan sees any
 * late call: plain and threaded handlers, the dispatcher stopping between
 * cycles in the first half and kept up in the second, every 16th freed
 * while surely running); two threads freeing
 * the same handler; and handlers that call into the API on their own line:
 * what would wait for itself WARNs and fails, the rest works.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"
#include "rounds.h"

/* One cycle's handler: its memory is freed right after free_irq(). */
struct cycle {
	int gen;
	int calls;
	int in;
};

static int live_gen;
static int late_calls;
static int raising;

static irqreturn_t cycle_handler(int irq, void *dev_id)
{
	struct cycle *c = dev_id;

	(void)irq;
	add_int(&c->in, 1);
	if (c->gen != load_int(&live_gen))
		add_int(&late_calls, 1);
	add_int(&c->calls, 1);
	add_int(&c->in, -1);
	return c->gen & 1 ? IRQ_WAKE_THREAD : IRQ_HANDLED;
}

static irqreturn_t cycle_thread(int irq, void *dev_id)
{
	return cycle_handler(irq, dev_id);
}

static irqreturn_t keep_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static void *raiser(void *arg)
{
	int irq = *(int *)arg;

	while (load_int(&raising))
		irq_line_raise(irq);
	return NULL;
}

static void no_handler_after_free(void **state)
{
	int irq = irq_line_create("cycles"), keep = irq_line_create("keep");
	int keep_id, delivered = 0;
	int cycles = (int)test_rounds("IRQ_FREE_CYCLES", 2000);
	pthread_t thr;

	(void)state;
	__atomic_store_n(&raising, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&thr, NULL, raiser, &irq), 0);
	for (int i = 1; i <= cycles; i++) {
		struct cycle *c = calloc(1, sizeof(*c));

		assert_non_null(c);
		/* The second half keeps the dispatcher up between cycles. */
		if (i == cycles / 2 + 1)
			assert_int_equal(request_irq(keep, keep_handler, 0,
						     "keep", &keep_id),
					 0);
		c->gen = i;
		__atomic_store_n(&live_gen, i, __ATOMIC_RELEASE);
		if (i & 1)
			assert_int_equal(request_threaded_irq(
						 irq, cycle_handler,
						 cycle_thread, 0, "cycle", c),
					 0);
		else
			assert_int_equal(request_irq(irq, cycle_handler, 0,
						     "cycle", c),
					 0);
		/* Now and then, free while the handler is surely running. */
		if (i % 16 == 0)
			assert_true(wait_at_least(&c->calls, 1));
		assert_string_equal(free_irq(irq, c), "cycle");
		assert_int_equal(load_int(&c->in), 0);
		delivered += load_int(&c->calls);
		__atomic_store_n(&live_gen, 0, __ATOMIC_RELEASE);
		free(c);
	}
	__atomic_store_n(&raising, 0, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	free_irq(keep, &keep_id);
	assert_int_equal(load_int(&late_calls), 0);
	assert_true(delivered >= cycles / 16);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(irq_line_destroy(keep), 0);
}

struct racer {
	pthread_barrier_t *go;
	int irq;
	void *dev_id;
	const void *ret;
};

static void *free_racer(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->go);
	r->ret = free_irq(r->irq, r->dev_id);
	return NULL;
}

static void quiet_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static void two_threads_free_one_handler(void **state)
{
	int irq = irq_line_create("race"), id;
	pthread_barrier_t go;

	(void)state;
	devres_set_log_sink(quiet_sink, NULL);
	for (int i = 0; i < 300; i++) {
		struct racer r[2];
		pthread_t t[2];
		int warns = devres_warn_count();

		assert_int_equal(request_irq(irq, keep_handler, 0, "race", &id),
				 0);
		irq_line_raise(irq);
		pthread_barrier_init(&go, NULL, 2);
		for (int k = 0; k < 2; k++) {
			r[k] = (struct racer){ &go, irq, &id, NULL };
			assert_int_equal(pthread_create(&t[k], NULL, free_racer,
							&r[k]),
					 0);
		}
		for (int k = 0; k < 2; k++)
			pthread_join(t[k], NULL);
		pthread_barrier_destroy(&go);
		/* One frees it, the other is told it is already free. */
		assert_true(!r[0].ret != !r[1].ret);
		assert_int_equal(devres_warn_count() - warns, 1);
	}
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(irq_line_destroy(irq), 0);
}

/* What a handler of a line does to its own line, and what it got. */
struct self {
	int irq, other;
	int calls;
	const void *freed;
	const void *freed_other;
	int warns;
	int shared_rc;
	int sharer_calls;
};

static irqreturn_t sharer(int irq, void *dev_id)
{
	(void)irq;
	add_int(dev_id, 1);
	return IRQ_HANDLED;
}

static irqreturn_t self_handler(int irq, void *dev_id)
{
	struct self *s = dev_id;
	int w = devres_warn_count();

	if (load_int(&s->calls) == 0) {
		/* These would wait for this very call: WARN and fail. */
		s->freed = free_irq(irq, s);
		disable_irq(irq);
		synchronize_irq(irq);
		/* These do not wait: fine from here. */
		disable_irq_nosync(irq);
		enable_irq(irq);
		s->freed_other = free_irq(s->other, s);
		s->shared_rc = request_irq(irq, sharer, IRQF_SHARED, "sharer",
					   &s->sharer_calls);
		s->warns = devres_warn_count() - w;
	}
	add_int(&s->calls, 1);
	return IRQ_HANDLED;
}

static irqreturn_t self_thread(int irq, void *dev_id)
{
	struct self *s = dev_id;
	int w = devres_warn_count();

	s->freed = free_irq(irq, s);
	disable_irq(irq);
	s->freed_other = free_irq(s->other, s);
	s->warns = devres_warn_count() - w;
	add_int(&s->calls, 1);
	return IRQ_HANDLED;
}

static void handler_calls_on_its_own_line(void **state)
{
	struct self s = { 0 };

	(void)state;
	s.irq = irq_line_create("self");
	s.other = irq_line_create("other");
	devres_set_log_sink(quiet_sink, NULL);
	assert_int_equal(
		request_irq(s.irq, self_handler, IRQF_SHARED, "self", &s), 0);
	assert_int_equal(request_irq(s.other, keep_handler, 0, "other", &s), 0);
	assert_int_equal(irq_line_raise(s.irq), 0);
	assert_true(wait_at_least(&s.calls, 1));
	synchronize_irq(s.irq);
	assert_null(s.freed);
	assert_string_equal(s.freed_other, "other");
	assert_int_equal(s.shared_rc, 0);
	/* free_irq, disable_irq and synchronize_irq: one WARN each. */
	assert_int_equal(s.warns, 3);
	/* Still attached, still enabled, and the new sharer works too. */
	assert_int_equal(irq_line_raise(s.irq), 0);
	assert_true(wait_at_least(&s.calls, 2));
	assert_true(wait_at_least(&s.sharer_calls, 1));
	assert_string_equal(free_irq(s.irq, &s), "self");
	assert_string_equal(free_irq(s.irq, &s.sharer_calls), "sharer");
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(irq_line_destroy(s.irq), 0);
	assert_int_equal(irq_line_destroy(s.other), 0);
}

static void thread_fn_calls_on_its_own_line(void **state)
{
	struct self s = { 0 };

	(void)state;
	s.irq = irq_line_create("tself");
	s.other = irq_line_create("tother");
	devres_set_log_sink(quiet_sink, NULL);
	assert_int_equal(request_threaded_irq(s.irq, NULL, self_thread,
					      IRQF_ONESHOT, "tself", &s),
			 0);
	assert_int_equal(request_irq(s.other, keep_handler, 0, "tother", &s),
			 0);
	assert_int_equal(irq_line_raise(s.irq), 0);
	assert_true(wait_at_least(&s.calls, 1));
	synchronize_irq(s.irq);
	assert_null(s.freed);
	assert_string_equal(s.freed_other, "tother");
	assert_int_equal(s.warns, 2);
	assert_string_equal(free_irq(s.irq, &s), "tself");
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(irq_line_destroy(s.irq), 0);
	assert_int_equal(irq_line_destroy(s.other), 0);
}

static void destroyed_line_refuses(void **state)
{
	int irq = irq_line_create("gone"), id;

	(void)state;
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(request_irq(irq, keep_handler, 0, "gone", &id),
			 -EINVAL);
	assert_int_equal(irq_line_raise(irq), -EINVAL);
	start_capture();
	assert_null(free_irq(irq, &id));
	expect_warn_on("(no device)", "free_irq", "is not a line");
	start_capture();
	enable_irq(irq);
	expect_warn_on("(no device)", "enable_irq", "is not a line");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_handler_after_free,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(two_threads_free_one_handler,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(handler_calls_on_its_own_line,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(thread_fn_calls_on_its_own_line,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(destroyed_line_refuses,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
