// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=180 */
/*
 * Signal handlers that call the library on the thread they interrupt.
 *
 * A thread works on a device in a loop (managed memory, actions, groups,
 * lookups) while another thread sends it SIGUSR1 as fast as it can; the
 * handler makes one acquire-and-release call pair on the same device or
 * on another one. Wherever the signal lands (before, inside or after the
 * device's devres lock, half way into or out of it), the handler's call
 * either works or is refused with exactly one WARN and its failure
 * value, never waits for the lock its own thread holds, and leaves
 * nothing behind: the fixture's teardown checks the lists and the ledger.
 * The WARN path itself is attacked the same way: a thread WARNs in a loop
 * through a sink while the handler WARNs too. A hang is the alarm's
 * SIGALRM, which fails the test.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"

/* How long a cell runs at most, and how many of each outcome it wants. */
#define CELL_NS 3000000000L
#define WANT 40

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* ---- The handler's calls: each acquires and gives back on one device ---- */

static void noop_action(void *p)
{
	(void)p;
}

static void never_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int match_none(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	return 0;
}

/*
 * The handler's calls take the device's lock and allocate nothing:
 * memory is not to be had in a handler (malloc() is not async-signal-safe,
 * nor is the thread's cache of node chunks; docs/reliability.md). Each
 * walks the list under the lock (a match is given: a lookup of a release
 * never added is answered without it) and finds nothing. A refusal's
 * value is the same answer: only its WARN tells them apart. No cmocka
 * assertion runs in the handler: it counts what it saw.
 */
static bool h_find(struct device *dev)
{
	return !devres_find(dev, never_release, match_none, NULL);
}

static bool h_remove(struct device *dev)
{
	return !devres_remove(dev, never_release, match_none, NULL);
}

static bool h_destroy(struct device *dev)
{
	return devres_destroy(dev, never_release, match_none, NULL) == -ENOENT;
}

static bool h_release(struct device *dev)
{
	return devres_release(dev, never_release, match_none, NULL) == -ENOENT;
}

static void count_res(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(*(int *)data)++;
}

static bool h_for_each(struct device *dev)
{
	int n = 0;

	devres_for_each_res(dev, never_release, match_none, NULL, count_res,
			    &n);
	return n == 0;
}

struct call {
	const char *name;
	/* Whether the answer is the one expected: nothing found. */
	bool (*fn)(struct device *dev);
};

static const struct call calls[] = {
	{ "devres_find", h_find },
	{ "devres_remove", h_remove },
	{ "devres_destroy", h_destroy },
	{ "devres_release", h_release },
	{ "devres_for_each_res", h_for_each },
};
#define NCALLS (sizeof(calls) / sizeof(calls[0]))

/* ---- The storm ---- */

static const struct call *hcall;
static struct device *hdev;
/* Handler outcomes: worked, refused with one WARN, anything else. */
static int h_ok, h_refused, h_wrong;

static void on_signal(int sig)
{
	int w0 = devres_warn_count(), d;

	(void)sig;
	if (!hcall->fn(hdev))
		h_wrong++;
	d = devres_warn_count() - w0;
	if (d == 0)
		h_ok++;
	else if (d == 1)
		h_refused++;
	else
		h_wrong++;
}

static pid_t target;
static int storm_stop;

static void *storm(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&storm_stop, __ATOMIC_ACQUIRE)) {
		syscall(SYS_tgkill, getpid(), target, SIGUSR1);
		for (volatile int i = 0; i < 100; i++)
			;
	}
	return NULL;
}

static void storm_start(pthread_t *t, void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	h_ok = h_refused = h_wrong = 0;
	target = (pid_t)syscall(SYS_gettid);
	storm_stop = 0;
	assert_int_equal(pthread_create(t, NULL, storm, NULL), 0);
}

static void storm_end(pthread_t t)
{
	__atomic_store_n(&storm_stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	signal(SIGUSR1, SIG_IGN);
}

/* ---- The interrupted thread's own work on tdev ---- */

static void work_round(unsigned int i)
{
	void *p, *g;

	switch (i % 4) {
	case 0:
		p = devm_kmalloc(&tdev, 32, 0);
		assert_non_null(p);
		devm_kfree(&tdev, p);
		break;
	case 1:
		assert_int_equal(devm_add_action(&tdev, noop_action, &tdev), 0);
		devm_remove_action(&tdev, noop_action, &tdev);
		break;
	case 2:
		g = devres_open_group(&tdev, NULL, 0);
		assert_non_null(g);
		assert_int_equal(devres_release_group(&tdev, g), 0);
		break;
	default:
		assert_null(
			devres_find(&tdev, never_release, match_none, NULL));
	}
}

static int warn_lines;

static void counting_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) == 0)
		__atomic_add_fetch(&warn_lines, 1, __ATOMIC_RELAXED);
}

/*
 * One cell: the handler's @c on @dev while this thread works on tdev.
 * @same: the handler's device is tdev, so some of its calls land inside
 * the lock and are refused.
 */
static void run_cell(const struct call *c, struct device *dev, bool same)
{
	int w0 = devres_warn_count(), w_work;
	long t0 = now_ns();
	unsigned int i = 0;
	pthread_t t;

	hcall = c;
	hdev = dev;
	devres_set_log_sink(counting_sink, NULL);
	alarm(60);
	storm_start(&t, on_signal);
	while (now_ns() - t0 < CELL_NS &&
	       (__atomic_load_n(&h_ok, __ATOMIC_RELAXED) < WANT ||
		(same && __atomic_load_n(&h_refused, __ATOMIC_RELAXED) < WANT)))
		work_round(i++);
	storm_end(t);
	alarm(0);
	devres_set_log_sink(NULL, NULL);
	w_work = devres_warn_count() - w0;
	print_message("%-40s %s: %u rounds, handler %d worked, %d refused\n",
		      c->name, same ? "same device" : "other device", i, h_ok,
		      h_refused);
	assert_int_equal(h_wrong, 0);
	/* Every WARN is a refusal of the handler's, and was sent. */
	assert_int_equal(w_work, h_refused);
	assert_int_equal(warn_lines, w_work);
	if (!same)
		assert_int_equal(h_refused, 0);
#ifndef T_TSAN
	/*
	 * ThreadSanitizer holds a signal back until its thread enters one
	 * of its interceptors: the handler seldom runs inside the lock.
	 */
	assert_true(h_ok > 0);
	if (same)
		assert_true(h_refused > 0);
#endif
	assert_int_equal(devres_check(&tdev), 0);
	assert_int_equal(devres_check(dev), 0);
}

/* A lookup of a release never added is answered without the lock. */
static void know_never_release(void)
{
	devres_free(devres_alloc(never_release, 8, 0));
}

static void every_call_same_device(void **state)
{
	(void)state;
	know_never_release();
	for (size_t k = 0; k < NCALLS; k++) {
		warn_lines = 0;
		run_cell(&calls[k], &tdev, true);
	}
}

static void every_call_other_device(void **state)
{
	(void)state;
	know_never_release();
	for (size_t k = 0; k < NCALLS; k++) {
		warn_lines = 0;
		run_cell(&calls[k], &other, false);
	}
}

/* ---- WARNs from the handler while its thread WARNs through the sink ---- */

static int h_warned;

static void warn_in_handler(int sig)
{
	int x = 0;

	(void)sig;
	/* Not managed memory: one WARN, nothing freed. */
	devm_kfree(&other, &x);
	h_warned++;
}

static void warns_inside_warns(void **state)
{
	int w0 = devres_warn_count(), x = 0;
	long t0 = now_ns();
	unsigned int n = 0;
	pthread_t t;

	(void)state;
	warn_lines = 0;
	h_warned = 0;
	devres_set_log_sink(counting_sink, NULL);
	alarm(60);
	storm_start(&t, warn_in_handler);
	while (now_ns() - t0 < CELL_NS / 3) {
		devm_kfree(&tdev, &x);
		n++;
	}
	storm_end(t);
	alarm(0);
	devres_set_log_sink(NULL, NULL);
	print_message("%u WARNs of the thread, %d of the handler, %d lines\n",
		      n, h_warned, warn_lines);
	/* Each counted once; a line dropped only for a handler's WARN. */
	assert_int_equal(devres_warn_count() - w0, (int)n + h_warned);
	assert_in_range(warn_lines, n, n + (unsigned int)h_warned);
	assert_true(h_warned > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_call_same_device,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(every_call_other_device,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(warns_inside_warns,
						two_dev_setup, dev_teardown),
	};

	/* A backtrace allocates: a handler's WARN must not meet its thread's. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
