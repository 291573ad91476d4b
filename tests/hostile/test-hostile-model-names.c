// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * The calls that change a device before it is added, each made while an
 * add of the same device runs: dev_set_name() and
 * platform_device_add_resources(). Each checks the device's state and
 * then changes it; an add that makes the device added in between must be
 * seen, or the call frees what the added device uses (its name, which
 * its platform resources and the bus's name check point at; the array of
 * resources the add put in the resource tree).
 *
 * dev_set_name()'s window is its format: a printf conversion of the
 * test's own (glibc's register_printf_specifier()) adds the device from
 * inside it, with device_add(), with platform_device_add(), or renames it
 * first, with dev_set_name(). platform_device_add_resources()'s is the
 * copy of its resources' names: the fault of reading one from a page made
 * unreadable adds the device from its handler. Each stands for another
 * thread's add landing there. Last, the other way round: a rename while
 * platform_device_add() names the device and lends the name to its
 * resources (the add's write of it into an owner's read-only array
 * faults, and the handler renames the device) is refused too. Before, the rename renamed the added device
 * and freed the name its resources and its bus's name check point at; the
 * new resources replaced, and freed, the array the add had put in the
 * resource tree.
 *
 * Each cell runs in a child of its own under an alarm (cell-child.h) and
 * checks the returns, the WARN count and the ledger back at its start.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <printf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include <devres/platform.h>
#include "hostile/cell-child.h"

/*
 * The fault's handler calls the library, as another thread would: it
 * interrupts no call of the library (the copy holds no lock), which
 * ThreadSanitizer cannot know.
 */
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
const char *__tsan_default_options(void);
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
const char *__tsan_default_options(void)
{
	return "report_signal_unsafe=0";
}

#define CELL_ALARM_S 10

enum row {
	R_DEVICE_ADD,	/* the format adds the device: -EBUSY */
	R_PLATFORM_ADD, /* the format adds the platform device: -EBUSY */
	R_RENAME,	/* the format renames it first: both renames hold */
	R_RESOURCES,	/* add_resources, the add in its copy: -EINVAL */
	R_NAMING,	/* dev_set_name while the add names resources: -EBUSY */
	NR_ROWS
};

static const char *const row_names[NR_ROWS] = {
	"dev_set_name, its format adds the device",
	"dev_set_name, its format adds the platform device",
	"dev_set_name, its format renames the device",
	"platform_device_add_resources, its copy adds the device",
	"dev_set_name, while platform_device_add names the resources",
};

static const char *const col_names[] = { "once" };

static struct device dev;
static struct platform_device *pdev;
static enum row cur_row;
static int inner_ret = 1;

/* The WARNs are counted, not printed: the loop's are many. */
static void quiet(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static void dev_release(struct device *d)
{
	(void)d;
}

/* The conversion %Y prints "renamed", after the call of the row. */
static int print_y(FILE *f, const struct printf_info *info,
		   const void *const *args)
{
	(void)info;
	(void)args;
	switch (cur_row) {
	case R_DEVICE_ADD:
		inner_ret = device_add(&dev);
		break;
	case R_PLATFORM_ADD:
		inner_ret = platform_device_add(pdev);
		break;
	default:
		inner_ret = dev_set_name(&dev, "inner");
		break;
	}
	return fprintf(f, "renamed");
}

static int arginfo_y(const struct printf_info *info, size_t n, int *argtypes,
		     int *size)
{
	(void)info;
	(void)n;
	(void)argtypes;
	(void)size;
	return 0;
}

/* The format is the test's own conversion, unknown to the compiler. */
static int set_name_y(struct device *d)
{
	static const char *volatile fmt = "%Y";

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
	return dev_set_name(d, fmt);
#pragma GCC diagnostic pop
}

static int cell_device(enum row row)
{
	int ret, w0 = devres_warn_count();

	device_initialize(&dev);
	dev.release = dev_release;
	if (dev_set_name(&dev, "first"))
		return 10;
	ret = set_name_y(&dev);
	if (row == R_DEVICE_ADD) {
		/* Added with its first name, which stays. */
		if (inner_ret != 0 || ret != -EBUSY)
			return 11;
		if (strcmp(dev_name(&dev), "first") != 0 ||
		    devres_warn_count() - w0 != 1)
			return 12;
		device_unregister(&dev);
		return 0;
	}
	/* Two renames, in turn: the outer one's name is the last. */
	if (inner_ret != 0 || ret != 0 ||
	    strcmp(dev_name(&dev), "renamed") != 0 || devres_warn_count() != w0)
		return 13;
	put_device(&dev);
	return 0;
}

static int cell_platform_add(void)
{
	struct resource res = { .start = 0x7a000,
				.end = 0x7a0ff,
				.flags = IORESOURCE_MEM };
	struct resource *r;
	int ret, w0 = devres_warn_count();

	pdev = platform_device_alloc("model-names", PLATFORM_DEVID_NONE);
	if (!pdev || platform_device_add_resources(pdev, &res, 1))
		return 20;
	ret = set_name_y(&pdev->dev);
	if (inner_ret != 0 || ret != -EBUSY || devres_warn_count() - w0 != 1)
		return 21;
	/* The resource the add named after the device still reads so. */
	r = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	if (!r || strcmp(dev_name(&pdev->dev), "model-names") != 0 ||
	    strcmp(r->name, "model-names") != 0 || !r->parent)
		return 22;
	platform_device_unregister(pdev);
	return 0;
}

/*
 * platform_device_add_resources()'s window has no callback of its own: the
 * name of the new resource is on a page the test made unreadable, and the
 * fault of the copy that reads it adds the device, from the signal's
 * handler, then makes the page readable and lets the copy go on.
 */
static char *guarded;
static size_t page_size;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char *addr = si->si_addr;

	(void)sig;
	(void)uc;
	if (addr < guarded || addr >= guarded + page_size)
		abort();
	if (cur_row == R_NAMING) {
		/* The add writes the device's name into the owner's array. */
		inner_ret = dev_set_name(&pdev->dev, "model-renamed");
		if (mprotect(guarded, page_size, PROT_READ | PROT_WRITE))
			abort();
		return;
	}
	if (mprotect(guarded, page_size, PROT_READ))
		abort();
	inner_ret = platform_device_add(pdev);
}

static int guard_page(void)
{
	struct sigaction sa = { .sa_sigaction = on_fault,
				.sa_flags = SA_SIGINFO };

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	guarded = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guarded == MAP_FAILED || sigaction(SIGSEGV, &sa, NULL))
		return -1;
	return 0;
}

static int cell_resources(void)
{
	struct resource res = { .start = 0x7b000,
				.end = 0x7b0ff,
				.flags = IORESOURCE_MEM };
	struct resource *r;
	int ret, w0;

	if (guard_page())
		return 30;
	snprintf(guarded, page_size, "%s", "model-res-other");
	pdev = platform_device_alloc("model-res", PLATFORM_DEVID_AUTO);
	if (!pdev || platform_device_add_resources(pdev, &res, 1))
		return 31;
	if (mprotect(guarded, page_size, PROT_NONE))
		return 32;
	w0 = devres_warn_count();
	res.name = guarded;
	ret = platform_device_add_resources(pdev, &res, 1);
	if (inner_ret != 0 || ret != -EINVAL || devres_warn_count() - w0 != 1)
		return 33;
	/* The array the device keeps is the one in the tree, named so. */
	r = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	if (!r || !r->parent || strcmp(r->name, dev_name(&pdev->dev)) != 0)
		return 34;
	platform_device_unregister(pdev);
	munmap(guarded, page_size);
	return 0;
}

/*
 * The device's resources are its owner's array, on a page the test made
 * read-only: the add's write of the device's name into it faults, and
 * the handler renames the device, as another thread would in that window.
 */
static int cell_naming(void)
{
	struct resource *r;
	int w0;

	if (guard_page())
		return 40;
	r = (struct resource *)(void *)guarded;
	r->start = 0x7c000;
	r->end = 0x7c0ff;
	r->flags = IORESOURCE_MEM;
	pdev = platform_device_alloc("model-own", PLATFORM_DEVID_NONE);
	if (!pdev)
		return 41;
	pdev->resource = r;
	pdev->num_resources = 1;
	if (mprotect(guarded, page_size, PROT_READ))
		return 42;
	w0 = devres_warn_count();
	if (platform_device_add(pdev) || inner_ret != -EBUSY ||
	    devres_warn_count() - w0 != 1)
		return 43;
	/* The name the resource points at is the device's, alive. */
	if (strcmp(dev_name(&pdev->dev), "model-own") != 0 ||
	    r->name != dev_name(&pdev->dev) || !r->parent)
		return 44;
	platform_device_unregister(pdev);
	munmap(guarded, page_size);
	return 0;
}

static int one_cell(int row, int col)
{
	struct devres_ledger before, after;
	int ret;

	(void)col;
	alarm(CELL_ALARM_S);
	cur_row = (enum row)row;
	if (register_printf_specifier('Y', print_y, arginfo_y))
		return 2;
	devres_set_log_sink(quiet, NULL);
	devres_ledger_snapshot(&before);
	switch (cur_row) {
	case R_DEVICE_ADD:
	case R_RENAME:
		ret = cell_device(cur_row);
		break;
	case R_PLATFORM_ADD:
		ret = cell_platform_add();
		break;
	case R_NAMING:
		ret = cell_naming();
		break;
	default:
		ret = cell_resources();
		break;
	}
	if (ret)
		return ret;
	devres_ledger_snapshot(&after);
	return devres_ledger_diff(&before, &after, stderr) ? 3 : 0;
}

static void test_names(void **state)
{
	(void)state;
	run_cells_in_children(one_cell, row_names, NR_ROWS, col_names, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
