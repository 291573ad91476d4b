// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * With the VFIO backend enabled, a device that is not bound to vfio-pci
 * (no driver link, or another driver's) is still reached through its
 * sysfs files, exactly as before. What VFIO does with a vfio-pci device is
 * tested only inside the VM (tests/vm/run.sh): nothing here makes a
 * vfio-pci link, so nothing here opens /dev/vfio.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/dma.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"

#define A "0000:00:05.0"
#define B "0000:00:06.0"

static void test_not_vfio_stays_sysfs(void **state)
{
	struct pci_fake_dev a = fake_dev(A, 0x1af4, 0x1041, 1);
	struct pci_fake_dev b = fake_dev(B, 0x1af4, 0x1042, 1);
	char path[4096], buf[8];
	struct pci_dev *p;
	uint16_t w;

	(void)state;
	assert_int_equal(pci_vfio_enable(), 0);
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_fake_add(ft, &b), 0);
	/* B is bound to another driver of the host. */
	assert_int_equal(pci_fake_path(ft, B, "driver", path, sizeof(path)), 0);
	assert_int_equal(symlink("../../bus/pci/drivers/e1000e", path), 0);
	assert_int_equal(pci_bus_scan(), 2);

	for (p = NULL; (p = pci_get_device(0x1af4, PCI_ANY_ID, p));) {
		uint64_t bytes = 1;

		assert_false(pci_dev_is_vfio(p));
		assert_int_equal(pci_vfio_dma_mappings(p, &bytes), -ENODEV);
		assert_int_equal(bytes, 1);
		assert_int_equal(pci_read_config_word(p, PCI_VENDOR_ID, &w), 0);
		assert_int_equal(w, 0x1af4);
		/* Enabling writes the sysfs file, as without the backend. */
		assert_int_equal(pci_enable_device(p), 0);
		assert_true(fake_read(pci_name(p), "enable", buf, sizeof(buf)) >
			    0);
		assert_int_equal(buf[0], '1');
		pci_disable_device(p);
		assert_non_null(get_dma_ops(&p->dev));
		assert_ptr_equal(get_dma_ops(&p->dev), devres_dma_iova_ops());
	}
	assert_false(pci_dev_is_vfio(NULL));
	/* A NULL device is a misuse (WARN), not a device without VFIO. */
	assert_int_equal(pci_vfio_dma_mappings(NULL, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_not_vfio_stays_sysfs,
						pci_setup, pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
