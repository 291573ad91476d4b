// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * The DMA debug check of a binding runs after every resource of it is
 * gone, also when memory runs out during the release: a release that had
 * to allocate to put the check off could only run it at once, before the
 * resources acquired ahead of the first mapping (an action that unmaps, a
 * pool), and report their mappings as leaks.
 *
 * Each case acquires, in the order of its row: an action that unmaps a
 * streaming mapping made after it, a managed pool with a chunk freed, a
 * managed coherent buffer, then the first debug mapping; the release runs
 * with every allocation of the process failing from the newest resource
 * to the oldest (a test-only malloc() of this program, which the library
 * calls too). No report, nothing left mapped, the ledger unmoved. Every
 * fault position of the acquisition itself fails the map cleanly or
 * arms the check.
 *
 * The failing malloc() replaces libc's only in builds without a
 * sanitizer (whose runtimes own malloc), and is not called under
 * valgrind (which replaces it): there, the same orders run with the
 * allocator untouched, and the fault positions as everywhere. The
 * program says which on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

#if !defined(T_ASAN) && !defined(T_TSAN)
#define FAILING_MALLOC 1
extern void *
__libc_malloc(size_t size); /* NOLINT(bugprone-reserved-identifier) */
#endif

static bool oom; /* every malloc() fails while set */
static unsigned long refused;
static bool failing; /* this program's malloc() is the one called */

#ifdef FAILING_MALLOC
void *malloc(size_t size)
{
	if (__atomic_load_n(&oom, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(size);
}
#endif

static const struct bus_type obus = { .name = "dma-oom" };

static char buf[64], buf2[32];
static dma_addr_t h, h2;
static bool mapped;

static void oom_on(void *arg)
{
	(void)arg;
	__atomic_store_n(&oom, true, __ATOMIC_RELAXED);
}

static void unmap(void *arg)
{
	if (mapped)
		dma_unmap_single(arg, h, sizeof(buf), DMA_TO_DEVICE);
	mapped = false;
}

static void unmap2(void *arg)
{
	dma_unmap_single(arg, h2, sizeof(buf2), DMA_FROM_DEVICE);
}

enum {
	A_ACTION,
	A_POOL,
	A_COHERENT,
	A_NR
};

static int acquire_one(struct device *dev, int what)
{
	struct dma_pool *pool;
	dma_addr_t ph;
	void *p;

	switch (what) {
	case A_ACTION:
		if (devm_add_action(dev, unmap, dev))
			return -ENOMEM;
		h = dma_map_single(dev, buf, sizeof(buf), DMA_TO_DEVICE);
		if (dma_mapping_error(dev, h))
			return -ENOMEM;
		mapped = true;
		return 0;
	case A_POOL:
		pool = dmam_pool_create("oom", dev, 64, 8, 0);
		p = pool ? dma_pool_alloc(pool, GFP_KERNEL, &ph) : NULL;
		if (!p)
			return -ENOMEM;
		dma_pool_free(pool, p, ph);
		return 0;
	default:
		return dmam_alloc_coherent(dev, 4096, &ph, GFP_KERNEL)
			       ? 0
			       : -ENOMEM;
	}
}

static const int orders[][A_NR] = {
	{ A_ACTION, A_POOL, A_COHERENT }, { A_ACTION, A_COHERENT, A_POOL },
	{ A_POOL, A_ACTION, A_COHERENT }, { A_POOL, A_COHERENT, A_ACTION },
	{ A_COHERENT, A_ACTION, A_POOL }, { A_COHERENT, A_POOL, A_ACTION },
};

static const int *order_now;

/*
 * The row's resources, then a mapping undone by an action added after
 * it, then oom_on (released first): the whole release, and what runs
 * after it, is out of memory until the test lets the allocator go.
 */
static int oom_probe(struct device *dev)
{
	int ret = 0;

	for (int i = 0; !ret && i < A_NR; i++)
		ret = acquire_one(dev, order_now[i]);
	if (ret)
		return ret;
	h2 = dma_map_single(dev, buf2, sizeof(buf2), DMA_FROM_DEVICE);
	if (dma_mapping_error(dev, h2))
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, unmap2, dev);
	return ret ? ret : devm_add_action(dev, oom_on, NULL);
}

static struct device_driver oom_drv = {
	.name = "oom",
	.bus = &obus,
	.probe = oom_probe,
};

static void every_order_oom_release(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;

	(void)state;
	devres_set_dma_debug(true);
	dev = heap_dev(&obus, "oom0");
	assert_int_equal(device_add(dev), 0);
	order_now = orders[0];
	assert_int_equal(driver_register(&oom_drv), 0);
	device_release_driver(dev);
	devres_ledger_snapshot(&before);
	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		order_now = orders[o];
		refused = 0;
		start_capture();
		assert_int_equal(device_driver_attach(&oom_drv, dev), 0);
		device_release_driver(dev);
		__atomic_store_n(&oom, false, __ATOMIC_RELAXED);
		if (devres_warn_count())
			fprintf(stderr, "order %zu\n", o);
		expect_no_warn();
		assert_false(mapped);
		/* The allocator was really refusing, in every order. */
		if (failing)
			assert_true(refused > 0);
	}
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	driver_unregister(&oom_drv);
	device_del(dev);
	put_device(dev);
	devres_set_dma_debug(false);
}

/*
 * Each fault position of a binding's acquisition, the first debug
 * mapping's included: the probe fails with nothing left, or binds and
 * unbinds with no report.
 */
static void every_fault_position(void **state)
{
	struct devres_ledger before, after;
	struct device *dev;
	int failed = 0, n;

	(void)state;
	devres_set_dma_debug(true);
	dev = heap_dev(&obus, "oom1");
	assert_int_equal(device_add(dev), 0);
	order_now = orders[0];
	assert_int_equal(driver_register(&oom_drv), 0);
	device_release_driver(dev);
	devres_ledger_snapshot(&before);
	for (n = 1; n < 200; n++) {
		int ret;

		start_capture();
		devres_fail_nth((unsigned int)n);
		ret = device_driver_attach(&oom_drv, dev);
		devres_fail_nth(0);
		device_release_driver(dev);
		__atomic_store_n(&oom, false, __ATOMIC_RELAXED);
		expect_no_warn();
		assert_false(mapped);
		if (!ret)
			break;
		failed++;
	}
	assert_true(n < 200);
	assert_true(failed > 5);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	driver_unregister(&oom_drv);
	device_del(dev);
	put_device(dev);
	devres_set_dma_debug(false);
}

int main(void)
{
	void *probe;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_order_oom_release),
		cmocka_unit_test(every_fault_position),
	};

	/*
	 * A checker that replaces malloc() in every object (valgrind) leaves
	 * this one uncalled: the orders then run with the allocator as it is.
	 */
	oom = true;
	probe = malloc(1);
	oom = false;
	failing = !probe;
	free(probe);
	fprintf(stderr, "allocation failure during release: %s\n",
		failing ? "injected" : "not injected (malloc is a checker's)");
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &obus);
}
