// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * PCI drivers on a fake tree: id tables, the entry given to probe, drvdata,
 * enable counting through `enable`, pcim_enable_device released with the
 * binding (also when probe fails), pinning, interrupt vectors, read-only
 * sysfs, and a probe sweep.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"
#include "pcitest.h"

static char enable_of(const char *name)
{
	char buf[16];

	assert_true(fake_read(name, "enable", buf, sizeof(buf)) > 0);
	return buf[0];
}

static struct pci_dev *first(void)
{
	struct pci_dev *p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);

	assert_non_null(p);
	/* The scan's reference keeps it; tests do not hold their own. */
	pci_dev_put(p);
	return p;
}

static const struct pci_device_id *seen_id;
static struct pci_dev *seen_dev;
static int probe_ret;
static int probes, removes;

static int rec_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	probes++;
	seen_id = id;
	seen_dev = pdev;
	pci_set_drvdata(pdev, (void *)id);
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	return probe_ret;
}

static void rec_remove(struct pci_dev *pdev)
{
	removes++;
	assert_non_null(pci_get_drvdata(pdev));
	/* Still enabled in remove: the managed disable comes after. */
	assert_true(pci_is_enabled(pdev));
}

static struct pci_driver rec_drv = {
	.name = "rec",
	.probe = rec_probe,
	.remove = rec_remove,
};

static void reset(void)
{
	seen_id = NULL;
	seen_dev = NULL;
	probe_ret = 0;
	probes = removes = 0;
}

static void add_scan(const char *name, unsigned short vendor,
		     unsigned short device, unsigned int class)
{
	struct pci_fake_dev d = fake_dev(name, vendor, device, 1);

	d.class = class;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_true(pci_bus_scan() > 0);
}

static void test_match_kinds(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE_SUB(0x1af4, 0x1000, 0x1af4, 0x9999),
		  .driver_data = 1 },
		{ PCI_DEVICE_SUB(0x1af4, 0x1000, 0x1af4, 0x1100),
		  .driver_data = 2 },
		{ PCI_DEVICE(0x8086, 0x100e), .driver_data = 3 },
		{ PCI_DEVICE_CLASS(0x010800, 0xffff00), .driver_data = 4 },
		{ 0 },
	};
	struct pci_dev *p;

	(void)state;
	reset();
	rec_drv.id_table = ids;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0x020000);
	add_scan("0000:00:02.0", 0x8086, 0x100e, 0x020000);
	add_scan("0000:00:03.0", 0x144d, 0xa808, 0x010802);
	add_scan("0000:00:04.0", 0x144d, 0xa808, 0x010600);
	p = pci_get_device(0x1af4, 0x1000, NULL);
	assert_ptr_equal(pci_match_id(ids, p), &ids[1]);
	pci_dev_put(p);
	assert_null(pci_match_id(NULL, p));

	assert_int_equal(pci_register_driver(&rec_drv), 0);
	assert_int_equal(probes, 3);
	p = pci_get_device(0x1af4, 0x1000, NULL);
	assert_true(device_is_bound(&p->dev));
	assert_int_equal(
		((const struct pci_device_id *)pci_get_drvdata(p))->driver_data,
		2);
	pci_dev_put(p);
	p = pci_get_device(0x8086, PCI_ANY_ID, NULL);
	assert_int_equal(
		((const struct pci_device_id *)pci_get_drvdata(p))->driver_data,
		3);
	pci_dev_put(p);
	p = NULL;
	while ((p = pci_get_device(0x144d, 0xa808, p))) {
		if (p->class == 0x010802) {
			assert_true(device_is_bound(&p->dev));
			assert_int_equal(((const struct pci_device_id *)
						  pci_get_drvdata(p))
						 ->driver_data,
					 4);
		} else {
			assert_false(device_is_bound(&p->dev));
		}
	}
	assert_int_equal(enable_of("0000:00:01.0"), '1');
	assert_int_equal(enable_of("0000:00:04.0"), '0');
	pci_unregister_driver(&rec_drv);
	assert_int_equal(removes, 3);
	assert_int_equal(enable_of("0000:00:01.0"), '0');
	assert_int_equal(enable_of("0000:00:03.0"), '0');
}

static void test_probe_failure_disables(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(0x1af4, PCI_ANY_ID) },
		{ 0 },
	};
	struct pci_dev *p;

	(void)state;
	reset();
	rec_drv.id_table = ids;
	probe_ret = -EIO;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	assert_int_equal(pci_register_driver(&rec_drv), 0);
	assert_int_equal(probes, 1);
	p = first();
	assert_false(device_is_bound(&p->dev));
	assert_false(pci_is_enabled(p));
	assert_int_equal(enable_of("0000:00:01.0"), '0');
	/* device_driver_attach() of a driver whose table does not fit. */
	rec_drv.id_table = (const struct pci_device_id[]){
		{ PCI_DEVICE(0x1, 0x2) },
		{ 0 },
	};
	assert_int_equal(device_driver_attach(&rec_drv.driver, &p->dev),
			 -ENODEV);
	pci_unregister_driver(&rec_drv);
}

static void test_enable_counts(void **state)
{
	struct pci_dev *p;

	(void)state;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	p = first();
	assert_false(pci_is_enabled(p));
	assert_int_equal(pci_enable_device(p), 0);
	assert_int_equal(enable_of("0000:00:01.0"), '1');
	/* The file changes only at the first enable and the last disable. */
	assert_int_equal(fake_overwrite("0000:00:01.0", "enable", "x", 1), 0);
	assert_int_equal(pci_enable_device(p), 0);
	assert_int_equal(enable_of("0000:00:01.0"), 'x');
	pci_set_master(p);
	assert_true(p->is_busmaster);
	pci_disable_device(p);
	assert_true(pci_is_enabled(p));
	assert_int_equal(enable_of("0000:00:01.0"), 'x');
	pci_disable_device(p);
	assert_false(pci_is_enabled(p));
	assert_false(p->is_busmaster);
	assert_int_equal(enable_of("0000:00:01.0"), '0');

	start_capture();
	pci_disable_device(p);
	expect_warn_on("0000:00:01.0", "pci_disable_device",
		       "device is not enabled");
	start_capture();
	pcim_pin_device(p);
	expect_warn_on("0000:00:01.0", "pcim_pin_device",
		       "device not enabled by pcim_enable_device()");
	int w = devres_warn_count();
	pci_disable_device(NULL);
	assert_int_equal(pci_enable_device(NULL), -EINVAL);
	assert_int_equal(pcim_enable_device(NULL), -EINVAL);
	assert_int_equal(devres_warn_count(), w + 3);
}

static bool pin;

static int pin_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (!ret && pin)
		pcim_pin_device(pdev);
	return ret;
}

static void test_pin(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(PCI_ANY_ID, PCI_ANY_ID) },
		{ 0 },
	};
	static struct pci_driver drv = {
		.name = "pin",
		.id_table = ids,
		.probe = pin_probe,
	};
	struct pci_dev *p;

	(void)state;
	pin = true;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	p = first();
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_true(device_is_bound(&p->dev));
	pci_unregister_driver(&drv);
	/* Pinned: left enabled after detach, as the kernel does. */
	assert_true(pci_is_enabled(p));
	assert_int_equal(enable_of("0000:00:01.0"), '1');
	pci_disable_device(p);
	assert_int_equal(enable_of("0000:00:01.0"), '0');
	pin = false;
}

static void test_irq_vectors(void **state)
{
	const int lines[] = { 40, 41, 42 };
	struct pci_dev *p;

	(void)state;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	p = first();
	/* No lines registered: only what sysfs says, which is no line. */
	assert_int_equal(pci_irq_vector(p, 0), -EINVAL);
	assert_int_equal(pci_alloc_irq_vectors(p, 1, 4, PCI_IRQ_ALL_TYPES),
			 -ENOSPC);
	assert_int_equal(pci_dev_set_irq_lines(p, lines, 3), 0);
	assert_int_equal(p->irq, 40);
	assert_int_equal(pci_irq_vector(p, 0), 40);
	assert_int_equal(pci_irq_vector(p, 1), -EINVAL);
	assert_int_equal(pci_alloc_irq_vectors(p, 1, 8, 0), -EINVAL);
	assert_int_equal(pci_alloc_irq_vectors(p, 2, 1, PCI_IRQ_MSIX), -EINVAL);
	assert_int_equal(pci_alloc_irq_vectors(p, 4, 8, PCI_IRQ_MSIX), -ENOSPC);
	assert_int_equal(pci_alloc_irq_vectors(p, 1, 8, PCI_IRQ_INTX), 1);
	assert_int_equal(pci_alloc_irq_vectors(p, 1, 8, PCI_IRQ_MSIX), -EINVAL);
	pci_free_irq_vectors(p);
	assert_int_equal(pci_alloc_irq_vectors(p, 1, 2, PCI_IRQ_ALL_TYPES), 2);
	assert_int_equal(pci_irq_vector(p, 1), 41);
	assert_int_equal(pci_irq_vector(p, 2), -EINVAL);
	assert_int_equal(pci_dev_set_irq_lines(p, lines, 1), -EBUSY);
	pci_free_irq_vectors(p);
	assert_int_equal(pci_alloc_irq_vectors(p, 3, 3, PCI_IRQ_MSI), 3);
	assert_int_equal(pci_irq_vector(p, 2), 42);
	pci_free_irq_vectors(p);
	const int bad[] = { 5, 0 };
	start_capture();
	assert_int_equal(pci_dev_set_irq_lines(p, bad, 2), -EINVAL);
	expect_warn_on(pci_name(p), "pci_dev_set_irq_lines",
		       "line 1 of 2 is 0, not a line number");
	assert_int_equal(pci_dev_set_irq_lines(p, NULL, 0), 0);
	assert_int_equal(pci_irq_vector(p, 0), -EINVAL);
}

static int vec_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	return pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI) == 1 ? 0 : -EIO;
}

static void test_vectors_per_binding(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(PCI_ANY_ID, PCI_ANY_ID) },
		{ 0 },
	};
	static struct pci_driver drv = {
		.name = "vec",
		.id_table = ids,
		.probe = vec_probe,
	};
	const int line = 7;
	struct pci_dev *p;

	(void)state;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	p = first();
	assert_int_equal(pci_dev_set_irq_lines(p, &line, 1), 0);
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_true(device_is_bound(&p->dev));
	device_release_driver(&p->dev);
	/* The bus freed the vectors at unbind: a new probe gets them. */
	assert_int_equal(device_attach(&p->dev), 1);
	pci_unregister_driver(&drv);
}

static void test_readonly(void **state)
{
	struct pci_dev *p;
	uint16_t v;

	(void)state;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	p = first();
	pci_sysfs_set_readonly(true);
	assert_int_equal(pci_enable_device(p), -EROFS);
	assert_int_equal(pci_write_config_word(p, PCI_COMMAND, 4),
			 PCIBIOS_SET_FAILED);
	assert_int_equal(pci_read_config_word(p, PCI_VENDOR_ID, &v), 0);
	assert_int_equal(v, 0x1af4);
	pci_set_master(p);
	assert_false(p->is_busmaster);
	pci_sysfs_set_readonly(false);
	assert_int_equal(enable_of("0000:00:01.0"), '0');
}

static int rescan_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)pdev;
	(void)id;
	return pci_bus_scan();
}

static void test_scan_from_probe(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(PCI_ANY_ID, PCI_ANY_ID) },
		{ 0 },
	};
	static struct pci_driver drv = {
		.name = "rescan",
		.id_table = ids,
		.probe = rescan_probe,
	};
	struct pci_fake_dev d = fake_dev("0000:00:01.0", 0x1af4, 1, 0);

	(void)state;
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	start_capture();
	/* The probe runs inside the scan: its own scan refuses, once. */
	assert_int_equal(pci_bus_scan(), 1);
	expect_warn_on("(no device)", "pci_bus_scan",
		       "called from a PCI probe or remove");
	pci_unregister_driver(&drv);
}

static void test_driver_misuse(void **state)
{
	(void)state;
	int w = devres_warn_count();
	assert_int_equal(pci_register_driver(NULL), -EINVAL);
	pci_unregister_driver(NULL);
	assert_int_equal(devres_warn_count(), w + 2);
}

static int sweep_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	uint16_t cmd;
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	if (pci_read_config_word(pdev, PCI_COMMAND, &cmd))
		return -EIO;
	pci_set_master(pdev);
	return devm_kzalloc(&pdev->dev, 64, GFP_KERNEL) ? 0 : -ENOMEM;
}

static void test_probe_sweep(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(PCI_ANY_ID, PCI_ANY_ID) },
		{ 0 },
	};
	static struct pci_driver drv = {
		.name = "sweep",
		.id_table = ids,
		.probe = sweep_probe,
	};
	struct devres_sweep_result r;
	struct pci_dev *p;

	(void)state;
	add_scan("0000:00:01.0", 0x1af4, 0x1000, 0);
	p = first();
	assert_int_equal(pci_register_driver(&drv), 0);
	device_release_driver(&p->dev);
	assert_int_equal(driver_probe_sweep(&drv.driver, &p->dev, &r), 0);
	pci_unregister_driver(&drv);
	assert_true(r.points >= 4);
	assert_int_equal(r.leaks, 0);
	assert_false(pci_is_enabled(p));
	assert_int_equal(enable_of("0000:00:01.0"), '0');
}

int main(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_match_kinds, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_probe_failure_disables,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_enable_counts, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_pin, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_irq_vectors, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_vectors_per_binding,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_readonly, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_scan_from_probe, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_driver_misuse, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_probe_sweep, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
