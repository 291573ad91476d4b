// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A range put into the tree under itself: request_resource(),
 * insert_resource(), their _conflict forms and devm_request_resource()
 * with a root that is the new range, or a range nested in it (its child,
 * its grandchild: a caller's own tree, not yet in iomem_resource). The
 * range became its own descendant, and every walk of its tree
 * (resource_dump(), and once inserted in iomem_resource every call that
 * walks the tree, under the tree's lock) went round for ever. Now each is
 * refused as a range already in the tree: one WARN, -EBUSY (the range
 * itself as the conflict), the tree unchanged. So is iomem_resource put
 * under a range of the caller's (the root is the tree; it became that
 * range's child). A root apart from the range, and one in iomem_resource
 * below it (refused before), are the controls. Each cell runs in a child
 * under an alarm: a hang is a failed cell.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
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
#include <devres/ioport.h>
#include <devres/platform.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "io/tree-check.h"

#define BASE 0x7b000000ull
#define SPAN 0x1000ull
#define CELL_ALARM_S 5

enum root {
	R_SELF,
	R_CHILD,
	R_GRANDCHILD,
	R_IN_TREE,
	R_ROOT,
	R_APART,
	R_NR
};
enum call {
	C_REQUEST,
	C_REQUEST_CONFLICT,
	C_INSERT,
	C_INSERT_CONFLICT,
	C_DEVM_REQUEST,
	C_NR
};

static const char *const rows[R_NR] = {
	[R_SELF] = "the range itself",
	[R_CHILD] = "its child",
	[R_GRANDCHILD] = "its grandchild",
	[R_IN_TREE] = "its child, the range in iomem",
	[R_ROOT] = "iomem_resource under a range",
	[R_APART] = "a range apart",
};

static const char *const cols[C_NR] = {
	[C_REQUEST] = "request_resource",
	[C_REQUEST_CONFLICT] = "request_resource_conflict",
	[C_INSERT] = "insert_resource",
	[C_INSERT_CONFLICT] = "insert_resource_conflict",
	[C_DEVM_REQUEST] = "devm_request_resource",
};

/* The ranges below r (below u, for R_APART) after the call. */
static const int below[R_NR] = {
	[R_SELF] = 0,	 [R_CHILD] = 1, [R_GRANDCHILD] = 2,
	[R_IN_TREE] = 1, [R_APART] = 1,
};

static const char already[] = "r is already in the tree";
static const char already_root[] = "PCI mem is already in the tree";

static int cell_fail(const char *what)
{
	fprintf(stderr, "  %s\n", what);
	return 1;
}

/* 0 when refused as expected (or, for @ok, done); 1 otherwise. */
static int call(enum call c, struct device *dev, struct resource *root,
		struct resource *r, bool ok)
{
	struct resource *conflict;
	int ret;

	switch (c) {
	case C_REQUEST:
		ret = request_resource(root, r);
		return ok ? ret != 0 : ret != -EBUSY;
	case C_REQUEST_CONFLICT:
		conflict = request_resource_conflict(root, r);
		return ok ? conflict != NULL : conflict != r;
	case C_INSERT:
		ret = insert_resource(root, r);
		return ok ? ret != 0 : ret != -EBUSY;
	case C_INSERT_CONFLICT:
		conflict = insert_resource_conflict(root, r);
		return ok ? conflict != NULL : conflict != r;
	case C_DEVM_REQUEST:
		ret = devm_request_resource(dev, root, r);
		return ok ? ret != 0 : ret != -EBUSY;
	default:
		return 1;
	}
}

static int cell(int row, int col)
{
	enum root rt = (enum root)row;
	struct resource r = DEFINE_RES_MEM_NAMED(BASE, SPAN, "r");
	struct resource c = DEFINE_RES_MEM_NAMED(BASE, SPAN, "c");
	struct resource g = DEFINE_RES_MEM_NAMED(BASE, SPAN, "g");
	struct resource u = DEFINE_RES_MEM_NAMED(BASE - SPAN, 4 * SPAN, "u");
	struct resource whole = DEFINE_RES_MEM_NAMED(0, 0, "whole");
	struct resource *root, *new = rt == R_ROOT ? &iomem_resource : &r;
	struct platform_device *pdev;
	bool ok = rt == R_APART;
	int ret = 0, nodes0;

	whole.end = ~(resource_size_t)0;
	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	pdev = platform_device_register_simple("cycle", row * C_NR + col, NULL,
					       0);
	if (!pdev)
		return cell_fail("setup");
	if (rt == R_IN_TREE && request_resource(&iomem_resource, &r))
		return cell_fail("r not in iomem");
	if ((rt == R_CHILD || rt == R_GRANDCHILD || rt == R_IN_TREE) &&
	    request_resource(&r, &c))
		return cell_fail("c not under r");
	if (rt == R_GRANDCHILD && request_resource(&c, &g))
		return cell_fail("g not under c");
	nodes0 = tree_check(&iomem_resource);
	root = rt == R_SELF	    ? &r
	       : rt == R_GRANDCHILD ? &g
	       : rt == R_APART	    ? &u
	       : rt == R_ROOT	    ? &whole
				    : &c;

	start_capture();
	ret |= call((enum call)col, &pdev->dev, root, new, ok)
		       ? cell_fail("not the return expected")
		       : 0;
	devres_set_log_sink(NULL, NULL);
	if (cap.n != !ok ||
	    (!ok &&
	     !strstr(cap.line[0], rt == R_ROOT ? already_root : already)))
		ret |= cell_fail("not the WARN expected");
	/* Walks that end: the range's own tree, and iomem's. */
	if (tree_check(ok	      ? &u
		       : rt == R_ROOT ? &whole
				      : &r) != below[rt] ||
	    iomem_resource.parent)
		ret |= cell_fail("the range's tree changed");
	if (tree_check(&iomem_resource) != nodes0)
		ret |= cell_fail("iomem's tree changed");
	if (ok && r.parent != &u)
		ret |= cell_fail("not under the range apart");
	(void)devres_release_all(&pdev->dev);
	if (r.parent)
		(void)release_resource(&r);
	platform_device_unregister(pdev);
	return ret;
}

static void test_cycle(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, R_NR, cols, C_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
