// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * irq_line_destroy() of a line that is referenced but has no handler:
 * only an attached handler keeps a line (docs/irq.md, "Lines"). Each cell
 * makes the reference last, deterministically: a managed handler frees
 * itself (its device's release, from its own primary handler or its
 * thread function) and then blocks, so its line is still running with no
 * handler on it; a second thread may then make a call that waits for the
 * delivery to end. irq_line_destroy() must return 0 without a WARN and
 * forget the number at once; the waiting call must end as it would had
 * the destroy come first or last (a request fails with -EINVAL and leaves
 * no handler and no node; a free of nothing WARNs once; a disable or
 * synchronize returns quietly); and the line's fd must be closed once the
 * last of them lets go (the ledger at its baseline). A destroy that
 * refused with "handlers attached", a request that attached a handler to
 * a forgotten line, or a line never freed fails the cell.
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
#include <unistd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include "testlib.h"
#include "irq/irq-test.h"

/* What the second thread does while the delivery blocks. */
enum waiter {
	W_NONE,
	W_REQUEST,
	W_DEVM_REQUEST,
	W_FREE,
	W_DISABLE,
	W_SYNCHRONIZE,
	NR_WAITERS
};

static const char *const waiter_name[NR_WAITERS] = {
	"no call",    "request_irq()", "devm_request_irq()",
	"free_irq()", "disable_irq()", "synchronize_irq()",
};

static int line, mine, theirs;
static sem_t entered, go_on;
static bool threaded;
static pid_t waiter_tid;
static int waiter_ret, waiter_warns;

static irqreturn_t their_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

/*
 * Releases its own device's resources, its managed handler among them
 * (what unbinding its device from a handler does), then blocks until the
 * test lets it go.
 */
static void free_self_and_block(int irq)
{
	(void)irq;
	devres_release_all(&tdev);
	sem_post(&entered);
	while (sem_wait(&go_on) < 0)
		;
}

static irqreturn_t primary(int irq, void *dev_id)
{
	(void)dev_id;
	if (threaded)
		return IRQ_WAKE_THREAD;
	free_self_and_block(irq);
	return IRQ_HANDLED;
}

static irqreturn_t thread_fn(int irq, void *dev_id)
{
	(void)dev_id;
	free_self_and_block(irq);
	return IRQ_HANDLED;
}

static void *waiter(void *arg)
{
	unsigned int irq = (unsigned int)line;
	int w0 = devres_warn_count();

	__atomic_store_n(&waiter_tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	switch ((enum waiter)(intptr_t)arg) {
	case W_REQUEST:
		waiter_ret =
			request_irq(irq, their_handler, 0, "theirs", &theirs);
		break;
	case W_DEVM_REQUEST:
		waiter_ret = devm_request_irq(&tdev, irq, their_handler, 0,
					      "theirs", &theirs);
		break;
	case W_FREE:
		waiter_ret = free_irq(irq, &theirs) != NULL;
		break;
	case W_DISABLE:
		disable_irq(irq);
		break;
	case W_SYNCHRONIZE:
		synchronize_irq(irq);
		break;
	default:
		break;
	}
	waiter_warns = devres_warn_count() - w0;
	return NULL;
}

/* sem_wait() for at most @ms; false when it timed out. */
static bool sem_wait_ms(sem_t *s, long ms)
{
	for (long end = now_ms() + ms; sem_trywait(s) < 0; poll(NULL, 0, 1))
		if (now_ms() > end)
			return false;
	return true;
}

/* Until the waiter blocks in futex(): the wait inside its call. */
static void wait_blocked(void)
{
	char path[64], buf[32];
	pid_t tid;

	while (!(tid = __atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE)))
		poll(NULL, 0, 1);
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (long end = now_ms() + WAIT_MS;; poll(NULL, 0, 1)) {
		FILE *f = fopen(path, "r");
		long nr = -1;

		assert_non_null(f);
		if (fgets(buf, sizeof(buf), f))
			nr = strtol(buf, NULL, 10);
		fclose(f);
		if (nr == SYS_futex)
			return;
		assert_true(now_ms() < end);
	}
}

static void cell(enum waiter w, bool with_thread)
{
	struct devres_ledger base, now;
	struct devres_stats st;
	pthread_t t;
	int w0;

	devres_ledger_snapshot(&base);
	threaded = with_thread;
	waiter_tid = 0;
	waiter_ret = waiter_warns = 0;
	line = irq_line_create("destroy-busy");
	assert_true(line > 0);
	assert_int_equal(devm_request_threaded_irq(
				 &tdev, (unsigned int)line, primary,
				 with_thread ? thread_fn : NULL,
				 with_thread ? IRQF_ONESHOT : 0, "mine", &mine),
			 0);
	assert_int_equal(irq_line_raise(line), 0);
	assert_true(sem_wait_ms(&entered, WAIT_MS));
	/* The handler is gone from the line and the device; its call is not. */
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 0);
	if (w != W_NONE) {
		assert_int_equal(pthread_create(&t, NULL, waiter,
						(void *)(intptr_t)w),
				 0);
		wait_blocked();
	}
	w0 = devres_warn_count();
	assert_int_equal(irq_line_destroy(line), 0);
	assert_int_equal(devres_warn_count(), w0);
	/* Forgotten at once: the number is no line any more. */
	assert_int_equal(irq_line_raise(line), -EINVAL);
	sem_post(&go_on);
	if (w != W_NONE)
		assert_int_equal(pthread_join(t, NULL), 0);
	switch (w) {
	case W_REQUEST:
	case W_DEVM_REQUEST:
		assert_int_equal(waiter_ret, -EINVAL);
		assert_int_equal(waiter_warns, 0);
		break;
	case W_FREE:
		assert_int_equal(waiter_ret, 0);
		assert_int_equal(waiter_warns, 1);
		break;
	default:
		assert_int_equal(waiter_warns, 0);
		break;
	}
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 0);
	/* The last reference gone, the line is freed: its fd closed. */
	for (long end = now_ms() + WAIT_MS;; poll(NULL, 0, 1)) {
		devres_ledger_snapshot(&now);
		if (!devres_ledger_diff(&base, &now, NULL))
			break;
		if (now_ms() > end) {
			devres_ledger_diff(&base, &now, stderr);
			fail_msg("%s: the line was never freed",
				 waiter_name[w]);
		}
	}
}

static void every_waiter(void **state)
{
	(void)state;
	for (int w = 0; w < NR_WAITERS; w++) {
		print_message("primary handler, %s\n", waiter_name[w]);
		cell((enum waiter)w, false);
	}
}

/*
 * A thread function that freed its handler keeps the line until it
 * returns; disable_irq() and synchronize_irq() wait for it.
 */
static void thread_function(void **state)
{
	static const enum waiter ws[] = { W_NONE, W_DISABLE, W_SYNCHRONIZE };

	(void)state;
	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
		print_message("thread function, %s\n", waiter_name[ws[i]]);
		cell(ws[i], true);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_waiter, irq_setup,
						irq_teardown),
		cmocka_unit_test_setup_teardown(thread_function, irq_setup,
						irq_teardown),
	};

	sem_init(&entered, 0, 0);
	sem_init(&go_on, 0, 0);
	start_runtime_threads();
	return cmocka_run_group_tests_name("irq-destroy-busy", tests, NULL,
					   NULL);
}
