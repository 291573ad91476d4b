// SPDX-License-Identifier: MIT
/* ctest-labels: tsan */
/*
 * Threaded handlers: the thread function runs in a thread of its own;
 * IRQF_ONESHOT keeps the line masked until it returns (and delivers what
 * came meanwhile after), without it the primary handler runs again
 * meanwhile; disable_irq() and synchronize_irq() wait for thread
 * functions; IRQ_WAKE_THREAD without a thread function WARNs once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

/* A log of what ran, in order: 'P' primary, '<' thread start, '>' end. */
struct tctx {
	pthread_mutex_t lock;
	char log[64];
	int n;
	int primaries, threads;
	sem_t go;
	pthread_t primary_thread, thread_thread;
};

static void note(struct tctx *t, char c)
{
	pthread_mutex_lock(&t->lock);
	if (t->n < (int)sizeof(t->log) - 1)
		t->log[t->n++] = c;
	pthread_mutex_unlock(&t->lock);
}

static void expect_log(struct tctx *t, const char *want)
{
	pthread_mutex_lock(&t->lock);
	t->log[t->n] = '\0';
	assert_string_equal(t->log, want);
	pthread_mutex_unlock(&t->lock);
}

static irqreturn_t primary(int irq, void *dev_id)
{
	struct tctx *t = dev_id;

	(void)irq;
	t->primary_thread = pthread_self();
	note(t, 'P');
	add_int(&t->primaries, 1);
	return IRQ_WAKE_THREAD;
}

static irqreturn_t blocking_thread(int irq, void *dev_id)
{
	struct tctx *t = dev_id;

	(void)irq;
	t->thread_thread = pthread_self();
	note(t, '<');
	add_int(&t->threads, 1);
	sem_wait(&t->go);
	note(t, '>');
	return IRQ_HANDLED;
}

static void tctx_init(struct tctx *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	sem_init(&t->go, 0, 0);
}

static void tctx_fini(struct tctx *t)
{
	sem_destroy(&t->go);
	pthread_mutex_destroy(&t->lock);
}

static void oneshot_masks_until_thread_returns(void **state)
{
	struct tctx t;
	int efd, irq = attached_line(&efd, "oneshot");

	(void)state;
	tctx_init(&t);
	assert_int_equal(request_threaded_irq(irq, primary, blocking_thread,
					      IRQF_ONESHOT, "oneshot", &t),
			 0);
	/* One more thread for the handler, one for the dispatcher. */
	assert_int_equal(nr_threads(), irq_threads_base + 2);
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&t.threads, 1));
	assert_false(pthread_equal(t.primary_thread, t.thread_thread));
	assert_false(pthread_equal(t.primary_thread, pthread_self()));
	/* Masked: these are taken but held back. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(irq_line_raise(irq), 0);
		assert_true(wait_consumed(efd));
	}
	assert_int_equal(load_int(&t.primaries), 1);
	expect_log(&t, "P<");
	sem_post(&t.go);
	/* Unmasked: the held-back interrupts arrive, as one. */
	assert_true(wait_at_least(&t.threads, 2));
	expect_log(&t, "P<>P<");
	sem_post(&t.go);
	synchronize_irq(irq);
	expect_log(&t, "P<>P<>");
	assert_string_equal(free_irq(irq, &t), "oneshot");
	assert_int_equal(irq_line_destroy(irq), 0);
	close(efd);
	tctx_fini(&t);
}

static void without_oneshot_primary_runs_meanwhile(void **state)
{
	struct tctx t;
	int irq = irq_line_create("threaded");

	(void)state;
	tctx_init(&t);
	assert_int_equal(request_threaded_irq(irq, primary, blocking_thread, 0,
					      "threaded", &t),
			 0);
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&t.threads, 1));
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&t.primaries, 2));
	/* The second wake waits for the first run to end, then runs. */
	sem_post(&t.go);
	assert_true(wait_at_least(&t.threads, 2));
	sem_post(&t.go);
	synchronize_irq(irq);
	expect_log(&t, "P<P><>");
	free_irq(irq, &t);
	assert_int_equal(irq_line_destroy(irq), 0);
	tctx_fini(&t);
}

struct waiter {
	int irq;
	bool disable;
	int done;
};

static void *wait_for_line(void *arg)
{
	struct waiter *w = arg;

	if (w->disable)
		disable_irq(w->irq);
	else
		synchronize_irq(w->irq);
	add_int(&w->done, 1);
	return NULL;
}

static void waits_for_thread_functions(void **state)
{
	struct tctx t;
	int irq = irq_line_create("wait");

	(void)state;
	tctx_init(&t);
	/* No primary: the thread function only, as the kernel allows. */
	assert_int_equal(request_threaded_irq(irq, NULL, blocking_thread,
					      IRQF_ONESHOT, "wait", &t),
			 0);
	for (int k = 0; k < 2; k++) {
		struct waiter w = { irq, k == 1, 0 };
		pthread_t thr;

		assert_int_equal(irq_line_raise(irq), 0);
		assert_true(wait_at_least(&t.threads, k + 1));
		assert_int_equal(pthread_create(&thr, NULL, wait_for_line, &w),
				 0);
		/* It cannot return while the thread function runs. */
		assert_int_equal(poll(NULL, 0, 50), 0);
		assert_int_equal(load_int(&w.done), 0);
		sem_post(&t.go);
		pthread_join(thr, NULL);
		assert_int_equal(load_int(&w.done), 1);
	}
	/* Disabled by the second waiter. */
	assert_int_equal(irq_line_raise(irq), 0);
	synchronize_irq(irq);
	assert_int_equal(load_int(&t.threads), 2);
	enable_irq(irq);
	assert_true(wait_at_least(&t.threads, 3));
	sem_post(&t.go);
	free_irq(irq, &t);
	assert_int_equal(irq_line_destroy(irq), 0);
	tctx_fini(&t);
}

static void blocked_thread_does_not_block_others(void **state)
{
	struct tctx t, u;
	int a = irq_line_create("slow"), b = irq_line_create("fast");

	(void)state;
	tctx_init(&t);
	tctx_init(&u);
	assert_int_equal(request_threaded_irq(a, primary, blocking_thread,
					      IRQF_ONESHOT, "slow", &t),
			 0);
	assert_int_equal(request_irq(b, primary, 0, "fast", &u), 0);
	assert_int_equal(irq_line_raise(a), 0);
	assert_true(wait_at_least(&t.threads, 1));
	start_capture();
	for (int i = 1; i <= 3; i++) {
		assert_int_equal(irq_line_raise(b), 0);
		assert_true(wait_at_least(&u.primaries, i));
	}
	sem_post(&t.go);
	/* Freeing waits for nothing more: the thread function returned. */
	free_irq(a, &t);
	free_irq(b, &u);
	/* b's handler said IRQ_WAKE_THREAD with no thread: one WARN. */
	expect_warn_on("(no device)", "irq_wake_thread", "without a thread");
	assert_int_equal(irq_line_destroy(a), 0);
	assert_int_equal(irq_line_destroy(b), 0);
	tctx_fini(&t);
	tctx_fini(&u);
}

static void free_with_a_wake_pending(void **state)
{
	struct tctx t;
	int irq = irq_line_create("drop");

	(void)state;
	tctx_init(&t);
	assert_int_equal(request_threaded_irq(irq, primary, blocking_thread, 0,
					      "drop", &t),
			 0);
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&t.threads, 1));
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&t.primaries, 2));
	/*
	 * One call runs, one is due. free_irq() waits for the running one
	 * and may drop the due one (or let it run, if it started first).
	 */
	sem_post(&t.go);
	sem_post(&t.go);
	assert_string_equal(free_irq(irq, &t), "drop");
	assert_true(load_int(&t.threads) <= 2);
	assert_int_equal(irq_line_destroy(irq), 0);
	tctx_fini(&t);
}

static int exits_seen;

static irqreturn_t exiting_thread(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&exits_seen, 1, __ATOMIC_RELAXED);
	pthread_exit(NULL);
}

static irqreturn_t wake(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

/*
 * A thread function that ends its thread: one WARN; the interrupt it was
 * handling is done (a oneshot line is unmasked), later ones are not
 * handed to it, and synchronize_irq() and free_irq() do not wait for it.
 */
static void thread_function_exits(void **state)
{
	int irq = irq_line_create("exit");

	(void)state;
	alarm(30);
	start_capture();
	assert_int_equal(request_threaded_irq(irq, wake, exiting_thread,
					      IRQF_ONESHOT, "exit", NULL),
			 0);
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(&exits_seen, 1));
	synchronize_irq(irq);
	expect_warn_on("(no device)", "irq_thread",
		       "the thread function of 'exit' ended its thread");
	start_capture();
	assert_int_equal(irq_line_raise(irq), 0);
	poll(NULL, 0, 20);
	synchronize_irq(irq);
	assert_string_equal(free_irq(irq, NULL), "exit");
	expect_no_warn();
	assert_int_equal(load_int(&exits_seen), 1);
	assert_int_equal(irq_line_destroy(irq), 0);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			oneshot_masks_until_thread_returns, irq_setup,
			irq_teardown),
		cmocka_unit_test_setup_teardown(
			without_oneshot_primary_runs_meanwhile, irq_setup,
			irq_teardown),
		cmocka_unit_test_setup_teardown(waits_for_thread_functions,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(
			blocked_thread_does_not_block_others, irq_setup,
			irq_teardown),
		cmocka_unit_test_setup_teardown(free_with_a_wake_pending,
						irq_setup, irq_teardown),
		cmocka_unit_test_setup_teardown(thread_function_exits,
						irq_setup, irq_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
