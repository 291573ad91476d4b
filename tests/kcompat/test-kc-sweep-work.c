// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat tsan */
/*
 * The sweep over a driver whose probe starts work: its devm data, then
 * in every one of the 24 orders a queue of its own (alloc_workqueue(),
 * destroyed by a devm action), a managed work queued on that queue (or
 * the system's, before the queue) that runs three times, re-queued by its
 * own function, while the probe waits for its first run, a managed
 * delayed work pending for a minute, and a managed mutex. A failure is
 * injected at each acquisition in turn: every run gives back all it took
 * (the ledger's threads too: the work's thread is let go before the
 * sweep looks), nothing is released twice (no WARN), the work never runs
 * on freed data (ASan, TSan), and the errno is the injected one.
 */
#define _GNU_SOURCE
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "kcompat/kctest.h"

#define NSTEPS 4

struct ksw {
	struct workqueue_struct *wq;
	struct workqueue_struct *work_wq; /* set before the work is queued */
	struct work_struct work;
	struct delayed_work later;
	struct completion first;
	struct mutex lock;
	int runs;
};

static int perm[NSTEPS];

static void ksw_work(struct work_struct *work)
{
	struct ksw *k = container_of(work, struct ksw, work);

	int runs = __atomic_add_fetch(&k->runs, 1, __ATOMIC_SEQ_CST);

	if (runs == 1)
		complete(&k->first);
	if (runs < 3)
		queue_work(k->work_wq, &k->work);
}

static void ksw_later(struct work_struct *work)
{
	(void)work;
}

static void ksw_destroy_wq(void *data)
{
	struct ksw *k = data;

	destroy_workqueue(k->wq);
	k->wq = NULL;
}

static int ksw_step(struct device *dev, struct ksw *k, int step)
{
	int ret;

	switch (step) {
	case 0:
		k->wq = alloc_workqueue("ksw", 0, 0);
		if (!k->wq)
			return -ENOMEM;
		return devm_add_action_or_reset(dev, ksw_destroy_wq, k);
	case 1:
		ret = devm_work_autocancel(dev, &k->work, ksw_work);
		if (ret)
			return ret;
		k->work_wq = k->wq ? k->wq : system_wq;
		queue_work(k->work_wq, &k->work);
		wait_for_completion(&k->first);
		return 0;
	case 2:
		ret = devm_delayed_work_autocancel(dev, &k->later, ksw_later);
		if (ret)
			return ret;
		schedule_delayed_work(&k->later, 60000);
		return 0;
	default:
		return devm_mutex_init(dev, &k->lock);
	}
}

static int ksw_probe(struct platform_device *pdev)
{
	struct ksw *k = devm_kzalloc(&pdev->dev, sizeof(*k), GFP_KERNEL);
	int ret;

	if (!k)
		return -ENOMEM;
	init_completion(&k->first);
	for (int i = 0; i < NSTEPS; i++) {
		ret = ksw_step(&pdev->dev, k, perm[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static struct platform_driver ksw_driver = {
	.probe = ksw_probe,
	.driver = { .name = "ksw" },
};

KC_FIXTURE("ksw", NULL)

static void every_order_sweeps_clean(void **state)
{
	int orders = 0;

	(void)state;
	for (int i = 0; i < NSTEPS; i++)
		perm[i] = i;
	do {
		struct devres_sweep_result r;
		int ret;

		start_log_capture();
		ret = driver_probe_sweep(&ksw_driver.driver, &board.pdev->dev,
					 &r);
		if (ret || r.leaks || r.warns || r.findings) {
			print_error("order %d %d %d %d\n", perm[0], perm[1],
				    perm[2], perm[3]);
			kc_print_report();
		}
		assert_int_equal(ret, 0);
		/* The data, the queue's record and action, two works, mutex. */
		assert_true(r.points >= 6);
		assert_int_equal(r.leaks, 0);
		assert_int_equal(r.warns, 0);
		assert_int_equal(r.findings, 0);
		if (!orders)
			print_message("%u points\n", r.points);
		orders++;
	} while (kc_next_order(perm, NSTEPS));
	assert_int_equal(orders, 24);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_order_sweeps_clean, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
