// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * flush_workqueue(system_wq), as the kernel's: it waits for every
 * queueing on the system's queue made before the call (schedule_work(),
 * queue_work() on system_wq or one of its other names,
 * schedule_delayed_work() whose delay is over), and not for one made
 * after it, nor for a delayed one not yet due. Before, it returned at
 * once, having waited for nothing. Cells (each in a child under an
 * alarm, kc-cell.h): an item queued by each of the three calls, running
 * when the flush begins; an item that queues itself again on every run
 * (the flush ends); a delayed item not due (the flush ends at once); a
 * flush from an item of the system's queue, which would wait for itself
 * (one WARN, nothing done); and in a child of fork(), an item of the
 * parent's, still running there, which the child's flush does not wait
 * for, and one of the child's, which it does (not under TSan, which
 * starts no thread in a child of a threaded parent).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/workqueue.h>
#include <stdlib.h>
#include <sys/wait.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

#define RUN_MS 200
#define LATER_MS 10000 /* a delay no cell waits for */

enum {
	C_SCHEDULE,
	C_QUEUE_SYSTEM,
	C_QUEUE_LONG,
	C_DELAYED_DUE,
	C_SELF_REQUEUE,
	C_DELAYED_LATER,
	C_FROM_ITEM,
	C_FORKED,
	C_NR,
};

static const char *const cell_name[C_NR] = {
	"schedule_work",
	"queue_work(system_wq)",
	"queue_work(system_long_wq)",
	"schedule_delayed_work, due",
	"an item that queues itself again",
	"delayed, not due",
	"from an item of the system's queue",
	"in a child of fork()",
};

static struct work_struct work;
static struct delayed_work dwork;
static int runs;
static int requeue_left;
static int warns_in_item = -1;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void slow_fn(struct work_struct *w)
{
	(void)w;
	usleep(RUN_MS * 1000);
	__atomic_add_fetch(&runs, 1, __ATOMIC_RELEASE);
}

static void requeue_fn(struct work_struct *w)
{
	usleep(10000);
	__atomic_add_fetch(&runs, 1, __ATOMIC_RELEASE);
	if (__atomic_sub_fetch(&requeue_left, 1, __ATOMIC_RELAXED) > 0)
		schedule_work(w);
}

static void flusher_fn(struct work_struct *w)
{
	int warns = devres_warn_count();

	(void)w;
	flush_workqueue(system_wq);
	__atomic_store_n(&warns_in_item, devres_warn_count() - warns,
			 __ATOMIC_RELEASE);
}

/* A moment for the item to have begun: its thread runs it. */
static void began(void)
{
	usleep(20000);
}

static int runs_now(void)
{
	return __atomic_load_n(&runs, __ATOMIC_ACQUIRE);
}

static void forked(void)
{
	int status;
	pid_t pid;

	INIT_WORK(&work, slow_fn);
	CHECK(schedule_work(&work));
	began();
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		static struct work_struct mine;
		long t0 = now_ms();

		alarm(10);
		/* The parent's item runs in the parent: not waited for. */
		flush_workqueue(system_wq);
		CHECK(now_ms() - t0 < RUN_MS / 2);
#ifdef T_TSAN
		/* TSan starts no thread in a child of a threaded parent. */
		(void)mine;
		_exit(0);
#endif
		INIT_WORK(&mine, slow_fn);
		CHECK(schedule_work(&mine));
		began();
		flush_workqueue(system_wq);
		CHECK(runs_now() == 1);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	flush_workqueue(system_wq);
	CHECK(runs_now() == 1);
}

static void cell(int c, int b, int d)
{
	int warns = devres_warn_count();
	long t0;

	(void)b;
	(void)d;
	INIT_WORK(&work, slow_fn);
	INIT_DELAYED_WORK(&dwork, slow_fn);
	switch (c) {
	case C_SCHEDULE:
		CHECK(schedule_work(&work));
		break;
	case C_QUEUE_SYSTEM:
		CHECK(queue_work(system_wq, &work));
		break;
	case C_QUEUE_LONG:
		CHECK(queue_work(system_long_wq, &work));
		break;
	case C_DELAYED_DUE:
		CHECK(schedule_delayed_work(&dwork, 1));
		usleep(30000); /* due, and running */
		break;
	case C_SELF_REQUEUE:
		INIT_WORK(&work, requeue_fn);
		requeue_left = 1000000;
		CHECK(schedule_work(&work));
		break;
	case C_DELAYED_LATER:
		CHECK(schedule_delayed_work(&dwork,
					    msecs_to_jiffies(LATER_MS)));
		break;
	case C_FROM_ITEM:
		INIT_WORK(&work, flusher_fn);
		CHECK(schedule_work(&work));
		/* False when the item was over before the call: both wait. */
		(void)flush_work(&work);
		CHECK(__atomic_load_n(&warns_in_item, __ATOMIC_ACQUIRE) == 1);
		CHECK(devres_warn_count() == warns + 1);
		return;
	case C_FORKED:
		forked();
		CHECK(devres_warn_count() == warns);
		return;
	default:
		CHECK(0);
	}
	began();
	t0 = now_ms();
	flush_workqueue(system_wq);
	switch (c) {
	case C_SELF_REQUEUE:
		/* Returned while it goes on: then stopped. */
		CHECK(runs_now() >= 1);
		__atomic_store_n(&requeue_left, 0, __ATOMIC_RELAXED);
		cancel_work_sync(&work);
		break;
	case C_DELAYED_LATER:
		CHECK(runs_now() == 0 && now_ms() - t0 < RUN_MS);
		CHECK(cancel_delayed_work_sync(&dwork));
		break;
	default:
		/* Over when the flush returned. */
		CHECK(runs_now() == 1);
		break;
	}
	CHECK(devres_warn_count() == warns);
}

static void flush_system_queue(void **state)
{
	int bad = 0;

	(void)state;
	for (int c = 0; c < C_NR; c++)
		bad += in_child(cell, c, 0, 0, cell_name[c]);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flush_system_queue),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
