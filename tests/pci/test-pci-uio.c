// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci */
/*
 * The UIO backend on a fake tree (uiotest.h): a device bound to
 * uio_pci_generic is taken through UIO and bound by a plain pci_driver;
 * its one INTx vector is read from the uio node and unmasked by a write
 * of 1 after each handler, masked (0) and stopped mastering at unbind;
 * enabling writes nothing; DMA is refused unless physical addresses were
 * allowed; a node that is not the device sysfs names is refused; the
 * probe sweeps without a leak; a holder's config reads race the device's
 * removal without a race on the backend.
 */
#define _GNU_SOURCE /* posix_openpt(), ptsname() */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/driver.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "uiotest.h"
#include "count-irq.h"

#define A "0000:00:05.0"
#define B "0000:00:06.0"

static struct fake_uio ua = { -1, -1 }, ub = { -1, -1 };

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
	fake_uio_close(&ub);
	ret = pci_teardown(state);
	uio_dir_remove();
	return ret;
}

static int msi_ret, probe_dma_mask_ret;
static void *probe_coherent;

static int intx_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	dma_addr_t h;
	int ret, n;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, 1 << 0, "uio-test");
	if (ret)
		return ret;
	pci_set_master(pdev);
	/* UIO has no MSI: asking for it alone finds no vector. */
	msi_ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_MSIX);
	n = pci_alloc_irq_vectors(pdev, 1, 4, PCI_IRQ_ALL_TYPES);
	if (n < 0)
		return n;
	ret = devm_request_irq(&pdev->dev,
			       (unsigned int)pci_irq_vector(pdev, 0), count_irq,
			       0, "uio-test", pdev);
	if (ret)
		return ret;
	probe_dma_mask_ret = dma_set_mask(&pdev->dev, DMA_BIT_MASK(32));
	probe_coherent = dmam_alloc_coherent(&pdev->dev, 4096, &h, GFP_KERNEL);
	return 0;
}

static const struct pci_device_id intx_ids[] = {
	{ PCI_DEVICE(0x1234, 0x11e8) },
	{ 0 },
};

static struct pci_driver intx_driver = {
	.name = "uio-test",
	.id_table = intx_ids,
	.probe = intx_probe,
};

static struct pci_dev *add_uio_dev(const char *name, int num,
				   struct fake_uio *u)
{
	struct pci_fake_dev d = fake_dev(name, 0x1234, 0x11e8, 1);
	struct pci_dev *p;

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_uio_add(name, num, u), 0);
	assert_int_equal(pci_bus_scan_device(name), 0);
	p = pci_get_device(0x1234, 0x11e8, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	return p;
}

static uint16_t command_of(const char *name)
{
	char path[4096];
	uint16_t cmd = 0xffff;
	int fd;

	assert_int_equal(pci_fake_path(ft, name, "config", path, sizeof(path)),
			 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &cmd, 2, PCI_COMMAND), 2);
	close(fd);
	return cmd;
}

static void test_intx_through_uio(void **state)
{
	unsigned long before;
	struct pci_dev *p;
	uint16_t cmd;
	char buf[8];

	(void)state;
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	p = add_uio_dev(A, 3, &ua);
	/* A previous owner died with INTx masked. */
	assert_int_equal(fake_cmd(A, &cmd, false), 0);
	cmd |= PCI_COMMAND_INTX_DISABLE;
	assert_int_equal(fake_cmd(A, &cmd, true), 0);
	assert_true(pci_dev_is_uio(p));
	assert_false(pci_dev_is_vfio(p));
	assert_false(pci_dev_is_uio(NULL));

	assert_int_equal(pci_register_driver(&intx_driver), 0);
	assert_ptr_equal(p->dev.driver, &intx_driver.driver);
	assert_int_equal(msi_ret, -ENOSPC);
	assert_true(p->irq > 0);
	assert_false(p->msi_enabled || p->msix_enabled);
	/*
	 * The handler's request unmasked INTx in config space; the enable
	 * wrote nothing to sysfs.
	 */
	assert_int_equal(uio_masked(A), 0);
	assert_true(fake_read(A, "enable", buf, sizeof(buf)) > 0);
	assert_int_equal(buf[0], '0');
	assert_true(command_of(A) & PCI_COMMAND_MASTER);

	/* DMA is refused: no mask, no buffer. */
	assert_int_equal(probe_dma_mask_ret, -EIO);
	assert_null(probe_coherent);
	assert_ptr_not_equal(get_dma_ops(&p->dev), devres_dma_pagemap_ops());

	/* Each interrupt: one handler call, then INTx unmasked. */
	before = __atomic_load_n(&handled, __ATOMIC_RELAXED);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(uio_fire(A, &ua, (uint32_t)i + 1), 0);
		assert_true(uio_wait_unmasked(A, 5000));
		assert_int_equal(__atomic_load_n(&handled, __ATOMIC_RELAXED),
				 before + (unsigned long)i + 1);
		assert_true(command_of(A) & PCI_COMMAND_MASTER);
	}
	/* uio_pci_generic takes no write on the node: none was made. */
	assert_int_equal(uio_next_write(&ua, 0), -1);

	/* Unbind: mastering off and INTx masked, nothing handled after. */
	pci_unregister_driver(&intx_driver);
	assert_int_equal(uio_masked(A), 1);
	assert_false(command_of(A) & PCI_COMMAND_MASTER);
	before = __atomic_load_n(&handled, __ATOMIC_RELAXED);
	assert_int_equal(uio_fire(A, &ua, 1000), 0);
	assert_false(uio_wait_unmasked(A, 100));
	assert_int_equal(__atomic_load_n(&handled, __ATOMIC_RELAXED), before);
	assert_int_equal(pci_irq_vector(p, 0), -EINVAL);
}

static void test_dma_phys_opt_in(void **state)
{
	struct pci_dev *p;

	(void)state;
	assert_int_equal(pci_uio_enable(uio_dir, PCI_UIO_DMA_PHYS), 0);
	p = add_uio_dev(A, 0, &ua);
	/* Taken: another configuration now would change it under it. */
	assert_int_equal(pci_uio_enable(uio_dir, 0), -EBUSY);
	assert_int_equal(pci_uio_enable(NULL, PCI_UIO_DMA_PHYS), -EBUSY);
	assert_int_equal(pci_uio_enable(uio_dir, PCI_UIO_DMA_PHYS), 0);
	assert_int_equal(pci_uio_enable(uio_dir, 0x80), -EINVAL);
	assert_int_equal(pci_uio_enable("", 0), -EINVAL);
	assert_ptr_equal(get_dma_ops(&p->dev), devres_dma_pagemap_ops());
	assert_int_equal(dma_set_mask(&p->dev, DMA_BIT_MASK(64)), 0);
	pci_bus_remove_all();
	/* Nothing taken: the configuration may change again. */
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
}

static void test_not_uio(void **state)
{
	struct pci_fake_dev a = fake_dev(A, 0x1234, 0x11e8, 1);
	struct pci_fake_dev b = fake_dev(B, 0x1234, 0x11e8, 1);
	char path[4200];
	struct pci_dev *p;
	int fd;

	(void)state;
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	/* A: another driver's, so sysfs's. */
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_fake_path(ft, A, "driver", path, sizeof(path)), 0);
	assert_int_equal(symlink("../../bus/pci/drivers/e1000e", path), 0);
	assert_int_equal(pci_bus_scan_device(A), 0);
	p = pci_get_device(0x1234, 0x11e8, NULL);
	assert_non_null(p);
	assert_false(pci_dev_is_uio(p));
	assert_ptr_equal(get_dma_ops(&p->dev), devres_dma_iova_ops());
	pci_dev_put(p);

	/* B: uio_pci_generic's, but its node is another device. */
	assert_int_equal(pci_fake_add(ft, &b), 0);
	assert_int_equal(fake_uio_add(B, 1, &ub), 0);
	snprintf(path, sizeof(path), "%s/uio1", uio_dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/dev/null", path), 0);
	assert_int_equal(pci_bus_scan_device(B), -ESTALE);
	/* ... or a file. */
	assert_int_equal(unlink(path), 0);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pci_bus_scan_device(B), -ESTALE);
	/* ... or missing. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pci_bus_scan_device(B), -ENOENT);
}

static int sweep_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret, n;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (!ret)
		ret = pcim_iomap_regions(pdev, 1 << 0, "uio-sweep");
	if (ret)
		return ret;
	pci_set_master(pdev);
	n = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
	if (n < 0)
		return n;
	return devm_request_irq(&pdev->dev,
				(unsigned int)pci_irq_vector(pdev, 0),
				count_irq, 0, "uio-sweep", pdev);
}

static void test_probe_sweep(void **state)
{
	static struct pci_driver drv = {
		.name = "uio-sweep",
		.id_table = intx_ids,
		.probe = sweep_probe,
	};
	struct devres_sweep_result r;
	int warns = devres_warn_count();
	struct pci_dev *p;

	(void)state;
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	p = add_uio_dev(A, 2, &ua);
	assert_int_equal(driver_probe_sweep(&drv.driver, &p->dev, &r), 0);
	assert_true(r.points >= 6);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(devres_warn_count(), warns);
	assert_null(p->dev.driver);
	assert_false(command_of(A) & PCI_COMMAND_MASTER);
}

static int stop_reading;

static void *config_reader(void *arg)
{
	struct pci_dev *p = arg;
	uint32_t v;

	while (!__atomic_load_n(&stop_reading, __ATOMIC_ACQUIRE)) {
		int ret = pci_read_config_dword(p, PCI_VENDOR_ID, &v);

		/* Before the removal the ids, after it nothing. */
		if (!ret && v != (0x11e8u << 16 | 0x1234))
			return (void *)"wrong ids";
		if (ret)
			break;
	}
	return NULL;
}

/*
 * A holder of a reference reads config space while a rescan removes the
 * device: the backend stays attached until the last reference goes, so
 * neither its field nor its fd changes under a read.
 */
static void test_removal_races_config_read(void **state)
{
	struct devres_ledger mid, end;
	pthread_t t;
	void *reads;

	(void)state;
	assert_int_equal(pci_uio_enable(uio_dir, 0), 0);
	for (int round = 0; round < 20; round++) {
		struct pci_dev *p = add_uio_dev(A, 4, &ua);

		pci_dev_get(p);
		__atomic_store_n(&stop_reading, 0, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, config_reader, p), 0);
		assert_int_equal(pci_fake_remove(ft, A), 0);
		assert_int_equal(pci_bus_scan(), 0);
		assert_null(pci_get_device(0x1234, 0x11e8, NULL));
		__atomic_store_n(&stop_reading, 1, __ATOMIC_RELEASE);
		assert_int_equal(pthread_join(t, &reads), 0);
		assert_null(reads);
		/* Removed, held: the uio fd goes with the last reference. */
		assert_true(pci_dev_is_uio(p));
		devres_ledger_snapshot(&mid);
		pci_dev_put(p);
		devres_ledger_snapshot(&end);
		assert_int_equal(mid.fds - end.fds, 1);
		fake_uio_close(&ua);
		uio_dir_remove();
		assert_int_equal(mkdir(uio_dir, 0700), 0);
	}
}

int main(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_intx_through_uio,
						uio_setup, uio_teardown),
		cmocka_unit_test_setup_teardown(test_dma_phys_opt_in, uio_setup,
						uio_teardown),
		cmocka_unit_test_setup_teardown(test_not_uio, uio_setup,
						uio_teardown),
		cmocka_unit_test_setup_teardown(test_probe_sweep, uio_setup,
						uio_teardown),
		cmocka_unit_test_setup_teardown(test_removal_races_config_read,
						uio_setup, uio_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
