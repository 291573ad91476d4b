// SPDX-License-Identifier: MIT
/* ctest-labels: tsan fault */
/*
 * Managed handlers on platform devices whose IRQ numbers are lines: a
 * fault sweep of a probe that requests two lines; unbind and rebind while
 * both lines are raised at full rate, with handlers that call into devres
 * on their device; handlers (and a thread function) that unbind
 * their own device; devm_free_irq() never freeing an unmanaged handler.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include "testlib.h"
#include "irq/irq-test.h"

#define MAGIC 0x1a2b3c4d

struct priv {
	struct device *dev;
	int irq0, irq1;
	int magic;
};

static int lines[2];
static struct platform_device *the_pdev;

/* 1 from the start of a probe until the unbind has returned. */
static int bound;
static int violations;
static int calls0, calls1;

static void check(struct priv *p)
{
	struct devres_stats st;

	if (!load_int(&bound) || p->magic != MAGIC)
		add_int(&violations, 1);
	/*
	 * Calls on the device from a handler, racing with its unbind: they
	 * take its devres lock and must not deadlock with the release. (An
	 * allocation would race with the release by design: the unbind may
	 * free it before the handler does.)
	 */
	devres_get_stats(p->dev, &st);
	if (st.allocs < 0)
		add_int(&violations, 1);
}

static irqreturn_t h0(int irq, void *dev_id)
{
	(void)irq;
	check(dev_id);
	add_int(&calls0, 1);
	return IRQ_HANDLED;
}

static irqreturn_t h1_thread(int irq, void *dev_id)
{
	(void)irq;
	check(dev_id);
	add_int(&calls1, 1);
	return IRQ_HANDLED;
}

static int two_line_probe(struct platform_device *pdev)
{
	struct priv *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);
	int rc;

	if (!p)
		return -ENOMEM;
	__atomic_store_n(&bound, 1, __ATOMIC_RELEASE);
	p->dev = &pdev->dev;
	p->magic = MAGIC;
	p->irq0 = platform_get_irq(pdev, 0);
	p->irq1 = platform_get_irq(pdev, 1);
	/* Passed up as they are: -EPROBE_DEFER must reach the driver core. */
	if (p->irq0 < 0)
		return p->irq0;
	if (p->irq1 < 0)
		return p->irq1;
	rc = devm_request_irq(&pdev->dev, p->irq0, h0, 0, NULL, p);
	if (rc)
		return rc;
	rc = devm_request_threaded_irq(&pdev->dev, p->irq1, NULL, h1_thread,
				       IRQF_ONESHOT, "two-line-t", p);
	if (rc)
		return rc;
	platform_set_drvdata(pdev, p);
	return 0;
}

static struct platform_driver two_line_drv = {
	.probe = two_line_probe,
	.driver = { .name = "two-line" },
};

static int threads_base;
static struct devres_ledger base;

static int setup(void **state)
{
	struct resource res[2];

	(void)state;
	for (int i = 0; i < 2; i++) {
		lines[i] = irq_line_create(i ? "line1" : "line0");
		if (lines[i] <= 0)
			return -1;
		res[i] = (struct resource)DEFINE_RES_IRQ(lines[i]);
	}
	the_pdev = platform_device_register_simple("two-line",
						   PLATFORM_DEVID_NONE, res, 2);
	if (IS_ERR(the_pdev))
		return -1;
	threads_base = nr_threads();
	devres_ledger_snapshot(&base);
	__atomic_store_n(&violations, 0, __ATOMIC_RELEASE);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	if (!wait_threads(threads_base))
		return -1;
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&base, &now, stderr))
		return -1;
	platform_device_unregister(the_pdev);
	for (int i = 0; i < 2; i++)
		if (irq_line_destroy(lines[i]))
			return -1;
	return 0;
}

static void probe_sweep(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	assert_int_equal(driver_probe_sweep(&two_line_drv.driver,
					    &the_pdev->dev, &r),
			 0);
	/*
	 * priv; the first request: its node, the handler, the dispatcher
	 * (memory, epoll, eventfd, thread); the second: its node, the
	 * handler, its thread.
	 */
	assert_int_equal(r.points, 10);
	assert_int_equal(r.leaks, 0);
	assert_true(wait_threads(threads_base));
	assert_int_equal(load_int(&violations), 0);
}

static int raising;

static void *raiser(void *arg)
{
	int irq = *(int *)arg;

	while (load_int(&raising))
		irq_line_raise(irq);
	return NULL;
}

static void unbind_at_full_rate(void **state)
{
	pthread_t thr[2];
	int before0, before1;

	(void)state;
	__atomic_store_n(&raising, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&thr[i], NULL, raiser, &lines[i]), 0);
	assert_int_equal(platform_driver_register(&two_line_drv), 0);
	assert_true(device_is_bound(&the_pdev->dev));
	for (int i = 0; i < 200; i++) {
		before0 = load_int(&calls0);
		before1 = load_int(&calls1);
		/* Every other round, wait until both handlers ran. */
		if (i % 2 == 0) {
			assert_true(wait_at_least(&calls0, before0 + 1));
			assert_true(wait_at_least(&calls1, before1 + 1));
		}
		device_release_driver(&the_pdev->dev);
		__atomic_store_n(&bound, 0, __ATOMIC_RELEASE);
		assert_int_equal(device_attach(&the_pdev->dev), 1);
	}
	device_release_driver(&the_pdev->dev);
	__atomic_store_n(&bound, 0, __ATOMIC_RELEASE);
	platform_driver_unregister(&two_line_drv);
	__atomic_store_n(&raising, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(thr[i], NULL);
	assert_int_equal(load_int(&violations), 0);
	assert_true(load_int(&calls0) >= 100);
	assert_true(load_int(&calls1) >= 100);
}

/* A device whose interrupt unbinds it: from the handler or the thread. */
static int self_calls;

static irqreturn_t unbind_self(int irq, void *dev_id)
{
	struct priv *p = dev_id;

	(void)irq;
	if (__atomic_add_fetch(&self_calls, 1, __ATOMIC_ACQ_REL) == 1)
		device_release_driver(p->dev);
	return IRQ_HANDLED;
}

static int self_probe(struct platform_device *pdev)
{
	struct priv *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);
	bool threaded = pdev->id == 1;

	if (!p)
		return -ENOMEM;
	p->dev = &pdev->dev;
	p->irq0 = platform_get_irq(pdev, 0);
	/* The other line too, so that the unbind frees one of each kind. */
	p->irq1 = platform_get_irq(pdev, 1);
	if (devm_request_irq(&pdev->dev, p->irq1, h0, 0, NULL, p))
		return -EIO;
	if (threaded)
		return devm_request_threaded_irq(&pdev->dev, p->irq0, NULL,
						 unbind_self, IRQF_ONESHOT,
						 NULL, p);
	return devm_request_irq(&pdev->dev, p->irq0, unbind_self, 0, NULL, p);
}

static struct platform_driver self_drv = {
	.probe = self_probe,
	.driver = { .name = "self-unbind" },
};

static void handler_unbinds_its_device(void **state)
{
	struct resource res[2] = { DEFINE_RES_IRQ(lines[0]),
				   DEFINE_RES_IRQ(lines[1]) };

	(void)state;
	assert_int_equal(platform_driver_register(&self_drv), 0);
	for (int id = 0; id < 2; id++) {
		struct platform_device *sdev;

		__atomic_store_n(&self_calls, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&bound, 1, __ATOMIC_RELEASE);
		sdev = platform_device_register_simple("self-unbind", id, res,
						       2);
		assert_false(IS_ERR(sdev));
		assert_true(device_is_bound(&sdev->dev));
		assert_int_equal(irq_line_raise(lines[0]), 0);
		assert_true(wait_at_least(&self_calls, 1));
		for (long end = now_ms() + WAIT_MS;
		     device_is_bound(&sdev->dev);)
			assert_true(now_ms() < end);
		/* Freed: never called again; the library's threads are gone. */
		assert_true(wait_threads(threads_base));
		/* No handler left to run it: not waited for, not called. */
		assert_int_equal(irq_line_raise_wait(lines[0]), -EAGAIN);
		assert_int_equal(load_int(&self_calls), 1);
		platform_device_unregister(sdev);
	}
	platform_driver_unregister(&self_drv);
	__atomic_store_n(&bound, 0, __ATOMIC_RELEASE);
	assert_int_equal(load_int(&violations), 0);
}

/*
 * A handler that requests and frees a managed handler of another line on
 * its device at every interrupt, while the device is unbound and bound
 * again and both lines are raised at full rate. What it races with is the
 * unbind (which may release the node first: then its devm_free_irq()
 * WARNs, as the kernel's would): nothing may deadlock, crash or leak.
 */
static int juggles;

static irqreturn_t juggle(int irq, void *dev_id)
{
	struct priv *p = dev_id;

	(void)irq;
	if (!devm_request_irq(p->dev, p->irq1, h0, IRQF_SHARED, "juggled", p))
		devm_free_irq(p->dev, p->irq1, p);
	add_int(&juggles, 1);
	return IRQ_HANDLED;
}

static int juggle_probe(struct platform_device *pdev)
{
	struct priv *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	__atomic_store_n(&bound, 1, __ATOMIC_RELEASE);
	p->dev = &pdev->dev;
	p->magic = MAGIC;
	p->irq0 = platform_get_irq(pdev, 0);
	p->irq1 = platform_get_irq(pdev, 1);
	if (devm_request_irq(&pdev->dev, p->irq1, h0, IRQF_SHARED, NULL, p))
		return -EIO;
	return devm_request_irq(&pdev->dev, p->irq0, juggle, 0, NULL, p);
}

static struct platform_driver juggle_drv = {
	.probe = juggle_probe,
	.driver = { .name = "two-line" },
};

static void quiet_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static void handler_manages_another_line_during_unbind(void **state)
{
	pthread_t thr[2];

	(void)state;
	devres_set_log_sink(quiet_sink, NULL);
	__atomic_store_n(&raising, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&thr[i], NULL, raiser, &lines[i]), 0);
	assert_int_equal(platform_driver_register(&juggle_drv), 0);
	for (int i = 0; i < 200; i++) {
		int before = load_int(&juggles);

		if (i % 2 == 0)
			assert_true(wait_at_least(&juggles, before + 1));
		device_release_driver(&the_pdev->dev);
		__atomic_store_n(&bound, 0, __ATOMIC_RELEASE);
		assert_int_equal(device_attach(&the_pdev->dev), 1);
	}
	device_release_driver(&the_pdev->dev);
	__atomic_store_n(&bound, 0, __ATOMIC_RELEASE);
	platform_driver_unregister(&juggle_drv);
	__atomic_store_n(&raising, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(thr[i], NULL);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(load_int(&violations), 0);
	assert_true(load_int(&juggles) >= 100);
}

static int plain_calls;

static irqreturn_t plain(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&plain_calls, 1);
	return IRQ_HANDLED;
}

static struct device *free_dev;
static int free_from_handler_warns = -1;

static irqreturn_t devm_free_self(int irq, void *dev_id)
{
	int w = devres_warn_count();

	devm_free_irq(free_dev, (unsigned int)irq, dev_id);
	__atomic_store_n(&free_from_handler_warns, devres_warn_count() - w,
			 __ATOMIC_RELEASE);
	return IRQ_HANDLED;
}

static void devm_free_irq_frees_managed_only(void **state)
{
	struct devres_stats st;
	int x, y;

	(void)state;
	assert_int_equal(init_dev(&tdev, "test-dev"), 0);
	free_dev = &tdev;
	/* Unmanaged: devm_free_irq() WARNs and leaves it alone. */
	assert_int_equal(request_irq(lines[0], plain, 0, "plain", &x), 0);
	start_capture();
	devm_free_irq(&tdev, lines[0], &x);
	expect_warn("devm_free_irq", "no managed handler");
	assert_int_equal(irq_line_raise_wait(lines[0]), 0);
	assert_int_equal(load_int(&plain_calls), 1);
	assert_string_equal(free_irq(lines[0], &x), "plain");
	/* Managed: freed now, its node gone. */
	assert_int_equal(devm_request_any_context_irq(&tdev, lines[1], plain, 0,
						      NULL, &y),
			 IRQC_IS_HARDIRQ);
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 1);
	devm_free_irq(&tdev, lines[1], &y);
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 0);
	assert_true(wait_threads(threads_base));
	/* From its own handler: WARN, and it stays. */
	assert_int_equal(devm_request_irq(&tdev, lines[1], devm_free_self, 0,
					  NULL, &y),
			 0);
	start_capture();
	assert_int_equal(irq_line_raise(lines[1]), 0);
	assert_true(wait_at_least(&free_from_handler_warns, 1));
	synchronize_irq(lines[1]);
	expect_warn("devm_free_irq", "own handler");
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 1);
	/* Misuse and errors: nothing recorded. */
	start_capture();
	assert_int_equal(devm_request_irq(NULL, lines[0], plain, 0, NULL, &x),
			 -EINVAL);
	expect_warn_on("(no device)", "devm_request_irq", "NULL device");
	assert_int_equal(devm_request_irq(&tdev, 4000, plain, 0, NULL, &x),
			 -EINVAL);
	devm_free_irq(&tdev, lines[1], &y);
	devres_get_stats(&tdev, &st);
	assert_int_equal(st.allocs, 0);
	put_device(&tdev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(probe_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(unbind_at_full_rate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			handler_manages_another_line_during_unbind, setup,
			teardown),
		cmocka_unit_test_setup_teardown(handler_unbinds_its_device,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			devm_free_irq_frees_managed_only, setup, teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
