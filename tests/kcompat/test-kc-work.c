// SPDX-License-Identifier: MIT
/* ctest-labels: stress kcompat tsan */
/*
 * Work items against their driver's life: a kernel-style driver with a
 * managed work that re-queues itself and uses the driver's devm data, a
 * workqueue of its own destroyed in remove, and (its buggy mode) a work it
 * forgets to cancel. Binding and unbinding many rounds, the work is
 * cancelled and waited for before the data it uses is freed (ASan, TSan),
 * the ledger counts each work's thread while it serves the item and is
 * back after every unbind, destroy_workqueue() waits for what was queued
 * on the queue (chained work too) as the kernel's drains, and a forgotten
 * work shows in the ledger's threads after the unbind.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <sched.h>
#include "kcompat/kctest.h"

#define CHAIN 50

struct kwork {
	struct delayed_work poll;    /* re-queues itself while bound */
	struct work_struct chain;    /* queues itself CHAIN times on wq */
	struct workqueue_struct *wq; /* the driver's own */
	unsigned int polls;	     /* the poll's, in devm memory */
	unsigned int chained;
};

static bool forget; /* the buggy mode: a work left running */
static unsigned int chained_at_destroy;
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open;

static void kwork_poll(struct work_struct *work)
{
	struct kwork *k =
		container_of(to_delayed_work(work), struct kwork, poll);

	k->polls++;
	schedule_delayed_work(&k->poll, 0);
}

static void kwork_chain(struct work_struct *work)
{
	struct kwork *k = container_of(work, struct kwork, chain);

	if (++k->chained < CHAIN)
		queue_work(k->wq, &k->chain);
}

/* The forgotten work: static, waits at a gate the test opens. */
static void kwork_forgotten_fn(struct work_struct *work)
{
	(void)work;
	pthread_mutex_lock(&gate_lock);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}
static DECLARE_WORK(kwork_forgotten, kwork_forgotten_fn);

static int kwork_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct kwork *k = devm_kzalloc(dev, sizeof(*k), GFP_KERNEL);
	int ret;

	if (!k)
		return -ENOMEM;
	/* After the data: cancelled before it is freed (newest first). */
	ret = devm_delayed_work_autocancel(dev, &k->poll, kwork_poll);
	if (ret)
		return ret;
	k->wq = alloc_ordered_workqueue("kwork", 0);
	if (!k->wq)
		return -ENOMEM;
	INIT_WORK(&k->chain, kwork_chain);
	platform_set_drvdata(pdev, k);
	schedule_delayed_work(&k->poll, 0);
	queue_work(k->wq, &k->chain);
	if (forget)
		schedule_work(&kwork_forgotten);
	return 0;
}

static void kwork_remove(struct platform_device *pdev)
{
	struct kwork *k = platform_get_drvdata(pdev);

	/* The kernel's destroy_workqueue() drains: the chain has run. */
	destroy_workqueue(k->wq);
	chained_at_destroy = k->chained;
}

static struct platform_driver kwork_driver = {
	.probe = kwork_probe,
	.remove = kwork_remove,
	.driver = { .name = "kwork" },
};

static struct platform_device *pdev;
static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kwork", NULL, false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, NULL);
}

/*
 * Bound, the poll runs in a thread the ledger counts; unbound, it was
 * cancelled and waited for before its data went, and the chain drained
 * by destroy_workqueue(); the ledger back each round.
 */
static void unbind_cancels_and_drains(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	forget = false;
	assert_int_equal(platform_driver_register(&kwork_driver), 0);
	for (int round = 0; round < 100; round++) {
		struct devres_ledger now;

		kc_rebind(pdev);
		devres_ledger_snapshot(&now);
		/* The poll's thread at least, while it re-queues itself. */
		assert_true(now.threads >= kc_base.threads + 1);
		chained_at_destroy = 0;
		device_release_driver(&pdev->dev);
		assert_int_equal(chained_at_destroy, CHAIN);
		devres_ledger_snapshot(&now);
		assert_int_equal(now.threads, kc_base.threads);
	}
	platform_driver_unregister(&kwork_driver);
	assert_int_equal(devres_warn_count(), warns);
}

/* A work the driver forgot is still a thread in the ledger after unbind. */
static void forgotten_work_shows_in_the_ledger(void **state)
{
	struct devres_ledger now;

	(void)state;
	forget = true;
	gate_open = false;
	assert_int_equal(platform_driver_register(&kwork_driver), 0);
	platform_driver_unregister(&kwork_driver);
	devres_ledger_snapshot(&now);
	assert_int_equal(now.threads, kc_base.threads + 1);
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	flush_work(&kwork_forgotten);
	devres_ledger_snapshot(&now);
	assert_int_equal(now.threads, kc_base.threads);
	forget = false;
}

/* A one-shot work that frees the memory it lives in, as the kernel allows. */
struct oneshot {
	struct work_struct work;
	char *scratch;
	int *done;
};

static void oneshot_fn(struct work_struct *work)
{
	struct oneshot *o = container_of(work, struct oneshot, work);
	int *done = o->done;

	kfree(o->scratch);
	kfree(o);
	__atomic_add_fetch(done, 1, __ATOMIC_RELEASE);
}

/*
 * Many one-shot works, each freeing itself and a buffer in its function:
 * its thread never touches the item after the free (ASan), and once
 * flushed the memory and the ledger are as the work left them.
 */
static void work_frees_itself(void **state)
{
	static int done;

	(void)state;
	done = 0;
	for (int i = 0; i < 200; i++) {
		struct oneshot *o = kzalloc(sizeof(*o), GFP_KERNEL);
		struct devres_ledger now;

		assert_non_null(o);
		o->scratch = kmalloc(64, GFP_KERNEL);
		assert_non_null(o->scratch);
		o->done = &done;
		INIT_WORK(&o->work, oneshot_fn);
		assert_true(schedule_work(&o->work));
		if (i % 2)
			continue; /* left to end on its own */
		/*
		 * Every item scheduled so far has run (the one left to end
		 * on its own before this one too: until its thread starts,
		 * the ledger counts neither the thread nor its frees), then
		 * its thread leaves the ledger last: by then what the
		 * function freed is freed.
		 */
		while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < i + 1)
			sched_yield();
		do {
			sched_yield();
			devres_ledger_snapshot(&now);
		} while (now.threads != kc_base.threads);
		/*
		 * Read again: a snapshot sums per-thread tallies, and the one
		 * above may have read the thread's count of nodes before its
		 * frees and its count of threads after its end.
		 */
		devres_ledger_snapshot(&now);
		assert_int_equal(now.nodes, kc_base.nodes);
	}
	while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < 200)
		sched_yield();
	kcompat_work_wait_finishing();
	assert_int_equal(done, 200);
}

/*
 * INIT_WORK() of an item a thread serves: one WARN, the item untouched
 * (it runs on and is cancelled normally); once idle, INIT_WORK() is fine.
 */
static void init_of_a_live_work(void **state)
{
	static struct work_struct w;
	int warns;

	(void)state;
	gate_open = false;
	INIT_WORK(&w, kwork_forgotten_fn);
	start_log_capture();
	assert_true(schedule_work(&w));
	warns = devres_warn_count();
	INIT_WORK(&w, kwork_poll);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_true(kc_said("INIT_WORK: work "));
	assert_true(kc_said("is queued or running: cancel it first"));
	assert_ptr_equal(w.func, kwork_forgotten_fn);
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	cancel_work_sync(&w);
	devres_set_log_sink(NULL, NULL);
	INIT_WORK(&w, kwork_chain);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_ptr_equal(w.func, kwork_chain);
}

/* Every work call given NULL, the first page or ERR_PTR(): one WARN each. */
static void bad_work_pointers(void **state)
{
	void *bad[] = { NULL, (void *)16, ERR_PTR(-EINVAL) };
	struct work_struct ok;

	(void)state;
	INIT_WORK(&ok, kwork_forgotten_fn);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int warns = devres_warn_count();
		int n = 0;

		INIT_WORK(bad[i], kwork_chain), n++;
		assert_false(schedule_work(bad[i])), n++;
		assert_false(schedule_delayed_work(bad[i], 1)), n++;
		assert_false(cancel_work_sync(bad[i])), n++;
		assert_false(cancel_delayed_work_sync(bad[i])), n++;
		assert_false(flush_work(bad[i])), n++;
		assert_false(flush_delayed_work(bad[i])), n++;
		assert_false(work_pending(bad[i])), n++;
		if (bad[i]) {
			/* NULL is the system's queue, and no queue to drop. */
			assert_false(queue_work(bad[i], &ok)), n++;
			destroy_workqueue(bad[i]), n++;
			drain_workqueue(bad[i]), n++;
		}
		assert_int_equal(devres_warn_count(), warns + n);
	}
	assert_false(work_pending(&ok));
}

/*
 * destroy_workqueue() and drain_workqueue() of an empty queue: nothing.
 * Of NULL, where the kernel oopses: one WARN each, and nothing.
 */
static void empty_and_null_queues(void **state)
{
	struct workqueue_struct *wq = alloc_workqueue("e%d", 0, 0, 1);
	int warns = devres_warn_count();

	(void)state;
	assert_non_null(wq);
	assert_string_equal(kcompat_workqueue_name(wq), "e1");
	drain_workqueue(wq);
	destroy_workqueue(wq);
	assert_int_equal(devres_warn_count(), warns);
	destroy_workqueue(NULL);
	drain_workqueue(NULL);
	assert_int_equal(devres_warn_count(), warns + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unbind_cancels_and_drains,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			forgotten_work_shows_in_the_ledger, setup, teardown),
		cmocka_unit_test_setup_teardown(work_frees_itself, setup,
						teardown),
		cmocka_unit_test_setup_teardown(init_of_a_live_work, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_work_pointers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(empty_and_null_queues, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
