// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Hostile use of what the allocator work added: a slab that lives in its
 * first block's header (pointers aimed at it), per-thread node caches
 * (nodes made on one thread and released on another, callbacks that
 * allocate while their own node is being released), the ticket lock and
 * the doubly linked stack of open groups (changed from a release
 * callback). Every case ends with devres_check() and the fixture's
 * ledger check.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"

/*
 * Pointers into the block that holds a slot, where no slot starts: its
 * header (the bitmap, then the slab itself), the middle of the slot, the
 * byte after the block. Each is refused with one WARN and changes nothing.
 * (ASan builds have no blocks: the same pointers are foreign heap ones.)
 */
static void test_pointers_into_the_block_header(void **state)
{
	static const uintptr_t offsets[] = { 0,	  16,	 64,	512,
					     528, 0x220, 0x300, 1008 };
	struct device *dev = *state;
	unsigned char *p = devm_kmalloc(dev, 64, GFP_KERNEL);
	uintptr_t block = (uintptr_t)p & ~(uintptr_t)0xffff;

	assert_non_null(p);
	memset(p, 0x5a, 64);
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		void *bad = (void *)(block + offsets[i]);

		if (bad == p)
			continue;
		start_capture();
		devm_kfree(dev, bad);
		expect_warn("devm_kfree", "is not a managed allocation of this "
					  "device");
		start_capture();
		assert_null(devm_krealloc(dev, bad, 8, GFP_KERNEL));
		assert_int_equal(cap.n, 1);
		assert_int_equal(devres_check(dev), 0);
	}
	start_capture();
	devm_kfree(dev, p + 16);
	expect_warn("devm_kfree", "is not a managed allocation of this device");
	expect_stats(dev, 1, 64);
	for (int b = 0; b < 64; b++)
		assert_int_equal(p[b], 0x5a);
	devm_kfree(dev, p);
	start_capture();
	devm_kfree(dev, p); /* twice */
	expect_warn("devm_kfree", "is not a managed allocation of this device");
	assert_int_equal(devres_check(dev), 0);
}

static int released, allocs_in_release;

static void count_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
}

/*
 * A release that allocates on its own device while release_all runs:
 * heap nodes of every class (the chunks of the nodes released just before
 * are in this thread's cache now), small managed memory (the device's
 * slab was taken with the list), an action, and a group.
 */
static void allocating_release(struct device *dev, void *res)
{
	(void)res;
	if (allocs_in_release++ >= 3)
		return;
	for (size_t size = 0; size <= 256; size += 24) {
		unsigned char *n = devres_alloc(count_release, size, 0);
		unsigned char *m = devm_kmalloc(dev, size + 1, GFP_KERNEL);

		assert_non_null(n);
		assert_non_null(m);
		memset(n, 0xa5, size);
		memset(m, 0x5a, size + 1);
		devres_add(dev, n);
	}
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
	devres_add(dev, devres_alloc(allocating_release, 16, 0));
	devres_close_group(dev, NULL);
}

static void test_release_allocates_on_its_device(void **state)
{
	struct device *dev = *state;

	released = allocs_in_release = 0;
	for (int i = 0; i < 100; i++)
		devres_add(dev, devres_alloc(count_release, 40, 0));
	devres_add(dev, devres_alloc(allocating_release, 8, 0));
	for (int i = 0; i < 100; i++)
		devres_add(dev, devres_alloc(count_release, 40, 0));
	/*
	 * One pass releases what was listed when it began; what the
	 * releases add waits for the next, as in the kernel.
	 */
	devres_release_all(dev);
	/* 11 heap nodes of 0..240 B, 11 slots of 1..241 B, one 16 B release */
	expect_stats(dev, 23, 1320 + 1331 + 16);
	for (int pass = 0; pass < 10 && devres_release_all(dev) > 0; pass++)
		;
	expect_stats(dev, 0, 0);
	assert_int_equal(allocs_in_release, 4);
	assert_int_equal(released, 200 + 3 * 11);
	assert_int_equal(devres_check(dev), 0);
}

#define PER_THREAD 3000

static int stop;

static void *adder(void *arg)
{
	struct device *dev = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		void *p = devres_alloc(count_release, (size_t)(i % 300), 0);

		if (!p)
			return NULL;
		devres_add(dev, p);
		if (i % 7 == 0 &&
		    devm_add_action(dev, (void (*)(void *))free, NULL))
			return NULL;
	}
	return arg;
}

static void *releaser(void *arg)
{
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		devres_release_all(arg);
	return NULL;
}

/*
 * Nodes made on two threads, released by a third looping on release_all
 * and by this one: every chunk goes to the cache of a thread that did not
 * make it, and the makers exit with caches of their own (the memcheck
 * stage sees a chunk left behind as a leak).
 */
static void test_nodes_released_on_other_threads(void **state)
{
	struct device *dev = *state;
	pthread_t a, b, r;
	void *ra, *rb;

	released = 0;
	stop = 0;
	assert_int_equal(pthread_create(&r, NULL, releaser, dev), 0);
	assert_int_equal(pthread_create(&a, NULL, adder, dev), 0);
	assert_int_equal(pthread_create(&b, NULL, adder, dev), 0);
	assert_int_equal(pthread_join(a, &ra), 0);
	assert_int_equal(pthread_join(b, &rb), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_ptr_equal(ra, dev);
	assert_ptr_equal(rb, dev);
	devres_release_all(dev);
	assert_int_equal(__atomic_load_n(&released, __ATOMIC_RELAXED),
			 2 * PER_THREAD);
	assert_int_equal(devres_check(dev), 0);
}

static void *outer_id, *other_id;

/*
 * Run while devres_release_group() releases the inner group: removes an
 * older open group and closes a newer one, so the stack of open groups
 * changes under the release.
 */
static void stack_changing_release(struct device *dev, void *res)
{
	(void)res;
	devres_remove_group(dev, outer_id);
	devres_close_group(dev, other_id);
	assert_non_null(devres_open_group(dev, NULL, GFP_KERNEL));
}

static void test_release_changes_the_open_stack(void **state)
{
	struct device *dev = *state;
	void *inner;

	outer_id = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(outer_id);
	inner = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(inner);
	devres_add(dev, devres_alloc(stack_changing_release, 8, 0));
	devres_close_group(dev, inner);
	other_id = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(other_id);
	assert_non_null(devm_kmalloc(dev, 32, GFP_KERNEL));
	assert_int_equal(devres_release_group(dev, inner), 1);
	assert_int_equal(devres_check(dev), 0);
	/* What is left: the kmalloc and the group the release opened. */
	expect_stats(dev, 1, 32);
	devres_release_all(dev);
	assert_int_equal(devres_check(dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_pointers_into_the_block_header, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_release_allocates_on_its_device, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_nodes_released_on_other_threads, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_release_changes_the_open_stack, dev_setup,
			dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
