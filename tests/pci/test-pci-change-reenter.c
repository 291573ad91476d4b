// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * The PCI calls that change a function's devres list without acquiring,
 * pcim_pin_device(), pcim_release_region(), pcim_iounmap() and a
 * pci_disable_device() that undoes a pcim_enable_device(), called from
 * inside one of the device's match callbacks (devres_find()) or for-each
 * callbacks (devres_for_each_res()), where the list is the calling
 * thread's: 4 calls x 2 callbacks, 8 cells. Each is refused with one WARN
 * naming it ("from a match or for-each callback") and changes nothing: the
 * enable stays unpinned (the release disables the function), the BAR
 * stays claimed, its mapping stays in pcim_iomap_table(), the function
 * stays enabled. Before, each printed two WARNs, the first naming the
 * devres call it made (devres_find, devres_release, devres_destroy), and
 * pcim_iounmap() took the mapping out of the table while its node stayed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"

#define A "0000:00:06.0"

enum call {
	C_PIN,
	C_RELEASE_REGION,
	C_IOUNMAP,
	C_DISABLE,
	NR_CALLS
};

static const char *const names[NR_CALLS] = {
	"pcim_pin_device",
	"pcim_release_region",
	"pcim_iounmap",
	"pci_disable_device",
};

static struct pci_dev *pdev;
static void __iomem *map;
static int cur, ncalls;

static void anchor_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void call_here(void)
{
	ncalls++;
	if (cur == C_PIN)
		pcim_pin_device(pdev);
	else if (cur == C_RELEASE_REGION)
		pcim_release_region(pdev, 0);
	else if (cur == C_IOUNMAP)
		pcim_iounmap(pdev, map);
	else
		pci_disable_device(pdev);
}

static int match_calls(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	call_here();
	return 0;
}

static void for_each_calls(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	call_here();
}

static void one(int call, bool match)
{
	struct pci_fake_dev d = fake_dev(A, 0x1af4, 0x10, 1);
	void *anchor;

	print_message("%s from a %s callback\n", names[call],
		      match ? "match" : "for-each");
	cur = call;
	ncalls = 0;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(pdev);
	assert_int_equal(pcim_enable_device(pdev), 0);
	assert_int_equal(pcim_request_region(pdev, 0, "change"), 0);
	map = pcim_iomap(pdev, 0, 0);
	assert_non_null(map);
	anchor = devres_alloc(anchor_release, 8, GFP_KERNEL);
	assert_non_null(anchor);
	devres_add(&pdev->dev, anchor);
	start_capture();
	if (match)
		devres_find(&pdev->dev, anchor_release, match_calls, NULL);
	else
		devres_for_each_res(&pdev->dev, anchor_release, NULL, NULL,
				    for_each_calls, NULL);
	expect_warn_on(A, names[call], "from a match or for-each callback");
	assert_int_equal(ncalls, 1);
	/* Nothing changed. */
	start_capture();
	assert_true(pci_is_enabled(pdev));
	assert_int_not_equal(pci_request_region(pdev, 0, "other"), 0);
	assert_ptr_equal(pcim_iomap_table(pdev)[0], map);
	expect_no_warn();
	/* enable, region, mapping, anchor: the enable not pinned. */
	assert_int_equal(devres_release_all(&pdev->dev), 4);
	assert_false(pci_is_enabled(pdev));
	pci_dev_put(pdev);
	pci_bus_remove_all();
	assert_int_equal(pci_fake_remove(ft, A), 0);
}

static void from_a_match(void **state)
{
	(void)state;
	for (int c = 0; c < NR_CALLS; c++)
		one(c, true);
}

static void from_a_for_each(void **state)
{
	(void)state;
	for (int c = 0; c < NR_CALLS; c++)
		one(c, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(from_a_match, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(from_a_for_each, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
