// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * BARs as the process sees them: in the resource tree, mapped from their
 * own resourceN file and no window (what a driver writes reaches the
 * file), claimed busy by pcim_request_region, and everything given back
 * at unbind, at rescan and at pci_bus_remove_all.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/io.h>
#include "testlib.h"
#include "pcitest.h"

#define NAME "0000:00:06.0"

static struct pci_dev *scan_one(int nbars)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, nbars);
	struct pci_dev *p;

	d.bar_size[0] = 8192;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	return p;
}

static char *iomem_dump(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	resource_dump(&iomem_resource, f);
	fclose(f);
	return buf;
}

static uint32_t file_u32(const char *file, long off)
{
	char path[4096];
	uint32_t v = 0;
	FILE *f;

	assert_int_equal(pci_fake_path(ft, NAME, file, path, sizeof(path)), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, off, SEEK_SET), 0);
	assert_int_equal(fread(&v, 4, 1, f), 1);
	fclose(f);
	return v;
}

static void test_tree_and_windows(void **state)
{
	struct pci_dev *p = scan_one(2);
	char *dump = iomem_dump();
	void __iomem *m;

	(void)state;
	/* Each BAR carries the device's name; no window is made for it. */
	assert_int_equal(count_substr(dump, NAME), 2);
	free(dump);
	assert_null(ioremap(pci_resource_start(p, 0), 4));
	assert_int_equal(errno, ENXIO);
	m = pci_iomap(p, 1, 0);
	assert_non_null(m);
	writel(0xcafef00d, (char *)m + 16);
	assert_int_equal(file_u32("resource1", 16), 0xcafef00d);
	pci_iounmap(p, m);
	assert_null(pci_iomap(p, 6, 0));
	assert_null(pci_iomap(p, 2, 0));
	pci_bus_remove_all();
	dump = iomem_dump();
	assert_int_equal(count_substr(dump, NAME), 0);
	free(dump);
}

static void test_pcim_iomap(void **state)
{
	struct pci_dev *p = scan_one(2);
	void __iomem *const *t;
	void __iomem *m;
	struct devres_stats st;

	(void)state;
	assert_int_equal(pci_bus_scan(), 1);
	m = pcim_iomap(p, 0, 256);
	assert_non_null(m);
	t = pcim_iomap_table(p);
	assert_non_null(t);
	assert_ptr_equal(t[0], m);
	assert_null(t[1]);
	/* One mapping per BAR. */
	assert_null(pcim_iomap(p, 0, 0));
	writel(0x12345678, m);
	assert_int_equal(readl(m), 0x12345678);
	assert_int_equal(file_u32("resource0", 0), 0x12345678);
	pcim_iounmap(p, m);
	assert_null(t[0]);
	start_capture();
	pcim_iounmap(p, m);
	expect_warn_on(NAME, "pcim_iounmap", "");
	/* The table is the device's, not a node. */
	devres_get_stats(&p->dev, &st);
	assert_int_equal(st.allocs, 0);
	/* pci_iounmap() of a managed mapping: caught, undone the managed way. */
	m = pcim_iomap(p, 0, 0);
	assert_non_null(m);
	start_capture();
	pci_iounmap(p, m);
	expect_warn_on(NAME, "pci_iounmap", "");
	assert_null(t[0]);
	devres_get_stats(&p->dev, &st);
	assert_int_equal(st.allocs, 0);
	devres_release_all(&p->dev);
}

static void test_regions(void **state)
{
	struct pci_dev *p = scan_one(3);
	void __iomem *const *t;

	(void)state;
	assert_int_equal(pcim_request_region(p, 0, "drv"), 0);
	assert_int_equal(pcim_request_region(p, 0, "drv"), -EBUSY);
	assert_int_equal(pcim_request_region(p, 5, "drv"), -EINVAL);
	assert_int_equal(pcim_request_region(p, -1, "drv"), -EINVAL);
	assert_int_equal(pcim_request_all_regions(p, "drv"), -EBUSY);
	/* All or nothing: BARs 1 and 2 stay free. */
	assert_non_null(
		request_mem_region(pci_resource_start(p, 1), 4096, "x"));
	release_mem_region(pci_resource_start(p, 1), 4096);
	pcim_release_region(p, 0);
	assert_int_equal(pcim_request_all_regions(p, "drv"), 0);
	assert_null(request_mem_region(pci_resource_start(p, 2), 4096, "x"));
	devres_release_all(&p->dev);
	/* pcim_iomap_regions fails as a whole when one BAR is taken. */
	assert_non_null(
		request_mem_region(pci_resource_start(p, 2), 4096, "x"));
	assert_int_equal(pcim_iomap_regions(p, 0x7, "drv"), -EBUSY);
	t = pcim_iomap_table(p);
	assert_null(t[0]);
	assert_null(t[1]);
	release_mem_region(pci_resource_start(p, 2), 4096);
	/* An empty BAR in the mask fails it all, as the kernel since 6.11. */
	assert_int_equal(pcim_iomap_regions(p, 0x7 | 0x20, "drv"), -EINVAL);
	assert_null(t[0]);
	assert_int_equal(pcim_iomap_regions(p, 0x7, "drv"), 0);
	assert_non_null(t[0]);
	assert_non_null(t[2]);
	assert_null(t[5]);
	start_capture();
	pcim_release_region(p, 4);
	expect_warn_on(NAME, "pcim_release_region", "");
	devres_release_all(&p->dev);
}

static void test_io_bar(void **state)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 1);
	struct pci_dev *p;

	(void)state;
	d.bar_flags[0] = IORESOURCE_IO;
	d.bar_size[0] = 32;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	pci_dev_put(p);
	assert_null(pcim_iomap(p, 0, 0));
	assert_int_equal(pcim_request_region(p, 0, "drv"), 0);
	assert_null(request_region(pci_resource_start(p, 0), 1, "x"));
	devres_release_all(&p->dev);
}

/* A driver in the kernel's shape, swept over every failure point. */
static int regs_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	void __iomem *base;
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, 1 << 0, "regs");
	if (ret)
		return ret;
	base = pcim_iomap_table(pdev)[0];
	writel(0x1, base);
	pci_set_master(pdev);
	return 0;
}

static void test_probe_sweep(void **state)
{
	static const struct pci_device_id ids[] = {
		{ PCI_DEVICE(0x1af4, 0x1041) },
		{ 0 },
	};
	static struct pci_driver drv = {
		.name = "regs",
		.id_table = ids,
		.probe = regs_probe,
	};
	struct devres_sweep_result r;
	struct pci_dev *p = scan_one(1);

	(void)state;
	assert_int_equal(pci_register_driver(&drv), 0);
	assert_true(device_is_bound(&p->dev));
	assert_int_equal(file_u32("resource0", 0), 1);
	/* Bound: the BAR is busy, and the rescan of a vanished device works. */
	assert_null(request_mem_region(pci_resource_start(p, 0), 4, "x"));
	device_release_driver(&p->dev);
	assert_int_equal(driver_probe_sweep(&drv.driver, &p->dev, &r), 0);
	assert_true(r.points >= 5);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(device_attach(&p->dev), 1);
	assert_int_equal(pci_fake_remove(ft, NAME), 0);
	assert_int_equal(pci_bus_scan(), 0);
	pci_unregister_driver(&drv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tree_and_windows,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_pcim_iomap, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_regions, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_io_bar, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_probe_sweep, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
