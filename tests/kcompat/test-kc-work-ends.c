// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Every way a work item's thread, or a thread waiting in a compat call,
 * can end other than by returning, and the calls a work function makes on
 * the queue it is on:
 *
 *  - the function calls pthread_exit(), or cancels its own thread and
 *    meets a cancellation point; on the system's queue, on a queue of its
 *    own, delayed; in kmalloc() memory that it may free first. One WARN;
 *    the item is let go as if the function had returned: flush_work(),
 *    cancel_work_sync() and destroy_workqueue() return, the item can be
 *    queued again, its memory freed with no WARN, and the ledger's threads
 *    are back (they used to wait for the gone thread for ever);
 *  - the function cancels its own thread and returns, re-queued with a
 *    delay: the request must not act in the thread's wait for the delay,
 *    which would end it holding the item's lock; no WARN;
 *  - the function flushes, drains or destroys the queue it is on: one WARN
 *    each, nothing done (each waited for the function itself, for ever);
 *  - the function calls INIT_WORK() on its own item (one WARN, left as it
 *    is), flush_work() and cancel_work_sync() on it (one WARN each, no
 *    wait for itself);
 *  - a thread cancelled while it waits in flush_work(), cancel_work_sync(),
 *    flush_workqueue(), destroy_workqueue(), wait_for_completion() or
 *    wait_for_completion_timeout(): the wait is no cancellation point, so
 *    it ends when the wait does and holds no lock (it used to end in the
 *    wait holding the item's, the table's or the completion's lock, and
 *    every later call on them waited for ever).
 *
 * A test that hangs is ended by its alarm, and fails.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/completion.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <unistd.h>
#include "kcompat/kctest.h"
#include "base/thread-end.h"

#define ALARM_S 30

struct item {
	int pad[3]; /* the item is not at the block's start */
	struct delayed_work dw;
	enum ending how;
	bool free_first; /* the function kfree()s its block first */
	int runs;
};

KC_ALARM_FIXTURE(ALARM_S)

/* Lines captured since start_capture() that hold @s. */
static int said(const char *s)
{
	int n = 0;

	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += strstr(cap.line[i], s) != NULL;
	return n;
}

static void ending_fn(struct work_struct *work)
{
	struct item *k = container_of(to_delayed_work(work), struct item, dw);
	enum ending how = k->how;

	__atomic_fetch_add(&k->runs, 1, __ATOMIC_SEQ_CST);
	if (k->free_first)
		kfree(k);
	end_thread_by(how);
}

/*
 * @how ends the function's thread; the item on @wq (system_wq: the system's),
 * delayed or not. Afterwards it works as any idle item.
 */
static void end_one(enum ending how, struct workqueue_struct *wq, bool delayed)
{
	struct item *k = kzalloc(sizeof(*k), GFP_KERNEL);
	int warns;

	assert_non_null(k);
	INIT_DELAYED_WORK(&k->dw, ending_fn);
	k->how = how;
	start_capture();
	warns = devres_warn_count();
	if (delayed)
		assert_true(queue_delayed_work(wq, &k->dw, 1));
	else
		assert_true(queue_work(wq, &k->dw.work));
	/* Returns once the gone thread let the item go. */
	flush_delayed_work(&k->dw);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_int_equal(said("ended the thread it ran in"), 1);
	assert_int_equal(__atomic_load_n(&k->runs, __ATOMIC_SEQ_CST), 1);
	assert_false(delayed_work_pending(&k->dw));
	assert_false(cancel_delayed_work_sync(&k->dw));
	/* Idle: it runs again, and its memory goes without a WARN. */
	k->how = BY_RETURN;
	assert_true(queue_work(wq, &k->dw.work));
	flush_work(&k->dw.work);
	assert_int_equal(__atomic_load_n(&k->runs, __ATOMIC_SEQ_CST), 2);
	kfree(k);
	assert_int_equal(devres_warn_count(), warns + 1);
	devres_set_log_sink(NULL, NULL);
}

static void function_ends_its_thread(void **state)
{
	(void)state;
	for (enum ending how = BY_EXIT; how <= BY_CANCEL; how++) {
		struct workqueue_struct *wq = alloc_workqueue("ends", 0, 0);

		assert_non_null(wq);
		end_one(how, system_wq, false);
		end_one(how, system_wq, true);
		end_one(how, wq, false);
		end_one(how, wq, true);
		/* Nothing of the gone threads is counted on it any more. */
		destroy_workqueue(wq);
	}
}

/* The function frees its own item, then ends its thread. */
static void function_frees_then_ends(void **state)
{
	struct workqueue_struct *wq = alloc_workqueue("frees", 0, 0);

	(void)state;
	assert_non_null(wq);
	for (enum ending how = BY_EXIT; how <= BY_CANCEL; how++) {
		struct item *k = kzalloc(sizeof(*k), GFP_KERNEL);
		int warns = devres_warn_count();

		assert_non_null(k);
		INIT_DELAYED_WORK(&k->dw, ending_fn);
		k->how = how;
		k->free_first = true;
		start_capture();
		assert_true(queue_work(wq, &k->dw.work));
		/* The item is gone: the queue tells when its thread let go. */
		drain_workqueue(wq);
		assert_int_equal(devres_warn_count(), warns + 1);
		assert_int_equal(said("ended the thread it ran in"), 1);
		devres_set_log_sink(NULL, NULL);
	}
	destroy_workqueue(wq);
}

static int cancel_runs;
static struct delayed_work cancel_dw;

/* First run: asks its thread to stop, and waits for its next run. */
static void cancels_and_returns_fn(struct work_struct *work)
{
	(void)work;
	if (__atomic_fetch_add(&cancel_runs, 1, __ATOMIC_SEQ_CST) == 0) {
		pthread_cancel(pthread_self());
		schedule_delayed_work(&cancel_dw, 20);
	}
}

static void cancel_requested_at_return(void **state)
{
	(void)state;
	start_capture();
	INIT_DELAYED_WORK(&cancel_dw, cancels_and_returns_fn);
	assert_true(schedule_work(&cancel_dw.work));
	/*
	 * The first run, then the second once its delay is over: a flush
	 * waits for no queueing whose delay is not over, as the kernel's.
	 * The thread waited for the delay and lived.
	 */
	flush_work(&cancel_dw.work);
	while (delayed_work_pending(&cancel_dw))
		usleep(1000);
	flush_work(&cancel_dw.work);
	assert_int_equal(__atomic_load_n(&cancel_runs, __ATOMIC_SEQ_CST), 2);
	assert_false(delayed_work_pending(&cancel_dw));
	expect_no_warn();
}

static struct workqueue_struct *own_wq;
static int own_runs;

static void own_queue_fn(struct work_struct *work)
{
	(void)work;
	flush_workqueue(own_wq);
	drain_workqueue(own_wq);
	destroy_workqueue(own_wq);
	__atomic_fetch_add(&own_runs, 1, __ATOMIC_SEQ_CST);
}

static void work_calls_on_its_own_queue(void **state)
{
	struct work_struct w;
	int warns = devres_warn_count();

	(void)state;
	own_wq = alloc_workqueue("own", 0, 0);
	assert_non_null(own_wq);
	INIT_WORK(&w, own_queue_fn);
	start_capture();
	assert_true(queue_work(own_wq, &w));
	flush_work(&w);
	assert_int_equal(__atomic_load_n(&own_runs, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(devres_warn_count(), warns + 3);
	assert_int_equal(said("flush_workqueue: "), 1);
	assert_int_equal(said("drain_workqueue: "), 1);
	assert_int_equal(said("destroy_workqueue: "), 1);
	assert_int_equal(said("from a work item on it"), 3);
	devres_set_log_sink(NULL, NULL);
	/* The queue lives on, and goes when its owner destroys it. */
	assert_non_null(kcompat_workqueue_name(own_wq));
	destroy_workqueue(own_wq);
}

static struct work_struct self_w;
static int self_runs;
static bool self_flushed, self_cancelled;

/*
 * Calls on its own item from its function: INIT_WORK() (one WARN, the
 * item left as it is), flush_work() and cancel_work_sync() (one WARN
 * each: they do not wait for the function itself; the re-queued run is
 * taken back).
 */
static void self_calls_fn(struct work_struct *work)
{
	__atomic_fetch_add(&self_runs, 1, __ATOMIC_SEQ_CST);
	INIT_WORK(work, self_calls_fn);
	schedule_work(work);
	self_flushed = flush_work(work);
	self_cancelled = cancel_work_sync(work);
}

static void work_calls_on_its_own_item(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	INIT_WORK(&self_w, self_calls_fn);
	start_capture();
	assert_true(schedule_work(&self_w));
	flush_work(&self_w);
	assert_int_equal(__atomic_load_n(&self_runs, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(devres_warn_count(), warns + 3);
	assert_int_equal(said("INIT_WORK: "), 1);
	assert_int_equal(said("flush_work: work "), 1);
	assert_int_equal(said("cancel_work_sync: work "), 1);
	assert_true(self_flushed);
	assert_true(self_cancelled);
	assert_false(work_pending(&self_w));
	devres_set_log_sink(NULL, NULL);
}

/* A work held running until the test opens the gate. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_reached;

static void held_fn(struct work_struct *work)
{
	(void)work;
	pthread_mutex_lock(&gate_lock);
	gate_reached = true;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

enum wait {
	W_FLUSH_WORK,
	W_CANCEL_SYNC,
	W_FLUSH_QUEUE,
	W_DESTROY_QUEUE,
	W_COMPLETION,
	W_COMPLETION_TIMEOUT,
	W_COUNT
};

static struct work_struct held;
static struct workqueue_struct *held_wq;
static struct completion done;
static bool waiting;

static void *waiter(void *arg)
{
	enum wait which = (enum wait)(intptr_t)arg;

	__atomic_store_n(&waiting, true, __ATOMIC_SEQ_CST);
	switch (which) {
	case W_FLUSH_WORK:
		flush_work(&held);
		break;
	case W_CANCEL_SYNC:
		cancel_work_sync(&held);
		break;
	case W_FLUSH_QUEUE:
		flush_workqueue(held_wq);
		break;
	case W_DESTROY_QUEUE:
		destroy_workqueue(held_wq);
		held_wq = NULL;
		break;
	case W_COMPLETION:
		wait_for_completion(&done);
		break;
	default:
		(void)wait_for_completion_timeout(&done, 60000);
		break;
	}
	/* The request acts here, after the wait. */
	pthread_testcancel();
	return arg;
}

static void one_cancelled_waiter(enum wait which)
{
	pthread_t t;
	void *ret;

	gate_open = gate_reached = false;
	__atomic_store_n(&waiting, false, __ATOMIC_SEQ_CST);
	held_wq = alloc_workqueue("held", 0, 0);
	assert_non_null(held_wq);
	INIT_WORK(&held, held_fn);
	init_completion(&done);
	assert_true(queue_work(held_wq, &held));
	pthread_mutex_lock(&gate_lock);
	while (!gate_reached)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	assert_int_equal(
		pthread_create(&t, NULL, waiter, (void *)(intptr_t)which), 0);
	while (!__atomic_load_n(&waiting, __ATOMIC_SEQ_CST))
		sched_yield();
	assert_int_equal(pthread_cancel(t), 0);
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	complete(&done);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	/* No lock was left held: every call goes through. */
	assert_false(cancel_work_sync(&held));
	complete(&done);
	assert_true(try_wait_for_completion(&done));
	if (held_wq)
		destroy_workqueue(held_wq);
	assert_true(schedule_work(&held));
	flush_work(&held);
}

static void cancelled_while_waiting(void **state)
{
	(void)state;
	start_capture();
	for (enum wait w = W_FLUSH_WORK; w < W_COUNT; w++)
		one_cancelled_waiter(w);
	expect_no_warn();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(function_ends_its_thread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(function_frees_then_ends, setup,
						teardown),
		cmocka_unit_test_setup_teardown(cancel_requested_at_return,
						setup, teardown),
		cmocka_unit_test_setup_teardown(work_calls_on_its_own_queue,
						setup, teardown),
		cmocka_unit_test_setup_teardown(work_calls_on_its_own_item,
						setup, teardown),
		cmocka_unit_test_setup_teardown(cancelled_while_waiting, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
