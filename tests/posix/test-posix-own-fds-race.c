// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The library's own descriptors against a program that closes numbers it
 * does not own, across threads and across fork().
 *
 * race: a thread closes every number of a range, again and again, while
 * the main thread has the library open and close its own there for 200
 * rounds: an irq line made, requested (the dispatcher's epoll and wake
 * eventfd with it), raised, freed and destroyed, and a managed thread
 * started and stopped. The range is the numbers free when the test
 * starts (less any the test's parent left open above the first free one),
 * so that nothing but the library's descriptors lives there. No
 * close of the closer's may succeed (each would have taken one of the
 * library's), each refusal is one WARN of the library's own, every raise
 * is delivered, every thread stops, and the ledger is back at its
 * baseline (the library closed each of its own once). Then the same with
 * close_range() over the range's free runs: every raise still delivered,
 * every WARN a refusal, the ledger back. TSan watches the table, its lock
 * and the counters that keep closes and the library's opens apart.
 *
 * fork: a child closes its copies of the parent's own descriptors, by
 * close() and by close_range(3, ~0U): allowed, no WARN (they are the
 * child's inherited numbers, docs/fork.md). A descriptor the child's
 * library opens is the child's own: its close() is refused with one
 * WARN. The parent's line still delivers afterwards.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "posix/hand-close.h"
#include "irq/irq-test.h"

/* The parent has threads at its forks; the child starts none of its own. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

#define ROUNDS 200
#define RANGE 24

static int lo;		 /* the first number of the closer's range */
static bool busy[RANGE]; /* open at the start: not the library's */
static int stop, refused, closed;
static bool by_range; /* the closer's call: close(), or close_range() */

/* close_range() over each run of the range's numbers free at the start. */
static void close_runs(void)
{
	for (int a = lo; a < lo + RANGE; a++) {
		int b = a;

		if (busy[a - lo])
			continue;
		while (b + 1 < lo + RANGE && !busy[b + 1 - lo])
			b++;
		assert_int_equal(hand_close_range((unsigned int)a,
						  (unsigned int)b, 0),
				 0);
		a = b;
	}
}

static void *closer(void *arg)
{
	(void)arg;
	while (!load_int(&stop)) {
		if (by_range) {
			close_runs();
			continue;
		}
		for (int fd = lo; fd < lo + RANGE; fd++) {
			int ret;

			if (busy[fd - lo])
				continue;
			ret = hand_close(fd);
			if (ret == 0)
				add_int(&closed, 1);
			else if (errno == EPERM)
				add_int(&refused, 1);
			else
				assert_int_equal(errno, EBADF);
		}
	}
	return NULL;
}

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	add_int(dev_id, 1);
	return IRQ_HANDLED;
}

static int sleeper(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 0;
}

/* One round of the library opening and closing its own. */
static void round_trip(struct device *dev, int *count)
{
	struct devres_thread *t;
	int irq = irq_line_create("race");
	int n = load_int(count);

	assert_true(irq > 0);
	assert_int_equal(
		request_irq((unsigned int)irq, count_irq, 0, "race", count), 0);
	assert_int_equal(irq_line_raise(irq), 0);
	assert_true(wait_at_least(count, n + 1));
	t = devm_thread_run(dev, sleeper, NULL, "race");
	assert_false(IS_ERR(t));
	free_irq((unsigned int)irq, count);
	assert_int_equal(irq_line_destroy(irq), 0);
	assert_int_equal(devm_thread_stop(dev, t), 0);
}

static void race(struct device *dev)
{
	struct devres_ledger base, now;
	int warns;
	pthread_t th;
	int count = 0;

	/* Warm up: whatever the first round allocates for good, kept. */
	round_trip(dev, &count);
	devres_ledger_snapshot(&base);
	lo = fcntl(0, F_DUPFD_CLOEXEC, 3);
	assert_true(lo > 2);
	close(lo);
	/* What the test's parent left open above the first free number. */
	for (int i = 0; i < RANGE; i++)
		busy[i] = fcntl(lo + i, F_GETFD) >= 0;
	start_capture();
	warns = devres_warn_count();
	__atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&refused, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&th, NULL, closer, NULL), 0);
	for (int i = 0; i < ROUNDS; i++)
		round_trip(dev, &count);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	devres_set_log_sink(NULL, NULL);
	print_message("%s: %d WARNs, %d closes refused, %d let through\n",
		      by_range ? "close_range" : "close",
		      devres_warn_count() - warns, load_int(&refused),
		      load_int(&closed));
	assert_int_equal(load_int(&closed), 0);
	/* close_range() says nothing of what it left: its WARNs tell. */
	if (!by_range)
		assert_int_equal(devres_warn_count() - warns,
				 load_int(&refused));
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		assert_non_null(strstr(cap.line[i], "the library's own: "
						    "refused"));
	assert_int_equal(load_int(&count), ROUNDS + 1);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
}

static void closer_against_the_library(void **state)
{
	by_range = false;
	race(*state);
}

/* The same with close_range() over the range, a program before exec(). */
static void close_range_against_the_library(void **state)
{
	by_range = true;
	race(*state);
}

/* In a child: what it may close, and what it may not. */
static int child(int line_fd)
{
	int warns = devres_warn_count();
	int irq, fd;

	start_capture();
	/* The parent's line eventfd, inherited: the child's to close. */
	if (close(line_fd) != 0 || devres_warn_count() != warns)
		return 1;
	/* A line of the child's own: its eventfd, refused, is the lowest free. */
	fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	close(fd);
	irq = irq_line_create("child");
	if (irq <= 0)
		return 2;
	errno = 0;
	if (close(fd) != -1 || errno != EPERM ||
	    devres_warn_count() != warns + 1)
		return 3;
	if (irq_line_destroy(irq) != 0)
		return 4;
	/* Everything else inherited, the dispatcher's too: closed, no WARN. */
	if (close_range(3, ~0U, 0) != 0 || devres_warn_count() != warns + 1)
		return 5;
	return 0;
}

static void child_closes_inherited_numbers(void **state)
{
	bool before[1024];
	int count = 0, irq, line_fd = -1, status;
	pid_t pid;

	(void)state;
	for (int fd = 0; fd < 1024; fd++)
		before[fd] = fcntl(fd, F_GETFD) >= 0;
	irq = irq_line_create("parent");
	assert_true(irq > 0);
	for (int fd = 3; fd < 1024 && line_fd < 0; fd++)
		if (!before[fd] && fcntl(fd, F_GETFD) >= 0)
			line_fd = fd;
	assert_true(line_fd > 2);
	assert_int_equal(request_irq((unsigned int)irq, count_irq, 0, "parent",
				     &count),
			 0);
	for (int i = 0; i < 20; i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			alarm(20);
			_exit(child(line_fd));
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		/* The parent's line is untouched by its child's closes. */
		assert_int_equal(irq_line_raise(irq), 0);
		assert_true(wait_at_least(&count, i + 1));
	}
	free_irq((unsigned int)irq, &count);
	assert_int_equal(irq_line_destroy(irq), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(closer_against_the_library,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(close_range_against_the_library,
						dev_setup, dev_teardown),
		cmocka_unit_test(child_closes_inherited_numbers),
	};

	/* The closer's refusals are counted, not read: no backtraces. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
