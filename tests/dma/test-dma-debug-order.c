// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The DMA debug check of mappings still live runs once every resource of
 * the binding (or of the device) is released, whatever order the driver
 * acquired them in: a managed pool, a managed coherent buffer, a streaming
 * mapping undone by an action added before it, and one undone by an
 * action added after it, in all 24 orders, bound and unbound, give no
 * report; a mapping really left live still gives exactly one.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

#define NSTEPS 4

static const struct bus_type dbus = { .name = "dma-order" };

static int perm[NSTEPS];
static bool leak;
static char buf_before[64], buf_after[64], buf_leak[32];
static dma_addr_t h_before, h_after, h_leak;
static bool mapped_before;

static void unmap_before(void *arg)
{
	struct device *dev = arg;

	if (mapped_before)
		dma_unmap_single(dev, h_before, sizeof(buf_before),
				 DMA_TO_DEVICE);
	mapped_before = false;
}

static void unmap_after(void *arg)
{
	dma_unmap_single(arg, h_after, sizeof(buf_after), DMA_FROM_DEVICE);
}

static int step(struct device *dev, int k)
{
	struct dma_pool *pool;
	dma_addr_t h;

	switch (k) {
	case 0: { /* a managed pool: its chunk stays mapped until it goes */
		void *p;

		pool = dmam_pool_create("order", dev, 64, 8, 0);
		p = pool ? dma_pool_alloc(pool, GFP_KERNEL, &h) : NULL;
		if (!p)
			return -ENOMEM;
		dma_pool_free(pool, p, h);
		return 0;
	}
	case 1: /* a managed coherent buffer */
		return dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL) ? 0
								      : -ENOMEM;
	case 2: /* the action that unmaps comes first, then the mapping */
		if (devm_add_action(dev, unmap_before, dev))
			return -ENOMEM;
		h_before = dma_map_single(dev, buf_before, sizeof(buf_before),
					  DMA_TO_DEVICE);
		if (dma_mapping_error(dev, h_before))
			return -ENOMEM;
		mapped_before = true;
		return 0;
	default: /* the mapping first, then the action that unmaps it */
		h_after = dma_map_single(dev, buf_after, sizeof(buf_after),
					 DMA_FROM_DEVICE);
		if (dma_mapping_error(dev, h_after))
			return -ENOMEM;
		return devm_add_action_or_reset(dev, unmap_after, dev);
	}
}

static int acquire(struct device *dev)
{
	for (int i = 0; i < NSTEPS; i++) {
		int ret = step(dev, perm[i]);

		if (ret)
			return ret;
		if (leak && i == 1) {
			h_leak = dma_map_single(dev, buf_leak, sizeof(buf_leak),
						DMA_TO_DEVICE);
			if (dma_mapping_error(dev, h_leak))
				return -ENOMEM;
		}
	}
	return 0;
}

static int order_probe(struct device *dev)
{
	return acquire(dev);
}

static struct device_driver order_drv = {
	.name = "order",
	.bus = &dbus,
	.probe = order_probe,
};

/* Calls @fn with every permutation of the steps in perm[]. */
static void permute(int k, void (*fn)(void *), void *arg)
{
	if (k == NSTEPS) {
		fn(arg);
		return;
	}
	for (int i = k; i < NSTEPS; i++) {
		int t = perm[k];

		perm[k] = perm[i];
		perm[i] = t;
		permute(k + 1, fn, arg);
		perm[i] = perm[k];
		perm[k] = t;
	}
}

static void reset_perm(void)
{
	for (int i = 0; i < NSTEPS; i++)
		perm[i] = i;
}

static void describe(void)
{
	fprintf(stderr, "order:");
	for (int i = 0; i < NSTEPS; i++)
		fprintf(stderr, " %d", perm[i]);
	fprintf(stderr, "\n");
}

static void bind_unbind(void *arg)
{
	struct device *dev = arg;

	start_capture();
	assert_int_equal(device_driver_attach(&order_drv, dev), 0);
	device_release_driver(dev);
	if (devres_warn_count() != 0)
		describe();
	expect_no_warn();
	assert_false(mapped_before);
	assert_null(dev->dma_state);
}

static void unbound_release(void *arg)
{
	struct device *dev = arg;

	start_capture();
	assert_int_equal(acquire(dev), 0);
	assert_true(devres_release_all(dev) > 0);
	if (devres_warn_count() != 0)
		describe();
	expect_no_warn();
	assert_false(mapped_before);
}

static void every_order_no_report(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;

	(void)state;
	devres_set_dma_debug(true);
	devres_ledger_snapshot(&before);
	dev = heap_dev(&dbus, "order0");
	assert_int_equal(device_add(dev), 0);
	assert_int_equal(driver_register(&order_drv), 0);
	device_release_driver(dev);
	reset_perm();
	permute(0, bind_unbind, dev);
	reset_perm();
	permute(0, unbound_release, dev);
	driver_unregister(&order_drv);
	device_del(dev);
	put_device(dev);
	devres_set_dma_debug(false);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* A real leak in the middle of any order: one report, of that mapping. */
static void leak_reported_once(void *arg)
{
	struct device *dev = arg;

	start_capture();
	assert_int_equal(device_driver_attach(&order_drv, dev), 0);
	device_release_driver(dev);
	expect_warn_on("order1", "dma-debug",
		       "1 DMA mapping(s) still live at unbind (lowest: "
		       "dma_map_single, 32 bytes at");
	dma_unmap_single(dev, h_leak, sizeof(buf_leak), DMA_TO_DEVICE);
}

static void leak_still_reported(void **state)
{
	struct device *dev;

	(void)state;
	devres_set_dma_debug(true);
	dev = heap_dev(&dbus, "order1");
	assert_int_equal(device_add(dev), 0);
	leak = true;
	start_capture();
	assert_int_equal(driver_register(&order_drv), 0);
	/* Bound at registration: take that binding's leak back first. */
	device_release_driver(dev);
	expect_warn_on("order1", "dma-debug", "1 DMA mapping(s) still live");
	dma_unmap_single(dev, h_leak, sizeof(buf_leak), DMA_TO_DEVICE);
	reset_perm();
	permute(0, leak_reported_once, dev);
	leak = false;
	driver_unregister(&order_drv);
	device_del(dev);
	put_device(dev);
	devres_set_dma_debug(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_order_no_report),
		cmocka_unit_test(leak_still_reported),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &dbus);
}
