// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * fork() from inside the compat headers' work functions: a work item, a
 * delayed work, and an item on a workqueue of the driver's own, each run
 * on its work thread while the main thread waits in flush. Each child,
 * under an alarm, uses the library with devices of its own (a managed
 * allocation and its release, a platform driver bound to a platform
 * device) and its own work item and delayed work (not under
 * ThreadSanitizer, where a child of a threaded parent starts no thread),
 * and must exit 0; the parent's flush then returns, with no WARN.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/platform_device.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include "kcompat/kctest.h"
#include "base/fork-park.h"

#define CHILD_ALARM_S 10

static int child_ran;

static void child_fn(struct work_struct *w)
{
	(void)w;
	child_ran++;
}

static void child_dev_release(struct device *dev)
{
	(void)dev;
}

static int child_probe(struct platform_device *pdev)
{
	return devm_kmalloc(&pdev->dev, 16, GFP_KERNEL) ? 0 : -ENOMEM;
}

static struct platform_driver child_drv = {
	.probe = child_probe,
	.driver = { .name = "kc-fork-child" },
};

static int child_body(void)
{
	struct platform_device *pdev;
	struct delayed_work dw;
	struct work_struct w;
	struct device dev;
	int w0 = devres_warn_count();

	alarm(CHILD_ALARM_S);
	memset(&dev, 0, sizeof(dev));
	device_initialize(&dev);
	dev.release = child_dev_release;
	if (!devm_kmalloc(&dev, 32, GFP_KERNEL))
		return 2;
	if (devres_release_all(&dev) != 1)
		return 3;
	put_device(&dev);
	if (platform_driver_register(&child_drv))
		return 4;
	pdev = platform_device_register_simple("kc-fork-child",
					       PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(pdev))
		return 5;
	if (!pdev->dev.driver)
		return 6;
	platform_device_unregister(pdev);
	platform_driver_unregister(&child_drv);
	if (CHILD_THREADS) {
		INIT_WORK(&w, child_fn);
		schedule_work(&w);
		flush_work(&w);
		INIT_DELAYED_WORK(&dw, child_fn);
		schedule_delayed_work(&dw, 1);
		flush_delayed_work(&dw);
		if (child_ran != 2)
			return 7;
	}
	return devres_warn_count() == w0 ? 0 : 8;
}

static int status, forks;

static void fork_here(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(child_body());
	status = -1;
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	forks++;
}

static void forking_fn(struct work_struct *w)
{
	(void)w;
	fork_here();
}

static void expect_child_ok(void)
{
	assert_int_equal(forks, 1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	forks = 0;
}

static void from_work(void **state)
{
	struct work_struct w;
	int w0 = devres_warn_count();

	(void)state;
	INIT_WORK(&w, forking_fn);
	assert_true(schedule_work(&w));
	/* False when the item was over before the call: both wait. */
	(void)flush_work(&w);
	expect_child_ok();
	assert_int_equal(devres_warn_count(), w0);
}

static void from_delayed_work(void **state)
{
	struct delayed_work dw;
	int w0 = devres_warn_count();

	(void)state;
	INIT_DELAYED_WORK(&dw, forking_fn);
	assert_true(schedule_delayed_work(&dw, 1));
	/* False when the item was over before the call: both wait. */
	(void)flush_delayed_work(&dw);
	expect_child_ok();
	assert_int_equal(devres_warn_count(), w0);
}

static void from_own_queue(void **state)
{
	struct workqueue_struct *wq = alloc_workqueue("kc-fork", 0, 1);
	struct work_struct w;
	int w0 = devres_warn_count();

	(void)state;
	assert_non_null(wq);
	INIT_WORK(&w, forking_fn);
	assert_true(queue_work(wq, &w));
	flush_workqueue(wq);
	destroy_workqueue(wq);
	expect_child_ok();
	assert_int_equal(devres_warn_count(), w0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_work),
		cmocka_unit_test(from_delayed_work),
		cmocka_unit_test(from_own_queue),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
