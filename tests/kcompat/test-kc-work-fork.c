// SPDX-License-Identifier: MIT
/* ctest-labels: stress kcompat tsan */
/*
 * fork() from a parent whose work is busy: an item running (its function
 * held at a gate) and queued again behind that run, a delayed work
 * pending, an item queued on the parent's own workqueue, and a thread
 * that queues and flushes on that queue without pause, so that the
 * compat layer's locks are taken at the moment of the fork. In each
 * child, every work and workqueue call on what the parent had returns at
 * once with one WARN naming the call and the parent (it used to wait for
 * the parent's threads, which are not in the child, forever), and the
 * child's own queue, work, delayed work and kmalloc() work. A child that
 * does not finish in CHILD_ALARM_S seconds fails the test.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include "kcompat/kctest.h"
#include "base/fork-park.h"

#define CHILDREN 12
#define CHILD_ALARM_S 10

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_reached;
static int runs; /* __atomic: <linux/atomic.h> takes the C11 names */

/* Runs until the parent opens the gate; says when it got there. */
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

static void count_fn(struct work_struct *work)
{
	(void)work;
	__atomic_fetch_add(&runs, 1, __ATOMIC_SEQ_CST);
}

static struct work_struct running;   /* running, and queued again */
static struct delayed_work later;    /* pending for a minute */
static struct work_struct on_queue;  /* queued on pwq, running held */
static struct work_struct hammered;  /* queued and flushed in a loop */
static struct workqueue_struct *pwq; /* the parent's queue */
static bool hammer_stop;

static void *hammer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&hammer_stop, __ATOMIC_SEQ_CST)) {
		fork_park_point();
		(void)schedule_work(&hammered);
		(void)flush_work(&hammered);
		(void)work_pending(&running);
		(void)kcompat_workqueue_name(pwq);
	}
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

/*
 * The parent's threads while it forks: the hammer, and the threads of
 * the item held running, of the one held on its queue, of the delayed
 * one. The hammer's item's thread ends after each run.
 */
#define STEADY_THREADS 4

/* One call on the parent's: one more WARN, naming it and the parent. */
#define ONE_WARN(call)                                                         \
	do {                                                                   \
		int w0 = devres_warn_count();                                  \
		call;                                                          \
		CHILD_CHECK(devres_warn_count() == w0 + 1);                    \
	} while (0)

static void child(void)
{
	struct workqueue_struct *wq;
	struct delayed_work mine_later;
	struct work_struct mine;
	char want[64];

	alarm(CHILD_ALARM_S);
	start_capture();
	ONE_WARN(CHILD_CHECK(!cancel_work_sync(&running)));
	ONE_WARN(CHILD_CHECK(!flush_work(&running)));
	ONE_WARN(CHILD_CHECK(!work_pending(&running)));
	ONE_WARN(CHILD_CHECK(!schedule_work(&running)));
	ONE_WARN(CHILD_CHECK(!queue_work(system_wq, &running)));
	ONE_WARN(INIT_WORK(&running, count_fn));
	ONE_WARN(CHILD_CHECK(!cancel_delayed_work_sync(&later)));
	ONE_WARN(CHILD_CHECK(!cancel_delayed_work(&later)));
	ONE_WARN(CHILD_CHECK(!flush_delayed_work(&later)));
	ONE_WARN(CHILD_CHECK(!delayed_work_pending(&later)));
	ONE_WARN(CHILD_CHECK(!schedule_delayed_work(&later, 1)));
	ONE_WARN(CHILD_CHECK(!mod_delayed_work(system_wq, &later, 1)));
	ONE_WARN(CHILD_CHECK(!cancel_work_sync(&on_queue)));
	ONE_WARN(CHILD_CHECK(!flush_work(&on_queue)));
	ONE_WARN(CHILD_CHECK(!cancel_work_sync(&hammered)));
	ONE_WARN(flush_workqueue(pwq));
	ONE_WARN(drain_workqueue(pwq));
	ONE_WARN(destroy_workqueue(pwq));
	ONE_WARN(CHILD_CHECK(kcompat_workqueue_name(pwq) == NULL));
	/* The child's own item on the parent's queue: refused. */
	INIT_WORK(&mine, count_fn);
	ONE_WARN(CHILD_CHECK(!queue_work(pwq, &mine)));
	CHILD_CHECK(!work_pending(&mine));
	devres_set_log_sink(NULL, NULL);
	snprintf(want, sizeof(want), "belongs to process %d", (int)getppid());
	CHILD_CHECK(kc_said(want));
	CHILD_CHECK(kc_said("cancel_work_sync: work "));
	CHILD_CHECK(kc_said("destroy_workqueue: workqueue "));

	/*
	 * The child's own: a queue, an item, a delayed item, memory. Under
	 * TSan (no thread in a child) the queue is made and destroyed and
	 * the items checked idle, none of them run.
	 */
	wq = alloc_workqueue("child", 0, 0);
	CHILD_CHECK(wq != NULL);
	INIT_DELAYED_WORK(&mine_later, count_fn);
	CHILD_CHECK(!delayed_work_pending(&mine_later));
	if (CHILD_THREADS) {
		int w0 = devres_warn_count();
		/* The parent's count as copied: its hammer counts too. */
		int r0 = __atomic_load_n(&runs, __ATOMIC_SEQ_CST);

		CHILD_CHECK(queue_work(wq, &mine));
		CHILD_CHECK(queue_delayed_work(wq, &mine_later, 1));
		/* Both, the delayed one too: a flush may find it not due. */
		drain_workqueue(wq);
		CHILD_CHECK(__atomic_load_n(&runs, __ATOMIC_SEQ_CST) == r0 + 2);
		CHILD_CHECK(mod_delayed_work(wq, &mine_later, 60000) == false);
		CHILD_CHECK(cancel_delayed_work_sync(&mine_later));
		CHILD_CHECK(devres_warn_count() == w0);
	}
	{
		int w0 = devres_warn_count();

		destroy_workqueue(wq);
		CHILD_CHECK(devres_warn_count() == w0);
	}
	_exit(0);
}

/* The parent's work busy: running and queued, delayed, on its queue. */
static void parent_busy(void)
{
	INIT_WORK(&running, held_fn);
	INIT_WORK(&on_queue, held_fn);
	INIT_WORK(&hammered, count_fn);
	INIT_DELAYED_WORK(&later, count_fn);
	pwq = alloc_workqueue("parent", 0, 0);
	assert_non_null(pwq);
	assert_true(schedule_work(&running));
	pthread_mutex_lock(&gate_lock);
	while (!gate_reached)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	assert_true(schedule_work(&running)); /* queued behind its run */
	assert_true(work_pending(&running));
	assert_true(queue_work(pwq, &on_queue));
	assert_true(schedule_delayed_work(&later, 60000));
}

static void parent_quiet(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	assert_true(cancel_delayed_work_sync(&later));
	flush_work(&running);
	destroy_workqueue(pwq);
	flush_work(&hammered);
	assert_false(work_pending(&running));
}

static void children_of_a_busy_parent(void **state)
{
	struct devres_ledger base, now;
	pthread_t t;
	int warns, steady;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_ledger_snapshot(&base);
	/* The runtime's own threads, if any, before the count. */
	assert_int_equal(pthread_create(&t, NULL, nothing, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	steady = count_entries("/proc/self/task") + STEADY_THREADS;
	parent_busy();
	warns = devres_warn_count();
	__atomic_store_n(&hammer_stop, false, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_create(&t, NULL, hammer, NULL), 0);
	for (int i = 0; i < CHILDREN; i++) {
		struct timespec t0, t1;
		int status;
		pid_t pid;

		fork_park_all(1); /* the hammer */
		assert_true(fork_park_settle(steady));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child();
		fork_park_release();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (!WIFEXITED(status))
			fail_msg("child %d: signal %d (a hang: the alarm)", i,
				 WTERMSIG(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		if (i == 0)
			print_message(
				"child 0: %.1f ms\n",
				(double)(t1.tv_sec - t0.tv_sec) * 1e3 +
					(double)(t1.tv_nsec - t0.tv_nsec) /
						1e6);
	}
	__atomic_store_n(&hammer_stop, true, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	/* The parent's items, as the children left them: its own. */
	assert_true(work_pending(&running));
	assert_true(delayed_work_pending(&later));
	assert_int_equal(devres_warn_count(), warns);
	parent_quiet();
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(children_of_a_busy_parent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
