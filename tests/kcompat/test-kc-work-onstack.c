// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A work item on the stack, ended with destroy_work_on_stack() or
 * destroy_delayed_work_on_stack() before its frame goes, in every state:
 * idle or run already, nothing said; queued with a delay, running in its
 * thread, running and queued again, one WARN (the kernel's
 * DEBUG_OBJECTS_WORK: "free active object"), and the item cancelled and
 * waited for before the frame ends: its function has returned, it runs
 * no more, and the frame's memory is touched by no thread after.
 */
#define _GNU_SOURCE
#include <linux/workqueue.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "gate.h"
#include "testlib.h"

enum state {
	IDLE,
	RAN,
	DELAYED,
	RUNNING,
	RUNNING_QUEUED,
	NSTATES
};
static const char *const state_name[] = { "idle", "ran", "delayed", "running",
					  "running-queued" };
static const int want_warns[] = { 0, 0, 1, 1, 1 };
static const int want_runs[] = { 0, 1, 0, 1, 1 };

static int runs, ended, left;
static bool gated;

static void fn(struct work_struct *w)
{
	(void)w;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	if (gated)
		gate_wait();
	__atomic_add_fetch(&ended, 1, __ATOMIC_SEQ_CST);
}

/* Opens the gate a little after the destroy began to wait at it. */
static void *releaser(void *arg)
{
	struct timespec ts = { 0, 50 * 1000000L };

	(void)arg;
	nanosleep(&ts, NULL);
	gate_release();
	return NULL;
}

/* The frame: the item lives and ends here. */
static void frame(enum state st, bool delayed_call)
{
	struct delayed_work dw;
	pthread_t t;

	memset(&t, 0, sizeof(t));
	INIT_DELAYED_WORK_ONSTACK(&dw, fn);
	gated = st == RUNNING || st == RUNNING_QUEUED;
	gate_reset();
	if (st == RAN) {
		assert_true(schedule_delayed_work(&dw, 0));
		(void)flush_delayed_work(&dw);
	} else if (st == DELAYED) {
		assert_true(schedule_delayed_work(&dw, 60000));
	} else if (gated) {
		assert_true(schedule_delayed_work(&dw, 0));
		gate_until_reached();
		if (st == RUNNING_QUEUED)
			assert_true(schedule_delayed_work(&dw, 0));
		assert_int_equal(pthread_create(&t, NULL, releaser, NULL), 0);
	}
	if (delayed_call)
		destroy_delayed_work_on_stack(&dw);
	else
		destroy_work_on_stack(&dw.work);
	/* What the destroy waited for is over: nothing of it runs now. */
	if (__atomic_load_n(&ended, __ATOMIC_SEQ_CST) !=
	    __atomic_load_n(&runs, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&left, 1, __ATOMIC_SEQ_CST);
	if (devres_liveobj_active(&dw.work)) {
		/* Left queued: cancelled here, for the next cell's sake. */
		print_error("%s: still queued or running at the frame's end\n",
			    state_name[st]);
		(void)cancel_delayed_work_sync(&dw);
		__atomic_add_fetch(&left, 1, __ATOMIC_SEQ_CST);
	}
	if (gated)
		assert_int_equal(pthread_join(t, NULL), 0);
}

static void every_state_both_calls(void **state)
{
	int bad = 0;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (int st = 0; st < NSTATES; st++) {
		for (int d = 0; d < 2; d++) {
			int w0 = devres_warn_count();
			struct timespec ts = { 0, 20 * 1000000L };

			__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&ended, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&left, 0, __ATOMIC_SEQ_CST);
			frame((enum state)st, d);
			/* A run left behind would come now, on a dead frame. */
			nanosleep(&ts, NULL);
			if (__atomic_load_n(&left, __ATOMIC_SEQ_CST) ||
			    devres_warn_count() - w0 != want_warns[st] ||
			    __atomic_load_n(&runs, __ATOMIC_SEQ_CST) !=
				    want_runs[st]) {
				print_error("%s/%s: %d WARN (want %d), %d runs "
					    "(want %d)\n",
					    state_name[st],
					    d ? "destroy_delayed_work_on_stack"
					      : "destroy_work_on_stack",
					    devres_warn_count() - w0,
					    want_warns[st],
					    __atomic_load_n(&runs,
							    __ATOMIC_SEQ_CST),
					    want_runs[st]);
				bad++;
			}
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_state_both_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
