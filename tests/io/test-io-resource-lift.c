// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A range that describes (a bus's window, put in the tree with
 * request_resource() or devm_request_resource()) taken out of the tree
 * while drivers hold busy regions inside it. Its children go with it (the
 * kernel's release_resource()), but a busy region of request_region() and
 * the like is the library's and still claimed: gone with the range, it was
 * out of the tree while held, so its range could be claimed again by
 * anyone, its owner's release found nothing (a WARN, or a managed node
 * freed silently) and the region leaked, counted in the ledger for good,
 * its parent pointer into the caller's freed storage. Now such a region
 * stays claimed, lifted into the range's parent, with one WARN naming the
 * call, the range and the region.
 *
 * Rows: what is below the range (nothing busy; a plain region; another
 * device's managed region; a region inside a describing child; two
 * regions around a describing child). Columns: how the range leaves
 * (release_resource() then free(), as the kernel's
 * release_and_free_resource(); devm_release_resource(); the device's
 * release; release_resource() of a managed range by hand; and
 * remove_resource(), which keeps the children and never WARNed). Each
 * cell runs in a child under an alarm and checks the WARNs, the tree's
 * shape (tests/io/tree-check.h), that every region is still claimed and
 * is given back by its owner without a WARN, that the range is free
 * afterwards and that the ledger is back at its baseline.
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

#define BASE 0x7a000000ull
#define SPAN 0x10000ull
#define CELL_ALARM_S 10

enum below {
	B_NONE,
	B_PLAIN,
	B_MANAGED,
	B_DEEP,
	B_TWO,
	B_NR
};
enum how {
	H_RELEASE,
	H_DEVM_RELEASE,
	H_DEV_RELEASE,
	H_HAND_MANAGED,
	H_REMOVE,
	H_NR
};

static const char *const rows[B_NR] = {
	[B_NONE] = "nothing busy",
	[B_PLAIN] = "plain region",
	[B_MANAGED] = "managed region",
	[B_DEEP] = "region in a child",
	[B_TWO] = "two regions, a child between",
};

static const char *const cols[H_NR] = {
	[H_RELEASE] = "release_resource + free",
	[H_DEVM_RELEASE] = "devm_release_resource",
	[H_DEV_RELEASE] = "device release",
	[H_HAND_MANAGED] = "release_resource of a managed range",
	[H_REMOVE] = "remove_resource",
};

/* The regions a row claims: [start, start + n), managed or not. */
struct claim {
	resource_size_t start, n;
	bool managed;
};

static int claims_of(enum below b, struct claim *c)
{
	switch (b) {
	case B_PLAIN:
		c[0] = (struct claim){ BASE + 0x100, 0x100, false };
		return 1;
	case B_MANAGED:
		c[0] = (struct claim){ BASE + 0x100, 0x100, true };
		return 1;
	case B_DEEP:
		c[0] = (struct claim){ BASE + 0x1100, 0x100, false };
		return 1;
	case B_TWO:
		c[0] = (struct claim){ BASE, 0x100, false };
		c[1] = (struct claim){ BASE + SPAN - 0x100, 0x100, true };
		return 2;
	default:
		return 0;
	}
}

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

/* The WARNs the cell must print: the lift's, and a managed range's by hand. */
static int warns_expected(enum below b, enum how h)
{
	int n = b != B_NONE && h != H_REMOVE;

	return n + (h == H_HAND_MANAGED);
}

static const char *lift_func(enum how h)
{
	return h == H_DEVM_RELEASE || h == H_DEV_RELEASE
		       ? "WARNING: (no device): devm_request_resource: "
		       : "WARNING: (no device): release_resource: ";
}

static int cell(int row, int col)
{
	enum below b = (enum below)row;
	enum how h = (enum how)col;
	struct platform_device *a, *o;
	struct resource child =
		DEFINE_RES_MEM_NAMED(BASE + 0x1000, 0x1000, "child");
	struct resource *bus;
	struct claim c[2];
	int nc = claims_of(b, c), ret = 0, nodes0, lifts = 0;
	long regions0;

	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	a = platform_device_register_simple("lift-bus", row * H_NR + col, NULL,
					    0);
	o = platform_device_register_simple("lift-drv", row * H_NR + col, NULL,
					    0);
	bus = calloc(1, sizeof(*bus));
	if (!a || !o || !bus)
		return cell_fail("setup");
	*bus = (struct resource)DEFINE_RES_MEM_NAMED(BASE, SPAN, "bus");
	regions0 = regions_now();
	nodes0 = tree_check(&iomem_resource);
	if (h == H_RELEASE || h == H_REMOVE) {
		if (request_resource(&iomem_resource, bus))
			return cell_fail("bus not in the tree");
	} else if (devm_request_resource(&a->dev, &iomem_resource, bus)) {
		return cell_fail("managed bus not in the tree");
	}
	if ((b == B_NONE || b == B_DEEP || b == B_TWO) &&
	    request_resource(bus, &child))
		return cell_fail("child not in the tree");
	for (int i = 0; i < nc; i++) {
		struct resource *r =
			c[i].managed
				? devm_request_mem_region(&o->dev, c[i].start,
							  c[i].n, "m")
				: request_mem_region(c[i].start, c[i].n, "p");

		if (!r)
			return cell_fail("region not claimed");
	}

	start_capture();
	switch (h) {
	case H_RELEASE:
	case H_HAND_MANAGED:
		if (release_resource(bus))
			ret |= cell_fail("release_resource failed");
		break;
	case H_DEVM_RELEASE:
		devm_release_resource(&a->dev, bus);
		break;
	case H_DEV_RELEASE:
		(void)devres_release_all(&a->dev);
		break;
	case H_REMOVE:
		if (remove_resource(bus))
			ret |= cell_fail("remove_resource failed");
		break;
	default:
		break;
	}
	devres_set_log_sink(NULL, NULL);
	/* The caller's storage goes, as release_and_free_resource() does. */
	memset(bus, 0x5a, sizeof(*bus));
	free(bus);
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		if (strncmp(cap.line[i], lift_func(h), strlen(lift_func(h))) ==
			    0 &&
		    strstr(cap.line[i], "bus [0x7a000000-0x7a00ffff] holds "
					"busy region"))
			lifts++;
	if (cap.n != warns_expected(b, h) ||
	    lifts != (b != B_NONE && h != H_REMOVE))
		ret |= cell_fail("not the WARNs expected");
	if (tree_check(&iomem_resource) < 0)
		ret |= cell_fail("tree broken");
	/* Still claimed: nobody else gets the range. */
	for (int i = 0; i < nc; i++)
		if (request_mem_region(c[i].start, c[i].n, "thief"))
			ret |= cell_fail("a held region claimed again");
	if (child.parent && h != H_REMOVE && child.parent == &iomem_resource)
		ret |= cell_fail("the child stayed");

	/* Given back by its owner, without a WARN. */
	start_capture();
	for (int i = 0; i < nc; i++)
		if (!c[i].managed)
			release_mem_region(c[i].start, c[i].n);
	(void)devres_release_all(&o->dev);
	(void)devres_release_all(&a->dev);
	if (h == H_REMOVE && child.parent)
		(void)release_resource(&child);
	devres_set_log_sink(NULL, NULL);
	if (cap.n)
		ret |= cell_fail("the owners' release WARNed");
	if (regions_now() != regions0)
		ret |= cell_fail("regions left in the ledger");
	if (tree_check(&iomem_resource) != nodes0)
		ret |= cell_fail("ranges left in the tree");
	/* The whole span is free again. */
	if (!request_mem_region(BASE, SPAN, "again"))
		ret |= cell_fail("the span is not free");
	else
		release_mem_region(BASE, SPAN);
	platform_device_unregister(o);
	platform_device_unregister(a);
	return ret;
}

static void test_lift(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, B_NR, cols, H_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lift),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
