// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * drain_workqueue() and destroy_workqueue() of a queue with a delayed
 * item whose delay is not over: a minute, MAX_JIFFY_OFFSET, and
 * MAX_SCHEDULE_TIMEOUT (for ever). The drain waited for the delay: a
 * minute, or for ever (the kernel's drain waits for no timer, and the
 * timer's queueing then meets a draining or freed queue). Now the drain
 * makes it due: it runs at once, with one WARN naming the drain, and the
 * drain returns after its run; two such items on the queue give one WARN
 * and both run. Controls: a delayed item cancelled before the drain, and
 * one on the system's queue (no queue of the drain), say nothing and do
 * not run. Each cell in a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/jiffies.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "kcompat/kc-check.h"

enum call {
	C_DRAIN,
	C_DESTROY,
	C_NR
};
enum kind {
	K_ONE,
	K_TWO,
	K_CANCELLED,
	K_SYSTEM,
	K_NR
};

static const char *const call_name[] = { "drain_workqueue", "destroy_"
							    "workqueue" };
static const char *const kind_name[] = { "one", "two", "cancelled", "system" };
static const unsigned long delays[] = { 60000, MAX_JIFFY_OFFSET,
					MAX_SCHEDULE_TIMEOUT };
static const char *const delay_name[] = { "minute", "max-jiffy-offset",
					  "max-schedule-timeout" };

static struct delayed_work d1, d2;
static int runs; /* atomic */

static void fn(struct work_struct *w)
{
	(void)w;
	__atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED);
}

static int runs_now(void)
{
	return __atomic_load_n(&runs, __ATOMIC_RELAXED);
}

static void cell(int c, int k, int d)
{
	struct workqueue_struct *wq = alloc_workqueue("delayed", 0, 0);
	struct workqueue_struct *on = k == K_SYSTEM ? system_wq : wq;
	int want = k == K_ONE ? 1 : k == K_TWO ? 2 : 0;

	CHECK(wq);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	INIT_DELAYED_WORK(&d1, fn);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	INIT_DELAYED_WORK(&d2, fn);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	CHECK(queue_delayed_work(on, &d1, delays[d]));
	if (k == K_TWO) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		CHECK(queue_delayed_work(wq, &d2, delays[d]));
	}
	if (k == K_CANCELLED) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		CHECK(cancel_delayed_work(&d1));
	}
	listen();
	if (c == C_DRAIN)
		drain_workqueue(wq);
	else
		destroy_workqueue(wq);
	heard(want ? call_name[c] : NULL, "is not due yet: run now");
	CHECK(runs_now() == want);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	CHECK(!delayed_work_pending(&d1) || k == K_SYSTEM);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	CHECK(!delayed_work_pending(&d2));
	if (k == K_SYSTEM) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		CHECK(cancel_delayed_work_sync(&d1));
	}
	if (c == C_DRAIN)
		destroy_workqueue(wq);
	CHECK(runs_now() == want);
}

static void delayed_at_drain(void **state)
{
	char name[96];
	int bad = 0;

	(void)state;
	for (int c = 0; c < C_NR; c++)
		for (int k = 0; k < K_NR; k++)
			for (int d = 0; d < 3; d++) {
				snprintf(name, sizeof(name), "%s/%s/%s",
					 call_name[c], kind_name[k],
					 delay_name[d]);
				bad += in_child(cell, c, k, d, name);
			}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(delayed_at_drain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
