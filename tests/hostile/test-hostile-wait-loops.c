// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=240 */
/*
 * Loops of waits across subsystems: each participant runs in a callback
 * of the library (a managed thread's function, an interrupt thread
 * function, a compat work item's function) and waits there, with one of
 * the library's waiting calls, for the next one's callback to return;
 * the last waits for the first. Every such wait records "this thread
 * waits for that one" in the library's one record of waits, and the wait
 * that would close the loop is refused: devm_thread_stop() -EDEADLK, the
 * void and bool calls with one WARN and no wait (free_irq() leaves the
 * freed handler to its own thread). Before, every loop cell hung.
 *
 * A cell is a chain of kinds: participant i waits with kind[i] for
 * participant i + 1, and, in a loop, the last for the first. Each waits
 * only once the one before it is on the record in its wait, so that the
 * last is the one refused. In the control column the last participant
 * waits for nobody and the test's main thread makes the last kind's wait
 * for the first instead, a chain with no loop: every wait is made, no
 * WARN; the last participant returns once that wait is on the record, so
 * that it is made while the whole chain still waits. Each
 * cell runs in a child under an alarm (a hang fails the cell), with the
 * exact results and WARN count, and the ledger back at its start.
 *
 * The waits for all of a set: flush_workqueue(), drain_workqueue() and
 * destroy_workqueue() wait for every item of a queue (the participant is
 * an item on a queue of its own); they are refused with one WARN and no
 * wait (destroy_workqueue() leaves the queue live, destroyed at the
 * cell's end). flush_delayed_work() waits for an item whose thread still
 * waits for its delay (but the first participant's, due at once): its
 * function runs only once made due by that flush, and then closes the
 * loop. hwrng_unregister() waits for a read in progress (the participant
 * is a managed thread in hwrng_read(), its rng's read method the body):
 * refused, it takes the rng back as from its own read, with one WARN.
 * irq_line_raise_wait() of a line whose thread function is the body:
 * refused, -EDEADLK and one WARN, nothing raised. Every pair with one of
 * those, and rings of three through them.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/interrupt.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include <cmocka.h>
#include "testlib.h"
#include "cell-child.h"
#include "base/waits.h"

#define CELL_ALARM_S 10
#define RET 7
#define MAXP 3

enum kind {
	K_STOP,
	K_FREE,
	K_SYNC,
	K_DISABLE,
	K_FLUSH,
	K_CANCEL,
	NK_OLD,
	K_FLUSHWQ = NK_OLD,
	K_DRAINWQ,
	K_DESTROYWQ,
	K_FLUSHD,
	K_UNREG,
	K_RAISE,
	NK
};
enum role {
	R_THREAD,
	R_IRQ,
	R_WORK,
	R_WQ,
	R_DWORK,
	R_REG
};

static const char *const kind_name[NK] = {
	"devm_thread_stop",   "free_irq",	  "synchronize_irq",
	"disable_irq",	      "flush_work",	  "cancel_work_sync",
	"flush_workqueue",    "drain_workqueue",  "destroy_workqueue",
	"flush_delayed_work", "hwrng_unregister", "irq_line_raise_wait",
};

static enum role role_of(int k)
{
	if (k == K_UNREG)
		return R_REG;
	if (k == K_RAISE)
		return R_IRQ;
	if (k >= K_FLUSHWQ)
		return k == K_FLUSHD ? R_DWORK : R_WQ;
	return k == K_STOP ? R_THREAD : k <= K_DISABLE ? R_IRQ : R_WORK;
}

struct part {
	enum role role;
	int kind;   /* the wait it makes, -1 for none */
	int target; /* the participant it waits for */
	struct device dev;
	struct devres_thread *h;
	int irq;
	int records; /* its thread's waits on the record before its own */
	char name[16];
	struct work_struct work;
	struct delayed_work dwork;
	struct workqueue_struct *wq;
	struct hwrng rng;
	int tid, in, calling, done, freed, destroyed;
	uint64_t wid; /* its thread's wait id */
	long ret;
};

/* The participants, and after the last the main thread's control wait. */
static struct part P[MAXP + 1];
static int np;
static int go; /* every participant set up: their handles are stored */

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static void dev_release(struct device *dev)
{
	(void)dev;
}

/*
 * Participant @i (or the main thread, @i == np) has called its wait, and
 * that wait is on the library's record of waits: the record by which a
 * wait that would close the loop is refused. Not when @i is this thread:
 * a work item whose thread could not be spawned is run by the thread that
 * waits for its queue, inline, and its body is then on the thread of the
 * participant before it, which never waits for it.
 */
static void wait_recorded(int i)
{
	while (!LOAD(P[i].calling))
		usleep(1000);
	if (LOAD(P[i].tid) == (int)syscall(SYS_gettid))
		return;
	while (devres__wait_records(P[i].wid) <= P[i].records)
		usleep(1000);
}

/* Participant @i (np: the main thread) is about to make its wait. */
static void calling(int i)
{
	STORE(P[i].tid, (int)syscall(SYS_gettid));
	P[i].wid = devres_wait_self();
	P[i].records = devres__wait_records(P[i].wid);
	STORE(P[i].calling, 1);
}

/* @kind's wait for participant @j; what it returned, as a number. */
static long do_wait(int kind, int j)
{
	const void *name;
	int w0;

	switch (kind) {
	case K_STOP:
		return devm_thread_stop(&P[j].dev, P[j].h);
	case K_FREE:
		name = free_irq((unsigned int)P[j].irq, &P[j]);
		STORE(P[j].freed, 1);
		return name && !strcmp(name, P[j].name) ? 1 : 2;
	case K_SYNC:
		synchronize_irq((unsigned int)P[j].irq);
		return 0;
	case K_DISABLE:
		disable_irq((unsigned int)P[j].irq);
		return 0;
	case K_FLUSH:
		return flush_work(&P[j].work);
	case K_CANCEL:
		return cancel_work_sync(&P[j].work);
	case K_FLUSHWQ:
		flush_workqueue(P[j].wq);
		return 0;
	case K_DRAINWQ:
		drain_workqueue(P[j].wq);
		return 0;
	case K_DESTROYWQ:
		/* Refused: one WARN, and the queue is still there. */
		w0 = devres_warn_count();
		destroy_workqueue(P[j].wq);
		if (devres_warn_count() == w0)
			STORE(P[j].destroyed, 1);
		return 0;
	case K_FLUSHD:
		return flush_delayed_work(&P[j].dwork);
	case K_UNREG:
		hwrng_unregister(&P[j].rng);
		return 0;
	default:
		return irq_line_raise_wait(P[j].irq);
	}
}

static void body(int i)
{
	/* A raise waited for runs the handler again: nothing to do then. */
	if (LOAD(P[i].done))
		return;
	STORE(P[i].tid, (int)syscall(SYS_gettid));
	STORE(P[i].in, 1);
	while (!LOAD(go))
		usleep(1000);
	for (int j = 0; j < np; j++)
		while (!LOAD(P[j].in))
			usleep(1000);
	if (i > 0)
		wait_recorded(i - 1);
	if (P[i].kind >= 0) {
		calling(i);
		P[i].ret = do_wait(P[i].kind, P[i].target);
	} else {
		wait_recorded(np);
	}
	STORE(P[i].done, 1);
}

static int thread_fn(void *arg)
{
	body((int)(intptr_t)arg);
	return RET;
}

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)data;
	(void)max;
	(void)wait;
	body((int)((struct part *)((char *)rng - offsetof(struct part, rng)) -
		   P));
	return 0;
}

/* A managed thread in a read of its rng: the read method is the body. */
static int reader_fn(void *arg)
{
	char buf[4] = { 0 };

	return hwrng_read(P[(intptr_t)arg].name, buf, sizeof(buf), true) == 0
		       ? RET
		       : 1;
}

static irqreturn_t irq_fn(int irq, void *dev_id)
{
	(void)irq;
	body((int)((struct part *)dev_id - P));
	return IRQ_HANDLED;
}

static void work_fn(struct work_struct *w)
{
	body((int)((struct part *)((char *)w - offsetof(struct part, work)) -
		   P));
}

static void dwork_fn(struct work_struct *w)
{
	struct delayed_work *dw = to_delayed_work(w);

	body((int)((struct part *)((char *)dw - offsetof(struct part, dwork)) -
		   P));
}

/* What the wait of @kind returns, whether refused or not. */
static long expected(int kind, bool refused)
{
	switch (kind) {
	case K_STOP:
		return refused ? -EDEADLK : RET;
	case K_RAISE:
		return refused ? -EDEADLK : 0;
	case K_FREE:
	case K_FLUSH:
	case K_FLUSHD:
		return 1;
	default:
		return 0;
	}
}

static int setup(int i)
{
	struct part *p = &P[i];

	snprintf(p->name, sizeof(p->name), "wl%d", i);
	switch (p->role) {
	case R_THREAD:
	case R_REG:
		device_initialize(&p->dev);
		p->dev.release = dev_release;
		if (dev_set_name(&p->dev, "%s", p->name))
			return 2;
		if (p->role == R_REG) {
			p->rng.name = p->name;
			p->rng.read = rng_read;
			if (hwrng_register(&p->rng))
				return 15;
		}
		p->h = devm_thread_run(&p->dev,
				       p->role == R_REG ? reader_fn : thread_fn,
				       (void *)(intptr_t)i, p->name);
		return IS_ERR(p->h) ? 3 : 0;
	case R_IRQ:
		p->irq = irq_line_create(p->name);
		if (p->irq <= 0)
			return 4;
		if (request_threaded_irq((unsigned int)p->irq, NULL, irq_fn,
					 IRQF_ONESHOT, p->name, p))
			return 5;
		return irq_line_raise(p->irq) ? 6 : 0;
	case R_WORK:
		INIT_WORK(&p->work, work_fn);
		return schedule_work(&p->work) ? 0 : 7;
	case R_WQ:
		p->wq = alloc_workqueue("%s", 0, 0, p->name);
		if (!p->wq)
			return 8;
		INIT_WORK(&p->work, work_fn);
		return queue_work(p->wq, &p->work) ? 0 : 9;
	default:
		/*
		 * Its thread waits for the delay until a flush makes it due;
		 * the first participant's is due at once: it starts the chain.
		 */
		STORE(p->in, 1);
		/* The macro's type check: an unevaluated sizeof of a pointer. */
		/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
		INIT_DELAYED_WORK(&p->dwork, dwork_fn);
		return schedule_delayed_work(&p->dwork, i ? 3600 * HZ : 0) ? 0
									   : 14;
	}
}

static void teardown(int i)
{
	struct part *p = &P[i];

	switch (p->role) {
	case R_THREAD:
	case R_REG:
		(void)devres_release_all(&p->dev);
		put_device(&p->dev);
		break;
	case R_IRQ:
		if (!LOAD(p->freed))
			(void)free_irq((unsigned int)p->irq, p);
		for (int n = 0; n < 2000 && irq_line_destroy(p->irq); n++)
			usleep(1000);
		break;
	case R_WORK:
		(void)cancel_work_sync(&p->work);
		break;
	case R_WQ:
		(void)cancel_work_sync(&p->work);
		if (!LOAD(p->destroyed))
			destroy_workqueue(p->wq);
		break;
	default:
		(void)cancel_delayed_work_sync(&p->dwork);
		break;
	}
}

/*
 * A chain of @n kinds; @loop: the last participant waits for the first,
 * else the main thread does. 0 when the cell holds.
 */
static int chain(const int *kinds, int n, bool loop)
{
	struct devres_ledger start, now;
	long main_ret = 0;
	int w0, rc;

	alarm(CELL_ALARM_S);
	memset(P, 0, sizeof(P));
	np = n;
	go = 0;
	/* A child's compat heap device is made at its first kmalloc(). */
	kfree(kmalloc(1, GFP_KERNEL));
	devres_ledger_snapshot(&start);
	w0 = devres_warn_count();
	/* Participant i is what kind[i - 1] waits for (the last: kind 0). */
	for (int i = 0; i < n; i++) {
		P[i].role = role_of(kinds[(i + n - 1) % n]);
		P[i].kind = i < n - 1 || loop ? kinds[i] : -1;
		P[i].target = (i + 1) % n;
	}
	for (int i = 0; i < n; i++) {
		rc = setup(i);
		if (rc)
			return rc;
	}
	STORE(go, 1);
	if (!loop) {
		for (int j = 0; j < n; j++)
			while (!LOAD(P[j].in))
				usleep(1000);
		wait_recorded(n - 2);
		calling(n);
		main_ret = do_wait(kinds[n - 1], 0);
	}
	for (int i = 0; i < n; i++)
		while (!LOAD(P[i].done))
			usleep(1000);
	for (int i = 0; i < n; i++) {
		bool refused = loop && i == n - 1;

		if (P[i].kind >= 0 &&
		    P[i].ret != expected(P[i].kind, refused)) {
			fprintf(stderr, "participant %d (%s): %ld, not %ld\n",
				i, kind_name[P[i].kind], P[i].ret,
				expected(P[i].kind, refused));
			return 10;
		}
	}
	if (!loop && main_ret != expected(kinds[n - 1], false)) {
		fprintf(stderr, "main (%s): %ld\n", kind_name[kinds[n - 1]],
			main_ret);
		return 11;
	}
	if (devres_warn_count() - w0 != (loop ? 1 : 0)) {
		fprintf(stderr, "%d WARNs\n", devres_warn_count() - w0);
		return 12;
	}
	for (int i = 0; i < n; i++)
		teardown(i);
	/* A handler left to its thread is freed as that thread ends. */
	for (int t = 0; t < 2000; t++) {
		devres_ledger_snapshot(&now);
		if (!devres_ledger_diff(&start, &now, NULL))
			return 0;
		usleep(1000);
	}
	devres_ledger_diff(&start, &now, stderr);
	return 13;
}

static const char *const pair_rows[NK_OLD * NK_OLD] = {
#define ROW(a, b) "(" #a ", " #b ")"
	ROW(stop, stop),       ROW(stop, free),	    ROW(stop, sync),
	ROW(stop, disable),    ROW(stop, flush),    ROW(stop, cancel),
	ROW(free, stop),       ROW(free, free),	    ROW(free, sync),
	ROW(free, disable),    ROW(free, flush),    ROW(free, cancel),
	ROW(sync, stop),       ROW(sync, free),	    ROW(sync, sync),
	ROW(sync, disable),    ROW(sync, flush),    ROW(sync, cancel),
	ROW(disable, stop),    ROW(disable, free),  ROW(disable, sync),
	ROW(disable, disable), ROW(disable, flush), ROW(disable, cancel),
	ROW(flush, stop),      ROW(flush, free),    ROW(flush, sync),
	ROW(flush, disable),   ROW(flush, flush),   ROW(flush, cancel),
	ROW(cancel, stop),     ROW(cancel, free),   ROW(cancel, sync),
	ROW(cancel, disable),  ROW(cancel, flush),  ROW(cancel, cancel),
#undef ROW
};

static const char *const cols[2] = { "loop", "control" };

static int pair_cell(int row, int col)
{
	int kinds[2] = { row / NK_OLD, row % NK_OLD };

	return chain(kinds, 2, col == 0);
}

static void pairs(void **state)
{
	(void)state;
	run_cells_in_children(pair_cell, pair_rows, NK_OLD * NK_OLD, cols, 2);
}

/* The ordered pairs with a wait for a set or a delay in them. */
#define NSET (NK * NK - NK_OLD * NK_OLD)
static int set_pairs[NSET][2];
static char set_names[NSET][48];
static const char *set_rows[NSET];

static int set_pair_cell(int row, int col)
{
	return chain(set_pairs[row], 2, col == 0);
}

static void set_pairs_all(void **state)
{
	int n = 0;

	(void)state;
	for (int a = 0; a < NK; a++) {
		for (int b = 0; b < NK; b++) {
			if (a < NK_OLD && b < NK_OLD)
				continue;
			set_pairs[n][0] = a;
			set_pairs[n][1] = b;
			snprintf(set_names[n], sizeof(set_names[n]), "(%s, %s)",
				 kind_name[a], kind_name[b]);
			set_rows[n] = set_names[n];
			n++;
		}
	}
	run_cells_in_children(set_pair_cell, set_rows, n, cols, 2);
}

/* Rings of three, each across three subsystems or kinds. */
static const int rings[][3] = {
	{ K_STOP, K_FREE, K_FLUSH },
	{ K_FREE, K_FLUSH, K_STOP },
	{ K_FLUSH, K_STOP, K_SYNC },
	{ K_CANCEL, K_DISABLE, K_STOP },
	{ K_SYNC, K_CANCEL, K_FREE },
	{ K_STOP, K_STOP, K_STOP },
	/* Through the waits for a set or a delay. */
	{ K_FLUSHWQ, K_STOP, K_FREE },
	{ K_DRAINWQ, K_FLUSH, K_SYNC },
	{ K_DESTROYWQ, K_CANCEL, K_STOP },
	{ K_FLUSHD, K_DISABLE, K_FLUSHWQ },
	{ K_STOP, K_FLUSHD, K_DRAINWQ },
	{ K_FLUSHWQ, K_FLUSHWQ, K_FLUSHWQ },
	{ K_FLUSHD, K_FLUSHD, K_FLUSHD },
	{ K_UNREG, K_FLUSHWQ, K_STOP },
	{ K_UNREG, K_UNREG, K_UNREG },
	{ K_RAISE, K_FLUSHWQ, K_UNREG },
	{ K_RAISE, K_RAISE, K_RAISE },
};

static const char *const ring_rows[] = {
	"stop -> free -> flush",
	"free -> flush -> stop",
	"flush -> stop -> sync",
	"cancel -> disable -> stop",
	"sync -> cancel -> free",
	"stop -> stop -> stop",
	"flush_workqueue -> stop -> free",
	"drain_workqueue -> flush -> sync",
	"destroy_workqueue -> cancel -> stop",
	"flush_delayed_work -> disable -> flush_workqueue",
	"stop -> flush_delayed_work -> drain_workqueue",
	"flush_workqueue x 3",
	"flush_delayed_work x 3",
	"hwrng_unregister -> flush_workqueue -> stop",
	"hwrng_unregister x 3",
	"irq_line_raise_wait -> flush_workqueue -> hwrng_unregister",
	"irq_line_raise_wait x 3",
};

static int ring_cell(int row, int col)
{
	return chain(rings[row], 3, col == 0);
}

static void rings_of_three(void **state)
{
	(void)state;
	run_cells_in_children(ring_cell, ring_rows,
			      (int)(sizeof(rings) / sizeof(rings[0])), cols, 2);
}

/*
 * The record's fixed limits, for the compat headers' waits: four nested
 * waits and four nested memberships a thread; one more of each is not
 * recorded, with exactly one WARN, and ends as a recorded one does.
 */
static int limits_cell(int row, int col)
{
	int w0 = devres_warn_count();

	(void)col;
	alarm(CELL_ALARM_S);
	for (int i = 0; i < 6; i++) {
		if (row == 0 && devres_wait_begin(devres_wait_id(), "limit"))
			return 2;
		if (row == 1)
			devres_wait_join((uintptr_t)&P[0] + (uintptr_t)i);
		if (devres_warn_count() - w0 != (i < 4 ? 0 : 1))
			return 3 + i;
	}
	for (int i = 0; i < 6; i++) {
		if (row == 0)
			devres_wait_end();
		else
			devres_wait_leave();
	}
	/* All ended: a wait for this thread's own sets is no loop now. */
	if (devres_wait_begin_set((uintptr_t)&P[0], "limit"))
		return 10;
	devres_wait_end();
	return devres_warn_count() - w0 == 1 ? 0 : 11;
}

static void limits(void **state)
{
	static const char *const rows[] = { "nested waits", "memberships" };
	static const char *const col[] = { "five and six" };

	(void)state;
	run_cells_in_children(limits_cell, rows, 2, col, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pairs),
		cmocka_unit_test(set_pairs_all),
		cmocka_unit_test(rings_of_three),
		cmocka_unit_test(limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
