// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * Every managed acquisition that takes a device (states-calls.h), made on
 * that device from inside one of its match callbacks (devres_find()) or
 * for-each callbacks (devres_for_each_res()), where the device's devres
 * lock is the calling thread's, up the stack: the kernel would spin on
 * its own lock there. The call is refused with a WARN that names it and
 * says why, and returns its failure value; nothing is acquired: the ledger
 * is the same before and after the callback, and back at its baseline once
 * the device is gone, the window and the line free. Before, the calls that
 * acquire first and record after (managed pages, threads, revocables, fds,
 * maps, regions, interrupts, DMA) acquired, found the device's list
 * refused to them by devres_add() (whose WARN named it, not them), and
 * returned the resource as if managed: it was on no device, never given
 * back. Each cell in a child process under an alarm (cell-child.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"
#include "hostile/states-calls.h"

enum ctx {
	CTX_MATCH,
	CTX_FOR_EACH,
	NR_CTX
};

static const char *const ctx_names[NR_CTX] = {
	"a match callback of devres_find()",
	"a for-each callback of devres_for_each_res()",
};

static struct platform_device pd;
static const struct st_call *cur_call;
static struct st_slot slot;
static int calls, warns;
static bool got;
static char first[512];
static int lines_off;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (level != DEVRES_LOG_WARNING || strncmp(line, "WARNING: ", 9) != 0)
		return;
	if (!first[0])
		snprintf(first, sizeof(first), "%s", line);
	if (!strstr(line, "from a match or for-each callback"))
		lines_off++;
	if (getenv("CORE_REENTER_WARNS"))
		fprintf(stderr, "%s\n", line);
}

static void pd_release(struct device *dev)
{
	(void)dev;
}

static void anchor_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void call_here(struct device *dev)
{
	int w = devres_warn_count();

	calls++;
	got = cur_call->acq(dev, &slot);
	warns = devres_warn_count() - w;
}

static int match_calls(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	call_here(dev);
	return 0;
}

static void for_each_calls(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	call_here(dev);
}

static int cell_fail(const char *what)
{
	fprintf(stderr, "cell %s: %s\n", cur_call->name, what);
	return 1;
}

/*
 * Whether @line names the public call a row makes first: its name up to a
 * '+' or a '(' (the function behind a macro ends in _named), but
 * devm_krealloc(grow), which first takes what it grows.
 */
static bool names_call(const char *line, const char *row)
{
	char want[64], named[64];
	size_t n = strcspn(row, "+(");

	if (strncmp(row, "devm_krealloc(grow)", 19) == 0)
		return strstr(line, ": devm_kmalloc: ") != NULL;
	snprintf(want, sizeof(want), ": %.*s: ", (int)n, row);
	snprintf(named, sizeof(named), ": %.*s_named: ", (int)n, row);
	return strstr(line, want) || strstr(line, named);
}

static int cell(int row, int col)
{
	struct resource res[] = {
		DEFINE_RES_MEM_NAMED(ST_PDEV_MEM, 0x1000, "st-regs"),
		DEFINE_RES_IRQ_NAMED(st_line, "st-irq"),
	};
	struct devres_ledger base, before, after;
	int ret = 0;
	void *anchor;

	alarm(10);
	cur_call = &st_calls[row];
	devres_set_log_sink(sink, NULL);
	if (st_fixture_up())
		return cell_fail("fixture");
	devres_ledger_snapshot(&base);
	pd = (struct platform_device){ .name = "core-reenter", .id = -1 };
	pd.dev.release = pd_release;
	device_initialize(&pd.dev);
	if (platform_device_add_resources(&pd, res, 2) ||
	    platform_device_add(&pd))
		return cell_fail("the device was not added");
	anchor = devres_alloc(anchor_release, 8, GFP_KERNEL);
	if (!anchor)
		return cell_fail("no anchor");
	devres_add(&pd.dev, anchor);
	devres_ledger_snapshot(&before);
	if (col == CTX_MATCH)
		devres_find(&pd.dev, anchor_release, match_calls, NULL);
	else
		devres_for_each_res(&pd.dev, anchor_release, NULL, NULL,
				    for_each_calls, NULL);
	devres_ledger_snapshot(&after);
	if (calls != 1)
		ret |= cell_fail("the call was not made once");
	if (got)
		ret |= cell_fail("the call got its resource");
	if (warns < 1 || lines_off)
		ret |= cell_fail("not refused as a call from a callback");
	if (!names_call(first, cur_call->name))
		ret |= cell_fail("the first WARN does not name the call");
	if (devres_ledger_diff(&before, &after, stderr))
		ret |= cell_fail("the callback left something acquired");
	if (ret)
		fprintf(stderr, "  in %s: got %d, %d WARN(s), first \"%s\"\n",
			ctx_names[col], got, warns, first);
	platform_device_unregister(&pd);
	if (platform_device_add_resources(&pd, NULL, 0))
		ret |= cell_fail("resources");
	return ret | st_cell_end(&base, cell_fail);
}

static void every_call_from_its_devices_callbacks(void **state)
{
	static const char *rows[ST_NCALLS];

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (int i = 0; i < ST_NCALLS; i++)
		rows[i] = st_calls[i].name;
	run_cells_in_children_wide(cell, rows, ST_NCALLS, ctx_names, NR_CTX, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_call_from_its_devices_callbacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
