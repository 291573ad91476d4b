// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=180 */
/*
 * fork() from inside every callback the library runs, in a parent with
 * another thread at work on a device of its own: a bus's match, a
 * driver's probe and remove (plain, platform, PCI on a fake tree), a
 * devm action run at unbind and by devres_release_all(), the function of
 * bus_for_each_dev(), a revocable's release, a device's DMA ops (map and
 * unmap), an interrupt's primary handler (on the dispatcher) and its
 * thread function, and the log sink. Each child, under an alarm, uses
 * the library with devices of its own (one managed allocation and its
 * release, a platform driver bound to a platform device) and must exit
 * 0; the parent's callback then returns and the parent must finish what
 * it was doing (the bind, the unbind, the release, the mapping, the
 * interrupt), with no WARN and the ledger back at its baseline.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <devres/platform.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "base/fork-park.h"
#include "pci/fake-fn.h"

#define CHILD_ALARM_S 10

/* ---- The child ---- */

static void child_dev_release(struct device *dev)
{
	(void)dev;
}

static int child_probe(struct platform_device *pdev)
{
	return devm_kmalloc(&pdev->dev, 16, 0) ? 0 : -ENOMEM;
}

static struct platform_driver child_drv = {
	.probe = child_probe,
	.driver = { .name = "fork-child" },
};

/* What a child does with devices of its own; 0 when all of it worked. */
static int child_body(void)
{
	struct platform_device *pdev;
	struct device dev;
	int w0 = devres_warn_count();

	alarm(CHILD_ALARM_S);
	memset(&dev, 0, sizeof(dev));
	device_initialize(&dev);
	if (dev_set_name(&dev, "child-dev"))
		return 2;
	dev.release = child_dev_release;
	if (!devm_kmalloc(&dev, 32, 0))
		return 3;
	if (devres_release_all(&dev) != 1)
		return 4;
	put_device(&dev);
	if (platform_driver_register(&child_drv))
		return 5;
	pdev = platform_device_register_simple("fork-child",
					       PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(pdev))
		return 6;
	if (!pdev->dev.driver)
		return 7;
	platform_device_unregister(pdev);
	platform_driver_unregister(&child_drv);
	return devres_warn_count() == w0 ? 0 : 8;
}

/* ---- The parent's other thread ---- */

/*
 * Its device is made before the fixture's ledger snapshot and put after
 * the fixture's check; the thread gives back all it holds before that.
 */
static struct device busy_dev;
static int busy_stop;

static void *busy(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&busy_stop, __ATOMIC_ACQUIRE)) {
		void *p;

		fork_park_point();
		p = devm_kmalloc(&busy_dev, 32, 0);
		devm_kfree(&busy_dev, p);
	}
	devres_release_all(&busy_dev);
	return NULL;
}

#define MAX_CELLS 16

static struct {
	const char *where;
	int status;
} cells[MAX_CELLS];
static int ncells;

static pthread_t busy_thread;

static int busy_setup(void **state)
{
	ncells = 0;
	memset(&busy_dev, 0, sizeof(busy_dev));
	device_initialize(&busy_dev);
	busy_dev.release = child_dev_release;
	if (two_dev_setup(state))
		return -1;
	__atomic_store_n(&busy_stop, 0, __ATOMIC_RELEASE);
	return pthread_create(&busy_thread, NULL, busy, NULL) ? -1 : 0;
}

static int busy_teardown(void **state)
{
	int ret;

	__atomic_store_n(&busy_stop, 1, __ATOMIC_RELEASE);
	pthread_join(busy_thread, NULL);
	ret = dev_teardown(state);
	put_device(&busy_dev);
	return ret;
}

/* Called by a callback: forks, waits for the child, records its status. */
static void fork_here(const char *where)
{
	pid_t pid;
	int st = -1;

	fork_park_all(1);
	pid = fork();
	if (pid == 0)
		_exit(child_body());
	if (FORK_PARK)
		__atomic_store_n(&fork_park_asked, 0, __ATOMIC_RELEASE);
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	if (ncells < MAX_CELLS) {
		cells[ncells].where = where;
		cells[ncells].status = st;
		ncells++;
	}
}

/* Every child exited 0, and @n cells ran. */
static void expect_cells(int n)
{
	for (int i = 0; i < ncells; i++) {
		int st = cells[i].status;

		print_message("fork from %-28s child %s %d\n", cells[i].where,
			      WIFEXITED(st) ? "exit" : "signal",
			      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(ncells, n);
	ncells = 0;
}

/* The driver model: match, probe, walk, remove, actions. */
static bool fork_in_match, fork_in_probe, fork_in_remove;
static int probes, removes;

static int fk_match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	if (fork_in_match) {
		fork_in_match = false;
		fork_here("a bus's match");
	}
	return 1;
}

static const struct bus_type fk_bus = { .name = "fork-bus", .match = fk_match };

static int fk_probe(struct device *dev)
{
	if (fork_in_probe) {
		fork_in_probe = false;
		fork_here("a driver's probe");
	}
	probes++;
	return devm_kmalloc(dev, 8, 0) ? 0 : -ENOMEM;
}

static void fk_remove(struct device *dev)
{
	(void)dev;
	if (fork_in_remove) {
		fork_in_remove = false;
		fork_here("a driver's remove");
	}
	removes++;
}

static struct device_driver fk_drv = {
	.name = "fork-drv",
	.bus = &fk_bus,
	.probe = fk_probe,
	.remove = fk_remove,
};

static int actions_run;

static void fork_action(void *where)
{
	fork_here(where);
	actions_run++;
}

static int fork_each(struct device *dev, void *data)
{
	(void)dev;
	(void)data;
	fork_here("bus_for_each_dev()'s function");
	return 1;
}

static void driver_model(void **state)
{
	struct device *dev;

	(void)state;
	probes = removes = actions_run = 0;
	assert_int_equal(t_bus_register(&fk_bus), 0);
	assert_int_equal(t_driver_register(&fk_drv), 0);
	dev = heap_dev(&fk_bus, "fork-dev");
	fork_in_match = fork_in_probe = true;
	assert_int_equal(t_device_add(dev), 0);
	assert_ptr_equal(dev->driver, &fk_drv);
	assert_int_equal(probes, 1);
	assert_int_equal(devm_add_action(dev, fork_action,
					 "a devm action at unbind"),
			 0);
	assert_int_equal(bus_for_each_dev(&fk_bus, NULL, NULL, fork_each), 1);
	fork_in_remove = true;
	device_release_driver(dev);
	assert_null(dev->driver);
	assert_int_equal(removes, 1);
	assert_int_equal(actions_run, 1);
	assert_int_equal(devm_add_action(dev, fork_action,
					 "a devm action at release_all"),
			 0);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(actions_run, 2);
	t_device_del(dev);
	put_device(dev);
	t_driver_unregister(&fk_drv);
	t_bus_unregister(&fk_bus);
	expect_cells(6);
}

/* Platform devices and drivers. */
static int fk_pprobe(struct platform_device *pdev)
{
	(void)pdev;
	fork_here("a platform driver's probe");
	return 0;
}

static void fk_premove(struct platform_device *pdev)
{
	(void)pdev;
	fork_here("a platform driver's remove");
}

static struct platform_driver fk_pdrv = {
	.probe = fk_pprobe,
	.remove = fk_premove,
	.driver = { .name = "fork-plat" },
};

static void platform(void **state)
{
	struct platform_device *pdev;

	(void)state;
	assert_int_equal(platform_driver_register(&fk_pdrv), 0);
	pdev = platform_device_register_simple("fork-plat", PLATFORM_DEVID_NONE,
					       NULL, 0);
	assert_false(IS_ERR(pdev));
	assert_non_null(pdev->dev.driver);
	platform_device_unregister(pdev);
	platform_driver_unregister(&fk_pdrv);
	expect_cells(2);
}

/* A revocable's release, run by its device's release. */
static int revoked;

static void fork_release(void *res)
{
	(void)res;
	fork_here("a revocable's release");
	revoked++;
}

static void revocable(void **state)
{
	static int res;

	(void)state;
	revoked = 0;
	assert_non_null(devm_revocable_create(&tdev, &res, fork_release));
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(revoked, 1);
	expect_cells(1);
}

/* DMA ops: they run under the device's DMA lock. */
static int fk_map(struct device *dev, void *cpu, size_t size, size_t align,
		  uint64_t mask, dma_addr_t *ret_handle)
{
	(void)dev;
	(void)cpu;
	(void)size;
	(void)align;
	(void)mask;
	fork_here("DMA ops' map");
	*ret_handle = 0x10000;
	return 0;
}

static void fk_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		     size_t size)
{
	(void)dev;
	(void)handle;
	(void)cpu;
	(void)size;
	fork_here("DMA ops' unmap");
}

static const struct devres_dma_ops fk_ops = {
	.name = "fork-ops",
	.map = fk_map,
	.unmap = fk_unmap,
};

/*
 * The ops hold the DMA states' read lock, which the fork handlers take
 * after eight others: each fork WARNs that it may wait for ever (a thread
 * holding one of those while it waits for the states' write lock would
 * make it). ThreadSanitizer reports the inversion itself: not run there.
 */
static void dma_ops(void **state)
{
	static char buf[64];
	int w0 = devres_warn_count();
	dma_addr_t h;

	(void)state;
#ifdef T_TSAN
	skip();
#endif
	start_capture();
	set_dma_ops(&tdev, &fk_ops);
	h = dma_map_single(&tdev, buf, sizeof(buf), DMA_TO_DEVICE);
	/* The ops' handle, plus the buffer's offset in its page. */
	assert_int_equal(h & ~(dma_addr_t)0xfff, 0x10000);
	dma_unmap_single(&tdev, h, sizeof(buf), DMA_TO_DEVICE);
	set_dma_ops(&tdev, NULL);
	expect_cells(2);
	assert_int_equal(devres_warn_count() - w0, 2);
	assert_int_equal(count_prefix("WARNING: test-dev: fork: called from "
				      "the DMA ops of test-dev, which hold "
				      "the DMA states' lock"),
			 2);
}

/* An interrupt's handler, on the dispatcher, and its thread function. */
static int handled, threaded;

static irqreturn_t fk_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	fork_here("an interrupt handler");
	handled++;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t fk_thread_fn(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	fork_here("an interrupt thread function");
	__atomic_add_fetch(&threaded, 1, __ATOMIC_RELEASE);
	return IRQ_HANDLED;
}

static void interrupt(void **state)
{
	int irq = irq_line_create("fork-line");

	(void)state;
	handled = threaded = 0;
	assert_true(irq > 0);
	assert_int_equal(request_threaded_irq((unsigned int)irq, fk_handler,
					      fk_thread_fn, IRQF_ONESHOT,
					      "fork", &tdev),
			 0);
	assert_int_equal(irq_line_raise_wait(irq), 0);
	/* The thread function ran before the line's unmask. */
	synchronize_irq((unsigned int)irq);
	assert_int_equal(handled, 1);
	assert_int_equal(__atomic_load_n(&threaded, __ATOMIC_ACQUIRE), 1);
	free_irq((unsigned int)irq, &tdev);
	assert_int_equal(irq_line_destroy(irq), 0);
	expect_cells(2);
}

/* A PCI driver's probe and remove, on a fake tree. */
static int fk_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	fork_here("a PCI driver's probe");
	return pcim_enable_device(pdev);
}

static void fk_pci_remove(struct pci_dev *pdev)
{
	(void)pdev;
	fork_here("a PCI driver's remove");
}

static const struct pci_device_id fk_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1000) },
	{ 0 },
};

static struct pci_driver fk_pci_drv = {
	.name = "fork-pci",
	.id_table = fk_ids,
	.probe = fk_pci_probe,
	.remove = fk_pci_remove,
};

static void pci(void **state)
{
	struct pci_fake_dev d = fake_fn_nic("0000:00:01.0");
	struct pci_fake *ft = fake_fn_tree(&d);

	(void)state;
	assert_non_null(ft);
	assert_int_equal(pci_register_driver(&fk_pci_drv), 0);
	pci_unregister_driver(&fk_pci_drv);
	assert_int_equal(fake_fn_tree_remove(ft), 0);
	expect_cells(2);
}

/* The log sink, given a WARN. */
static int sink_lines;

static void fork_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
	if (sink_lines++ == 0)
		fork_here("the log sink");
}

static void log_sink(void **state)
{
	int x = 0, w0 = devres_warn_count();

	(void)state;
	sink_lines = 0;
	devres_set_log_sink(fork_sink, NULL);
	devm_kfree(&tdev, &x);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_warn_count() - w0, 1);
	assert_int_equal(sink_lines, 1);
	expect_cells(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(driver_model, busy_setup,
						busy_teardown),
		cmocka_unit_test_setup_teardown(platform, busy_setup,
						busy_teardown),
		cmocka_unit_test_setup_teardown(revocable, busy_setup,
						busy_teardown),
		cmocka_unit_test_setup_teardown(dma_ops, busy_setup,
						busy_teardown),
		cmocka_unit_test_setup_teardown(interrupt, busy_setup,
						busy_teardown),
		cmocka_unit_test_setup_teardown(pci, busy_setup, busy_teardown),
		cmocka_unit_test_setup_teardown(log_sink, busy_setup,
						busy_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
