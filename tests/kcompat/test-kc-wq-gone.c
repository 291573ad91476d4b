// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Every workqueue call on a queue destroy_workqueue() took: one WARN naming
 * the call and the queue, nothing done, no read of the queue's memory (it
 * used to be kfree()d, and each call a use after free). A destroyed
 * queue's slot serves the next queue made: the stale handle is still
 * refused and the new queue untouched by it; a handle forged with a free
 * slot's generation is refused too. Threads that queue on a
 * handle while another destroys it get either a run or the WARN, one each.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include "kcompat/kctest.h"

static int runs; /* __atomic: <linux/atomic.h> takes the C11 names */

static void count_fn(struct work_struct *work)
{
	(void)work;
	__atomic_fetch_add(&runs, 1, __ATOMIC_SEQ_CST);
}

/* Lines captured since start_capture() that hold both @a and @b. */
static int said_both(const char *a, const char *b)
{
	int n = 0;

	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += strstr(cap.line[i], a) && strstr(cap.line[i], b);
	return n;
}

static struct devres_ledger base;

static int setup(void **state)
{
	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
	devres_ledger_snapshot(&base);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? -1 : 0;
}

/*
 * Each call that takes a queue, on a destroyed one: its WARN, its "nothing"
 * result, and the work item it was given untouched.
 */
static void each_call(struct workqueue_struct *gone, struct work_struct *w,
		      struct delayed_work *dw)
{
	int warns = devres_warn_count();

	start_capture();
	assert_false(queue_work(gone, w));
	assert_false(queue_delayed_work(gone, dw, 1));
	assert_false(mod_delayed_work(gone, dw, 1));
	flush_workqueue(gone);
	drain_workqueue(gone);
	destroy_workqueue(gone);
	assert_null(kcompat_workqueue_name(gone));
	assert_int_equal(devres_warn_count(), warns + 7);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(said_both("queue_work: workqueue", "was destroyed"),
			 1);
	assert_int_equal(said_both("queue_delayed_work: ", "was destroyed"), 1);
	assert_int_equal(said_both("mod_delayed_work: ", "was destroyed"), 1);
	assert_int_equal(said_both("flush_workqueue: ", "was destroyed"), 1);
	assert_int_equal(said_both("drain_workqueue: ", "was destroyed"), 1);
	assert_int_equal(said_both("destroy_workqueue: ", "was destroyed"), 1);
	assert_int_equal(said_both("kcompat_workqueue_name: ", "destroyed"), 1);
	assert_false(work_pending(w));
	assert_false(delayed_work_pending(dw));
}

static void every_call_on_a_destroyed_queue(void **state)
{
	struct workqueue_struct *wq = alloc_workqueue("gone", 0, 0);
	struct delayed_work dw;
	struct work_struct w;

	(void)state;
	assert_non_null(wq);
	INIT_WORK(&w, count_fn);
	INIT_DELAYED_WORK(&dw, count_fn);
	/* Used while live: it ran, and the queue is drained at destroy. */
	assert_true(queue_work(wq, &w));
	assert_true(queue_delayed_work(wq, &dw, 0));
	destroy_workqueue(wq);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 2);
	each_call(wq, &w, &dw);
	/* The same item, on the system's queue: fine. */
	assert_true(schedule_work(&w));
	flush_work(&w);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 3);
}

/*
 * The slot of a destroyed queue serves the next queue made: the old handle
 * is refused all the same, and the new queue works as if it were alone.
 */
static void stale_handle_of_a_reused_slot(void **state)
{
	struct workqueue_struct *old = alloc_workqueue("old", 0, 0);
	struct workqueue_struct *new;
	struct delayed_work dw;
	struct work_struct w;

	(void)state;
	assert_non_null(old);
	destroy_workqueue(old);
	new = alloc_workqueue("new", 0, 0);
	assert_non_null(new);
	/* The same slot (the first free one), another generation. */
	assert_int_equal((uintptr_t)old & 4095, (uintptr_t) new & 4095);
	assert_true(old != new);
	INIT_WORK(&w, count_fn);
	INIT_DELAYED_WORK(&dw, count_fn);
	each_call(old, &w, &dw);
	assert_string_equal(kcompat_workqueue_name(new), "new");
	assert_true(queue_work(new, &w));
	flush_workqueue(new);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 1);
	destroy_workqueue(new);
}

/*
 * A free slot's generation is even, a live one's odd: a handle forged with
 * the free slot's generation, or with the next one before it is issued,
 * names no queue; the next queue made gets that next generation.
 */
static void handle_of_a_free_slot(void **state)
{
	struct workqueue_struct *old = alloc_workqueue("old", 0, 0);
	struct workqueue_struct *free_gen, *next_gen, *new;
	struct delayed_work dw;
	struct work_struct w;
	unsigned int slot;
	uintptr_t gen;

	(void)state;
	assert_non_null(old);
	slot = (unsigned int)(((uintptr_t)old >> 1) & 2047);
	gen = (uintptr_t)old >> 12;
	assert_int_equal(gen & 1, 1);
	assert_true(kcompat_wq_live(&kcompat_wqs[slot]));
	destroy_workqueue(old);
	assert_false(kcompat_wq_live(&kcompat_wqs[slot]));
	free_gen = kcompat_wq_handle(slot, gen + 1);
	next_gen = kcompat_wq_handle(slot, gen + 2);
	INIT_WORK(&w, count_fn);
	INIT_DELAYED_WORK(&dw, count_fn);
	each_call(free_gen, &w, &dw);
	each_call(next_gen, &w, &dw);
	new = alloc_workqueue("new", 0, 0);
	assert_ptr_equal(new, next_gen);
	assert_string_equal(kcompat_workqueue_name(new), "new");
	destroy_workqueue(new);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 0);
}

/* Not a queue at all: an odd value that no handle was, a real address. */
static void not_a_queue(void **state)
{
	struct work_struct w;
	int obj[4];
	void *bad[] = { (void *)(uintptr_t)0x7fff1, obj };

	(void)state;
	INIT_WORK(&w, count_fn);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int warns = devres_warn_count();

		start_capture();
		assert_false(queue_work(bad[i], &w));
		destroy_workqueue(bad[i]);
		assert_int_equal(devres_warn_count(), warns + 2);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(said_both("workqueue", "not a workqueue"), 2);
	}
	assert_false(work_pending(&w));
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 0);
}

/*
 * One thread makes, uses and destroys queues; two others queue on the
 * handle they last saw. Each refusal is one WARN; each accepted item runs
 * before the destroy returns.
 */
#define ROUNDS 300
static struct workqueue_struct *shared;
static bool stop;

static void *maker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		struct workqueue_struct *wq = alloc_workqueue("r%d", 0, 0, i);

		assert_non_null(wq);
		__atomic_store_n(&shared, wq, __ATOMIC_SEQ_CST);
		sched_yield();
		destroy_workqueue(wq);
	}
	__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
	return NULL;
}

struct user {
	struct work_struct w;
	int queued, refused;
};

static void *user(void *arg)
{
	struct user *u = arg;

	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		struct workqueue_struct *wq =
			__atomic_load_n(&shared, __ATOMIC_SEQ_CST);

		if (!wq)
			continue;
		if (queue_work(wq, &u->w))
			u->queued++;
		else
			u->refused++;
		flush_work(&u->w);
	}
	return NULL;
}

static void queue_races_destroy(void **state)
{
	struct user u[2] = { 0 };
	pthread_t t[3];
	int warns = devres_warn_count();

	(void)state;
	__atomic_store_n(&shared, NULL, __ATOMIC_SEQ_CST);
	__atomic_store_n(&stop, false, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++)
		INIT_WORK(&u[i].w, count_fn);
	assert_int_equal(pthread_create(&t[0], NULL, maker, NULL), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i + 1], NULL, user, &u[i]),
				 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* A refusal is a WARN; the item was never pending (flushed). */
	assert_int_equal(devres_warn_count() - warns,
			 u[0].refused + u[1].refused);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST),
			 u[0].queued + u[1].queued);
	print_message("queued %d, refused %d\n", u[0].queued + u[1].queued,
		      u[0].refused + u[1].refused);
}

/*
 * The table's limit: with every slot in use, alloc_workqueue() is NULL
 * with one WARN naming the limit (it was silent); a slot given back
 * serves the next queue.
 */
static void every_slot_in_use(void **state)
{
	static struct workqueue_struct *wq[KCOMPAT_WQ_SLOTS];
	int warns = devres_warn_count();

	(void)state;
	for (int i = 0; i < KCOMPAT_WQ_SLOTS; i++) {
		wq[i] = alloc_workqueue("slot-%d", 0, 0, i);
		assert_non_null(wq[i]);
	}
	start_capture();
	assert_null(alloc_workqueue("one-too-many", 0, 0));
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_int_equal(said_both("alloc_workqueue: all 256 workqueues", "no "
									  "queu"
									  "e "
									  "'one"
									  "-too"
									  "-man"
									  "y'"),
			 1);
	devres_set_log_sink(NULL, NULL);
	destroy_workqueue(wq[7]);
	wq[7] = alloc_workqueue("again", 0, 0);
	assert_non_null(wq[7]);
	for (int i = 0; i < KCOMPAT_WQ_SLOTS; i++)
		destroy_workqueue(wq[i]);
	assert_int_equal(devres_warn_count(), warns + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_call_on_a_destroyed_queue,
						setup, teardown),
		cmocka_unit_test_setup_teardown(stale_handle_of_a_reused_slot,
						setup, teardown),
		cmocka_unit_test_setup_teardown(handle_of_a_free_slot, setup,
						teardown),
		cmocka_unit_test_setup_teardown(not_a_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(queue_races_destroy, setup,
						teardown),
		cmocka_unit_test_setup_teardown(every_slot_in_use, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
