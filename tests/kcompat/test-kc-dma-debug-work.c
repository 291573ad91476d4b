// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The DMA debug check of mappings still live at unbind against a work
 * item's thread that maps and unmaps all the while, the driver's probe
 * acquiring in each of the 24 orders: a managed work (devm_work_autocancel())
 * that re-queues itself, each run a dma_map_single() and its unmap, the
 * probe waiting for its first run; a managed pool; a managed coherent
 * buffer; a mapping undone by an action added after it. The work's first
 * mapping may be the device's first (the check's bookkeeping then begins
 * in the work's thread, newer or older than the work's cancel), and the
 * work maps on while the unbind releases. No order gives a report, and
 * nothing stays behind; a mapping the work leaves live is reported once.
 */
#define _GNU_SOURCE
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/workqueue.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include "kcompat/kctest.h"

#define NSTEPS 4

static const struct bus_type dbus = { .name = "dma-work" };

struct kdw {
	struct device *dev;
	struct work_struct work;
	struct completion first;
	char buf[64];
	int runs;
	bool leave_one; /* the first run leaves its mapping live */
	dma_addr_t left;
};

static int perm[NSTEPS] = { 0, 1, 2, 3 };
static char buf_after[64];
static dma_addr_t h_after;
static bool leave_one;
static dma_addr_t left_h; /* what the work left, read after the unbind */

static void map_fn(struct work_struct *work)
{
	struct kdw *k = container_of(work, struct kdw, work);
	dma_addr_t h =
		dma_map_single(k->dev, k->buf, sizeof(k->buf), DMA_TO_DEVICE);
	int runs;

	if (!dma_mapping_error(k->dev, h)) {
		if (k->leave_one && !k->left) {
			k->left = h;
			__atomic_store_n(&left_h, h, __ATOMIC_SEQ_CST);
		} else
			dma_unmap_single(k->dev, h, sizeof(k->buf),
					 DMA_TO_DEVICE);
	}
	runs = __atomic_add_fetch(&k->runs, 1, __ATOMIC_SEQ_CST);
	if (runs == 1)
		complete(&k->first);
	schedule_work(work);
}

static void unmap_after(void *arg)
{
	dma_unmap_single(arg, h_after, sizeof(buf_after), DMA_FROM_DEVICE);
}

static int step(struct device *dev, struct kdw *k, int s)
{
	dma_addr_t h;

	switch (s) {
	case 0: {
		int ret = devm_work_autocancel(dev, &k->work, map_fn);

		if (ret)
			return ret;
		schedule_work(&k->work);
		wait_for_completion(&k->first);
		return 0;
	}
	case 1: {
		struct dma_pool *pool = dmam_pool_create("kdw", dev, 64, 8, 0);
		void *p = pool ? dma_pool_alloc(pool, GFP_KERNEL, &h) : NULL;

		if (!p)
			return -ENOMEM;
		dma_pool_free(pool, p, h);
		return 0;
	}
	case 2:
		return dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL) ? 0
								      : -ENOMEM;
	default:
		h_after = dma_map_single(dev, buf_after, sizeof(buf_after),
					 DMA_FROM_DEVICE);
		if (dma_mapping_error(dev, h_after))
			return -ENOMEM;
		return devm_add_action_or_reset(dev, unmap_after, dev);
	}
}

static int kdw_probe(struct device *dev)
{
	struct kdw *k = devm_kzalloc(dev, sizeof(*k), GFP_KERNEL);

	if (!k)
		return -ENOMEM;
	k->dev = dev;
	k->leave_one = leave_one;
	init_completion(&k->first);
	for (int i = 0; i < NSTEPS; i++) {
		int ret = step(dev, k, perm[i]);

		if (ret)
			return ret;
	}
	return 0;
}

static struct device_driver kdw_drv = {
	.name = "kdw",
	.bus = &dbus,
	.probe = kdw_probe,
};

static void every_order_no_report(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;
	int orders = 0;

	(void)state;
	devres_set_dma_debug(true);
	devres_ledger_snapshot(&before);
	dev = heap_dev(&dbus, "kdw0");
	assert_int_equal(device_add(dev), 0);
	assert_int_equal(driver_register(&kdw_drv), 0);
	device_release_driver(dev);
	for (int i = 0; i < NSTEPS; i++)
		perm[i] = i;
	do {
		start_capture();
		assert_int_equal(device_driver_attach(&kdw_drv, dev), 0);
		device_release_driver(dev);
		if (devres_warn_count() != cap.n || cap.n)
			print_error("order %d %d %d %d\n", perm[0], perm[1],
				    perm[2], perm[3]);
		expect_no_warn();
		/*
		 * A mapping the work made while the unbind released, before
		 * its cancel, answers to the device's own check (its DMA
		 * state goes at device_del()): the ledger below, not here.
		 */
		orders++;
	} while (kc_next_order(perm, NSTEPS));
	assert_int_equal(orders, 24);
	driver_unregister(&kdw_drv);
	device_del(dev);
	put_device(dev);
	devres_set_dma_debug(false);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* The work's first run leaves its mapping live: one report, in each order. */
static void left_by_the_work_reported_once(void **state)
{
	struct device *dev;

	(void)state;
	devres_set_dma_debug(true);
	dev = heap_dev(&dbus, "kdw1");
	assert_int_equal(device_add(dev), 0);
	assert_int_equal(driver_register(&kdw_drv), 0);
	device_release_driver(dev);
	leave_one = true;
	for (int i = 0; i < NSTEPS; i++)
		perm[i] = i;
	do {
		start_capture();
		assert_int_equal(device_driver_attach(&kdw_drv, dev), 0);
		device_release_driver(dev);
		expect_warn_on("kdw1", "dma-debug",
			       "1 DMA mapping(s) still live at unbind");
		dma_unmap_single(dev,
				 __atomic_load_n(&left_h, __ATOMIC_SEQ_CST),
				 sizeof(((struct kdw *)0)->buf), DMA_TO_DEVICE);
	} while (kc_next_order(perm, NSTEPS));
	leave_one = false;
	driver_unregister(&kdw_drv);
	device_del(dev);
	put_device(dev);
	devres_set_dma_debug(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_order_no_report),
		cmocka_unit_test(left_by_the_work_reported_once),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &dbus);
}
