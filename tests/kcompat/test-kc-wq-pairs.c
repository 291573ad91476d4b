// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=120 */
/*
 * Every pair of public calls on a work item and its workqueue, made at
 * once from two threads, in every state of the pair (tests/pairs.h): the
 * item idle on a live queue, pending on it, and the queue destroyed. Each
 * pair must end as one of its two serial orders does: the same returns,
 * the same WARNs, the same runs once everything queued has run, the item
 * idle and the queue destroyed once.
 *
 * Each queueing is made with the calling thread's first fault point
 * armed, so that no thread can be had for the item: it stays pending on
 * its queue until a flush, drain, destroy or cancel runs it or takes it
 * back (docs/kcompat.md), and no run depends on a thread's timing. The
 * two outcomes neither order gives, two flushes that both wait for the
 * one run, and a queueing on a queue that another thread drains,
 * refused with the kernel's WARN, are allowed by @also.
 */
#define _GNU_SOURCE
#include <linux/workqueue.h>
#include "kcompat/kctest.h"
#include "pairs.h"
#include "rounds.h"

static struct workqueue_struct *q;
static struct delayed_work dw;
static int runs;    /* atomic */
static bool q_gone; /* atomic: the pair destroyed it */

static void fn(struct work_struct *w)
{
	(void)w;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
}

enum state {
	S_IDLE,
	S_PENDING,
	S_DESTROYED,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"idle",
	"pending",
	"queue destroyed",
};

enum call {
	C_QUEUE,
	C_MOD,
	C_SCHEDULE,
	C_PENDING,
	C_CANCEL,
	C_CANCEL_SYNC,
	C_FLUSH,
	C_FLUSH_WQ,
	C_DRAIN,
	C_DESTROY,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"queue_work",	      "mod_delayed_work",    "schedule_work",
	"work_pending",	      "cancel_delayed_work", "cancel_delayed_work_sync",
	"flush_delayed_work", "flush_workqueue",     "drain_workqueue",
	"destroy_workqueue",
};

/* A queueing with no thread to be had: the item waits on its queue. */
static bool no_thread(bool (*queue)(void))
{
	bool ret;

	devres_fail_nth(1);
	ret = queue();
	devres_fail_nth(0);
	return ret;
}

static bool q_queue(void)
{
	return queue_work(q, &dw.work);
}

static bool q_mod(void)
{
	return mod_delayed_work(q, &dw, 0);
}

static bool q_schedule(void)
{
	return schedule_work(&dw.work);
}

static void reach(unsigned int s)
{
	__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&q_gone, false, __ATOMIC_SEQ_CST);
	q = alloc_workqueue("pairs", 0, 0);
	assert_non_null(q);
	INIT_DELAYED_WORK(&dw, fn);
	switch (s) {
	case S_IDLE:
		break;
	case S_PENDING: {
		struct devres_ledger l0, l1;

		devres_ledger_snapshot(&l0);
		assert_true(no_thread(q_queue));
		devres_ledger_snapshot(&l1);
		/* The fault was the thread's: none serves the item. */
		assert_int_equal(l1.threads, l0.threads);
		assert_true(work_pending(&dw.work));
		break;
	}
	case S_DESTROYED:
		destroy_workqueue(q);
		__atomic_store_n(&q_gone, true, __ATOMIC_SEQ_CST);
		break;
	default:
		fail();
	}
}

static int call(unsigned int c)
{
	switch (c) {
	case C_QUEUE:
		return no_thread(q_queue);
	case C_MOD:
		return no_thread(q_mod);
	case C_SCHEDULE:
		return no_thread(q_schedule);
	case C_PENDING:
		return work_pending(&dw.work);
	case C_CANCEL:
		return cancel_delayed_work(&dw);
	case C_CANCEL_SYNC:
		return cancel_delayed_work_sync(&dw);
	case C_FLUSH:
		return flush_delayed_work(&dw);
	case C_FLUSH_WQ:
		flush_workqueue(q);
		return 0;
	case C_DRAIN:
		drain_workqueue(q);
		return 0;
	case C_DESTROY:
		destroy_workqueue(q);
		__atomic_store_n(&q_gone, true, __ATOMIC_SEQ_CST);
		return 0;
	default:
		fail();
	}
	return 0;
}

/*
 * What the pair left: the runs once what it queued has run (a flush of
 * the item), whether the item is then idle, whether the pair destroyed
 * the queue, and the WARNs this printed (none).
 */
static void undo(struct pairs_outcome *o)
{
	int w0 = devres_warn_count();

	(void)flush_delayed_work(&dw);
	o->after[0] = __atomic_load_n(&runs, __ATOMIC_SEQ_CST);
	o->after[1] = delayed_work_pending(&dw);
	o->after[2] = __atomic_load_n(&q_gone, __ATOMIC_SEQ_CST);
	if (!o->after[2])
		destroy_workqueue(q);
	(void)cancel_delayed_work_sync(&dw);
	o->after[3] = devres_warn_count() - w0;
}

/*
 * The outcomes only threads give, each documented (docs/kcompat.md):
 * two flushes of the pending item at once both wait for its one run and
 * both return true, as the kernel's, where the later of two in a row
 * finds nothing; a queueing (queue_work(), mod_delayed_work()) made
 * while the other thread's drain_workqueue() waits for the queue is
 * refused with one WARN and leaves the item as it was: as the queueing
 * first, but for its return (false) and the WARN.
 */
static bool wq_also(unsigned int s, unsigned int a, unsigned int b,
		    const struct pairs_outcome *got,
		    const struct pairs_outcome *ser)
{
	struct pairs_outcome want;
	unsigned int queue;
	int first;

	if (s == S_PENDING && a == C_FLUSH && b == C_FLUSH) {
		want = ser[0];
		want.ret[0] = want.ret[1] = 1;
		return !memcmp(got, &want, sizeof(want));
	}
	if (a == C_DRAIN && (b == C_QUEUE || b == C_MOD)) {
		queue = b;
		first = 1;
	} else if (b == C_DRAIN && (a == C_QUEUE || a == C_MOD)) {
		queue = a;
		first = 0;
	} else {
		return false;
	}
	want = ser[first];
	want.ret[queue == a ? 0 : 1] = 0;
	want.warns++;
	/* The pending item's own queueing is what the drain ran. */
	return !memcmp(got, &want, sizeof(want));
}

#ifdef T_TSAN
#define ROUNDS 20
#else
#define ROUNDS 40
#endif

PAIRS_TEST(every_pair_in_every_state, ROUNDS,
	   PAIRS_NAMES(state_name, call_name), .reach = reach, .call = call,
	   .undo = undo, .also = wq_also)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_pair_in_every_state),
	};

	return pairs_group("kc-wq-pairs", tests, 1);
}
