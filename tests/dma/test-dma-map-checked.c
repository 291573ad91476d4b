/* ctest-labels: unit tsan */
/*
 * Debug mode's check that a driver tested a streaming mapping with
 * dma_mapping_error() before it unmapped it, as the kernel's
 * CONFIG_DMA_API_DEBUG does ("device driver failed to check map error"):
 * a driver that does not check gives a failed mapping's DMA_MAPPING_ERROR
 * to its device.
 *
 * Each map call (dma_map_single(), dma_map_page()) times each way the
 * handle may have been checked before its unmap: not at all, with its
 * handle, twice, with a handle inside the mapping but not its start,
 * with the handle on another device, a mapping made with debug off and
 * unmapped with it on, one made with it on and unmapped with it off,
 * debug off throughout. A cell runs in a child of its own under an
 * alarm and checks the WARN lines: one naming the unmap call and
 * dma_mapping_error() where the table says so, none elsewhere; the
 * mapping gone after the unmap either way, and the ledger back at its
 * baseline. Before, no unchecked unmap was reported.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define LEN 512

static const char *const map_names[] = { "dma_map_single", "dma_map_page" };
static const char *const unmap_names[] = { "dma_unmap_single", "dma_unmap_"
							       "page" };

enum how {
	UNCHECKED,
	CHECKED,
	CHECKED_TWICE,
	CHECKED_INSIDE,
	CHECKED_OTHER_DEV,
	MAPPED_DEBUG_OFF,
	UNMAPPED_DEBUG_OFF,
	DEBUG_OFF,
};

static const struct {
	const char *name;
	bool warns;
} hows[] = {
	[UNCHECKED] = { "not checked", true },
	[CHECKED] = { "checked", false },
	[CHECKED_TWICE] = { "checked twice", false },
	[CHECKED_INSIDE] = { "checked inside, not at its start", true },
	[CHECKED_OTHER_DEV] = { "checked on another device", true },
	[MAPPED_DEBUG_OFF] = { "mapped with debug off", false },
	[UNMAPPED_DEBUG_OFF] = { "unmapped with debug off", false },
	[DEBUG_OFF] = { "debug off throughout", false },
};

static const char *how_names[ARRAY_SIZE(hows)];

struct lines {
	int n;
	char first[256];
};

static void sink(void *ctx, int level, const char *line)
{
	struct lines *l = ctx;

	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	if (!l->n++)
		snprintf(l->first, sizeof(l->first), "%s", line);
}

static dma_addr_t map(struct device *dev, int kind, char *buf)
{
	if (kind == 0)
		return dma_map_single(dev, buf, LEN, DMA_FROM_DEVICE);
	return dma_map_page(dev, (struct page *)buf, 128, LEN, DMA_FROM_DEVICE);
}

static void unmap(struct device *dev, int kind, dma_addr_t h)
{
	if (kind == 0)
		dma_unmap_single(dev, h, LEN, DMA_FROM_DEVICE);
	else
		dma_unmap_page(dev, h, LEN, DMA_FROM_DEVICE);
}

/* 0 when the cell held, else what broke. */
static int cell(int kind, int how)
{
	static char buf[8192] __attribute__((aligned(4096)));
	struct device dev, dev2;
	struct devres_ledger l0, l1;
	struct lines lines = { 0 };
	char want[160];
	dma_addr_t h;
	int w0;

	alarm(10);
	devres_ledger_snapshot(&l0);
	if (init_dev(&dev, "chk-dev") || init_dev(&dev2, "chk-other"))
		return 1;
	devres_set_dma_debug(how != MAPPED_DEBUG_OFF && how != DEBUG_OFF);
	h = map(&dev, kind, buf);
	if (h == DMA_MAPPING_ERROR)
		return 2;
	if (how == MAPPED_DEBUG_OFF)
		devres_set_dma_debug(true);
	if (how == CHECKED || how == CHECKED_TWICE)
		if (dma_mapping_error(&dev, h))
			return 3;
	if (how == CHECKED_TWICE && dma_mapping_error(&dev, h))
		return 3;
	if (how == CHECKED_INSIDE && dma_mapping_error(&dev, h + 1))
		return 3;
	if (how == CHECKED_OTHER_DEV && dma_mapping_error(&dev2, h))
		return 3;
	if (how == UNMAPPED_DEBUG_OFF)
		devres_set_dma_debug(false);
	w0 = devres_warn_count();
	devres_set_log_sink(sink, &lines);
	unmap(&dev, kind, h);
	devres_set_log_sink(NULL, NULL);
	devres_set_dma_debug(false);
	if (devres_warn_count() - w0 != (hows[how].warns ? 1 : 0) ||
	    lines.n != (hows[how].warns ? 1 : 0)) {
		fprintf(stderr, "%d WARN(s), want %d: %s\n", lines.n,
			hows[how].warns, lines.first);
		return 4;
	}
	snprintf(want, sizeof(want), "WARNING: chk-dev: %s: handle ",
		 unmap_names[kind]);
	if (lines.n && (strncmp(lines.first, want, strlen(want)) != 0 ||
			!strstr(lines.first, "without dma_mapping_error()"))) {
		fprintf(stderr, "unexpected WARN: %s\n", lines.first);
		return 5;
	}
	if (dma_iova_to_virt(&dev, h, 1))
		return 6;
	devres_release_all(&dev);
	devres_release_all(&dev2);
	put_device(&dev);
	put_device(&dev2);
	devres_ledger_snapshot(&l1);
	return devres_ledger_diff(&l0, &l1, stderr) ? 7 : 0;
}

static void unmaps_without_check(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(hows); i++)
		how_names[i] = hows[i].name;
	run_cells_in_children_wide(cell, map_names, ARRAY_SIZE(map_names),
				   how_names, ARRAY_SIZE(hows), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unmaps_without_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
