// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat fault tsan */
/*
 * flush_work() and flush_delayed_work() against every state of a work
 * item that queues itself again after each run, as the kernel's: a flush
 * waits for the last queueing of the item when it is called (and the run
 * in progress before it), never for a run queued after, so that it
 * returns while the item goes on re-queueing itself. The table: each
 * flush call in each state (idle; queued, waiting for a thread; running;
 * running and queued again by itself, or by another thread; queued with a
 * delay not over; running and queued again by itself with a delay). Each
 * cell checks the value returned (whether the call waited), the runs over
 * when it returned (those it waited for, and for a delay not over, none
 * more), and that it returned at all: a flush still waiting after
 * HANG_MS counts as a failed cell, and the item then stops re-queueing
 * itself so that the flush ends and the next cell runs. Then two flushes
 * of one item: the first runs it in its caller (no thread could be had),
 * the second waits for a run queued meanwhile, which the first hands on
 * and which again gets no thread: the second runs it.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/io.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "kcompat/kctest.h"
#include "gate.h"

#define HANG_MS 5000
#define LATER_MS 10000 /* a delay no cell waits for */

enum state {
	S_IDLE,
	S_STRANDED,    /* queued, no thread could be had for it */
	S_RUNNING,     /* its first run, not queued again */
	S_RUN_SELF,    /* its first run, which queued it again */
	S_RUN_OTHER,   /* its first run; another thread queued it again */
	S_DELAYED,     /* queued with a delay not over */
	S_RUN_DELAYED, /* its first run, which queued it again later */
	S_NR,
};

static const char *const state_name[S_NR] = {
	"idle",
	"queued, waiting for a thread",
	"running",
	"running, re-queued by itself",
	"running, re-queued by another thread",
	"delayed, not due",
	"running, re-queued by itself with a delay",
};

enum requeue {
	RQ_NONE,
	RQ_NOW,
	RQ_LATER
};

static struct delayed_work item;
static int started, finished, keep; /* __atomic */
static enum requeue first_requeue;
static bool first_gated;
static bool fail_after_gate; /* the next spawn in this thread fails */

static int load(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/*
 * The first run queues the item again as the cell says and may wait at
 * the gate; every later one queues it again a jiffy later while @keep.
 */
static void self_requeue_fn(struct work_struct *work)
{
	(void)work;
	if (__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST) == 1) {
		if (first_requeue == RQ_NOW)
			(void)schedule_delayed_work(&item, 0);
		else if (first_requeue == RQ_LATER)
			(void)schedule_delayed_work(&item, LATER_MS);
		if (first_gated)
			gate_wait();
		if (fail_after_gate)
			devres_fail_nth(1);
	} else if (load(&keep)) {
		(void)schedule_delayed_work(&item, 1);
	}
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
}

struct flusher {
	bool delayed; /* flush_delayed_work(), else flush_work() */
	int entered, returned;
	bool ret;
	int finished_then; /* runs over when the flush returned */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *flusher_main(void *arg)
{
	struct flusher *f = arg;
	bool r;

	__atomic_store_n(&f->entered, 1, __ATOMIC_SEQ_CST);
	r = f->delayed ? flush_delayed_work(&item) : flush_work(&item.work);
	f->finished_then = load(&finished);
	f->ret = r;
	pthread_mutex_lock(&f->lock);
	f->returned = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Whether the flush returned within @ms. */
static bool flusher_wait(struct flusher *f, int ms)
{
	struct timespec end = kc_deadline_ms(ms);
	int err = 0;

	pthread_mutex_lock(&f->lock);
	while (!f->returned && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&f->cond, &f->lock, &end);
	pthread_mutex_unlock(&f->lock);
	return f->returned;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * What a flush in each state returns and which runs are over when it
 * does: at least @min; @exact, no more (the next run is far off).
 */
struct expect {
	bool ret;
	int min;
	bool exact;
};

/* [flush_delayed_work?][state] */
static const struct expect expect[2][S_NR] = {
	{
		[S_IDLE] = { false, 0, true },
		[S_STRANDED] = { true, 1, false },
		[S_RUNNING] = { true, 1, false },
		[S_RUN_SELF] = { true, 2, false },
		[S_RUN_OTHER] = { true, 2, false },
		/* The kernel's flush_work() does not wait for a timer. */
		[S_DELAYED] = { false, 0, true },
		[S_RUN_DELAYED] = { true, 1, true },
	},
	{
		[S_IDLE] = { false, 0, true },
		[S_STRANDED] = { true, 1, false },
		[S_RUNNING] = { true, 1, false },
		[S_RUN_SELF] = { true, 2, false },
		[S_RUN_OTHER] = { true, 2, false },
		/* flush_delayed_work() makes a queueing not due due now. */
		[S_DELAYED] = { true, 1, false },
		[S_RUN_DELAYED] = { true, 2, false },
	},
};

/* Puts the item in state @s. */
static void enter_state(enum state s)
{
	__atomic_store_n(&started, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&finished, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&keep, 1, __ATOMIC_SEQ_CST);
	gate_reset();
	first_gated = s == S_RUNNING || s == S_RUN_SELF || s == S_RUN_OTHER ||
		      s == S_RUN_DELAYED;
	first_requeue = s == S_RUN_SELF	     ? RQ_NOW
			: s == S_RUN_DELAYED ? RQ_LATER
			: s == S_RUNNING     ? RQ_NONE
			: s == S_RUN_OTHER   ? RQ_NONE
					     : RQ_NOW;
	INIT_DELAYED_WORK(&item, self_requeue_fn);
	switch (s) {
	case S_IDLE:
		break;
	case S_STRANDED:
		/* The spawner's first fault point: no thread for it. */
		devres_fail_nth(1);
		assert_true(schedule_delayed_work(&item, 0));
		assert_int_equal(devres_fail_nth_get(), 0);
		break;
	case S_DELAYED:
		assert_true(schedule_delayed_work(&item, LATER_MS));
		break;
	default:
		assert_true(schedule_delayed_work(&item, 0));
		gate_until_reached();
		if (s == S_RUN_OTHER)
			assert_true(schedule_delayed_work(&item, 0));
		break;
	}
}

/* One cell: whether it went as the kernel's would. */
static bool cell(bool delayed, enum state s)
{
	const struct expect *e = &expect[delayed][s];
	struct flusher f = { .delayed = delayed };
	const char *call = delayed ? "flush_delayed_work" : "flush_work";
	bool ok = true, early = false, back;
	pthread_t t;

	pthread_mutex_init(&f.lock, NULL);
	pthread_cond_init(&f.cond, NULL);
	enter_state(s);
	assert_int_equal(pthread_create(&t, NULL, flusher_main, &f), 0);
	while (!__atomic_load_n(&f.entered, __ATOMIC_SEQ_CST))
		sched_yield();
	if (first_gated) {
		/* Into its wait: it must not return while the run goes on. */
		sleep_ms(30);
		pthread_mutex_lock(&f.lock);
		early = f.returned;
		pthread_mutex_unlock(&f.lock);
		gate_release();
	}
	back = flusher_wait(&f, HANG_MS);
	/* Ends a flush that waits for ever, and the item's re-queueing. */
	__atomic_store_n(&keep, 0, __ATOMIC_SEQ_CST);
	gate_release();
	pthread_join(t, NULL);
	(void)cancel_delayed_work_sync(&item);
	if (!back) {
		printf("FAIL %s, %s: still waiting after %d ms\n", call,
		       state_name[s], HANG_MS);
		ok = false;
	} else {
		if (early) {
			printf("FAIL %s, %s: returned while the run went on\n",
			       call, state_name[s]);
			ok = false;
		}
		if (f.ret != e->ret) {
			printf("FAIL %s, %s: returned %d, not %d\n", call,
			       state_name[s], f.ret, e->ret);
			ok = false;
		}
		if (f.finished_then < e->min ||
		    (e->exact && f.finished_then != e->min)) {
			printf("FAIL %s, %s: %d runs over when it returned, "
			       "not %s%d\n",
			       call, state_name[s], f.finished_then,
			       e->exact ? "" : "at least ", e->min);
			ok = false;
		}
	}
	pthread_mutex_destroy(&f.lock);
	pthread_cond_destroy(&f.cond);
	return ok;
}

/* Starts a flush_work() of the item in a thread of its own. */
static void flusher_start(struct flusher *f, pthread_t *t)
{
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	assert_int_equal(pthread_create(t, NULL, flusher_main, f), 0);
	while (!__atomic_load_n(&f->entered, __ATOMIC_SEQ_CST))
		sched_yield();
}

static void second_flush_of_a_handed_on_run(void **state)
{
	struct flusher a = { .delayed = false }, b = { .delayed = false };
	bool a_back, b_back;
	pthread_t ta, tb;

	(void)state;
	enter_state(S_STRANDED);
	/* Its first run waits at the gate, queued again by itself. */
	first_gated = true;
	fail_after_gate = true;
	__atomic_store_n(&keep, 0, __ATOMIC_SEQ_CST);
	flusher_start(&a, &ta);
	gate_until_reached();
	flusher_start(&b, &tb);
	sleep_ms(30);
	gate_release();
	a_back = flusher_wait(&a, HANG_MS);
	b_back = flusher_wait(&b, HANG_MS);
	fail_after_gate = false;
	(void)cancel_delayed_work_sync(&item);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_true(a_back);
	assert_true(a.ret);
	assert_true(a.finished_then >= 1);
	/* Woken when its run was handed back to the waiting list. */
	assert_true(b_back);
	assert_true(b.ret);
	assert_int_equal(b.finished_then, 2);
	assert_int_equal(devres_fail_nth_get(), 0);
}

static void every_flush_every_state(void **state)
{
	int failed = 0, cells = 0;

	(void)state;
	for (int d = 0; d < 2; d++)
		for (int s = 0; s < S_NR; s++, cells++)
			failed += !cell(d, (enum state)s);
	printf("%d of %d cells failed\n", failed, cells);
	assert_int_equal(failed, 0);
	assert_int_equal(devres_warn_count(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_flush_every_state),
		cmocka_unit_test(second_flush_of_a_handed_on_run),
	};

	alarm(4 * 14 * HANG_MS / 1000);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
