// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The calls of <linux/workqueue.h> that the kernel's never make wait for
 * a run in progress, as the kernel's: cancel_work() and
 * cancel_delayed_work() take a queued run back and return whether there
 * was one; mod_delayed_work() queues the item again with a new delay and
 * returns whether it was pending (the run in progress goes on, the new
 * one follows). Every state of the item (idle, queued with a delay,
 * running, running and queued again, queued again by its own function)
 * x each call: the return, no wait (the call returns while the function
 * is held at a gate; it waited there for ever before), how many runs
 * follow, and whether the item is pending after.
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
#include "kcompat/kctest.h"
#include "gate.h"
#include "testlib.h"

enum state {
	IDLE,
	DELAYED,
	RUNNING,
	RUNNING_QUEUED,
	OWN_QUEUED,
	NSTATES
};
static const char *const state_name[] = { "idle", "delayed", "running",
					  "running-queued", "own-queued" };

enum call {
	CANCEL_WORK,
	CANCEL_DELAYED_WORK,
	MOD_DELAYED_WORK
};
static const char *const call_name[] = { "cancel_work", "cancel_delayed_work",
					 "mod_delayed_work" };

/* mod_delayed_work()'s delay: the run it queues is taken back first. */
#define MOD_DELAY 60000

struct cell {
	enum state st;
	enum call call;
	bool ret;  /* what the call returns */
	int runs;  /* runs of the function in all */
	bool left; /* pending after (taken back by cancel_*_sync()) */
};

static const struct cell cells[] = {
	{ IDLE, CANCEL_WORK, false, 0, false },
	{ IDLE, CANCEL_DELAYED_WORK, false, 0, false },
	{ IDLE, MOD_DELAYED_WORK, false, 0, true },
	{ DELAYED, CANCEL_WORK, true, 0, false },
	{ DELAYED, CANCEL_DELAYED_WORK, true, 0, false },
	{ DELAYED, MOD_DELAYED_WORK, true, 0, true },
	{ RUNNING, CANCEL_WORK, false, 1, false },
	{ RUNNING, CANCEL_DELAYED_WORK, false, 1, false },
	{ RUNNING, MOD_DELAYED_WORK, false, 1, true },
	{ RUNNING_QUEUED, CANCEL_WORK, true, 1, false },
	{ RUNNING_QUEUED, CANCEL_DELAYED_WORK, true, 1, false },
	{ RUNNING_QUEUED, MOD_DELAYED_WORK, true, 1, true },
	{ OWN_QUEUED, CANCEL_WORK, true, 1, false },
	{ OWN_QUEUED, CANCEL_DELAYED_WORK, true, 1, false },
	{ OWN_QUEUED, MOD_DELAYED_WORK, true, 1, true },
};

static struct delayed_work dw;
static int runs;
static bool gated;	/* the first run waits at the gate */
static bool own_cancel; /* the first run queues itself, then cancels */
static bool own_ret;	/* what its cancel returned */
static bool first_done; /* the first run returned */
static const struct cell *cur;

static bool call(void)
{
	switch (cur->call) {
	case CANCEL_WORK:
		return cancel_work(&dw.work);
	case CANCEL_DELAYED_WORK:
		return cancel_delayed_work(&dw);
	default:
		return mod_delayed_work(system_wq, &dw, MOD_DELAY);
	}
}

static void fn(struct work_struct *w)
{
	int n = __atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);

	(void)w;
	if (n != 1)
		return;
	if (own_cancel) {
		schedule_delayed_work(&dw, 0);
		own_ret = call();
	}
	if (gated)
		gate_wait();
	pthread_mutex_lock(&gate_lock);
	first_done = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

/* Until the first run returned (not a flush: it would wait for a re-arm). */
static void first_run_done(void)
{
	pthread_mutex_lock(&gate_lock);
	while (!first_done)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

/* The call, from a thread of its own: whether it returned by @ms. */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static bool done, ret;

static void *caller(void *arg)
{
	bool r = call();

	(void)arg;
	pthread_mutex_lock(&done_lock);
	ret = r;
	done = true;
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

static bool returned_within(int ms)
{
	struct timespec end = kc_deadline_ms(ms);
	bool d;

	pthread_mutex_lock(&done_lock);
	while (!done &&
	       pthread_cond_timedwait(&done_cond, &done_lock, &end) == 0)
		;
	d = done;
	pthread_mutex_unlock(&done_lock);
	return d;
}

static void every_state_each_call(void **state)
{
	int bad = 0;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		int w0 = devres_warn_count();
		pthread_t t;
		bool in_time, left;

		cur = &cells[i];
		__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
		gated = cur->st == RUNNING || cur->st == RUNNING_QUEUED;
		own_cancel = cur->st == OWN_QUEUED;
		own_ret = false;
		first_done = false;
		done = false;
		gate_reset();
		INIT_DELAYED_WORK(&dw, fn);
		if (cur->st == DELAYED)
			assert_true(schedule_delayed_work(&dw, 60000));
		if (gated || own_cancel) {
			assert_true(schedule_delayed_work(&dw, 0));
			if (gated)
				gate_until_reached();
			else
				first_run_done();
		}
		if (cur->st == RUNNING_QUEUED)
			assert_true(schedule_delayed_work(&dw, 0));
		if (own_cancel) {
			ret = own_ret;
			in_time = true;
		} else {
			assert_int_equal(pthread_create(&t, NULL, caller, NULL),
					 0);
			/* The function is held: a call that waits never ends. */
			in_time = returned_within(5000);
		}
		gate_release();
		if (!own_cancel)
			assert_int_equal(pthread_join(t, NULL), 0);
		left = cancel_delayed_work_sync(&dw);
		if (!in_time || ret != cur->ret || left != cur->left ||
		    __atomic_load_n(&runs, __ATOMIC_SEQ_CST) != cur->runs ||
		    devres_warn_count() != w0 || work_pending(&dw.work)) {
			print_error("%s/%s: %s, returned %d (want %d), %d runs "
				    "(want %d), pending after %d (want %d), "
				    "%d WARN\n",
				    state_name[cur->st], call_name[cur->call],
				    in_time ? "returned" : "waited", ret,
				    cur->ret,
				    __atomic_load_n(&runs, __ATOMIC_SEQ_CST),
				    cur->runs, left, cur->left,
				    devres_warn_count() - w0);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_state_each_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
