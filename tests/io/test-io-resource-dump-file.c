// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * resource_dump() to a FILE that calls back into the library or blocks:
 * it wrote to the FILE under the tree's lock, so a fopencookie() writer
 * that claims a region, puts a range in, asks iomem_is_exclusive() or
 * dumps the tree again deadlocked on that lock, and a FILE on a full pipe
 * stalled every call on the tree (another thread's claim waited for the
 * reader). Now the tree is printed into memory under the lock and written
 * out after it. Each cell runs in a child under an alarm: a deadlock is a
 * failed cell. The writers' calls must succeed, the dump print every
 * line, and the tree keep its shape.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <fcntl.h>
#include <pthread.h>
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
#include "testlib.h"
#include "hostile/cell-child.h"
#include "io/tree-check.h"

#define BASE 0x7e000000ull
#define CELL_ALARM_S 5

enum writer {
	W_CLAIM,
	W_REQUEST,
	W_EXCLUSIVE,
	W_DUMP,
	W_FULL_PIPE,
	W_NR
};

static const char *const rows[W_NR] = {
	[W_CLAIM] = "writer claims a region",
	[W_REQUEST] = "writer puts a range in",
	[W_EXCLUSIVE] = "writer asks iomem_is_exclusive",
	[W_DUMP] = "writer dumps the tree",
	[W_FULL_PIPE] = "a full pipe, another thread claims",
};

static const char *const cols[] = { "resource_dump" };

static int failures;

static int cell_fail(const char *what)
{
	fprintf(stderr, "  %s\n", what);
	return 1;
}

static ssize_t writer(void *cookie, const char *buf, size_t n)
{
	enum writer w = (enum writer)(intptr_t)cookie;
	struct resource mine = DEFINE_RES_MEM_NAMED(BASE + 0x1000, 0x10, "w");
	char *copy = NULL;
	size_t size = 0;
	FILE *f;

	(void)buf;
	switch (w) {
	case W_CLAIM:
		if (!request_mem_region(BASE + 0x1000, 0x10, "w"))
			failures++;
		else
			release_mem_region(BASE + 0x1000, 0x10);
		break;
	case W_REQUEST:
		if (request_resource(&iomem_resource, &mine) ||
		    release_resource(&mine))
			failures++;
		break;
	case W_EXCLUSIVE:
		if (iomem_is_exclusive(BASE))
			failures++;
		break;
	case W_DUMP:
		f = open_memstream(&copy, &size);
		if (!f || resource_dump(&iomem_resource, f) < 1)
			failures++;
		if (f)
			fclose(f);
		free(copy);
		break;
	default:
		break;
	}
	return (ssize_t)n;
}

struct dump_arg {
	FILE *f;
	int lines;
};

static void *dumper(void *arg)
{
	struct dump_arg *d = arg;

	int n = resource_dump(&iomem_resource, d->f);

	fflush(d->f);
	__atomic_store_n(&d->lines, n, __ATOMIC_RELEASE);
	return NULL;
}

/* A dump blocked on a full pipe must not hold up another thread's claim. */
static int full_pipe(int lines)
{
	struct dump_arg d = { 0 };
	char sink[4096] = { 0 };
	pthread_t t;
	int fds[2], ret = 0, fl;

	if (pipe(fds))
		return cell_fail("pipe");
	fl = fcntl(fds[1], F_GETFL);
	(void)fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
	while (write(fds[1], sink, sizeof(sink)) > 0)
		;
	(void)fcntl(fds[1], F_SETFL, fl);
	d.f = fdopen(fds[1], "w");
	if (!d.f)
		return cell_fail("fdopen");
	setvbuf(d.f, NULL, _IONBF, 0);
	pthread_create(&t, NULL, dumper, &d);
	usleep(20000); /* the dump is now blocked on the pipe, or soon */
	if (!request_mem_region(BASE + 0x2000, 0x10, "other"))
		ret |= cell_fail("the other thread's claim failed");
	else
		release_mem_region(BASE + 0x2000, 0x10);
	(void)fcntl(fds[0], F_SETFL, O_NONBLOCK);
	while (__atomic_load_n(&d.lines, __ATOMIC_ACQUIRE) == 0)
		if (read(fds[0], sink, sizeof(sink)) <= 0)
			usleep(1000);
	pthread_join(t, NULL);
	if (d.lines != lines)
		ret |= cell_fail("not every line dumped");
	fclose(d.f);
	close(fds[0]);
	return ret;
}

static int cell(int row, int col)
{
	enum writer w = (enum writer)row;
	cookie_io_functions_t io = { .write = writer };
	struct resource *a, *b;
	int ret = 0, lines;
	FILE *f;

	(void)col;
	alarm(CELL_ALARM_S);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	a = request_mem_region(BASE, 0x100, "a");
	b = request_mem_region(BASE + 0x100, 0x100, "b");
	if (!a || !b)
		return cell_fail("setup");
	lines = tree_check(&iomem_resource);
	if (w == W_FULL_PIPE) {
		ret |= full_pipe(lines);
	} else {
		f = fopencookie((void *)(intptr_t)w, "w", io);
		if (!f)
			return cell_fail("fopencookie");
		setvbuf(f, NULL, _IONBF, 0);
		if (resource_dump(&iomem_resource, f) != lines)
			ret |= cell_fail("not every line dumped");
		fclose(f);
	}
	if (failures)
		ret |= cell_fail("the writer's calls failed");
	if (tree_check(&iomem_resource) != lines)
		ret |= cell_fail("the tree changed");
	release_mem_region(BASE, 0x100);
	release_mem_region(BASE + 0x100, 0x100);
	return ret;
}

static void test_dump_file(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, rows, W_NR, cols, 1, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
