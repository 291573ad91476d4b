// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat fault tsan */
/*
 * A work item that gets no thread: every way of queueing one (the table
 * of facilities) with the thread spawner's fault points failed in turn
 * (its record: -ENOMEM; the thread: -EAGAIN), while the caller holds a
 * lock the work's function takes, as a probe may. The queue call returns
 * (it used to run the work there and then, on the lock it held: a
 * deadlock; the alarm ends a hang), no thread is counted, and the work
 * runs exactly once later, by each of the ways the layer has (the table
 * of rescues): a flush of the item, a flush, drain or destroy of its
 * queue, the next queue that gets a thread, a work thread that finishes
 * and takes it over; or a cancel takes it back and it never runs. The
 * count of fault points in a queue call is checked too: two, both in the
 * spawner. A self-rearming delayed work that got no thread does not run
 * in its caller for ever either.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "kcompat/kctest.h"

#define ALARM_S 30

/* The lock a probe holds while it queues, which the work takes too. */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static int runs; /* __atomic */
static pthread_t ran_on;

static void locking_fn(struct work_struct *work)
{
	(void)work;
	pthread_mutex_lock(&probe_lock);
	ran_on = pthread_self();
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&probe_lock);
}

static int nruns(void)
{
	return __atomic_load_n(&runs, __ATOMIC_SEQ_CST);
}

/* Waits up to 10 s for @n runs in all: a thread of the layer runs them. */
static bool wait_runs(int n)
{
	for (int i = 0; i < 100000 && nruns() < n; i++)
		usleep(100);
	return nruns() == n;
}

static long threads_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.threads;
}

/* The item under test, plain or delayed, and the queue it goes on. */
static struct delayed_work item;
static struct workqueue_struct *wq;
static struct platform_device *pdev;

/* How each facility queues the item; the delayed ones by one jiffy. */
static bool q_schedule_work(void)
{
	return schedule_work(&item.work);
}

static bool q_queue_work(void)
{
	return queue_work(wq, &item.work);
}

static bool q_schedule_delayed(void)
{
	return schedule_delayed_work(&item, 1);
}

static bool q_queue_delayed(void)
{
	return queue_delayed_work(wq, &item, 1);
}

static bool q_mod_delayed(void)
{
	(void)mod_delayed_work(wq, &item, 1);
	return delayed_work_pending(&item);
}

static bool q_autocancel(void)
{
	return schedule_work(&item.work);
}

struct facility {
	const char *name;
	bool (*queue)(void);
	bool on_wq;   /* the item counts on wq */
	bool managed; /* devm_work_autocancel(): cancelled at unbind */
};

static const struct facility facilities[] = {
	{ "schedule_work", q_schedule_work, false, false },
	{ "queue_work", q_queue_work, true, false },
	{ "schedule_delayed_work", q_schedule_delayed, false, false },
	{ "queue_delayed_work", q_queue_delayed, true, false },
	{ "mod_delayed_work", q_mod_delayed, true, false },
	{ "devm_work_autocancel", q_autocancel, false, true },
};

static void other_fn(struct work_struct *work)
{
	(void)work;
}

/* Held running until opened: a thread that then takes the item over. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_reached;
static pthread_t gate_thread;

static void gate_fn(struct work_struct *work)
{
	(void)work;
	pthread_mutex_lock(&gate_lock);
	gate_thread = pthread_self();
	gate_reached = true;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static struct work_struct other_work, gate;

/* What runs the item, once the caller let go of its lock. */
enum rescue {
	R_FLUSH_ITEM,
	R_FLUSH_WQ,
	R_DRAIN_WQ,
	R_DESTROY_WQ,
	R_NEXT_QUEUE,
	R_ADOPT,
	R_CANCEL,
	R_UNBIND, /* the managed item's cancel at unbind */
	R_COUNT
};

static const char *const rescue_names[R_COUNT] = {
	"flush the item",  "flush_workqueue",
	"drain_workqueue", "destroy_workqueue",
	"the next queue",  "a finishing thread",
	"cancel",	   "unbind",
};

static bool applies(const struct facility *f, enum rescue r)
{
	if (r >= R_FLUSH_WQ && r <= R_DESTROY_WQ)
		return f->on_wq;
	if (r == R_UNBIND)
		return f->managed;
	return true;
}

static int probe(struct platform_device *p)
{
	return devm_work_autocancel(&p->dev, &item.work, locking_fn);
}

static struct platform_driver drv = {
	.probe = probe,
	.driver = { .name = "kc-spawn-fail" },
};

/* The item fresh: plain or delayed, managed (bound) or not, its queue. */
static void item_up(const struct facility *f)
{
	wq = alloc_workqueue("spawn-fail", 0, 0);
	assert_non_null(wq);
	if (f->managed) {
		pdev = platform_device_alloc("kc-spawn-fail",
					     PLATFORM_DEVID_NONE);
		assert_non_null(pdev);
		assert_int_equal(platform_device_add(pdev), 0);
		assert_int_equal(platform_driver_register(&drv), 0);
		assert_ptr_equal(pdev->dev.driver, &drv.driver);
	} else {
		INIT_DELAYED_WORK(&item, locking_fn);
	}
}

static void item_down(const struct facility *f, bool wq_gone)
{
	if (f->managed) {
		platform_driver_unregister(&drv);
		platform_device_unregister(pdev);
	}
	if (!wq_gone)
		destroy_workqueue(wq);
}

/*
 * @f queues the item with the @n-th fault point failed, under the lock
 * its function takes; @r then runs it (or takes it back). The run count
 * is checked after, and again after everything is flushed.
 */
static void one_case(const struct facility *f, unsigned int n, enum rescue r)
{
	long t0 = threads_now();
	bool wq_gone = false;
	int want = r == R_CANCEL || r == R_UNBIND ? 0 : 1;

	__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
	item_up(f);
	if (r == R_ADOPT) {
		gate_open = gate_reached = false;
		INIT_WORK(&gate, gate_fn);
		assert_true(schedule_work(&gate));
		pthread_mutex_lock(&gate_lock);
		while (!gate_reached)
			pthread_cond_wait(&gate_cond, &gate_lock);
		pthread_mutex_unlock(&gate_lock);
		t0 = threads_now();
	}
	pthread_mutex_lock(&probe_lock);
	devres_fail_nth(n);
	assert_true(f->queue());
	/* Spent, by the spawner: no thread counted, none started. */
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_int_equal(threads_now(), t0);
	assert_true(delayed_work_pending(&item));
	pthread_mutex_unlock(&probe_lock);
	assert_int_equal(nruns(), 0);

	switch (r) {
	case R_FLUSH_ITEM:
		assert_true(flush_delayed_work(&item));
		assert_int_equal(nruns(), 1);
		assert_true(pthread_equal(ran_on, pthread_self()));
		break;
	case R_FLUSH_WQ:
		/*
		 * As the kernel's, a flush of the queue finds a delayed item
		 * on it only once its delay is over: one jiffy, slept past.
		 */
		if (f->queue == q_queue_delayed || f->queue == q_mod_delayed)
			usleep(2000);
		flush_workqueue(wq);
		if (nruns() != 1)
			fail_msg("%s, fault point %u: flush_workqueue: %d runs",
				 f->name, n, nruns());
		break;
	case R_DRAIN_WQ:
		drain_workqueue(wq);
		assert_int_equal(nruns(), 1);
		break;
	case R_DESTROY_WQ:
		destroy_workqueue(wq);
		wq_gone = true;
		assert_int_equal(nruns(), 1);
		break;
	case R_NEXT_QUEUE:
		INIT_WORK(&other_work, other_fn);
		assert_true(schedule_work(&other_work));
		assert_true(wait_runs(1));
		flush_work(&other_work);
		assert_false(pthread_equal(ran_on, pthread_self()));
		break;
	case R_ADOPT:
		pthread_mutex_lock(&gate_lock);
		gate_open = true;
		pthread_cond_broadcast(&gate_cond);
		pthread_mutex_unlock(&gate_lock);
		assert_true(wait_runs(1));
		assert_true(pthread_equal(ran_on, gate_thread));
		flush_work(&gate);
		break;
	case R_CANCEL:
		assert_true(cancel_delayed_work_sync(&item));
		break;
	case R_UNBIND:
		platform_driver_unregister(&drv);
		assert_false(delayed_work_pending(&item));
		assert_int_equal(platform_driver_register(&drv), 0);
		break;
	default:
		fail();
	}
	(void)flush_delayed_work(&item);
	item_down(f, wq_gone);
	if (nruns() != want)
		fail_msg("%s, fault point %u, %s: %d runs, not %d", f->name, n,
			 rescue_names[r], nruns(), want);
	assert_false(delayed_work_pending(&item));
}

static void every_facility_every_rescue(void **state)
{
	struct devres_ledger base, now;
	unsigned int cases = 0;

	(void)state;
	alarm(ALARM_S);
	devres_ledger_snapshot(&base);
	for (size_t i = 0; i < sizeof(facilities) / sizeof(facilities[0]); i++)
		for (unsigned int n = 1; n <= 2; n++)
			for (int r = 0; r < R_COUNT; r++)
				if (applies(&facilities[i], (enum rescue)r)) {
					one_case(&facilities[i], n,
						 (enum rescue)r);
					cases++;
				}
	print_message("%u cases\n", cases);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
	alarm(0);
}

/*
 * A queue call holds two fault points, the spawner's: with the third
 * armed, the item gets its thread and the count is left armed.
 */
static void two_fault_points(void **state)
{
	long t0 = threads_now();

	(void)state;
	alarm(ALARM_S);
	__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
	INIT_DELAYED_WORK(&item, locking_fn);
	pthread_mutex_lock(&probe_lock);
	devres_fail_nth(3);
	assert_true(schedule_work(&item.work));
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(0);
	/* Its thread, counted, waits for the lock this thread holds. */
	assert_int_equal(threads_now(), t0 + 1);
	pthread_mutex_unlock(&probe_lock);
	(void)flush_work(&item.work);
	assert_int_equal(nruns(), 1);
	alarm(0);
}

/* Re-queues itself, one jiffy later, until told to stop. */
static bool rearm_stop;

static void rearm_fn(struct work_struct *work)
{
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&rearm_stop, __ATOMIC_SEQ_CST))
		(void)schedule_delayed_work(to_delayed_work(work), 1);
}

static void self_rearming_delayed_work(void **state)
{
	(void)state;
	alarm(ALARM_S);
	__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&rearm_stop, false, __ATOMIC_SEQ_CST);
	INIT_DELAYED_WORK(&item, rearm_fn);
	devres_fail_nth(2);
	assert_true(schedule_delayed_work(&item, 1));
	/* Back at once: it never ran here. */
	assert_int_equal(nruns(), 0);
	/* A thread to be had: it runs there, rearming, until cancelled. */
	INIT_WORK(&other_work, other_fn);
	assert_true(schedule_work(&other_work));
	for (int i = 0; i < 100000 && nruns() < 3; i++)
		usleep(100);
	assert_true(nruns() >= 3);
	(void)cancel_delayed_work_sync(&item);
	assert_false(delayed_work_pending(&item));
	assert_false(flush_delayed_work(&item));
	__atomic_store_n(&rearm_stop, true, __ATOMIC_SEQ_CST);
	flush_work(&other_work);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_facility_every_rescue),
		cmocka_unit_test(two_fault_points),
		cmocka_unit_test(self_rearming_delayed_work),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
