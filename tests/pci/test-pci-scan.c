// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The scan of a fake sysfs tree: what a pci_dev holds after it, rescans
 * that add and remove devices (also while a driver is bound), the root,
 * pci_get_device(), and the fake tree helper itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"
#include "pcitest.h"

static struct pci_dev *get(const char *name)
{
	struct pci_dev *p = NULL;

	while ((p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, p)))
		if (strcmp(pci_name(p), name) == 0)
			return p;
	return NULL;
}

static void test_scan_fields(void **state)
{
	struct pci_fake_dev d = fake_dev("0000:00:04.0", 0x8086, 0x100e, 2);
	struct pci_dev *p;

	(void)state;
	d.bar_flags[1] = IORESOURCE_IO;
	d.bar_size[1] = 64;
	d.revision = 3;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = get("0000:00:04.0");
	assert_non_null(p);
	assert_int_equal(p->vendor, 0x8086);
	assert_int_equal(p->device, 0x100e);
	assert_int_equal(p->subsystem_vendor, 0x1af4);
	assert_int_equal(p->subsystem_device, 0x1100);
	assert_int_equal(p->class, 0x020000);
	assert_int_equal(p->revision, 3);
	assert_int_equal(p->hdr_type, 0);
	/* `irq` is the host's number: no line of this process. */
	assert_int_equal(p->irq, 0);
	assert_int_equal(p->cfg_size, 256);
	assert_int_equal(p->domain_nr, 0);
	assert_int_equal(p->bus_nr, 0);
	assert_int_equal(PCI_SLOT(p->devfn), 4);
	assert_int_equal(PCI_FUNC(p->devfn), 0);
	assert_int_equal(pci_resource_len(p, 0), 4096);
	assert_int_equal(pci_resource_flags(p, 0) & IORESOURCE_TYPE_BITS,
			 IORESOURCE_MEM);
	assert_int_equal(pci_resource_start(p, 0) % 4096, 0);
	assert_int_equal(pci_resource_len(p, 1), 64);
	assert_int_equal(pci_resource_flags(p, 1) & IORESOURCE_TYPE_BITS,
			 IORESOURCE_IO);
	for (int i = 2; i < PCI_NUM_RESOURCES; i++)
		assert_int_equal(pci_resource_len(p, i), 0);
	assert_string_equal(dev_name(&p->dev), "0000:00:04.0");
	assert_ptr_equal(to_pci_dev(&p->dev), p);
	pci_dev_put(p);
	/* Scanning again finds nothing new. */
	assert_int_equal(pci_bus_scan(), 1);
}

static void test_scan_order_and_get_device(void **state)
{
	const char *names[] = { "0000:00:1f.7", "0000:00:02.0", "0001:00:00.0",
				"0000:01:00.0" };
	const char *sorted[] = { "0000:00:02.0", "0000:00:1f.7", "0000:01:00.0",
				 "0001:00:00.0" };
	struct pci_dev *p = NULL;
	int i = 0;

	(void)state;
	for (int k = 0; k < 4; k++) {
		struct pci_fake_dev d =
			fake_dev(names[k], 0x1000, (unsigned short)k, 0);

		assert_int_equal(pci_fake_add(ft, &d), 0);
	}
	assert_int_equal(pci_bus_scan(), 4);
	while ((p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, p)))
		assert_string_equal(pci_name(p), sorted[i++]);
	assert_int_equal(i, 4);
	p = pci_get_device(0x1000, 2, NULL);
	assert_non_null(p);
	assert_string_equal(pci_name(p), "0001:00:00.0");
	assert_null(pci_get_device(0x1000, 2, p));
	assert_null(pci_get_device(0x1001, PCI_ANY_ID, NULL));
}

static void test_rescan_adds_and_removes(void **state)
{
	struct pci_fake_dev a = fake_dev("0000:00:01.0", 0x1234, 1, 1);
	struct pci_fake_dev b = fake_dev("0000:00:02.0", 0x1234, 2, 1);
	struct devres_ledger l;
	long devs;

	(void)state;
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_bus_scan(), 1);
	devres_ledger_snapshot(&l);
	devs = l.devices;
	assert_int_equal(pci_fake_add(ft, &b), 0);
	assert_int_equal(pci_bus_scan(), 2);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.devices, devs + 1);
	assert_int_equal(pci_fake_remove(ft, "0000:00:01.0"), 0);
	assert_int_equal(pci_bus_scan(), 1);
	assert_null(get("0000:00:01.0"));
	struct pci_dev *p = get("0000:00:02.0");
	assert_non_null(p);
	pci_dev_put(p);
	assert_int_equal(pci_fake_remove(ft, "0000:00:02.0"), 0);
	assert_int_equal(pci_bus_scan(), 0);
	assert_int_equal(pci_fake_remove(ft, "0000:00:02.0"), -ENOENT);
}

static int bound, unbound;

static int count_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	bound++;
	return pcim_enable_device(pdev);
}

static void count_remove(struct pci_dev *pdev)
{
	(void)pdev;
	unbound++;
}

static const struct pci_device_id count_ids[] = {
	{ PCI_DEVICE(0x1234, PCI_ANY_ID) },
	{ 0 },
};

static struct pci_driver count_drv = {
	.name = "count",
	.id_table = count_ids,
	.probe = count_probe,
	.remove = count_remove,
};

static void test_rescan_while_bound(void **state)
{
	struct pci_fake_dev a = fake_dev("0000:00:01.0", 0x1234, 1, 1);
	struct pci_fake_dev b = fake_dev("0000:00:02.0", 0x1234, 2, 1);
	char buf[16];

	(void)state;
	bound = unbound = 0;
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_bus_scan(), 1);
	assert_int_equal(pci_register_driver(&count_drv), 0);
	assert_int_equal(bound, 1);
	assert_true(fake_read("0000:00:01.0", "enable", buf, sizeof(buf)) > 0);
	assert_int_equal(buf[0], '1');
	/* A new device binds during the scan. */
	assert_int_equal(pci_fake_add(ft, &b), 0);
	assert_int_equal(pci_bus_scan(), 2);
	assert_int_equal(bound, 2);
	/* A vanished one is unbound (remove, then its resources) first. */
	assert_true(fake_read("0000:00:02.0", "enable", buf, sizeof(buf)) > 0);
	assert_int_equal(buf[0], '1');
	assert_int_equal(pci_fake_remove(ft, "0000:00:01.0"), 0);
	assert_int_equal(pci_bus_scan(), 1);
	assert_int_equal(unbound, 1);
	pci_unregister_driver(&count_drv);
	assert_int_equal(unbound, 2);
	assert_true(fake_read("0000:00:02.0", "enable", buf, sizeof(buf)) > 0);
	assert_int_equal(buf[0], '0');
}

static void test_root(void **state)
{
	struct pci_fake_dev a = fake_dev("0000:00:01.0", 0x1234, 1, 0);

	(void)state;
	assert_int_equal(pci_sysfs_set_root(""), -EINVAL);
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_bus_scan(), 1);
	/* The root cannot change under registered devices. */
	assert_int_equal(pci_sysfs_set_root("/nonexistent"), -EBUSY);
	pci_bus_remove_all();
	assert_int_equal(pci_sysfs_set_root("/nonexistent"), 0);
	assert_int_equal(pci_bus_scan(), -ENOENT);
	assert_int_equal(pci_sysfs_set_root(pci_fake_root(ft)), 0);
	assert_int_equal(pci_bus_scan(), 1);
}

static void test_env_root(void **state)
{
	char *err = NULL;
	char var[4200];
	struct pci_fake_dev a = fake_dev("0000:00:01.0", 0x1234, 1, 0);

	(void)state;
	assert_int_equal(pci_fake_add(ft, &a), 0);
	snprintf(var, sizeof(var), "DEVRES_SYSFS_ROOT=%s", pci_fake_root(ft));
	/* The child scans its default root: the variable's. */
	assert_int_equal(run_self(var, &err, "--env-scan", NULL), 1);
	free(err);
	assert_int_equal(run_self("DEVRES_SYSFS_ROOT=/nonexistent", NULL,
				  "--env-scan", NULL),
			 100 + ENOENT);
}

static void test_fake_helper_checks(void **state)
{
	struct pci_fake_dev d = fake_dev("0000:00:01.0", 0x1234, 1, 1);
	char path[16];

	(void)state;
	d.name = "bogus";
	assert_int_equal(pci_fake_add(ft, &d), -EINVAL);
	d.name = "0000:00:01.0";
	d.vendor = 0xffff;
	assert_int_equal(pci_fake_add(ft, &d), -EINVAL);
	d.vendor = 0x1234;
	d.bar_size[0] = 3000;
	assert_int_equal(pci_fake_add(ft, &d), -EINVAL);
	d.bar_size[0] = 4096;
	d.cfg_size = 32;
	assert_int_equal(pci_fake_add(ft, &d), -EINVAL);
	d.cfg_size = 4096;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_fake_add(ft, &d), -EEXIST);
	assert_int_equal(pci_fake_path(ft, "0000:00:01.0", "config", path,
				       sizeof(path)),
			 -ENAMETOOLONG);
	assert_int_equal(pci_fake_remove(ft, "../x"), -EINVAL);
	assert_int_equal(pci_bus_scan(), 1);
	struct pci_dev *p = get("0000:00:01.0");
	assert_int_equal(p->cfg_size, 4096);
	pci_dev_put(p);
}

static int scan_op(void *ctx)
{
	int n = pci_bus_scan();

	(void)ctx;
	return n < 0 ? n : 0;
}

static void remove_op(void *ctx)
{
	(void)ctx;
	pci_bus_remove_all();
}

/* The scan fails at each of its acquisitions in turn and leaks nothing. */
static void test_scan_sweep(void **state)
{
	struct pci_fake_dev a = fake_dev("0000:00:01.0", 0x1234, 1, 2);
	struct pci_fake_dev b = fake_dev("0000:00:02.0", 0x1234, 2, 1);
	struct devres_sweep_result r;

	(void)state;
	a.bar_flags[1] = IORESOURCE_IO;
	a.bar_size[1] = 32;
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(pci_fake_add(ft, &b), 0);
	assert_int_equal(devres_sweep(scan_op, remove_op, NULL, &r), 0);
	assert_true(r.points >= 10);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(pci_bus_scan(), 2);
}

/* Every fd the library holds while devices are registered is O_CLOEXEC. */
static void test_fds_cloexec(void **state)
{
	struct pci_fake_dev d = fake_dev("0000:00:01.0", 0x1234, 1, 2);
	static bool before[1024];
	int n = 0;

	(void)state;
	/* Only what the library opens: the harness may pass fds down. */
	for (int fd = 0; fd < 1024; fd++)
		before[fd] = fcntl(fd, F_GETFD) >= 0;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	for (int fd = 0; fd < 1024; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl < 0 || before[fd])
			continue;
		n++;
		assert_true(fl & FD_CLOEXEC);
	}
	/* The root, at least (a BAR's file is opened only to map it). */
	assert_true(n >= 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scan_fields, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_scan_order_and_get_device,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_rescan_adds_and_removes,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_rescan_while_bound,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_root, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_env_root, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_fake_helper_checks,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_fds_cloexec, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_scan_sweep, pci_setup,
						pci_teardown),
	};

	if (argc == 2 && strcmp(argv[1], "--env-scan") == 0) {
		int n = pci_bus_scan();

		pci_bus_remove_all();
		return n < 0 ? 100 - n : n;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
