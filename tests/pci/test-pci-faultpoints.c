// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault pci */
/*
 * Which PCI calls are fault points: pci_alloc_irq_vectors() is (its
 * caller sees -ENOMEM); pci_set_master() and pci_clear_master() are not
 * (they are void: a failed config access there tests nothing). And the
 * MSI state pci_alloc_irq_vectors() leaves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pci/pcitest.h"

static struct pci_dev *scan_one(void)
{
	struct pci_fake_dev d = fake_dev("0000:00:03.0", 0x1af4, 0x1000, 1);

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	return pci_get_device(0x1af4, 0x1000, NULL);
}

static void set_master_is_no_fault_point(void **state)
{
	struct pci_dev *pdev;

	(void)state;
	pdev = scan_one();
	assert_non_null(pdev);
	devres_fail_nth(1);
	pci_set_master(pdev);
	/* Not consumed: the next fault point is still the first. */
	assert_int_equal(devres_fail_nth_get(), 1);
	assert_true(pdev->is_busmaster);
	pci_clear_master(pdev);
	assert_int_equal(devres_fail_nth_get(), 1);
	assert_false(pdev->is_busmaster);
	devres_fail_nth(0);
	pci_dev_put(pdev);
}

static void alloc_irq_vectors_is_one(void **state)
{
	struct pci_dev *pdev;
	int lines[2];

	(void)state;
	pdev = scan_one();
	assert_non_null(pdev);
	lines[0] = irq_line_create("v0");
	lines[1] = irq_line_create("v1");
	assert_int_equal(pci_dev_set_irq_lines(pdev, lines, 2), 0);
	devres_fail_nth(1);
	assert_int_equal(pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_ALL_TYPES),
			 -ENOMEM);
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_false(pci_dev_msi_enabled(pdev));
	assert_int_equal(pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_ALL_TYPES),
			 2);
	assert_true(pdev->msix_enabled);
	pci_free_irq_vectors(pdev);
	assert_false(pci_dev_msi_enabled(pdev));
	assert_int_equal(pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI), 1);
	assert_true(pdev->msi_enabled);
	assert_false(pdev->msix_enabled);
	pci_free_irq_vectors(pdev);
	assert_int_equal(pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_INTX), 1);
	assert_false(pci_dev_msi_enabled(pdev));
	pci_free_irq_vectors(pdev);
	pci_dev_put(pdev);
	pci_bus_remove_all();
	assert_int_equal(irq_line_destroy(lines[0]), 0);
	assert_int_equal(irq_line_destroy(lines[1]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(set_master_is_no_fault_point,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(alloc_irq_vectors_is_one,
						pci_setup, pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
