// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * drain_workqueue() and destroy_workqueue() of a queue whose items never
 * stop queueing on it from their functions (chained queueing, which a
 * drain lets through, as the kernel's): an item that queues itself again
 * on every run, by queue_work(), queue_delayed_work() (no delay, and one
 * jiffy), mod_delayed_work(), and two items that queue each other. The
 * drain waited for ever (the kernel's loops, reporting "isn't complete
 * after N tries"). Now the chained queueing past KCOMPAT_WQ_CHAIN_MAX in
 * one drain is refused with one WARN naming the queueing call, and the
 * drain returns: no run after it, the items idle. A chained queueing with
 * a delay is refused at once, with its WARN (the kernel's timer would
 * queue it from outside the queue's items, and be refused then). A drained queue counts
 * afresh in its next drain (one more WARN), and a chain of exactly
 * KCOMPAT_WQ_CHAIN_MAX queueings runs to its end with no WARN.
 * Each cell runs in a child under an alarm (kc-cell.h): a drain that
 * waits for ever fails it alone.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/workqueue.h>
#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "kcompat/kc-check.h"

enum how {
	H_QUEUE,
	H_DELAYED0,
	H_DELAYED1,
	H_MOD,
	H_PINGPONG,
	H_NR
};
enum call {
	C_DRAIN,
	C_DESTROY,
	C_NR
};

static const char *const how_name[] = { "queue_work", "queue_delayed_work-0",
					"queue_delayed_work-1",
					"mod_delayed_work", "ping-pong" };
/* The call each way queues with, which the WARN names. */
static const char *const how_func[] = { "queue_work", "queue_delayed_work",
					"queue_delayed_work",
					"mod_delayed_work", "queue_work" };
/* What the WARN says. */
static const char *const how_why[] = { "is draining and its items have queued",
				       "is draining and its items have queued",
				       "with a delay would be due after the "
				       "drain began",
				       "is draining and its items have queued",
				       "is draining and its items have "
				       "queued" };
static const char *const call_name[] = { "drain", "destroy" };

static struct workqueue_struct *wq;
static struct work_struct a, b;
static struct delayed_work dw;
static enum how how;
static int runs;      /* atomic */
static int left = -1; /* queueings a finite chain makes; -1: for ever */

static void again(struct work_struct *w)
{
	__atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED);
	if (left >= 0 && !left--)
		return;
	switch (how) {
	case H_QUEUE:
		(void)queue_work(wq, w);
		break;
	case H_DELAYED0:
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		(void)queue_delayed_work(wq, &dw, 0);
		break;
	case H_DELAYED1:
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		(void)queue_delayed_work(wq, &dw, 1);
		break;
	case H_MOD:
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		(void)mod_delayed_work(wq, &dw, 0);
		break;
	default:
		(void)queue_work(wq, w == &a ? &b : &a);
		break;
	}
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int runs_now(void)
{
	return __atomic_load_n(&runs, __ATOMIC_RELAXED);
}

static void start(void)
{
	bool delayed = how == H_DELAYED0 || how == H_DELAYED1 || how == H_MOD;

	if (delayed) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		INIT_DELAYED_WORK(&dw, again);
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		CHECK(queue_delayed_work(wq, &dw, 0));
	} else {
		INIT_WORK(&a, again);
		INIT_WORK(&b, again);
		CHECK(queue_work(wq, &a));
	}
	/* Running, and queueing itself again. */
	while (runs_now() < 3)
		sleep_ms(1);
}

static void drain_or_destroy(enum call c)
{
	if (c == C_DRAIN)
		drain_workqueue(wq);
	else
		destroy_workqueue(wq);
}

/* Nothing runs after the drain, and every item is idle. */
static void stopped(void)
{
	int n = runs_now();

	sleep_ms(20);
	CHECK(runs_now() == n);
	if (how == H_QUEUE || how == H_PINGPONG)
		CHECK(!work_pending(&a) && !work_pending(&b));
	else
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		CHECK(!delayed_work_pending(&dw));
}

static void cell(int h, int c, int unused)
{
	(void)unused;
	how = (enum how)h;
	wq = alloc_workqueue("chain", 0, 0);
	CHECK(wq);
	start();
	listen();
	drain_or_destroy((enum call)c);
	heard(how_func[h], how_why[h]);
	stopped();
	if (c == C_DESTROY)
		return;
	/* Drained, the queue works again, and its next drain counts anew. */
	start();
	listen();
	drain_workqueue(wq);
	heard(how_func[h], how_why[h]);
	stopped();
	listen();
	destroy_workqueue(wq);
	heard(NULL, NULL);
}

/* A chain of exactly KCOMPAT_WQ_CHAIN_MAX queueings: it runs out. */
static void cell_finite(int h, int c, int unused)
{
	(void)unused;
	how = (enum how)h;
	left = KCOMPAT_WQ_CHAIN_MAX;
	wq = alloc_workqueue("chain", 0, 0);
	CHECK(wq);
	start();
	listen();
	drain_or_destroy((enum call)c);
	heard(NULL, NULL);
	CHECK(runs_now() == KCOMPAT_WQ_CHAIN_MAX + 1);
	stopped();
	if (c == C_DRAIN)
		destroy_workqueue(wq);
}

static void chains(void **state)
{
	char name[64];
	int bad = 0;

	(void)state;
	for (int h = 0; h < H_NR; h++)
		for (int c = 0; c < C_NR; c++) {
			snprintf(name, sizeof(name), "%s/%s", how_name[h],
				 call_name[c]);
			bad += in_child(cell, h, c, 0, name);
		}
	for (int c = 0; c < C_NR; c++) {
		snprintf(name, sizeof(name), "finite/%s", call_name[c]);
		bad += in_child(cell_finite, H_QUEUE, c, 0, name);
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
