// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A work function that unbinds its own device (device_release_driver()
 * from inside it, as a driver's error path in a work may), its item in
 * the driver's devm memory: a work and a delayed work, each with
 * devm_work_autocancel() (or devm_delayed_work_autocancel()) and with a
 * plain INIT_WORK() the remove never cancels. The unbind releases the
 * memory the running function lives in.
 *
 * With the managed cancel, its cancel_work_sync() comes from the item's
 * own function, which it would wait for (the kernel's deadlock, which
 * lockdep reports): one WARN, no wait. Without it, the memory is the
 * function's own item freed by its own function: no WARN (docs/misuse.md,
 * "Live objects in freed memory"). Either way the unbind completes, the
 * function returns and its thread touches nothing of the freed item
 * (ASan), nothing hangs (an alarm), the device binds again, and the
 * ledger's threads are back at the end (the fixture's teardown).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "kcompat/kctest.h"

struct kself {
	struct delayed_work dw;
	struct device *dev;
};

static bool autocancel, delayed;
static bool armed; /* the probe queues its work: in the cells only */
static int done;

static void self_fn(struct work_struct *work)
{
	struct kself *k = container_of(to_delayed_work(work), struct kself, dw);

	device_release_driver(k->dev);
	/* k is freed: only static data from here. */
	__atomic_store_n(&done, 1, __ATOMIC_SEQ_CST);
}

static int self_probe(struct platform_device *p)
{
	struct kself *k = devm_kzalloc(&p->dev, sizeof(*k), GFP_KERNEL);

	if (!k)
		return -ENOMEM;
	k->dev = &p->dev;
	if (autocancel) {
		if (devm_delayed_work_autocancel(&p->dev, &k->dw, self_fn))
			return -ENOMEM;
	} else {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		INIT_DELAYED_WORK(&k->dw, self_fn);
	}
	if (!armed)
		return 0;
	if (delayed)
		schedule_delayed_work(&k->dw, 1);
	else
		schedule_work(&k->dw.work);
	return 0;
}

static struct platform_driver self_driver = {
	.probe = self_probe,
	.driver = { .name = "kself" },
};

static struct platform_device *pdev;

static void cell(bool ac, bool dl)
{
	int w0 = devres_warn_count();

	autocancel = ac;
	delayed = dl;
	armed = true;
	for (int round = 0; round < 20; round++) {
		__atomic_store_n(&done, 0, __ATOMIC_SEQ_CST);
		cap.n = 0;
		assert_int_equal(device_attach(&pdev->dev), 1);
		while (!__atomic_load_n(&done, __ATOMIC_SEQ_CST))
			usleep(200);
		assert_null(pdev->dev.driver);
		if (devres_warn_count() != w0 + (ac ? 1 : 0))
			fail_msg("autocancel %d, delayed %d, round %d: %d "
				 "WARNs",
				 ac, dl, round, devres_warn_count() - w0);
		if (ac)
			assert_true(kc_said("cancel_work_sync: work "));
		w0 = devres_warn_count();
	}
}

static void autocancel_work(void **state)
{
	(void)state;
	cell(true, false);
}

static void autocancel_delayed(void **state)
{
	(void)state;
	cell(true, true);
}

static void plain_work(void **state)
{
	(void)state;
	cell(false, false);
}

static void plain_delayed(void **state)
{
	(void)state;
	cell(false, true);
}

static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kself", &self_driver, true);
	/* Bound at registration: unbound until each cell's attach. */
	device_release_driver(&pdev->dev);
	alarm(20);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	armed = false;
	/* The thread of the last run may still be on its way out. */
	for (int i = 0; i < 2000; i++) {
		struct devres_ledger now;

		devres_ledger_snapshot(&now);
		if (now.threads == kc_base.threads)
			break;
		usleep(1000);
	}
	return kc_bare_teardown(pdev, &self_driver);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(autocancel_work, setup,
						teardown),
		cmocka_unit_test_setup_teardown(autocancel_delayed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(plain_work, setup, teardown),
		cmocka_unit_test_setup_teardown(plain_delayed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
