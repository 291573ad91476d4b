// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * Which registered devices are live objects: only one that its parent's
 * managed memory holds. A device outside it (the heap, a static), even
 * with a parent full of managed memory, leaves the record empty, so that
 * devm_kfree() and devres_release_all() keep their paths that ask the
 * record nothing (devres__liveobj_any() false). One inside a block, at
 * its start or inside a larger one, is live from device_add() to
 * device_del(), and the record is empty again after.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/liveobj.h>
#include <devres/platform.h>
#include "testlib.h"
#include "base/liveobj.h"

static const struct bus_type lbus = { .name = "devlive" };

static struct device *parent;

static void nop_release(struct device *dev)
{
	(void)dev;
}

static int setup(void **state)
{
	(void)state;
	parent = heap_dev(&lbus, "devlive-parent");
	assert_int_equal(device_add(parent), 0);
	/* Managed memory around, before and after the child's struct. */
	for (int i = 0; i < 8; i++)
		assert_non_null(devm_kzalloc(parent, 64 << i, GFP_KERNEL));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	device_unregister(parent);
	return 0;
}

static void outside_pays_nothing(void **state)
{
	static struct device fixed;
	struct device *heap = calloc(1, sizeof(*heap));
	void *p;

	(void)state;
	assert_non_null(heap);
	heap->parent = parent;
	heap->release = nop_release;
	heap->init_name = "devlive-heap";
	assert_int_equal(device_register(heap), 0);
	fixed.parent = parent;
	fixed.release = nop_release;
	fixed.init_name = "devlive-static";
	assert_int_equal(device_register(&fixed), 0);
	assert_false(devres__liveobj_any());
	assert_false(devres_liveobj_active(heap));
	/* The free paths' fast way: the record is never asked. */
	p = devm_kzalloc(parent, 128, GFP_KERNEL);
	assert_non_null(p);
	devm_kfree(parent, p);
	assert_false(devres__liveobj_any());
	device_unregister(&fixed);
	device_unregister(heap);
	free(heap);
}

static void inside_is_live(void **state)
{
	struct platform_device *pdev;
	struct device *child;
	char *big;

	(void)state;
	/* At a block's start. */
	child = devm_kzalloc(parent, sizeof(*child), GFP_KERNEL);
	assert_non_null(child);
	child->parent = parent;
	child->release = nop_release;
	child->init_name = "devlive-child";
	assert_int_equal(device_register(child), 0);
	assert_true(devres_liveobj_active(child));
	device_unregister(child);
	assert_false(devres__liveobj_any());
	/* Inside a larger block, a platform device. */
	big = devm_kzalloc(parent, 4096, GFP_KERNEL);
	assert_non_null(big);
	pdev = (struct platform_device *)(big + 256);
	pdev->name = "devlive-pdev";
	pdev->id = PLATFORM_DEVID_NONE;
	pdev->dev.parent = parent;
	pdev->dev.release = nop_release;
	assert_int_equal(platform_device_register(pdev), 0);
	assert_true(devres_liveobj_active(&pdev->dev));
	platform_device_unregister(pdev);
	assert_false(devres__liveobj_any());
	devm_kfree(parent, big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(outside_pays_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(inside_is_live, setup,
						teardown),
	};

	return run_tests_on_bus(tests, &lbus);
}
