// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Callbacks that re-enter the library on their own device while its
 * resources are being released: an action that unmaps an older managed
 * mapping, one that maps anew, one that gives back a region, one that
 * tries to remove the window while a mapping still holds it (and after it
 * is gone), and a log sink that maps and unmaps while the library WARNs
 * about the window.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include "testlib.h"
#include "iotest.h"

#define WIN 0xe0000000ull
#define WIN_SIZE 0x2000u

static int memfd;
static void *older;
static int result;

static int setup(void **state)
{
	memfd = dev_memfd(WIN_SIZE);
	if (memfd < 0 || iomem_window_add(WIN, WIN_SIZE, memfd, 0, "re"))
		return -1;
	result = 0;
	return dev_setup(state);
}

static int teardown(void **state)
{
	int ret = dev_teardown(state);

	if (iomem_window_remove(WIN))
		ret = -1;
	close(memfd);
	return ret;
}

static long maps_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.maps;
}

static void unmap_older(void *data)
{
	devm_iounmap(data, older);
}

/*
 * As in the kernel, the device's list is emptied before the first release
 * callback runs: the action cannot find the older mapping (one WARN), and
 * the mapping is unmapped once, by its own node, after the action.
 */
static void action_unmaps_older(void **state)
{
	struct device *dev = *state;
	long base = maps_now();

	older = devm_ioremap(dev, WIN, 0x10);
	assert_non_null(older);
	assert_non_null(devm_ioremap(dev, WIN + 0x10, 0x10));
	assert_int_equal(devm_add_action(dev, unmap_older, dev), 0);
	start_capture();
	assert_int_equal(devres_release_all(dev), 3);
	expect_warn("devm_iounmap", "is not a managed mapping");
	assert_int_equal(maps_now(), base);
}

static void map_again(void *data)
{
	older = devm_ioremap(data, WIN + 0x100, 0x10);
}

/* A mapping made during release stays the device's, until next time. */
static void action_maps(void **state)
{
	struct device *dev = *state;
	long base = maps_now();

	assert_int_equal(devm_add_action(dev, map_again, dev), 0);
	devres_release_all(dev);
	assert_non_null(older);
	assert_int_equal(maps_now(), base + 1);
	expect_stats(dev, 1, sizeof(void *));
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(maps_now(), base);
}

static void give_back_region(void *data)
{
	devm_release_mem_region(data, WIN + 0x200, 0x10);
}

static void action_releases_region(void **state)
{
	struct device *dev = *state;

	assert_non_null(devm_request_mem_region(dev, WIN + 0x200, 0x10, "r"));
	assert_int_equal(devm_add_action(dev, give_back_region, dev), 0);
	start_capture();
	assert_int_equal(devres_release_all(dev), 2);
	expect_warn("devm_release_mem_region", "no managed region");
	/* Given back once, by its own node: free again. */
	assert_non_null(request_mem_region(WIN + 0x200, 0x10, "again"));
	release_mem_region(WIN + 0x200, 0x10);
}

static void remove_window(void *data)
{
	(void)data;
	result = iomem_window_remove(WIN) == 0 ? 1 : -1;
}

/* Added after the mapping: runs first, while the mapping holds the window. */
static void action_removes_window_too_early(void **state)
{
	struct device *dev = *state;

	assert_non_null(devm_ioremap(dev, WIN, 0x10));
	assert_int_equal(devm_add_action(dev, remove_window, NULL), 0);
	start_capture();
	devres_release_all(dev);
	expect_warn_on("(no device)", "iomem_window_remove",
		       "window re is in use (mapped)");
	assert_int_equal(result, -1);
}

/* Added before: runs last, when the mapping and the region are gone. */
static void action_removes_window_last(void **state)
{
	struct device *dev = *state;
	struct resource res = DEFINE_RES_MEM_NAMED(WIN + 0x400, 0x40, "regs");

	assert_int_equal(devm_add_action(dev, remove_window, NULL), 0);
	assert_false(IS_ERR(devm_ioremap_resource(dev, &res)));
	start_capture();
	devres_release_all(dev);
	expect_no_warn();
	assert_int_equal(result, 1);
	/* Back for the teardown, which compares the fds with the setup's. */
	assert_int_equal(iomem_window_add(WIN, WIN_SIZE, memfd, 0, "re"), 0);
}

/* The WARN is printed with no lock held: the sink may use the library. */
static int sink_maps;

static void mapping_sink(void *ctx, int level, const char *line)
{
	void *p;

	(void)ctx;
	(void)line;
	if (level != DEVRES_LOG_WARNING)
		return;
	p = ioremap(WIN + 0x300, 4);
	if (p) {
		sink_maps++;
		iounmap(p);
	}
}

static void sink_reenters(void **state)
{
	struct device *dev = *state;

	assert_non_null(devm_ioremap(dev, WIN, 0x10));
	sink_maps = 0;
	devres_set_log_sink(mapping_sink, NULL);
	assert_int_equal(iomem_window_remove(WIN), -EBUSY);
	iounmap((void *)16);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(sink_maps, 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(action_unmaps_older),
		T(action_maps),
		T(action_releases_region),
		T(action_removes_window_too_early),
		T(action_removes_window_last),
		T(sink_reenters),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
