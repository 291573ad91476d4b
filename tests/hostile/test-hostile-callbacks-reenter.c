// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * Callbacks the library runs, each calling back into the library on its
 * own resource: a devm action, a revocable's release and an access, an
 * interrupt's primary handler and thread function, a work item of the
 * compat headers. Each cell runs in a child under an alarm (a hang fails
 * it) and asserts the documented result, the exact WARN count and the
 * ledger back at its start.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include <linux/workqueue.h>
#include "testlib.h"
#include "cell-child.h"

#define CELL_ALARM_S 10

static struct device dev;
static int ran;	  /* the callback ran to its end (or its thread's) */
static int seen;  /* what the callback saw, when the row checks it */
static int extra; /* a late action's runs */

static void dev_release(struct device *d)
{
	(void)d;
}

static void set_ran(void)
{
	__atomic_store_n(&ran, 1, __ATOMIC_RELEASE);
}

/* Waits up to 3 s for the callback's end. */
static bool wait_ran(void)
{
	for (int n = 0; n < 3000; n++) {
		if (__atomic_load_n(&ran, __ATOMIC_ACQUIRE))
			return true;
		usleep(1000);
	}
	return false;
}

/* ---- devm actions ---- */

static void act_unregister(void *data)
{
	device_unregister(data);
	set_ran();
}

/* The device is registered; released (and put) by its own unregister. */
static int action_unregisters_own_device(void)
{
	if (device_add(&dev) || devm_add_action(&dev, act_unregister, &dev))
		return 10;
	device_unregister(&dev);
	return wait_ran() ? 0 : 11;
}

static void act_release_self(void *data);

static void act_release_self(void *data)
{
	devm_release_action(data, act_release_self, data);
	seen = devres_release_all(data);
	set_ran();
}

static int action_releases_itself(void)
{
	if (devm_add_action(&dev, act_release_self, &dev))
		return 12;
	if (devres_release_all(&dev) != 1)
		return 13;
	put_device(&dev);
	return wait_ran() && seen == 0 ? 0 : 14;
}

static void act_late(void *data)
{
	(void)data;
	extra++;
}

static void act_adds(void *data)
{
	seen = devm_add_action(data, act_late, data);
	set_ran();
}

/* The action added late runs once, at the device's last put. */
static int action_adds_an_action(void)
{
	if (devm_add_action(&dev, act_adds, &dev))
		return 15;
	if (devres_release_all(&dev) != 1 || seen || extra)
		return 16;
	put_device(&dev);
	return extra == 1 ? 0 : 17;
}

/* ---- revocables ---- */

static struct revocable *rev;
static int res_obj;

static void rev_release_accesses(void *res)
{
	(void)res;
	seen = revocable_try_access(rev) != NULL;
	set_ran();
}

static int revocable_release_accesses_itself(void)
{
	rev = devm_revocable_create(&dev, &res_obj, rev_release_accesses);
	if (!rev || devres_release_all(&dev) != 1)
		return 20;
	put_device(&dev);
	return wait_ran() && !seen ? 0 : 21;
}

static void rev_release_puts(void *res)
{
	(void)res;
	revocable_put(rev); /* the binding's reference: refused */
	set_ran();
}

static int revocable_release_puts_binding_ref(void)
{
	rev = devm_revocable_create(&dev, &res_obj, rev_release_puts);
	if (!rev || devres_release_all(&dev) != 1)
		return 22;
	put_device(&dev);
	return wait_ran() ? 0 : 23;
}

static void rev_release_plain(void *res)
{
	(void)res;
	set_ran();
}

/* The release waits for the access to end, in the same thread. */
static int revoke_inside_own_access(void)
{
	rev = devm_revocable_create(&dev, &res_obj, rev_release_plain);
	if (!rev || !revocable_get(rev))
		return 24;
	if (revocable_try_access(rev) != &res_obj)
		return 25;
	if (devres_release_all(&dev) != 1)
		return 26;
	if (__atomic_load_n(&ran, __ATOMIC_ACQUIRE))
		return 27; /* released inside the access */
	revocable_access_end(rev);
	revocable_put(rev);
	put_device(&dev);
	return wait_ran() ? 0 : 28;
}

/* ---- interrupts ---- */

static int line;

static irqreturn_t th_release(int irq, void *id)
{
	(void)irq;
	devres_release_all(id);
	set_ran();
	return IRQ_HANDLED;
}

static irqreturn_t th_release_exit(int irq, void *id)
{
	(void)irq;
	devres_release_all(id);
	set_ran();
	pthread_exit(NULL);
}

static irqreturn_t th_free_own(int irq, void *id)
{
	seen = free_irq((unsigned int)irq, id) != NULL;
	set_ran();
	return IRQ_HANDLED;
}

static irqreturn_t primary_release(int irq, void *id)
{
	(void)irq;
	devres_release_all(id);
	set_ran();
	return IRQ_HANDLED;
}

static int irq_cell(irq_handler_t primary, irq_handler_t thread_fn,
		    bool managed)
{
	int rc;

	line = irq_line_create("cb-line");
	if (line < 0)
		return 30;
	if (managed)
		rc = devm_request_threaded_irq(&dev, (unsigned int)line,
					       primary, thread_fn,
					       primary ? 0 : IRQF_ONESHOT, "cb",
					       &dev);
	else
		rc = request_threaded_irq((unsigned int)line, primary,
					  thread_fn, IRQF_ONESHOT, "cb", &dev);
	if (rc || irq_line_raise(line))
		return 31;
	if (!wait_ran())
		return 32;
	if (!managed)
		(void)free_irq((unsigned int)line, &dev);
	/* Its handler freed (or reaped as its thread ends), the line goes. */
	for (int n = 0; n < 3000 && irq_line_destroy(line) == -EBUSY; n++)
		usleep(1000);
	devres_release_all(&dev);
	put_device(&dev);
	return 0;
}

static int irq_thread_releases_own_device(void)
{
	return irq_cell(NULL, th_release, true);
}

static int irq_thread_releases_then_exits(void)
{
	return irq_cell(NULL, th_release_exit, true);
}

static int irq_primary_releases_own_device(void)
{
	return irq_cell(primary_release, NULL, true);
}

static int irq_thread_frees_own_handler(void)
{
	int rc = irq_cell(NULL, th_free_own, false);

	return rc ? rc : seen ? 33 : 0;
}

/* ---- work items ---- */

static struct workqueue_struct *wq;
static struct work_struct work;
static int wq_call;

static void work_on_own_queue(struct work_struct *w)
{
	(void)w;
	if (wq_call == 0)
		destroy_workqueue(wq);
	else if (wq_call == 1)
		flush_workqueue(wq);
	else
		drain_workqueue(wq);
	set_ran();
}

static int work_cell(int call)
{
	wq_call = call;
	wq = alloc_workqueue("cb-wq", 0, 1);
	if (!wq)
		return 40;
	INIT_WORK(&work, work_on_own_queue);
	if (!queue_work(wq, &work) || !wait_ran())
		return 41;
	destroy_workqueue(wq);
	put_device(&dev);
	return 0;
}

static int work_destroys_own_queue(void)
{
	return work_cell(0);
}

static int work_flushes_own_queue(void)
{
	return work_cell(1);
}

static int work_drains_own_queue(void)
{
	return work_cell(2);
}

static struct work_struct *heap_work;

static void work_frees_itself(struct work_struct *w)
{
	kfree(w);
	set_ran();
}

static int work_frees_own_memory(void)
{
	heap_work = kzalloc(sizeof(*heap_work), GFP_KERNEL);
	if (!heap_work)
		return 42;
	INIT_WORK(heap_work, work_frees_itself);
	if (!schedule_work(heap_work) || !wait_ran())
		return 43;
	put_device(&dev);
	return 0;
}

/* ---- a driver unregistered from its own device's callbacks ---- */

static struct platform_driver cb_drv;
static int drv_line;
static int drv_mode; /* 0: a managed thread; 1: an interrupt thread */

static int thread_unregisters(void *arg)
{
	(void)arg;
	platform_driver_unregister(&cb_drv);
	set_ran();
	while (!devres_thread_should_stop())
		devres_thread_sleep(10);
	return 0;
}

static irqreturn_t th_unregister(int irq, void *id)
{
	(void)irq;
	(void)id;
	platform_driver_unregister(&cb_drv);
	set_ran();
	return IRQ_HANDLED;
}

static int cb_probe(struct platform_device *pdev)
{
	if (drv_mode == 0) {
		struct devres_thread *t = devm_thread_run(
			&pdev->dev, thread_unregisters, NULL, "cb");

		return IS_ERR(t) ? (int)PTR_ERR(t) : 0;
	}
	return devm_request_threaded_irq(&pdev->dev, (unsigned int)drv_line,
					 NULL, th_unregister, IRQF_ONESHOT,
					 "cb", pdev);
}

static struct platform_driver cb_drv = {
	.probe = cb_probe,
	.driver = { .name = "cb-drv" },
};

/* The driver core writes it atomically; another thread unbinds it. */
static bool bound(struct platform_device *pdev)
{
	return __atomic_load_n(&pdev->dev.driver, __ATOMIC_ACQUIRE) != NULL;
}

static int driver_cell(int mode)
{
	struct platform_device *pdev;

	drv_mode = mode;
	drv_line = irq_line_create("cb-line");
	if (drv_line < 0 || platform_driver_register(&cb_drv))
		return 50;
	pdev = platform_device_register_simple("cb-drv", PLATFORM_DEVID_NONE,
					       NULL, 0);
	/* Its callback may unbind it at once: not looked at here. */
	if (IS_ERR(pdev))
		return 51;
	if (mode == 1 && irq_line_raise(drv_line))
		return 52;
	if (!wait_ran())
		return 53;
	/* Unbound by its own callback, as its thread ends. */
	for (int n = 0; n < 3000 && bound(pdev); n++)
		usleep(1000);
	if (bound(pdev))
		return 54;
	platform_device_unregister(pdev);
	for (int n = 0; n < 3000 && irq_line_destroy(drv_line) == -EBUSY; n++)
		usleep(1000);
	put_device(&dev);
	return 0;
}

static int thread_unregisters_own_driver(void)
{
	return driver_cell(0);
}

static int irq_thread_unregisters_own_driver(void)
{
	return driver_cell(1);
}

struct row {
	const char *name;
	int (*run)(void);
	int warns;
};

static const struct row rows[] = {
	{ "action_unregisters_own_device", action_unregisters_own_device, 1 },
	{ "action_releases_itself", action_releases_itself, 1 },
	{ "action_adds_an_action", action_adds_an_action, 0 },
	{ "revocable_release_accesses_itself",
	  revocable_release_accesses_itself, 0 },
	{ "revocable_release_puts_binding_ref",
	  revocable_release_puts_binding_ref, 1 },
	{ "revoke_inside_own_access", revoke_inside_own_access, 0 },
	{ "irq_thread_releases_own_device", irq_thread_releases_own_device, 0 },
	{ "irq_thread_releases_then_exits", irq_thread_releases_then_exits, 1 },
	{ "irq_primary_releases_own_device", irq_primary_releases_own_device,
	  0 },
	{ "irq_thread_frees_own_handler", irq_thread_frees_own_handler, 1 },
	{ "work_destroys_own_queue", work_destroys_own_queue, 1 },
	{ "work_flushes_own_queue", work_flushes_own_queue, 1 },
	{ "work_drains_own_queue", work_drains_own_queue, 1 },
	{ "work_frees_own_memory", work_frees_own_memory, 0 },
	{ "thread_unregisters_own_driver", thread_unregisters_own_driver, 1 },
	{ "irq_thread_unregisters_own_driver",
	  irq_thread_unregisters_own_driver, 0 },
};

#define NR_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static const char *const cols[] = { "once" };

/* Waits up to 3 s for the threads the callbacks ran in to leave. */
static bool ledger_back(const struct devres_ledger *a)
{
	struct devres_ledger b;

	for (int n = 0; n < 3000; n++) {
		devres_ledger_snapshot(&b);
		if (devres_ledger_diff(a, &b, NULL) == 0)
			return true;
		usleep(1000);
	}
	devres_ledger_diff(a, &b, stderr);
	return false;
}

static int one_cell(int row, int col)
{
	struct devres_ledger start;
	int w0, rc;

	(void)col;
	alarm(CELL_ALARM_S);
	/* The compat layer's heap device, made at its first use, stays. */
	kfree(kmalloc(8, GFP_KERNEL));
	devres_ledger_snapshot(&start);
	w0 = devres_warn_count();
	device_initialize(&dev);
	dev.release = dev_release;
	if (dev_set_name(&dev, "cb-dev"))
		return 2;
	rc = rows[row].run();
	if (rc)
		return rc;
	if (!ledger_back(&start))
		return 3;
	if (devres_warn_count() - w0 != rows[row].warns) {
		fprintf(stderr, "%d WARNs, not %d\n", devres_warn_count() - w0,
			rows[row].warns);
		return 4;
	}
	return 0;
}

static void callbacks_reenter(void **state)
{
	const char *names[NR_ROWS];

	(void)state;
	for (int i = 0; i < NR_ROWS; i++)
		names[i] = rows[i].name;
	run_cells_in_children(one_cell, names, NR_ROWS, cols, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(callbacks_reenter),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 0);
	return cmocka_run_group_tests_name("hostile-callbacks-reenter", tests,
					   NULL, NULL);
}
