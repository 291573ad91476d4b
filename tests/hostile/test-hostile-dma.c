// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * DMA debug bookkeeping against the driver's own groups. The first mapping
 * of a binding (or of an unbound device) adds the node whose release runs
 * the "mappings still live" check; made while the driver has a group open,
 * it must not be that group's: releasing the group would run the check
 * early (a false report while still bound) and spend it (no report at the
 * real unbind). Every kind of first mapping (single, page, coherent, pool)
 * is tried inside an open group and inside a closed one, bound and unbound.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include "testlib.h"

static const struct bus_type hbus = { .name = "hostile-dma" };

enum first_map {
	M_SINGLE,
	M_PAGE,
	M_COHERENT,
	M_POOL,
	M_NR
};

static char buf[64] __attribute__((aligned(64)));
static _Alignas(4096) char page[4096];
static dma_addr_t leaked;
static void *leaked_cpu;
static struct dma_pool *leaked_pool;
static enum first_map how;
static bool close_it;
static void *group;

/* The first mapping, made in a group of the driver's, and left live. */
static int map_in_group(struct device *dev)
{
	struct dma_pool *pool;
	dma_addr_t h;

	group = devres_open_group(dev, NULL, GFP_KERNEL);
	if (!group)
		return -ENOMEM;
	switch (how) {
	case M_SINGLE:
		h = dma_map_single(dev, buf, sizeof(buf), DMA_TO_DEVICE);
		break;
	case M_PAGE:
		h = dma_map_page(dev, (struct page *)page, 0, sizeof(page),
				 DMA_FROM_DEVICE);
		break;
	case M_COHERENT:
		/* Unmanaged, so that the group's release does not free it. */
		leaked_cpu = dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL);
		if (!leaked_cpu)
			return -ENOMEM;
		break;
	default:
		pool = dma_pool_create("leaky", dev, 64, 8, 0);
		leaked_pool = pool;
		if (!pool ||
		    !(leaked_cpu = dma_pool_alloc(pool, GFP_KERNEL, &h)))
			return -ENOMEM;
		break;
	}
	if (dma_mapping_error(dev, h))
		return -ENOMEM;
	leaked = h;
	if (close_it)
		devres_close_group(dev, group);
	return 0;
}

static int probe(struct device *dev)
{
	return map_in_group(dev);
}

static struct device_driver hdrv = {
	.name = "hostile-dma",
	.bus = &hbus,
	.probe = probe,
};

/* Undoes the mapping left live, once it has been reported. */
static void unleak(struct device *dev)
{
	switch (how) {
	case M_SINGLE:
		dma_unmap_single(dev, leaked, sizeof(buf), DMA_TO_DEVICE);
		break;
	case M_PAGE:
		dma_unmap_page(dev, leaked, sizeof(page), DMA_FROM_DEVICE);
		break;
	case M_COHERENT:
		dma_free_coherent(dev, 4096, leaked_cpu, leaked);
		break;
	default:
		dma_pool_free(leaked_pool, leaked_cpu, leaked);
		dma_pool_destroy(leaked_pool);
		break;
	}
}

static int live_warns(void)
{
	return count_prefix("WARNING: dev-dma: dma-debug:");
}

static void one_round(bool bound)
{
	struct device *dev = heap_dev(bound ? &hbus : NULL, "dev-dma");

	assert_non_null(dev);
	start_capture();
	if (bound) {
		assert_int_equal(t_device_add(dev), 0);
		assert_true(device_is_bound(dev));
	} else {
		assert_int_equal(map_in_group(dev), 0);
	}
	/* The driver gives its group back while it keeps going. */
	devres_release_group(dev, group);
	assert_int_equal(live_warns(), 0);
	/* The real end: the unbind, or the release of the device's own. */
	if (bound)
		device_release_driver(dev);
	else
		devres_release_all(dev);
	/* The mapping left live is reported once, there. */
	if (live_warns() != 1)
		print_error("first map %d, %s group, %s: %d reports\n", how,
			    close_it ? "closed" : "open",
			    bound ? "bound" : "unbound", live_warns());
	assert_int_equal(live_warns(), 1);
	devres_set_log_sink(NULL, NULL);
	unleak(dev);
	if (bound)
		t_device_del(dev);
	put_device(dev);
}

static void test_sentinel_outside_groups(void **state)
{
	(void)state;
	devres_set_dma_debug(true);
	assert_int_equal(t_driver_register(&hdrv), 0);
	for (how = 0; how < M_NR; how++) {
		for (int c = 0; c < 2; c++) {
			close_it = c;
			one_round(true);
			one_round(false);
		}
	}
	t_driver_unregister(&hdrv);
	devres_set_dma_debug(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sentinel_outside_groups),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &hbus);
}
