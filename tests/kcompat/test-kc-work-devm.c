// SPDX-License-Identifier: MIT
/* ctest-labels: stress kcompat tsan */
/*
 * Work items in a driver's devm memory at unbind, in every state a thread
 * serves them: running (its function inside, writing the devm data),
 * queued again behind that run, and delayed for a minute. With
 * devm_work_autocancel() and devm_delayed_work_autocancel(), as the kernel
 * asks, each is cancelled and waited for before the memory goes: after
 * each of 50 unbinds no function runs again, the ledger's threads are back
 * at their baseline, and ASan and TSan see no access to the freed data.
 * No WARN: the actions, newer than the memory, cancel before the memory's
 * turn. (Without them, the free WARNs and cancels: test-kc-work-freed.)
 */
#define _GNU_SOURCE
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "kcompat/kctest.h"

struct kwd {
	struct work_struct busy;   /* running at unbind, queued again */
	struct delayed_work later; /* a minute away at unbind */
	struct work_struct queued; /* queued behind busy's run */
	unsigned int writes[3];	   /* what each function writes */
};

static int runs_after_unbind; /* static: counted after the data went */
static bool unbound;
static bool unbinding; /* busy's run goes on until the unbind begins */
static int busy_inside;

static void note_run(void)
{
	if (__atomic_load_n(&unbound, __ATOMIC_SEQ_CST))
		__atomic_fetch_add(&runs_after_unbind, 1, __ATOMIC_SEQ_CST);
}

static void busy_fn(struct work_struct *work)
{
	struct kwd *k = container_of(work, struct kwd, busy);

	note_run();
	__atomic_store_n(&busy_inside, 1, __ATOMIC_SEQ_CST);
	/*
	 * Until the unbind begins, however late the test thread gets to
	 * it, then a little longer, so that the unbind comes while it runs.
	 */
	while (!__atomic_load_n(&unbinding, __ATOMIC_SEQ_CST)) {
		k->writes[0]++;
		usleep(100);
	}
	for (int i = 0; i < 20; i++) {
		k->writes[0]++;
		usleep(100);
	}
}

static void later_fn(struct work_struct *work)
{
	struct kwd *k = container_of(to_delayed_work(work), struct kwd, later);

	note_run();
	k->writes[1]++;
}

static void queued_fn(struct work_struct *work)
{
	struct kwd *k = container_of(work, struct kwd, queued);

	note_run();
	k->writes[2]++;
}

static int kwd_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct kwd *k = devm_kzalloc(dev, sizeof(*k), GFP_KERNEL);
	int ret;

	if (!k)
		return -ENOMEM;
	ret = devm_work_autocancel(dev, &k->busy, busy_fn);
	if (!ret)
		ret = devm_delayed_work_autocancel(dev, &k->later, later_fn);
	if (!ret)
		ret = devm_work_autocancel(dev, &k->queued, queued_fn);
	if (ret)
		return ret;
	__atomic_store_n(&busy_inside, 0, __ATOMIC_SEQ_CST);
	schedule_work(&k->busy);
	schedule_delayed_work(&k->later, 60000);
	/* Running, then queued again behind its own run. */
	while (!__atomic_load_n(&busy_inside, __ATOMIC_SEQ_CST))
		usleep(50);
	schedule_work(&k->busy);
	schedule_work(&k->queued);
	return 0;
}

static struct platform_driver kwd_driver = {
	.probe = kwd_probe,
	.driver = { .name = "kwd" },
};

static struct platform_device *pdev;

static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kwd", NULL, false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, NULL);
}

static void every_state_cancelled_before_the_memory_goes(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(platform_driver_register(&kwd_driver), 0);
	for (int round = 0; round < 50; round++) {
		struct devres_ledger now;

		__atomic_store_n(&unbound, false, __ATOMIC_SEQ_CST);
		__atomic_store_n(&unbinding, false, __ATOMIC_SEQ_CST);
		kc_rebind(pdev);
		devres_ledger_snapshot(&now);
		/* busy's and later's threads at least; queued's if not run. */
		assert_true(now.threads >= kc_base.threads + 2);
		__atomic_store_n(&unbinding, true, __ATOMIC_SEQ_CST);
		device_release_driver(&pdev->dev);
		__atomic_store_n(&unbound, true, __ATOMIC_SEQ_CST);
		devres_ledger_snapshot(&now);
		assert_int_equal(now.threads, kc_base.threads);
		usleep(2000);
		assert_int_equal(__atomic_load_n(&runs_after_unbind,
						 __ATOMIC_SEQ_CST),
				 0);
	}
	platform_driver_unregister(&kwd_driver);
	assert_int_equal(devres_warn_count(), warns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			every_state_cancelled_before_the_memory_goes, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
