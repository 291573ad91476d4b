// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat pci */
/*
 * kmb, a kernel-style PCI mailbox with MSI, on a fake PCI tree: it binds
 * through its id table, gets two MSI-X vectors, exchanges a message with
 * the register model through BAR 0 and its interrupt, and sweeps clean.
 */
#define _GNU_SOURCE
#ifndef KC_TWIN
#define KC_TWIN 0
#endif
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/kmb.c"
#include <fcntl.h>
#include <devres/pci_fake.h>
#include "kcompat/kctest.h"

#define KMB_ADDR "0000:00:05.0"

static struct pci_fake *tree;
static struct pci_dev *pdev;
static volatile u32 *regs;
static int lines[2];
static struct devres_ledger base;

static int setup(void **state)
{
	struct pci_fake_dev desc = {
		.name = KMB_ADDR,
		.vendor = KMB_VENDOR,
		.device = KMB_DEVICE,
		.class = 0x088000,
		.bar_size = { 4096 },
		.bar_flags = { IORESOURCE_MEM },
	};
	char path[4096];
	int fd;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_ledger_snapshot(&base);
	tree = pci_fake_create();
	assert_non_null(tree);
	assert_int_equal(pci_fake_add(tree, &desc), 0);
	assert_int_equal(pci_sysfs_set_root(pci_fake_root(tree)), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(KMB_VENDOR, KMB_DEVICE, NULL);
	assert_non_null(pdev);
	lines[0] = irq_line_create("kmb0");
	lines[1] = irq_line_create("kmb1");
	assert_int_equal(pci_dev_set_irq_lines(pdev, lines, 2), 0);
	assert_int_equal(pci_fake_path(tree, KMB_ADDR, "resource0", path,
				       sizeof(path)),
			 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(regs != MAP_FAILED);
	start_log_capture();
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	munmap((void *)regs, 4096);
	pci_dev_put(pdev);
	pci_bus_remove_all();
	assert_int_equal(irq_line_destroy(lines[0]), 0);
	assert_int_equal(irq_line_destroy(lines[1]), 0);
	pci_sysfs_set_root(NULL);
	pci_fake_destroy(tree);
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? -1 : 0;
}

static int sweep(struct devres_sweep_result *r)
{
	int ret;

	/* Registered for its bus and name, then unbound: the sweep binds. */
	assert_int_equal(kmb_driver_init(), 0);
	device_release_driver(&pdev->dev);
	ret = driver_probe_sweep(&kmb_driver.driver, &pdev->dev, r);
	kmb_driver_exit();
	return ret;
}

#if !KC_TWIN
static void exchanges_a_message(void **state)
{
	struct kmb *mb;

	(void)state;
	assert_int_equal(kmb_driver_init(), 0);
	mb = pci_get_drvdata(pdev);
	assert_non_null(mb);
	assert_int_equal(mb->nvec, 2);
	assert_true(pdev->msix_enabled);
	assert_true(pci_dev_msi_enabled(pdev));
	assert_true(pdev->is_busmaster);
	kmb_post(mb, 41);
	/* The register model: it read the doorbell and the message. */
	assert_int_equal(regs[KMB_DOORBELL / 4], 1);
	assert_int_equal(regs[KMB_MSG / 4], 41);
	regs[KMB_REPLY / 4] = regs[KMB_MSG / 4] + 1;
	regs[KMB_STATUS / 4] = KMB_STATUS_REPLY;
	assert_int_equal(irq_line_raise(lines[0]), 0);
	assert_int_equal(kmb_wait_reply(mb), 42);
	kmb_driver_exit();
	assert_false(pci_dev_msi_enabled(pdev));
}

static void sweeps_clean(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = sweep(&r);
	if (ret)
		kc_print_report();
	assert_int_equal(ret, 0);
	assert_true(r.points >= 8);
	assert_int_equal(r.leaks + r.warns + r.findings, 0);
	/* pci_alloc_irq_vectors() is a failure point; pci_set_master() not. */
	devres_set_log(true);
	cap.n = 0;
	assert_int_equal(sweep(&r), 0);
	devres_set_log(false);
	assert_true(kc_said(": pci_alloc_irq_vectors fails, probe returned "
			    "-ENOMEM"));
}
#else
/* devm_add_action() without _or_reset: the buffer leaks when it fails. */
static void twin_missing_or_reset_leaks(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = sweep(&r);
	kc_print_report();
	assert_int_equal(ret, 1);
	assert_int_equal(r.leaks, 1);
	assert_true(kc_said("fails, probe returned -ENOMEM"));
	assert_true(kc_said("leak at failure point"));
	devres_release_all(kcompat_heap_dev());
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if !KC_TWIN
		cmocka_unit_test_setup_teardown(exchanges_a_message, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sweeps_clean, setup, teardown),
#else
		cmocka_unit_test_setup_teardown(twin_missing_or_reset_leaks,
						setup, teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
