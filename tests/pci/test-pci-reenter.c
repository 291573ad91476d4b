// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci */
/*
 * Every pcim_* acquisition made on a PCI function from inside one of its
 * device's match callbacks (devres_find()) or for-each callbacks
 * (devres_for_each_res()), where the device's devres lock is the calling
 * thread's, up the stack. The call is refused with one WARN naming it
 * ("from a match or for-each callback") and returns its failure value;
 * nothing is acquired: the function is not enabled, no BAR is mapped or
 * claimed, and the ledger is the same before and after the callback.
 * Before, pcim_enable_device() enabled the function, found its record
 * refused by devres_add() and returned 0: the function stayed enabled
 * with no release to disable it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"

enum call {
	C_ENABLE,
	C_REQUEST_REGION,
	C_REQUEST_ALL,
	C_IOMAP,
	C_IOMAP_REGIONS,
	C_IOMAP_TABLE,
	NR_CALLS
};

static const char *const names[NR_CALLS] = {
	"pcim_enable_device", "pcim_request_region", "pcim_request_all_regions",
	"pcim_iomap",	      "pcim_iomap_regions",  "pcim_iomap_table",
};

static struct pci_dev *pdev;
static int cur, ncalls;
static bool got;

static void anchor_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* The call under test; whether it got its resource. */
static bool call_here(void)
{
	ncalls++;
	switch (cur) {
	case C_ENABLE:
		return pcim_enable_device(pdev) == 0;
	case C_REQUEST_REGION:
		return pcim_request_region(pdev, 0, "reenter") == 0;
	case C_REQUEST_ALL:
		return pcim_request_all_regions(pdev, "reenter") == 0;
	case C_IOMAP:
		return pcim_iomap(pdev, 0, 0) != NULL;
	case C_IOMAP_REGIONS:
		return pcim_iomap_regions(pdev, 1, "reenter") == 0;
	default:
		return pcim_iomap_table(pdev) != NULL;
	}
}

static int match_calls(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	got = call_here();
	return 0;
}

static void for_each_calls(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	got = call_here();
}

static void one(int call, bool match)
{
	struct devres_ledger before, after;
	struct pci_fake_dev d = fake_dev("0000:00:03.0", 0x1af4, 0x10, 2);
	char en[8] = "";
	void *anchor;

	cur = call;
	ncalls = 0;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(pdev);
	anchor = devres_alloc(anchor_release, 8, GFP_KERNEL);
	assert_non_null(anchor);
	devres_add(&pdev->dev, anchor);
	devres_ledger_snapshot(&before);
	start_capture();
	if (match)
		devres_find(&pdev->dev, anchor_release, match_calls, NULL);
	else
		devres_for_each_res(&pdev->dev, anchor_release, NULL, NULL,
				    for_each_calls, NULL);
	expect_warn_on(d.name, names[call],
		       "from a match or for-each callback");
	devres_ledger_snapshot(&after);
	assert_int_equal(ncalls, 1);
	assert_false(got);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_true(fake_read(d.name, "enable", en, sizeof(en)) > 0);
	assert_int_equal(en[0], '0');
	assert_int_equal(devres_release_all(&pdev->dev), 1);
	pci_dev_put(pdev);
	pci_bus_remove_all();
	assert_int_equal(pci_fake_remove(ft, d.name), 0);
}

static void every_pcim_call_from_a_match(void **state)
{
	(void)state;
	for (int c = 0; c < NR_CALLS; c++)
		one(c, true);
}

static void every_pcim_call_from_a_for_each(void **state)
{
	(void)state;
	for (int c = 0; c < NR_CALLS; c++)
		one(c, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pcim_call_from_a_match,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(every_pcim_call_from_a_for_each,
						pci_setup, pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
