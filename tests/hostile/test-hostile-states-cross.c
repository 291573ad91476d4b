// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * A resource passed between devices: acquired by a managed call on one
 * device (A) and given to the managed release of another (B), for every
 * managed release that takes a device (states-calls.h), with B in each
 * state it can take a call in (initialized, added, deleted with a
 * reference held).
 *
 * Nothing of A's is given back (the ledger does not move at B's call,
 * and A's own release of it then works with no WARN), and B's call makes
 * one WARN naming B. Where the resource's own record says who owns it
 * (mappings, coherent buffers, handlers, regions, ranges, descriptors,
 * streams) and where it does not (memory, pages, actions, groups,
 * threads: the live device that has it is found on the WARN's path), the
 * WARN names A too, and the call that acquired it. Before, it said only
 * that B did not manage it, which reads as "never acquired".
 * devres_release(), devres_destroy() and devres_remove() never WARN:
 * they answer -ENOENT or NULL. devm_krealloc() of A's block on B is
 * refused the same way (its own table).
 *
 * Each cell runs in a child of its own under an alarm (cell-child.h).
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

enum bst {
	B_INITIALIZED,
	B_ADDED,
	B_DELETED_HELD,
	NR_BST
};

static const char *const bst_names[NR_BST] = {
	"B initialized",
	"B added",
	"B deleted, a reference held",
};

static struct platform_device pa, pb;
static int released;
static char last_warn[512];
static int nwarn_lines;

static void count_release(struct device *dev)
{
	(void)dev;
	released++;
}

/* Keeps the last WARN line; STATES_CROSS_WARNS=1 prints each. */
static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	nwarn_lines++;
	snprintf(last_warn, sizeof(last_warn), "%s", line + 9);
	if (getenv("STATES_CROSS_WARNS"))
		fprintf(stderr, "%s\n", line);
}

/* The releases that never WARN: not finding is an answer. */
static bool silent(const struct st_call *c)
{
	return c->rel == st_node_release_call || c->rel == st_node_destroy ||
	       c->rel == st_node_remove;
}

/*
 * Every release that WARNs names the owner: from the resource's record
 * (mappings, coherent buffers, handlers, regions, ranges, descriptors,
 * streams), or, where the node keeps none (memory, pages, actions,
 * groups, threads), from the live device that has it.
 */
static bool names_owner(const struct st_call *c)
{
	return !silent(c);
}

static void pdev_zero(struct platform_device *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->id = PLATFORM_DEVID_NONE;
	p->dev.release = count_release;
}

static int devices_up(enum bst b)
{
	struct resource res[] = {
		DEFINE_RES_MEM_NAMED(ST_PDEV_MEM, 0x1000, "cross-regs"),
		DEFINE_RES_IRQ_NAMED(st_line, "cross-irq"),
	};

	pdev_zero(&pa, "cross-a");
	pdev_zero(&pb, "cross-b");
	released = 0;
	if (platform_device_add_resources(&pa, res, 2) ||
	    platform_device_register(&pa))
		return -1;
	device_initialize(&pb.dev);
	if (b == B_INITIALIZED)
		return dev_set_name(&pb.dev, "cross-b");
	if (platform_device_add(&pb))
		return -1;
	if (b == B_DELETED_HELD) {
		get_device(&pb.dev);
		platform_device_del(&pb);
	}
	return 0;
}

static void devices_down(enum bst b)
{
	platform_device_unregister(&pa);
	if (b == B_ADDED)
		platform_device_del(&pb);
	if (b == B_DELETED_HELD)
		put_device(&pb.dev);
	put_device(&pb.dev);
	(void)platform_device_add_resources(&pa, NULL, 0);
}

static const struct st_call *cur;
static enum bst cur_b;
/* The table's columns: the calls of st_calls[] with a release. */
static int cols_call[ST_NCALLS];

static int cell_fail(const char *what)
{
	fprintf(stderr, "cell %s / %s: %s\n", bst_names[cur_b], cur->name,
		what);
	return 1;
}

static int cross(const struct st_call *c)
{
	struct devres_ledger before, after;
	static struct st_slot s;
	int w0, ret = 0;

	memset(&s, 0, sizeof(s));
	if (!c->acq(&pa.dev, &s))
		return cell_fail("A's acquisition failed");
	devres_ledger_snapshot(&before);
	w0 = devres_warn_count();
	nwarn_lines = 0;
	last_warn[0] = '\0';
	c->rel(&pb.dev, &s);
	devres_ledger_snapshot(&after);
	if (devres_ledger_diff(&before, &after, stderr))
		ret |= cell_fail("B's call gave back something of A's");
	if (devres_warn_count() - w0 != (silent(c) ? 0 : 1) ||
	    nwarn_lines != devres_warn_count() - w0) {
		fprintf(stderr, "  %d WARN(s), %d line(s): %s\n",
			devres_warn_count() - w0, nwarn_lines, last_warn);
		ret |= cell_fail("not one WARN");
	}
	if (!silent(c) && strncmp(last_warn, "cross-b: ", 9) != 0)
		ret |= cell_fail("the WARN does not name B first");
	if (names_owner(c) && !strstr(last_warn, "it is cross-a's, acquired "
						 "with ")) {
		fprintf(stderr, "  %s\n", last_warn);
		ret |= cell_fail("the WARN does not name A, the owner");
	}
	/* A's own release of it works, with no WARN: its record is whole. */
	w0 = devres_warn_count();
	c->rel(&pa.dev, &s);
	if (devres_warn_count() != w0)
		ret |= cell_fail("A's own release WARNed");
	return ret;
}

static int cell(int row, int col)
{
	struct devres_ledger base;
	int ret;

	alarm(10);
	cur_b = (enum bst)row;
	cur = &st_calls[cols_call[col]];
	devres_set_log_sink(sink, NULL);
	if (st_fixture_up())
		return cell_fail("fixture");
	devres_ledger_snapshot(&base);
	if (devices_up(cur_b))
		return cell_fail("devices");
	/* B has a resource: releasing an unknown group on it WARNs. */
	if (!devm_kmalloc(&pb.dev, 8, GFP_KERNEL))
		return cell_fail("B's allocation");
	ret = cross(cur);
	devices_down(cur_b);
	if (released != 2)
		ret |= cell_fail("A and B were not released once each");
	return ret | st_cell_end(&base, cell_fail);
}

static void every_release_given_another_devices(void **state)
{
	static const char *cols[ST_NCALLS];
	int n = 0;

	(void)state;
	/* Every release that takes a device (a pool's takes only the pool). */
	for (int i = 0; i < ST_NCALLS; i++) {
		if (!st_calls[i].rel || st_calls[i].rel == st_pool_destroy)
			continue;
		cols_call[n] = i;
		cols[n++] = st_calls[i].name;
	}
	run_cells_in_children(cell, bst_names, NR_BST, cols, n);
}

/*
 * One release given a resource of its own device that another managed
 * call acquired: devm_iounmap() of a devm_mmap() mapping, devm_munmap()
 * of a devm_ioremap() one. The WARN says whose it is, this device's, and
 * what gives it back; nothing is released.
 */
static int own_other_call(int row, int col)
{
	struct devres_ledger before, after;
	void *mm, *io;
	int w0, ret = 0;

	(void)row;
	(void)col;
	alarm(10);
	devres_set_log_sink(sink, NULL);
	cur = &st_calls[0];
	cur_b = B_ADDED;
	if (st_fixture_up() || devices_up(B_ADDED))
		return cell_fail("fixture");
	mm = devm_mmap(&pa.dev, NULL, 4096, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	io = devm_ioremap(&pa.dev, ST_MEM, 0x1000);
	if (IS_ERR(mm) || !io)
		return cell_fail("acquisitions");
	devres_ledger_snapshot(&before);
	w0 = devres_warn_count();
	devm_iounmap(&pa.dev, mm);
	if (!strstr(last_warn, "it is this device's, acquired with "
			       "devm_mmap() (use devm_munmap())"))
		ret |= cell_fail(last_warn);
	devm_munmap(&pa.dev, (void *)io, 0x1000);
	if (!strstr(last_warn, "it is this device's, acquired with "
			       "devm_ioremap() (use devm_iounmap())"))
		ret |= cell_fail(last_warn);
	devres_ledger_snapshot(&after);
	if (devres_warn_count() - w0 != 2 ||
	    devres_ledger_diff(&before, &after, stderr))
		ret |= cell_fail("not two WARNs, or something released");
	devm_munmap(&pa.dev, mm, 4096);
	devm_iounmap(&pa.dev, (void *)io);
	if (devres_warn_count() - w0 != 2)
		ret |= cell_fail("the right releases WARNed");
	devices_down(B_ADDED);
	if (st_fixture_down())
		ret |= cell_fail("the window is still in use");
	return ret;
}

static void own_device_other_call(void **state)
{
	static const char *const row[] = { "A" };
	static const char *const col[] = { "a release of another call's" };

	(void)state;
	run_cells_in_children(own_other_call, row, 1, col, 1);
}

/*
 * devm_krealloc() on B of a block of A's, grown and shrunk: refused (NULL),
 * one WARN naming A and the call that made it, nothing of A's moved.
 */
static int realloc_cell(int row, int col)
{
	struct devres_ledger before, after;
	size_t sizes[] = { 4096, 8 };
	int w0, ret = 0;
	char *p;

	(void)row;
	alarm(10);
	devres_set_log_sink(sink, NULL);
	cur = &st_calls[0];
	cur_b = B_ADDED;
	if (st_fixture_up() || devices_up(B_ADDED))
		return cell_fail("fixture");
	p = devm_kzalloc(&pa.dev, 64, GFP_KERNEL);
	if (!p)
		return cell_fail("A's allocation");
	devres_ledger_snapshot(&before);
	w0 = devres_warn_count();
	if (devm_krealloc(&pb.dev, p, sizes[col], GFP_KERNEL))
		ret |= cell_fail("B's devm_krealloc() of A's block worked");
	devres_ledger_snapshot(&after);
	if (devres_warn_count() - w0 != 1 ||
	    devres_ledger_diff(&before, &after, stderr))
		ret |= cell_fail("not one WARN, or something moved");
	if (!strstr(last_warn, "it is cross-a's, acquired with "
			       "devm_kzalloc() (use devm_krealloc())"))
		ret |= cell_fail(last_warn);
	devm_kfree(&pa.dev, p);
	if (devres_warn_count() - w0 != 1)
		ret |= cell_fail("A's own devm_kfree() WARNed");
	devices_down(B_ADDED);
	if (st_fixture_down())
		ret |= cell_fail("the window is still in use");
	return ret;
}

static void realloc_of_another_devices(void **state)
{
	static const char *const row[] = { "B added" };
	static const char *const col[] = { "grown", "shrunk" };

	(void)state;
	run_cells_in_children(realloc_cell, row, 1, col, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_release_given_another_devices),
		cmocka_unit_test(own_device_other_call),
		cmocka_unit_test(realloc_of_another_devices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
