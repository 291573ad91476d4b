// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box */
/*
 * The invariant checks, white-box: this test links the
 * static library and includes the core's private header, so that it can
 * break a device's list on purpose and call the hidden checker directly.
 * Each corruption is undone before the device is torn down.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"
#include "../../src/base/node.h"

/* The hidden checker, as the library's own asserts call it. */
static int check(struct device *dev, char *why, size_t len)
{
	int ret;

	assert_true(lock_dev(dev, "test"));
	ret = devres__check_locked(dev, NULL, why, len);
	unlock_dev(dev);
	return ret;
}

/* The checker finds @what, and devres_check() WARNs it once. */
static void expect_broken(struct device *dev, const char *what)
{
	char why[160] = "";

	assert_int_equal(check(dev, why, sizeof(why)), -EUCLEAN);
	if (!strstr(why, what))
		print_error("want \"%s\" in \"%s\"\n", what, why);
	assert_non_null(strstr(why, what));
	start_capture();
	assert_int_equal(devres_check(dev), -EUCLEAN);
	expect_warn("devres_check", what);
}

static void test_sound_lists_pass(void **state)
{
	struct device *dev = *state;
	char why[160] = "";
	void *g, *h;

	assert_int_equal(check(dev, why, sizeof(why)), 0);
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	h = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(devm_kmalloc(dev, 4, GFP_KERNEL));
	devres_close_group(dev, g); /* groups need not nest */
	assert_non_null(devm_kmalloc(dev, 2, GFP_KERNEL));
	assert_int_equal(check(dev, why, sizeof(why)), 0);
	assert_int_equal(devres_check(dev), 0);
	devres_close_group(dev, h);
	assert_int_equal(devres_check(dev), 0);
	assert_int_equal(devres_release_group(dev, g), 1);
	assert_int_equal(devres_check(dev), 0);
}

static void test_cycle_is_caught(void **state)
{
	struct device *dev = *state;
	char *a = devm_kmalloc(dev, 8, GFP_KERNEL);
	char *b = devm_kmalloc(dev, 8, GFP_KERNEL);
	char *c = devm_kmalloc(dev, 8, GFP_KERNEL);

	/* c -> b -> a -> NULL becomes c -> b -> a -> b ... */
	to_node(a)->next = to_node(b);
	expect_broken(dev, "cycle");
	/* A node linked to itself: the shortest cycle. */
	to_node(a)->next = NULL;
	to_node(c)->next = to_node(c);
	expect_broken(dev, "cycle");
	to_node(c)->next = to_node(b);
	assert_int_equal(devres_check(dev), 0);
}

static void test_unmarked_node_is_caught(void **state)
{
	struct device *dev = *state;
	char *a = devm_kmalloc(dev, 8, GFP_KERNEL);
	uint32_t slab = to_node(a)->kind & DR_SLAB; /* where it lives */

	to_node(a)->kind &= ~DR_ADDED;
	expect_broken(dev, "not marked added");
	to_node(a)->kind |= DR_ADDED;
	to_node(a)->kind = DR_ADDED | 0xfffffu;
	expect_broken(dev, "no known kind");
	to_node(a)->kind = DR_ADDED | DR_KIND_KMALLOC | slab;
	assert_int_equal(devres_check(dev), 0);
}

static void test_unpaired_markers_are_caught(void **state)
{
	struct device *dev = *state;
	struct devres__group *g = devres_open_group(dev, NULL, GFP_KERNEL);
	char *a = devm_kmalloc(dev, 8, GFP_KERNEL);
	struct devres__node *saved;

	devres_close_group(dev, g);
	/* Head: close -> a -> open. Drop the open marker: close is alone. */
	saved = to_node(a)->next;
	to_node(a)->next = g->open.next;
	expect_broken(dev, "no open marker");
	to_node(a)->next = saved;
	/* A group marked closed whose close marker is not on the list. */
	dev->devres_head = to_node(a);
	expect_broken(dev, "marked closed");
	dev->devres_head = &g->close;
	assert_int_equal(devres_check(dev), 0);
}

/* The stack of open groups must be the open markers, in the list's order. */
static void test_open_stack_is_checked(void **state)
{
	struct device *dev = *state;
	struct devres__group *g0 = devres_open_group(dev, NULL, GFP_KERNEL);
	struct devres__group *g1 = devres_open_group(dev, NULL, GFP_KERNEL);
	char *a = devm_kmalloc(dev, 8, GFP_KERNEL);
	struct devres__group *g2 = devres_open_group(dev, NULL, GFP_KERNEL);

	assert_ptr_equal(dev->devres_open, g2);
	assert_int_equal(devres_check(dev), 0);
	/* A bad back link would corrupt the stack at the next close. */
	g1->stack.newer = g0;
	expect_broken(dev, "links back");
	g1->stack.newer = g2;
	/* A lost top: a NULL id would name the wrong group. */
	dev->devres_open = g1;
	expect_broken(dev, "not where the stack");
	dev->devres_open = g2;
	/* An entry past the open groups on the list (here a cycle). */
	g0->stack.older = g1;
	expect_broken(dev, "not listed as open");
	g0->stack.older = NULL;
	/* Open, but off the stack: not closed either. */
	g1->open.kind &= ~DR_STACKED;
	expect_broken(dev, "neither open nor closed");
	g1->open.kind |= DR_STACKED;
	/* Only an open group's marker is stacked. */
	to_node(a)->kind |= DR_STACKED;
	expect_broken(dev, "no live group");
	to_node(a)->kind &= ~DR_STACKED;
	assert_int_equal(devres_check(dev), 0);
	/* Outermost first: the stack stays sound. */
	devres_close_group(dev, g0);
	assert_int_equal(devres_check(dev), 0);
	devres_remove_group(dev, g1);
	assert_ptr_equal(dev->devres_open, g2);
	assert_int_equal(devres_check(dev), 0);
	devres_close_group(dev, NULL);
	assert_null(dev->devres_open);
	assert_int_equal(devres_check(dev), 0);
}

static void test_kept_count_is_checked(void **state)
{
	struct device *dev = *state;

	dev->devres_kept++;
	expect_broken(dev, "kept layer-owned markers");
	dev->devres_kept--;
	assert_int_equal(devres_check(dev), 0);
}

/* A layer-owned group: invisible to groups, kept, released by its owner. */
static void test_owned_group(void **state)
{
	struct device *dev = *state;
	struct devres__group owned = { 0 };
	char *dump;
	void *g;

	g = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_int_equal(devres__owned_open(dev, &owned, "the layer", 0), 0);
	/* Opening it twice would link it twice. */
	start_capture();
	assert_int_equal(devres__owned_open(dev, &owned, "the layer", 0),
			 -EBUSY);
	expect_warn("devres__owned_open", "already open");
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	dump = dump_to_string(dev);
	assert_non_null(strstr(dump, "-- the layer --"));
	free(dump);
	/* A NULL id reaches the driver's group, not the layer's. */
	devres_close_group(dev, NULL);
	assert_int_equal(devres_check(dev), 0);
	/* The enclosing group releases the resources, leaves the marker. */
	assert_int_equal(devres_release_group(dev, g), 1);
	assert_true(owned.open.kind & DR_ADDED);
	assert_int_equal(devres_check(dev), 0);
	assert_int_equal(devres__owned_release(dev, &owned), 0);
	assert_false(owned.open.kind & DR_ADDED);
	assert_int_equal(devres_check(dev), 0);

	/* Kept: devres_release_all() leaves it, in its place. */
	assert_int_equal(
		devres__owned_open(dev, &owned, "kept", DEVRES_OWNED_KEEP), 0);
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	assert_int_equal(devres_release_all(dev), 1);
	assert_ptr_equal(dev->devres_head, &owned.open);
	assert_int_equal(dev->devres_kept, 1);
	assert_int_equal(devres_check(dev), 0);
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	assert_int_equal(devres__owned_release(dev, &owned), 1);
	assert_int_equal(dev->devres_kept, 0);
	assert_null(dev->devres_head);
}

/*
 * Debug builds assert by themselves, and abort: a release_all over a
 * broken list, and a *_locked helper called without the lock. In a child,
 * so that the abort is observed.
 */
static int child_status(void (*fn)(struct device *))
{
	static struct device dev;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* The child's BUG line would clutter the test's output. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		signal(SIGABRT, SIG_DFL);
		/* A device of its own: the parent's are not the child's. */
		if (init_dev(&dev, "child"))
			_exit(3);
		fn(&dev);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void release_cycle(struct device *dev)
{
	char *a = devm_kmalloc(dev, 8, GFP_KERNEL);

	to_node(a)->next = to_node(a);
	devres_release_all(dev);
}

static void add_unlocked(struct device *dev)
{
	struct devres__node *n = devres__alloc_node(DR_KIND_KMALLOC, 8, false);

	add_locked(dev, n);
}

static void test_debug_build_aborts(void **state)
{
	int st;

	(void)state;
#ifndef DEVRES_CHECKS
	skip();
#endif
	st = child_status(release_cycle);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	st = child_status(add_unlocked);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

/* Release builds compile the asserts out: a release_all then goes on. */
static void test_release_build_does_not_assert(void **state)
{
	(void)state;
#ifdef DEVRES_CHECKS
	skip();
#endif
	assert_int_equal(child_status(add_unlocked), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_sound_lists_pass),
		T(test_cycle_is_caught),
		T(test_unmarked_node_is_caught),
		T(test_unpaired_markers_are_caught),
		T(test_open_stack_is_checked),
		T(test_kept_count_is_checked),
		T(test_owned_group),
		T(test_debug_build_aborts),
		T(test_release_build_does_not_assert),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
