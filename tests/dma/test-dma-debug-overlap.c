// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * DMA debug as the kernel's: two streaming mappings of a device whose
 * first bytes share a cacheline, both of which the device may write
 * (DMA_FROM_DEVICE or DMA_BIDIRECTIONAL), are reported once, at the
 * second ("cacheline tracking EEXIST, overlapping mappings aren't
 * supported"), and both are made; a DMA_TO_DEVICE mapping on either side,
 * or first bytes in another cacheline, are not. Table: the first
 * mapping's direction x the second's x where the second begins (the same
 * buffer, 8 bytes on in the same line, the next line) x dma_map_single()
 * and dma_map_page(); the same with debug off (never reported). Then a
 * sync of 0 bytes (the kernel's check_sync() only asks that the address
 * lies in a mapping): inside a mapping, no WARN; outside, one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include "testlib.h"

static const enum dma_data_direction dirs[] = { DMA_TO_DEVICE, DMA_FROM_DEVICE,
						DMA_BIDIRECTIONAL };
static const char *const dir_name[] = { "to-device", "from-device",
					"bidirectional" };
static const size_t at[] = { 0, 8, 64 };
static const char *const at_name[] = { "same buffer", "same line",
				       "next line" };

#define NR_DIRS 3
#define NR_AT 3

static unsigned char buf[512] __attribute__((aligned(64)));

static dma_addr_t map(bool page, size_t off, enum dma_data_direction dir)
{
	if (page)
		return dma_map_page(&tdev, (struct page *)buf, off, 32, dir);
	return dma_map_single(&tdev, buf + off, 32, dir);
}

static void unmap(bool page, dma_addr_t h, enum dma_data_direction dir)
{
	if (page)
		dma_unmap_page(&tdev, h, 32, dir);
	else
		dma_unmap_single(&tdev, h, 32, dir);
}

static int cells(bool debug)
{
	int failed = 0;

	devres_set_dma_debug(debug);
	for (int page = 0; page < 2; page++)
		for (int a = 0; a < NR_DIRS; a++)
			for (int b = 0; b < NR_DIRS; b++)
				for (int w = 0; w < NR_AT; w++) {
					const char *func = page ? "dma_map_page"
								: "dma_map_"
								  "single";
					bool want = debug && a && b &&
						    at[w] < 64;
					dma_addr_t h1, h2;
					char head[96];
					bool ok;

					h1 = map(page, 0, dirs[a]);
					assert_int_equal(
						dma_mapping_error(&tdev, h1),
						0);
					start_capture();
					h2 = map(page, at[w], dirs[b]);
					devres_set_log_sink(NULL, NULL);
					snprintf(head, sizeof(head),
						 "WARNING: test-dev: %s: "
						 "cacheline tracking EEXIST",
						 func);
					ok = h2 != DMA_MAPPING_ERROR &&
					     cap.n == (want ? 1 : 0) &&
					     (!want ||
					      !strncmp(cap.line[0], head,
						       strlen(head)));
					if (!ok) {
						fprintf(stderr,
							"%s debug %d %s then "
							"%s, %s: %d line(s): "
							"\"%s\"\n",
							func, debug,
							dir_name[a],
							dir_name[b], at_name[w],
							cap.n, cap.line[0]);
						failed++;
					}
					(void)dma_mapping_error(&tdev, h2);
					start_capture();
					if (h2 != DMA_MAPPING_ERROR)
						unmap(page, h2, dirs[b]);
					unmap(page, h1, dirs[a]);
					expect_no_warn();
				}
	devres_set_dma_debug(false);
	return failed;
}

static void overlap_debug(void **state)
{
	(void)state;
	assert_int_equal(cells(true), 0);
}

static void overlap_no_debug(void **state)
{
	(void)state;
	assert_int_equal(cells(false), 0);
}

static void sync_zero(void **state)
{
	dma_addr_t h;

	(void)state;
	devres_set_dma_debug(true);
	h = dma_map_single(&tdev, buf, 128, DMA_FROM_DEVICE);
	assert_int_equal(dma_mapping_error(&tdev, h), 0);
	start_capture();
	dma_sync_single_for_cpu(&tdev, h, 0, DMA_FROM_DEVICE);
	dma_sync_single_for_device(&tdev, h + 64, 0, DMA_FROM_DEVICE);
	dma_sync_single_for_cpu(&tdev, h + 127, 0, DMA_FROM_DEVICE);
	expect_no_warn();
	start_capture();
	dma_sync_single_for_cpu(&tdev, h + 4096, 0, DMA_FROM_DEVICE);
	expect_warn("dma_sync_single_for_cpu", "is not inside a streaming");
	dma_unmap_single(&tdev, h, 128, DMA_FROM_DEVICE);
	devres_set_dma_debug(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(overlap_debug, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(overlap_no_debug, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(sync_zero, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
