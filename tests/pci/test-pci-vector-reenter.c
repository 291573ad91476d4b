// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * pci_alloc_irq_vectors() on a function whose backend makes the vectors
 * a managed node (UIO here; VFIO the same way), called from inside one of
 * its device's match callbacks (devres_find()) or for-each callbacks
 * (devres_for_each_res()): the call is refused before the backend runs,
 * with one WARN naming it ("from a match or for-each callback") and
 * -EINVAL; no line is made, pci_irq_vector() names what it named, and
 * the ledger is the same before and after the callback. Cells: match or for-each,
 * by a first allocation or by one after a pci_free_irq_vectors() (whose
 * old node the backend looks for). Before, the backend made its line,
 * found its record refused by devres_add() and returned the vector: a
 * line and its node on no device, a WARN for each devres call it made.
 * After the callback the same allocation succeeds and goes with the
 * device's release, and a function with no backend (its lines set by
 * hand, nothing recorded) still allocates from a callback.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier): ptsname() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"

#define A "0000:00:05.0"

static struct fake_uio ua = { -1, -1 };
static struct pci_dev *pdev;
static int got, ncalls;

static int uio_setup(void **state)
{
	if (pci_setup(state) || uio_dir_make())
		return -1;
	return 0;
}

static int uio_teardown(void **state)
{
	int ret;

	pci_bus_remove_all();
	fake_uio_close(&ua);
	ret = pci_teardown(state);
	uio_dir_remove();
	return ret;
}

static void anchor_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int match_calls(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	ncalls++;
	got = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
	return 0;
}

static void for_each_calls(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	ncalls++;
	got = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
}

static void from_callback(bool match)
{
	ncalls = 0;
	got = 0;
	if (match)
		devres_find(&pdev->dev, anchor_release, match_calls, NULL);
	else
		devres_for_each_res(&pdev->dev, anchor_release, NULL, NULL,
				    for_each_calls, NULL);
	assert_int_equal(ncalls, 1);
}

static void scan_uio(void)
{
	struct pci_fake_dev d = fake_dev(A, 0x1234, 0x11e8, 1);

	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(A, 2, &ua), 0);
	assert_int_equal(pci_bus_scan_device(A), 0);
	pdev = pci_get_device(0x1234, 0x11e8, NULL);
	assert_non_null(pdev);
}

static void one(bool match, bool again)
{
	struct devres_ledger before, after;
	void *anchor;
	int was;

	scan_uio();
	assert_int_equal(pcim_enable_device(pdev), 0);
	if (again) {
		assert_int_equal(
			pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX), 1);
		pci_free_irq_vectors(pdev);
	}
	anchor = devres_alloc(anchor_release, 8, GFP_KERNEL);
	assert_non_null(anchor);
	devres_add(&pdev->dev, anchor);
	was = pci_irq_vector(pdev, 0);
	devres_ledger_snapshot(&before);
	start_capture();
	from_callback(match);
	expect_warn_on(A, "pci_alloc_irq_vectors",
		       "from a match or for-each callback");
	devres_ledger_snapshot(&after);
	assert_int_equal(got, -EINVAL);
	assert_int_equal(pci_irq_vector(pdev, 0), was);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	/* Out of the callback, the same call gets its vector. */
	assert_int_equal(pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX), 1);
	assert_true(pci_irq_vector(pdev, 0) > 0);
	assert_true(devres_release_all(&pdev->dev) >= 3);
	pci_dev_put(pdev);
}

static void uio_from_a_match(void **state)
{
	(void)state;
	one(true, false);
}

static void uio_from_a_for_each(void **state)
{
	(void)state;
	one(false, false);
}

static void uio_again_from_a_match(void **state)
{
	(void)state;
	one(true, true);
}

static void uio_again_from_a_for_each(void **state)
{
	(void)state;
	one(false, true);
}

/* No backend: nothing is recorded, the allocation is not refused. */
static void own_lines_from_a_callback(void **state)
{
	struct pci_fake_dev d = fake_dev("0000:00:03.0", 0x1af4, 0x10, 2);
	const int lines[] = { 40, 41 };
	void *anchor;

	(void)state;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(pdev);
	assert_int_equal(pci_dev_set_irq_lines(pdev, lines, 2), 0);
	anchor = devres_alloc(anchor_release, 8, GFP_KERNEL);
	assert_non_null(anchor);
	devres_add(&pdev->dev, anchor);
	for (int match = 0; match < 2; match++) {
		start_capture();
		from_callback(match);
		expect_no_warn();
		assert_int_equal(got, 1);
		assert_int_equal(pci_irq_vector(pdev, 0), 40);
		pci_free_irq_vectors(pdev);
	}
	assert_int_equal(devres_release_all(&pdev->dev), 1);
	pci_dev_put(pdev);
	pci_bus_remove_all();
	assert_int_equal(pci_fake_remove(ft, d.name), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(uio_from_a_match, uio_setup,
						uio_teardown),
		cmocka_unit_test_setup_teardown(uio_from_a_for_each, uio_setup,
						uio_teardown),
		cmocka_unit_test_setup_teardown(uio_again_from_a_match,
						uio_setup, uio_teardown),
		cmocka_unit_test_setup_teardown(uio_again_from_a_for_each,
						uio_setup, uio_teardown),
		cmocka_unit_test_setup_teardown(own_lines_from_a_callback,
						pci_setup, pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
