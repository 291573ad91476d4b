// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Streaming mappings and the debug checks (CONFIG_DMA_API_DEBUG's): handles
 * keep the buffer's offset in its page and differ from the pointer, the
 * streaming mask is honoured, unmaps of handles never mapped, wrong size,
 * direction or kind, syncs outside a mapping, and mappings still live at
 * unbind, at probe failure and at device_del; DEVRES_DMA_DEBUG at start.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include "testlib.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))

static long dma_maps(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.dma_maps - ledger_base.dma_maps;
}

static void test_map_single(void **state)
{
	struct device *dev = *state;
	char *buf = malloc(3 * PAGE);
	dma_addr_t h, h2, hp;

	assert_non_null(buf);
	h = dma_map_single(dev, buf + 100, 2 * PAGE, DMA_TO_DEVICE);
	assert_int_equal(dma_mapping_error(dev, h), 0);
	assert_true(h != (uintptr_t)(buf + 100));
	assert_int_equal(h % PAGE, (uintptr_t)(buf + 100) % PAGE);
	assert_true(h + 2 * PAGE - 1 <= DMA_BIT_MASK(32));
	assert_ptr_equal(dma_iova_to_virt(dev, h, 2 * PAGE), buf + 100);
	assert_null(dma_iova_to_virt(dev, h, 2 * PAGE + 1));
	assert_null(dma_iova_to_virt(dev, h - 1, 1));
	/* The same buffer twice: two mappings, two handles. */
	h2 = dma_map_single(dev, buf + 100, 10, DMA_FROM_DEVICE);
	assert_int_equal(dma_mapping_error(dev, h2), 0);
	assert_true(h2 != h);
	hp = dma_map_page(dev, (struct page *)buf, 5, 7, DMA_BIDIRECTIONAL);
	assert_int_equal(dma_mapping_error(dev, hp), 0);
	assert_ptr_equal(dma_iova_to_virt(dev, hp, 7), buf + 5);
	assert_int_equal(dma_maps(), 3);
	start_capture();
	dma_unmap_single(dev, h2, 10, DMA_FROM_DEVICE);
	dma_unmap_page(dev, hp, 7, DMA_BIDIRECTIONAL);
	dma_unmap_single(dev, h, 2 * PAGE, DMA_TO_DEVICE);
	expect_no_warn();
	assert_int_equal(dma_maps(), 0);
	assert_null(dma_iova_to_virt(dev, h, 1));
	free(buf);
}

static void test_streaming_mask(void **state)
{
	struct device *dev = *state;
	uint64_t mask = DMA_BIT_MASK(18), own;
	/* Aligned: on a page boundary it would take two IOVA pages a map. */
	_Alignas(64) char buf[64];
	dma_addr_t h[64];
	int n = 0;

	dev->dma_mask = &own;
	assert_int_equal(dma_set_mask(dev, mask), 0);
	/* Page-sized IOVA slots below 256 KiB, above 64 KiB: 48. */
	for (n = 0; n < 64; n++) {
		h[n] = dma_map_single(dev, buf, sizeof(buf), DMA_TO_DEVICE);
		if (dma_mapping_error(dev, h[n]))
			break;
		assert_true(h[n] + sizeof(buf) - 1 <= mask);
	}
	assert_int_equal(n, (int)((mask + 1 - 0x10000) / PAGE));
	assert_int_equal(h[n], DMA_MAPPING_ERROR);
	assert_int_equal(dma_mapping_error(dev, h[n]), -ENOMEM);
	while (n--)
		dma_unmap_single(dev, h[n], sizeof(buf), DMA_TO_DEVICE);
	dev->dma_mask = NULL;
}

static void test_bad_maps(void **state)
{
	struct device *dev = *state;
	char buf[16];

	start_capture();
	assert_int_equal(dma_map_single(dev, buf, 16, DMA_NONE),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_single", "invalid direction 3");
	start_capture();
	assert_int_equal(dma_map_single(dev, buf, 16,
					(enum dma_data_direction)7),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_single", "invalid direction 7");
	start_capture();
	assert_int_equal(dma_map_page(dev, (struct page *)buf, 0, 0,
				      DMA_TO_DEVICE),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_page", "size 0");
	start_capture();
	assert_int_equal(dma_map_single(dev, NULL, 16, DMA_TO_DEVICE),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_single", "NULL buffer");
	start_capture();
	assert_int_equal(dma_map_page(dev, NULL, 4096, 16, DMA_TO_DEVICE),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_page", "NULL page");
	start_capture();
	assert_int_equal(dma_map_single(NULL, buf, 16, DMA_TO_DEVICE),
			 DMA_MAPPING_ERROR);
	expect_warn_on("(no device)", "dma_map_single", "NULL device");
	/* A range that wraps around the address space. */
	start_capture();
	assert_int_equal(dma_map_single(dev, (void *)(UINTPTR_MAX - 8191),
					16384, DMA_TO_DEVICE),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_single", "is outside user space");
	/* The last page is where ERR_PTR()s point: no buffer is there. */
	start_capture();
	assert_int_equal(dma_map_single(dev, (void *)(UINTPTR_MAX - 8), 16,
					DMA_TO_DEVICE),
			 DMA_MAPPING_ERROR);
	expect_warn("dma_map_single", "buffer is ERR_PTR(-9)");
	assert_int_equal(dma_maps(), 0);
}

static void test_bogus_unmaps(void **state)
{
	struct device *dev = *state;
	char buf[64];
	dma_addr_t h;

	/* No state yet at all. */
	start_capture();
	dma_unmap_single(dev, 0x12345000, 64, DMA_TO_DEVICE);
	expect_warn("dma_unmap_single", "handle 0x12345000 was never mapped");
	h = dma_map_single(dev, buf, sizeof(buf), DMA_TO_DEVICE);
	start_capture();
	dma_unmap_single(dev, h + 1, 63, DMA_TO_DEVICE);
	expect_warn("dma_unmap_single", "was never mapped");
	start_capture();
	dma_unmap_page(dev, DMA_MAPPING_ERROR, 64, DMA_TO_DEVICE);
	expect_warn("dma_unmap_page", "was never mapped");
	/* Without debug mode, size and direction are not checked. */
	start_capture();
	dma_unmap_single(dev, h, 1, DMA_FROM_DEVICE);
	expect_no_warn();
	assert_int_equal(dma_maps(), 0);
	start_capture();
	dma_unmap_single(dev, h, 64, DMA_TO_DEVICE);
	expect_warn("dma_unmap_single", "was never mapped");
}

static void test_debug_checks(void **state)
{
	struct device *dev = *state;
	char buf[256];
	dma_addr_t h;

	devres_set_dma_debug(true);
	h = dma_map_single(dev, buf, 100, DMA_TO_DEVICE);
	start_capture();
	dma_unmap_single(dev, h, 99, DMA_TO_DEVICE);
	expect_warn("dma_unmap_single", "unmapped with size 99, mapped with "
					"100");
	assert_int_equal(dma_maps(), 0);
	assert_null(dma_iova_to_virt(dev, h, 1));

	h = dma_map_single(dev, buf, 100, DMA_TO_DEVICE);
	start_capture();
	dma_unmap_single(dev, h, 100, DMA_BIDIRECTIONAL);
	expect_warn("dma_unmap_single", "unmapped with direction 0, mapped "
					"with 1");

	h = dma_map_single(dev, buf, 100, DMA_TO_DEVICE);
	start_capture();
	dma_unmap_page(dev, h, 100, DMA_TO_DEVICE);
	expect_warn("dma_unmap_page", "was mapped with dma_map_single");

	h = dma_map_page(dev, (struct page *)buf, 8, 100, DMA_FROM_DEVICE);
	start_capture();
	dma_sync_single_for_cpu(dev, h, 100, DMA_FROM_DEVICE);
	dma_sync_single_for_device(dev, h + 50, 50, DMA_FROM_DEVICE);
	expect_no_warn();
	start_capture();
	dma_sync_single_for_cpu(dev, h + 50, 51, DMA_FROM_DEVICE);
	expect_warn("dma_sync_single_for_cpu", "is not inside a streaming");
	start_capture();
	dma_sync_single_for_device(dev, h, 10, DMA_TO_DEVICE);
	expect_warn("dma_sync_single_for_device", "synced with direction 1, "
						  "mapped with 2");
	start_capture();
	dma_unmap_single(dev, h, 100, DMA_FROM_DEVICE);
	expect_warn("dma_unmap_single", "was mapped with dma_map_page");

	devres_set_dma_debug(false);
	h = dma_map_single(dev, buf, 100, DMA_TO_DEVICE);
	start_capture();
	dma_sync_single_for_cpu(dev, h + 50, 51, DMA_FROM_DEVICE);
	dma_unmap_page(dev, h, 3, DMA_BIDIRECTIONAL);
	expect_no_warn();
	assert_int_equal(dma_maps(), 0);
}

struct live {
	dma_addr_t h;
	size_t size;
	char *ptr;
};

static int by_handle(const void *a, const void *b)
{
	const struct live *x = a, *y = b;

	return x->h < y->h ? -1 : x->h > y->h;
}

/*
 * The IOVA allocator at random, through the API: every live mapping stays
 * reachable, under the mask, apart from the others; once all are gone the
 * freed ranges have merged back into one, which a mapping of the whole
 * space proves.
 */
static void test_iova_random(void **state)
{
	struct device *dev = *state;
	const uint64_t mask = DMA_BIT_MASK(22);
	const size_t space = (size_t)(mask + 1 - 0x10000);
	char *base = malloc(space + 2 * PAGE);
	struct live v[300], sorted[300];
	unsigned int seed = 42;
	int n = 0, fails = 0;
	dma_addr_t h;
	char *al;

	assert_non_null(base);
	assert_int_equal(dma_set_mask(dev, mask), 0);
	for (int it = 0; it < 20000; it++) {
		if (n && (n == 300 || rand_r(&seed) % 2)) {
			int k = (int)(rand_r(&seed) % (unsigned int)n);

			dma_unmap_single(dev, v[k].h, v[k].size,
					 DMA_BIDIRECTIONAL);
			v[k] = v[--n];
			continue;
		}
		v[n].size = 1 + rand_r(&seed) % (5 * PAGE);
		v[n].ptr = base + rand_r(&seed) % (space - 5 * PAGE);
		v[n].h = dma_map_single(dev, v[n].ptr, v[n].size,
					DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, v[n].h)) {
			fails++;
			continue;
		}
		assert_true(v[n].h + v[n].size - 1 <= mask);
		assert_int_equal(v[n].h % PAGE, (uintptr_t)v[n].ptr % PAGE);
		n++;
		if (it % 97)
			continue;
		memcpy(sorted, v, (size_t)n * sizeof(*v));
		qsort(sorted, (size_t)n, sizeof(*v), by_handle);
		for (int i = 0; i < n; i++) {
			assert_ptr_equal(dma_iova_to_virt(dev, sorted[i].h,
							  sorted[i].size),
					 sorted[i].ptr);
			if (i)
				assert_true(sorted[i - 1].h +
						    sorted[i - 1].size <=
					    sorted[i].h);
		}
	}
	/* 300 mappings of at most 6 pages fit in 1008 pages or nearly. */
	assert_true(fails < 200);
	while (n--)
		dma_unmap_single(dev, v[n].h, v[n].size, DMA_BIDIRECTIONAL);
	/* All merged: the whole space in one mapping, then nothing more. */
	al = (char *)(((uintptr_t)base + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
	h = dma_map_single(dev, al, space, DMA_TO_DEVICE);
	assert_int_equal(h, 0x10000);
	assert_true(dma_mapping_error(dev, dma_map_single(dev, base, 1,
							  DMA_TO_DEVICE)));
	dma_unmap_single(dev, h, space, DMA_TO_DEVICE);
	assert_int_equal(dma_maps(), 0);
	free(base);
}

/* A bus whose driver's probe maps a buffer and, when told, leaks it. */
static const struct bus_type dbus = { .name = "dma-test" };
static char probe_buf[512];
static dma_addr_t probe_h;
static int probe_ret;

static int leaky_probe(struct device *dev)
{
	probe_h = dma_map_single(dev, probe_buf, sizeof(probe_buf),
				 DMA_TO_DEVICE);
	if (dma_mapping_error(dev, probe_h))
		return -ENOMEM;
	return probe_ret;
}

static struct device_driver leaky = {
	.name = "leaky",
	.bus = &dbus,
	.probe = leaky_probe,
};

static void test_live_at_unbind(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;

	(void)state;
	devres_set_dma_debug(true);
	devres_ledger_snapshot(&before);
	dev = heap_dev(&dbus, "dma0");
	assert_int_equal(device_add(dev), 0);
	probe_ret = 0;
	assert_int_equal(driver_register(&leaky), 0);
	assert_true(device_is_bound(dev));
	start_capture();
	device_release_driver(dev);
	expect_warn_on("dma0", "dma-debug",
		       "1 DMA mapping(s) still live at unbind (lowest: "
		       "dma_map_single, 512 bytes at");
	/* The state outlived the binding: the handle still unmaps. */
	assert_ptr_equal(dma_iova_to_virt(dev, probe_h, 512), probe_buf);
	start_capture();
	dma_unmap_single(dev, probe_h, 512, DMA_TO_DEVICE);
	expect_no_warn();
	assert_null(dev->dma_state);

	/* A failed probe's leak is reported too. */
	probe_ret = -ENODEV;
	start_capture();
	assert_int_equal(device_driver_attach(&leaky, dev), -ENODEV);
	expect_warn_on("dma0", "dma-debug", "still live at unbind");
	dma_unmap_single(dev, probe_h, 512, DMA_TO_DEVICE);

	/* Clean binding, clean unbind: no report; a rebind starts afresh. */
	probe_ret = 0;
	assert_int_equal(device_driver_attach(&leaky, dev), 0);
	dma_unmap_single(dev, probe_h, 512, DMA_TO_DEVICE);
	start_capture();
	device_release_driver(dev);
	expect_no_warn();
	driver_unregister(&leaky);

	/* A mapping made while unbound is the device's: checked at del. */
	probe_h = dma_map_single(dev, probe_buf, 8, DMA_TO_DEVICE);
	start_capture();
	device_del(dev);
	expect_warn_on("dma0", "dma-debug",
		       "1 DMA mapping(s) still live at device release");
	dma_unmap_single(dev, probe_h, 8, DMA_TO_DEVICE);
	put_device(dev);
	devres_set_dma_debug(false);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* Run by test_env_knob in a child with DEVRES_DMA_DEBUG set. */
static int env_child(void)
{
	struct device dev;
	char buf[8];
	dma_addr_t h;

	if (init_dev(&dev, "env-dev"))
		return 2;
	h = dma_map_single(&dev, buf, 8, DMA_TO_DEVICE);
	dma_unmap_single(&dev, h, 4, DMA_TO_DEVICE);
	devres_release_all(&dev);
	put_device(&dev);
	return devres_warn_count();
}

static void test_env_knob(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(run_self("DEVRES_DMA_DEBUG=1", &err, "env", NULL), 1);
	assert_non_null(strstr(err, "unmapped with size 4, mapped with 8"));
	free(err);
	assert_int_equal(run_self("DEVRES_DMA_DEBUG=0", NULL, "env", NULL), 0);
	assert_int_equal(run_self("DEVRES_DMA_DEBUG", NULL, "env", NULL), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_map_single, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_streaming_mask, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_bad_maps, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_iova_random, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_bogus_unmaps, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(test_debug_checks, dev_setup,
						dev_teardown),
		cmocka_unit_test(test_live_at_unbind),
		cmocka_unit_test(test_env_knob),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (argc == 2 && strcmp(argv[1], "env") == 0)
		return env_child();
	return run_tests_on_bus(tests, &dbus);
}
