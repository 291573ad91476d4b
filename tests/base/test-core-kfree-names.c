// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
/*
 * What devm_kfree() and devm_krealloc() are given that the device does not
 * manage, with the WARN naming the call the driver made: devm_krealloc()
 * to size 0 frees as devm_kfree() does (the kernel's), and its WARN named
 * devm_kfree, a call the driver never made. Rows: memory from malloc(),
 * another device's managed block, a pointer inside one of this device's
 * blocks (a small one and a large one), a block freed already, the data of
 * a devres_alloc() node on the device, a string literal. Columns:
 * devm_kfree(), devm_krealloc() to 0, devm_krealloc() to 64 bytes. Each
 * cell in a child process under an alarm: one WARN, naming the call and
 * saying the pointer is not managed here; devm_krealloc() returns
 * ZERO_SIZE_PTR for 0 and NULL otherwise; nothing of either device is
 * freed or changed, and the ledger is back once both are gone.
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
#include <devres/fault.h>
#include "hostile/cell-child.h"

enum row {
	R_MALLOC,
	R_OTHER_DEV,
	R_INSIDE_SMALL,
	R_INSIDE_LARGE,
	R_FREED,
	R_NODE,
	R_LITERAL,
	R_NR
};

static const char *const rows[R_NR] = {
	"memory from malloc()",
	"another device's managed block",
	"inside a small managed block",
	"inside a large managed block",
	"a managed block freed already",
	"a devres_alloc() node's data",
	"a string literal",
};

enum col {
	C_KFREE,
	C_REALLOC_0,
	C_REALLOC_64,
	C_NR
};

static const char *const cols[C_NR] = {
	"devm_kfree()",
	"devm_krealloc() to 0",
	"devm_krealloc() to 64",
};

static const char *const funcs[C_NR] = {
	"devm_kfree",
	"devm_krealloc",
	"devm_krealloc",
};

static char line[512];
static int nlines;

static void sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	if (level != DEVRES_LOG_WARNING || strncmp(text, "WARNING: ", 9) != 0)
		return;
	if (!nlines++)
		snprintf(line, sizeof(line), "%s", text);
}

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void init(struct device *dev, const char *name)
{
	memset(dev, 0, sizeof(*dev));
	dev->release = dev_release;
	device_initialize(dev);
	(void)dev_set_name(dev, "%s", name);
}

/* The operand of @row; *@ret_heap is what the cell frees itself. */
static void *operand(int row, struct device *dev, struct device *other,
		     void **ret_heap)
{
	char *p;

	*ret_heap = NULL;
	switch (row) {
	case R_MALLOC:
		return *ret_heap = malloc(48);
	case R_OTHER_DEV:
		return devm_kmalloc(other, 48, GFP_KERNEL);
	case R_INSIDE_SMALL:
		p = devm_kmalloc(dev, 64, GFP_KERNEL);
		return p ? p + 16 : NULL;
	case R_INSIDE_LARGE:
		p = devm_kmalloc(dev, 100000, GFP_KERNEL);
		return p ? p + 4096 : NULL;
	case R_FREED:
		p = devm_kmalloc(dev, 48, GFP_KERNEL);
		devm_kfree(dev, p);
		return p;
	case R_NODE:
		p = devres_alloc(node_release, 48, GFP_KERNEL);
		if (p)
			devres_add(dev, p);
		return p;
	default:
		return (void *)"a string literal";
	}
}

static int cell(int row, int col)
{
	struct devres_ledger base, now;
	struct devres_stats mine, theirs, mine_after, theirs_after;
	struct device dev, other;
	void *p, *heap, *ret = NULL;
	int w, fail = 0;

	alarm(10);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_set_log_sink(sink, NULL);
	devres_ledger_snapshot(&base);
	init(&dev, "names-dev");
	init(&other, "names-other");
	/* Something on each, so that a wrong free would show. */
	if (!devm_kmalloc(&dev, 24, GFP_KERNEL) ||
	    !devm_kmalloc(&other, 24, GFP_KERNEL))
		return 2;
	p = operand(row, &dev, &other, &heap);
	if (!p)
		return 3;
	devres_get_stats(&dev, &mine);
	devres_get_stats(&other, &theirs);
	w = devres_warn_count();
	nlines = 0;
	if (col == C_KFREE)
		devm_kfree(&dev, p);
	else
		ret = devm_krealloc(&dev, p, col == C_REALLOC_0 ? 0 : 64,
				    GFP_KERNEL);
	if (devres_warn_count() - w != 1 || nlines != 1)
		fail |= 1 << 1;
	if (!strstr(line, funcs[col]) || !strstr(line, "is not a managed "
						       "allocation of this "
						       "device"))
		fail |= 1 << 2;
	if (col != C_KFREE &&
	    ret != (col == C_REALLOC_0 ? ZERO_SIZE_PTR : NULL))
		fail |= 1 << 3;
	devres_get_stats(&dev, &mine_after);
	devres_get_stats(&other, &theirs_after);
	if (mine.allocs != mine_after.allocs ||
	    mine.total_size != mine_after.total_size ||
	    theirs.allocs != theirs_after.allocs ||
	    theirs.total_size != theirs_after.total_size)
		fail |= 1 << 4;
	if (devres_check(&dev) || devres_check(&other))
		fail |= 1 << 5;
	free(heap);
	put_device(&dev);
	put_device(&other);
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&base, &now, stderr))
		fail |= 1 << 6;
	if (fail)
		fprintf(stderr, "  returned %p, %d WARN line(s): \"%s\"\n", ret,
			nlines, line);
	return fail;
}

static void test_kfree_and_krealloc_name_themselves(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, R_NR, cols, C_NR, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kfree_and_krealloc_name_themselves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
