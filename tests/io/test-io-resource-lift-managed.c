// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A range that describes (a bus's window) taken out of the tree while
 * another device holds a range below it with devm_request_resource():
 * out of order, before that device's release. The managed range is the
 * library's to unlink at its device's release, which finds it through
 * its parent pointer; gone with the bus, that pointer was into the
 * caller's storage of the bus, which the kernel's
 * release_and_free_resource() frees: the device's release then read (and
 * wrote) freed memory. Now the managed range stays in the tree, lifted
 * into the bus's parent with whatever it holds, with one WARN naming the
 * call, the bus and the range, as a busy region is
 * (test-io-resource-lift); its device's release takes it out, silently.
 *
 * Rows: where the managed range is (right below the bus; below a
 * describing child of the bus; holding a managed region of its own).
 * Columns: how the bus leaves (release_resource() then free();
 * devm_release_resource(); its device's release; release_resource() of
 * the managed bus by hand; remove_resource(), which keeps the children
 * and never WARNed). Each cell in a child under an alarm: the WARNs, the
 * tree's shape, the range still in the tree and given back by its
 * owner's release without a WARN, the span free again, the ledger back.
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

#define BASE 0x7b000000ull
#define SPAN 0x10000ull
#define CELL_ALARM_S 10

enum below {
	B_RANGE,
	B_DEEP,
	B_HOLDING,
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
	[B_RANGE] = "managed range",
	[B_DEEP] = "managed range in a child",
	[B_HOLDING] = "managed range holding a region",
};

static const char *const cols[H_NR] = {
	[H_RELEASE] = "release_resource + free",
	[H_DEVM_RELEASE] = "devm_release_resource",
	[H_DEV_RELEASE] = "device release",
	[H_HAND_MANAGED] = "release_resource of a managed bus",
	[H_REMOVE] = "remove_resource",
};

static int cell_fail(const char *what)
{
	fprintf(stderr, "  %s\n", what);
	return 1;
}

static const char *lift_func(enum how h)
{
	return h == H_DEVM_RELEASE || h == H_DEV_RELEASE
		       ? "WARNING: (no device): devm_request_resource: "
		       : "WARNING: (no device): release_resource: ";
}

/* Whether @r is listed by its parent. */
static bool listed(const struct resource *r)
{
	const struct resource *p;

	if (!r->parent)
		return false;
	for (p = r->parent->child; p; p = p->sibling)
		if (p == r)
			return true;
	return false;
}

static int cell(int row, int col)
{
	enum below b = (enum below)row;
	enum how h = (enum how)col;
	struct resource child =
		DEFINE_RES_MEM_NAMED(BASE + 0x1000, 0x1000, "child");
	struct resource inner =
		DEFINE_RES_MEM_NAMED(BASE + 0x1100, 0x100, "inner");
	struct resource taker = DEFINE_RES_MEM_NAMED(BASE + 0x1100, 0x100, "t");
	struct devres_ledger l0, l1;
	struct platform_device *a, *o;
	struct resource *bus;
	int ret = 0, nodes0, lifts = 0, want;

	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	a = platform_device_register_simple("mlift-bus", row * H_NR + col, NULL,
					    0);
	o = platform_device_register_simple("mlift-drv", row * H_NR + col, NULL,
					    0);
	bus = calloc(1, sizeof(*bus));
	if (IS_ERR(a) || IS_ERR(o) || !bus)
		return cell_fail("setup");
	*bus = (struct resource)DEFINE_RES_MEM_NAMED(BASE, SPAN, "bus");
	devres_ledger_snapshot(&l0);
	nodes0 = tree_check(&iomem_resource);
	if (h == H_RELEASE || h == H_REMOVE) {
		if (request_resource(&iomem_resource, bus))
			return cell_fail("bus not in the tree");
	} else if (devm_request_resource(&a->dev, &iomem_resource, bus)) {
		return cell_fail("managed bus not in the tree");
	}
	if (b == B_DEEP && request_resource(bus, &child))
		return cell_fail("child not in the tree");
	if (devm_request_resource(&o->dev, b == B_DEEP ? &child : bus, &inner))
		return cell_fail("managed range not in the tree");
	if (b == B_HOLDING &&
	    !devm_request_mem_region(&o->dev, BASE + 0x1140, 0x10, "reg"))
		return cell_fail("region not claimed");

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
		    strstr(cap.line[i], "bus [0x7b000000-0x7b00ffff] holds "
					"managed range inner "
					"[0x7b001100-0x7b0011ff]"))
			lifts++;
	want = (h != H_REMOVE) + (h == H_HAND_MANAGED);
	if (cap.n != want || lifts != (h != H_REMOVE))
		ret |= cell_fail("not the WARNs expected");
	if (tree_check(&iomem_resource) < 0)
		ret |= cell_fail("tree broken");
	if (!listed(&inner) || inner.parent == bus)
		ret |= cell_fail("the managed range left the tree");
	/* Its range is taken: nobody requests it again. */
	if (!request_resource(&iomem_resource, &taker)) {
		ret |= cell_fail("the managed range's span requested again");
		(void)release_resource(&taker);
	}

	/* Given back by its owner, without a WARN. */
	start_capture();
	(void)devres_release_all(&o->dev);
	(void)devres_release_all(&a->dev);
	if (h == H_REMOVE && child.parent)
		(void)release_resource(&child);
	devres_set_log_sink(NULL, NULL);
	if (cap.n)
		ret |= cell_fail("the owners' release WARNed");
	if (inner.parent)
		ret |= cell_fail("the managed range stayed after its release");
	if (tree_check(&iomem_resource) != nodes0)
		ret |= cell_fail("ranges left in the tree");
	devres_ledger_snapshot(&l1);
	if (devres_ledger_diff(&l0, &l1, stderr))
		ret |= cell_fail("the ledger is not back");
	if (!request_mem_region(BASE, SPAN, "again"))
		ret |= cell_fail("the span is not free");
	else
		release_mem_region(BASE, SPAN);
	platform_device_unregister(o);
	platform_device_unregister(a);
	return ret;
}

static void test_lift_managed(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, B_NR, cols, H_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lift_managed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
