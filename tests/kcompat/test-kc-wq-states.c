// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=120 */
/*
 * Every public call on a work item and its workqueue in every state they
 * can be in, each cell one call made from outside the queue's items: the
 * item idle, pending (with a delay), running (it queues itself again as
 * it ends: chained), running and queued again from outside, cancelled;
 * the queue alive, draining (another thread in drain_workqueue()), being
 * destroyed (another thread in destroy_workqueue()), destroyed.
 *
 * The item's first run waits at gate 1, its later ones at gate 2. A call
 * that waits is helped by a releaser thread: once the caller sleeps, it
 * opens gate 1; gate 2 too for the calls that wait for every run (cancel,
 * drain, destroy). A flush (flush_work(), flush_workqueue()) must come
 * back after the run queued before it, without the chained run queued
 * after it; should it wait for that, the releaser opens gate 2 after
 * FLUSH_BOUND_MS, and the runs done when it came back show it. Where the
 * item was queued again before the call, the flush waits for that run
 * too: the releaser opens gate 2 once that run waits there and the
 * caller still sleeps in its call; a flush that came back after the
 * first run finds gate 2 shut, and the runs show it.
 *
 * A cell's value is the call's return (0 or 1; 0 for a void call) plus
 * ten times the runs over when it came back.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/workqueue.h>
#include <pthread.h>
#include <sys/syscall.h>
#include "kcompat/kctest.h"
#include "states.h"

/*
 * The delayed-work macros check their argument's type with an unevaluated
 * sizeof of a pointer, which clang-tidy takes for a mistake (NOLINT).
 */
#define DELAY_MS 500	    /* the pending state's delay: not due in a cell */
#define FLUSH_BOUND_MS 2000 /* a flush that waits longer waits for too much */

static struct workqueue_struct *q;
static struct delayed_work dw;
#define W (&dw.work)
static bool chain;	       /* the first run queues the item again */
static int started, done_runs; /* atomic */
static bool gate[2];	       /* open, under gate_lock */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static pthread_t waiter; /* the drainer or destroyer */
static bool busy_on, q_gone;
static bool requeued; /* queued again before the call (S_REQUEUED) */
static pid_t caller_tid;

static void gate_wait(int g)
{
	pthread_mutex_lock(&gate_lock);
	while (!gate[g])
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void gate_set(int g)
{
	pthread_mutex_lock(&gate_lock);
	gate[g] = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void fn(struct work_struct *w)
{
	int n = __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);

	gate_wait(n == 1 ? 0 : 1);
	if (n == 1 && chain)
		(void)queue_work(q, w);
	__atomic_add_fetch(&done_runs, 1, __ATOMIC_SEQ_CST);
}

static void wait_started(int n)
{
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < n)
		usleep(1000);
}

/* Thread @tid sleeps (in a futex wait, when it waits for anything). */
static void wait_asleep(pid_t tid)
{
	while (!tid_asleep(tid))
		usleep(1000);
	usleep(20000);
}

enum state {
	S_IDLE,
	S_PENDING,
	S_RUNNING,
	S_REQUEUED,
	S_CANCELLED,
	S_DRAINING,
	S_DESTROYING,
	S_DESTROYED,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"idle",	     "pending",	 "running, chains", "running, queued again",
	"cancelled", "draining", "being destroyed", "queue destroyed",
};

enum call {
	C_QUEUE,
	C_QUEUE_DELAYED,
	C_MOD,
	C_SCHEDULE,
	C_PENDING,
	C_CANCEL,
	C_CANCEL_SYNC,
	C_FLUSH,
	C_FLUSH_DELAYED,
	C_FLUSH_WQ,
	C_DRAIN,
	C_DESTROY,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"queue_work",
	"queue_delayed_work",
	"mod_delayed_work",
	"schedule_work",
	"work_pending",
	"cancel_delayed_work",
	"cancel_delayed_work_sync",
	"flush_work",
	"flush_delayed_work",
	"flush_workqueue",
	"drain_workqueue",
	"destroy_workqueue",
};

static void *drainer(void *arg)
{
	pid_t *tid = arg;

	__atomic_store_n(tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	drain_workqueue(q);
	return NULL;
}

static void *destroyer(void *arg)
{
	pid_t *tid = arg;

	__atomic_store_n(tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	destroy_workqueue(q);
	return NULL;
}

static void reach(unsigned int s)
{
	static pid_t tid;

	caller_tid = (pid_t)syscall(SYS_gettid);
	started = done_runs = 0;
	gate[0] = gate[1] = false;
	chain = s == S_RUNNING || s == S_DRAINING || s == S_DESTROYING;
	requeued = s == S_REQUEUED;
	busy_on = q_gone = false;
	q = alloc_workqueue("states", 0, 0);
	assert_non_null(q);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
	INIT_DELAYED_WORK(&dw, fn);
	switch (s) {
	case S_IDLE:
		break;
	case S_PENDING:
		/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
		assert_true(queue_delayed_work(q, &dw, DELAY_MS));
		break;
	case S_CANCELLED:
		/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
		assert_true(queue_delayed_work(q, &dw, DELAY_MS));
		assert_true(cancel_delayed_work(&dw));
		break;
	case S_RUNNING:
	case S_REQUEUED:
		assert_true(queue_work(q, W));
		wait_started(1);
		if (s == S_REQUEUED)
			assert_true(queue_work(q, W));
		break;
	case S_DRAINING:
	case S_DESTROYING:
		assert_true(queue_work(q, W));
		wait_started(1);
		tid = 0;
		assert_int_equal(pthread_create(&waiter, NULL,
						s == S_DRAINING ? drainer
								: destroyer,
						&tid),
				 0);
		busy_on = true;
		while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST))
			usleep(1000);
		wait_asleep(tid);
		q_gone = s == S_DESTROYING;
		break;
	case S_DESTROYED:
		destroy_workqueue(q);
		q_gone = true;
		break;
	default:
		fail();
	}
}

/*
 * The releaser of a call that waits: @all, gate 2 with gate 1, and the
 * other waiter is then joined in the call.
 */
static struct {
	pthread_t t;
	bool all, back;
} rel;

static void *releaser(void *arg)
{
	struct timespec end;

	(void)arg;
	wait_asleep(caller_tid);
	gate_set(0);
	if (rel.all) {
		gate_set(1);
		return NULL;
	}
	if (requeued) {
		while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 2 &&
		       !__atomic_load_n(&rel.back, __ATOMIC_SEQ_CST))
			usleep(1000);
		if (!__atomic_load_n(&rel.back, __ATOMIC_SEQ_CST))
			wait_asleep(caller_tid);
		if (!__atomic_load_n(&rel.back, __ATOMIC_SEQ_CST))
			gate_set(1);
		return NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += FLUSH_BOUND_MS / 1000;
	for (;;) {
		struct timespec now;

		if (__atomic_load_n(&rel.back, __ATOMIC_SEQ_CST))
			return NULL;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		usleep(1000);
	}
	gate_set(1);
	return NULL;
}

static void release_start(bool all)
{
	rel.all = all;
	rel.back = false;
	assert_int_equal(pthread_create(&rel.t, NULL, releaser, NULL), 0);
}

static int release_end(void)
{
	int runs = __atomic_load_n(&done_runs, __ATOMIC_SEQ_CST);

	__atomic_store_n(&rel.back, true, __ATOMIC_SEQ_CST);
	pthread_join(rel.t, NULL);
	/* Every gate open: the other waiter's WARNs count in the cell. */
	if (rel.all && busy_on) {
		pthread_join(waiter, NULL);
		busy_on = false;
	}
	return runs * 10;
}

static int call(unsigned int c)
{
	int ret = 0;

	switch (c) {
	case C_QUEUE:
		return queue_work(q, W);
	case C_QUEUE_DELAYED:
		/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
		return queue_delayed_work(q, &dw, DELAY_MS);
	case C_MOD:
		return mod_delayed_work(q, &dw, DELAY_MS);
	case C_SCHEDULE:
		return schedule_work(W);
	case C_PENDING:
		return work_pending(W);
	case C_CANCEL:
		return cancel_delayed_work(&dw);
	case C_CANCEL_SYNC:
		release_start(true);
		ret = cancel_delayed_work_sync(&dw);
		break;
	case C_FLUSH:
		release_start(false);
		ret = flush_work(W);
		break;
	case C_FLUSH_DELAYED:
		release_start(false);
		ret = flush_delayed_work(&dw);
		break;
	case C_FLUSH_WQ:
		release_start(false);
		flush_workqueue(q);
		break;
	case C_DRAIN:
		release_start(true);
		drain_workqueue(q);
		break;
	case C_DESTROY:
		release_start(true);
		destroy_workqueue(q);
		q_gone = true;
		break;
	default:
		fail();
	}
	return ret + release_end();
}

/*
 * Everything let go: the gates open, the other waiter joined, the item
 * cancelled, the queue destroyed. Once a cell: its check, or its
 * teardown when the cell failed before it.
 */
static bool let_go_done;

static void let_go(void)
{
	if (let_go_done)
		return;
	let_go_done = true;
	gate_set(0);
	gate_set(1);
	if (busy_on)
		pthread_join(waiter, NULL);
	busy_on = false;
	(void)cancel_delayed_work_sync(&dw);
	if (!q_gone)
		destroy_workqueue(q);
	q_gone = true;
}

/* The item idle, the queue gone, every run over, nothing said. */
static void after(void)
{
	int w0 = devres_warn_count();

	let_go();
	assert_int_equal(devres_warn_count(), w0);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
	assert_false(delayed_work_pending(&dw));
	assert_int_equal(__atomic_load_n(&started, __ATOMIC_SEQ_CST),
			 __atomic_load_n(&done_runs, __ATOMIC_SEQ_CST));
}

static int cell_setup(void **state)
{
	(void)state;
	let_go_done = false;
	return 0;
}

static int cell_teardown(void **state)
{
	(void)state;
	devres_set_log_sink(NULL, NULL);
	let_go();
	return 0;
}

/*
 * What each call gives in each state (return + 10 x runs over, WARNs).
 * Calls that do not wait find the first run at its gate: no run over.
 * A flush comes back after the runs queued before it: one. A cancel,
 * drain or destroy waits for every run, a chained one too; one that finds
 * a delayed run not yet due makes it due, with a WARN (KS26). Of two
 * destroys, the one that finds the queue gone WARNs.
 */
#define OK(v) STATES_CELL((v), 0)
#define REFUSED STATES_CELL(0, 1)
/* clang-format off */
static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/*           queue  qdelay mod    sched  pending cancel csync  flush  fdelay flushwq drain  destroy */
	[S_IDLE] = { OK(1), OK(1), OK(0), OK(1), OK(0),  OK(0), OK(0), OK(0), OK(0), OK(0),  OK(0), OK(0) },
	[S_PENDING] = { OK(0), OK(0), OK(1), OK(0), OK(1), OK(1), OK(1), OK(0), OK(11), OK(0), STATES_CELL(10, 1), STATES_CELL(10, 1) },
	[S_RUNNING] = { OK(1), OK(1), OK(0), OK(1), OK(0), OK(0), OK(10), OK(11), OK(11), OK(10), OK(20), OK(20) },
	[S_REQUEUED] = { OK(0), OK(0), OK(1), OK(0), OK(1), OK(1), OK(11), OK(21), OK(21), OK(20), OK(20), OK(20) },
	[S_CANCELLED] = { OK(1), OK(1), OK(0), OK(1), OK(0), OK(0), OK(0), OK(0), OK(0), OK(0), OK(0), OK(0) },
	[S_DRAINING] = { REFUSED, REFUSED, REFUSED, OK(1), OK(0), OK(0), OK(10), OK(11), OK(11), OK(10), OK(20), OK(20) },
	[S_DESTROYING] = { REFUSED, REFUSED, REFUSED, OK(1), OK(0), OK(0), OK(10), OK(11), OK(11), OK(10), OK(20), STATES_CELL(20, 1) },
	[S_DESTROYED] = { REFUSED, REFUSED, REFUSED, OK(1), OK(0), OK(0), OK(0), OK(0), OK(0), REFUSED, REFUSED, REFUSED },
};
/* clang-format on */

static const struct states_table tables[] = {
	STATES_TABLE(table, state_name, call_name, reach, call, after,
		     cell_setup, cell_teardown),
};

int main(void)
{
	return states_main("kc-wq-states", tables, 1);
}
