// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A busy region under a caller's own IORESOURCE_BUSY range, put over it
 * with insert_resource() (which, as the kernel's, goes over whatever it
 * covers): the region's release looked for it only through ranges that
 * are not busy, as the kernel's does, stopped at the caller's range and
 * found nothing. release_mem_region() and release_region() WARNed
 * "no busy region", a managed region's node went without giving it back,
 * and the region was never freed (in the ledger for good). Now the
 * release goes through any range that is not itself a region.
 *
 * Rows: what is over the region (nothing, the control; a caller's busy
 * range holding it; one of exactly its range; a describing range over a
 * busy one over it). Columns: how it is claimed and given back (plain,
 * memory and I/O ports; managed, by devm_release_mem_region() and by the
 * device's release). Each cell runs in a child under an alarm and checks
 * that the release WARNs nothing, the region is freed (the ledger), the
 * tree keeps its shape and, the caller's ranges taken out, the range can
 * be claimed again.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/platform.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "io/tree-check.h"

#define MEM_BASE 0x7d000000ull
#define IO_BASE 0x3000ull
#define CELL_ALARM_S 5

enum over {
	O_NONE,
	O_BUSY_HOLDING,
	O_BUSY_EQUAL,
	O_DESC_BUSY,
	O_NR
};
enum how {
	H_PLAIN_MEM,
	H_PLAIN_IO,
	H_DEVM_RELEASE,
	H_DEV_RELEASE,
	H_NR
};

static const char *const rows[O_NR] = {
	[O_NONE] = "nothing",
	[O_BUSY_HOLDING] = "a busy range holding it",
	[O_BUSY_EQUAL] = "a busy range of its range",
	[O_DESC_BUSY] = "a describing range over a busy one",
};

static const char *const cols[H_NR] = {
	[H_PLAIN_MEM] = "request_mem_region",
	[H_PLAIN_IO] = "request_region",
	[H_DEVM_RELEASE] = "devm_release_mem_region",
	[H_DEV_RELEASE] = "device release",
};

static long regions_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.regions;
}

static int cell_fail(const char *what)
{
	fprintf(stderr, "  %s\n", what);
	return 1;
}

static int cell(int row, int col)
{
	enum over o = (enum over)row;
	enum how h = (enum how)col;
	bool io = h == H_PLAIN_IO;
	resource_size_t base = io ? IO_BASE : MEM_BASE;
	resource_size_t s = base + 0x100, n = 0x100;
	unsigned long type = io ? IORESOURCE_IO : IORESOURCE_MEM;
	struct resource *root = io ? &ioport_resource : &iomem_resource;
	struct resource busy =
		DEFINE_RES_NAMED(base, 0x1000, "busy", type | IORESOURCE_BUSY);
	struct resource desc = DEFINE_RES_NAMED(base, 0x2000, "desc", type);
	struct platform_device *pdev;
	struct resource *r;
	int ret = 0, nodes0;
	long regions0;

	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	pdev = platform_device_register_simple("hidden", row * H_NR + col, NULL,
					       0);
	if (!pdev)
		return cell_fail("setup");
	regions0 = regions_now();
	nodes0 = tree_check(root);
	if (h == H_PLAIN_MEM)
		r = request_mem_region(s, n, "drv");
	else if (io)
		r = request_region(s, n, "drv");
	else
		r = devm_request_mem_region(&pdev->dev, s, n, "drv");
	if (!r)
		return cell_fail("region not claimed");
	if (o == O_BUSY_EQUAL) {
		busy.start = s;
		busy.end = s + n - 1;
	}
	if (o != O_NONE && insert_resource(root, &busy))
		return cell_fail("busy range not inserted");
	if (o == O_DESC_BUSY && insert_resource(root, &desc))
		return cell_fail("describing range not inserted");
	if (o != O_NONE && r->parent != &busy)
		return cell_fail("the region is not under the busy range");

	start_capture();
	if (h == H_PLAIN_MEM)
		release_mem_region(s, n);
	else if (io)
		release_region(s, n);
	else if (h == H_DEVM_RELEASE)
		devm_release_mem_region(&pdev->dev, s, n);
	else
		(void)devres_release_all(&pdev->dev);
	devres_set_log_sink(NULL, NULL);
	if (cap.n)
		ret |= cell_fail("the release WARNed");
	if (regions_now() != regions0)
		ret |= cell_fail("the region was not freed");
	if (tree_check(root) < 0)
		ret |= cell_fail("tree broken");
	if (o == O_DESC_BUSY && remove_resource(&desc))
		ret |= cell_fail("describing range not removed");
	if (o != O_NONE && remove_resource(&busy))
		ret |= cell_fail("busy range not removed");
	if (tree_check(root) != nodes0)
		ret |= cell_fail("ranges left in the tree");
	r = io ? request_region(s, n, "again")
	       : request_mem_region(s, n, "again");
	if (!r)
		ret |= cell_fail("the range is not free");
	else if (io)
		release_region(s, n);
	else
		release_mem_region(s, n);
	platform_device_unregister(pdev);
	return ret;
}

static void test_hidden(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, O_NR, cols, H_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hidden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
