// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * A hostile or broken sysfs tree: garbage and truncated resource lines,
 * huge BARs, missing files, a config shorter than 64 bytes, odd names,
 * symlink loops, FIFOs, and symlinks that lead out of the root. Each gives
 * a clear error for its device and no crash; the elsewhere devices of the
 * tree are still found; and nothing outside the root is ever written.
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

#define BAD "0000:00:09.0"
#define GOOD "0000:00:01.0"

/* A good device and a bad one (made bad by the test), both in the tree. */
static void two_devices(void)
{
	struct pci_fake_dev g = fake_dev(GOOD, 0x1af4, 1, 1);
	struct pci_fake_dev b = fake_dev(BAD, 0x1af4, 2, 1);

	assert_int_equal(pci_fake_add(ft, &g), 0);
	assert_int_equal(pci_fake_add(ft, &b), 0);
}

/* The bad device is skipped with @err; the good one is registered. */
static void expect_skipped(int err)
{
	assert_int_equal(pci_bus_scan(), 1);
	assert_int_equal(pci_bus_scan_device(BAD), err);
	pci_bus_remove_all();
}

static void bad_resource(const char *text, int err)
{
	assert_int_equal(fake_write(BAD, "resource", text, strlen(text)), 0);
	expect_skipped(err);
}

static void test_resource_lines(void **state)
{
	char big[8192];

	(void)state;
	two_devices();
	bad_resource("garbage\n", -EINVAL);
	bad_resource("0x00000000c0000000 0x00000000c0000fff", -EINVAL);
	bad_resource("0x00000000c0000000 0x00000000c0000fff 0x200", -EINVAL);
	bad_resource("0x00000000c0000000 0x00000000c0000fff 0x00000200\n"
		     "0x0000",
		     -EINVAL);
	bad_resource("0xc0000000 0xc0000fff 0x200 \n", -EINVAL);
	bad_resource("0x 0x1 0x200\n", -EINVAL);
	bad_resource("0x00000000c0000000  0x00000000c0000fff 0x200\n", -EINVAL);
	bad_resource("-0x1 0x2 0x200\n", -EINVAL);
	/* 17 hex digits: more than 64 bits. */
	bad_resource("0x10000000000000000 0x1 0x200\n", -EINVAL);
	/* End before start. */
	bad_resource("0xc0001000 0xc0000fff 0x200\n", -EINVAL);
	/* A BAR spanning every address: its size does not fit. */
	bad_resource("0x0 0xffffffffffffffff 0x200\n", -EINVAL);
	/* A range with no type. */
	bad_resource("0xc0000000 0xc0000fff 0x0\n", -EINVAL);
	/* More lines than a device has resources. */
	big[0] = 0;
	for (int i = 0; i < PCI_NUM_RESOURCES + 1; i++)
		strcat(big, "0x0000000000000000 0x0000000000000000 "
			    "0x0000000000000000\n");
	bad_resource(big, -EINVAL);
	/* A huge file. */
	memset(big, '0', sizeof(big));
	assert_int_equal(fake_write(BAD, "resource", big, sizeof(big)), 0);
	expect_skipped(-EINVAL);
	/* An empty file: no BARs, which is fine. */
	assert_int_equal(fake_write(BAD, "resource", "", 0), 0);
	assert_int_equal(pci_bus_scan(), 2);
}

static void test_huge_bar(void **state)
{
	const char *huge = "0xffffffffffff0000 0xffffffffffffffff 0x200\n"
			   "0x0000000000001000 0x7fffffffffffffff 0x200\n";
	struct pci_dev *p;

	(void)state;
	two_devices();
	/* Valid ranges, but resourceN holds far less: not mappable. */
	assert_int_equal(fake_write(BAD, "resource", huge, strlen(huge)), 0);
	assert_int_equal(pci_bus_scan(), 2);
	p = pci_get_device(0x1af4, 2, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	assert_int_equal(pci_resource_len(p, 0), 0x10000);
	assert_int_equal(pci_resource_len(p, 1), 0x7ffffffffffff000ull);
	assert_null(pcim_iomap(p, 0, 0));
	assert_null(pcim_iomap(p, 1, 0));
	devres_release_all(&p->dev);
}

static void test_missing_and_short_files(void **state)
{
	char path[4096];
	uint8_t cfg[63] = { 0xf4, 0x1a };

	(void)state;
	two_devices();
	assert_int_equal(pci_fake_path(ft, BAD, "resource", path, sizeof(path)),
			 0);
	assert_int_equal(unlink(path), 0);
	expect_skipped(-ENOENT);
	assert_int_equal(fake_write(BAD, "resource", "", 0), 0);
	assert_int_equal(pci_fake_path(ft, BAD, "config", path, sizeof(path)),
			 0);
	assert_int_equal(unlink(path), 0);
	expect_skipped(-ENOENT);
	/* Shorter than the 64 bytes of the header. */
	assert_int_equal(fake_write(BAD, "config", cfg, sizeof(cfg)), 0);
	expect_skipped(-ENODATA);
	assert_int_equal(fake_write(BAD, "config", cfg, 0), 0);
	expect_skipped(-ENODATA);
	/* A function that reads as absent. */
	uint8_t gone[64];
	memset(gone, 0xff, sizeof(gone));
	assert_int_equal(fake_write(BAD, "config", gone, sizeof(gone)), 0);
	expect_skipped(-ENODEV);
	/* irq: never read (the host's number is no line of this process). */
	struct pci_fake_dev b = fake_dev(BAD, 0x1af4, 2, 0);
	assert_int_equal(pci_fake_remove(ft, BAD), 0);
	assert_int_equal(pci_fake_add(ft, &b), 0);
	assert_int_equal(fake_write(BAD, "irq", "eleven\n", 7), 0);
	assert_int_equal(pci_bus_scan(), 2);
	pci_bus_remove_all();
	assert_int_equal(pci_fake_path(ft, BAD, "irq", path, sizeof(path)), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pci_bus_scan(), 2);
}

static void test_odd_names(void **state)
{
	const char *odd[] = { "0000:00:01.8",  "0000:00:20.0",
			      "000:00:01.0",   "0000:0:01.0",
			      "0000:00:01.0x", "0000:00:01",
			      "0000:00:0G.0",  "0000-00-01.0",
			      "0000:00:01.01", "123456789:00:01.0",
			      "0000:00:1F.0",  "..",
			      "notpci" };
	char path[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		if (!strcmp(odd[i], ".."))
			continue;
		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s",
			 pci_fake_root(ft), odd[i]);
		assert_int_equal(mkdir(path, 0755), 0);
		assert_int_equal(pci_bus_scan_device(odd[i]), -EINVAL);
	}
	assert_int_equal(pci_bus_scan_device(NULL), -EINVAL);
	assert_int_equal(pci_bus_scan_device("../../../etc"), -EINVAL);
	/* Names that are not addresses are ignored by the scan. */
	assert_int_equal(pci_bus_scan(), 0);
	struct pci_fake_dev d = fake_dev("ffffffff:ff:1f.7", 0x1af4, 1, 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	struct pci_dev *p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_int_equal(p->domain_nr, 0xffffffffu);
	assert_int_equal(p->bus_nr, 0xff);
	assert_int_equal(p->devfn, PCI_DEVFN(0x1f, 7));
	pci_dev_put(p);
	assert_int_equal(pci_bus_scan_device("ffffffff:ff:1f.7"), -EEXIST);
}

static void test_symlink_loops(void **state)
{
	char path[4096];

	(void)state;
	two_devices();
	assert_int_equal(pci_fake_path(ft, BAD, "config", path, sizeof(path)),
			 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("config", path), 0);
	expect_skipped(-ELOOP);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("loop2", path), 0);
	assert_int_equal(pci_fake_path(ft, BAD, "loop2", path, sizeof(path)),
			 0);
	assert_int_equal(symlink("config", path), 0);
	expect_skipped(-ELOOP);
	/* The device's own link points at itself. */
	snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", pci_fake_root(ft),
		 BAD);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(BAD, path), 0);
	expect_skipped(-ELOOP);
}

static void test_fifo_and_dirs(void **state)
{
	char path[4096];

	(void)state;
	two_devices();
	assert_int_equal(pci_fake_path(ft, BAD, "config", path, sizeof(path)),
			 0);
	assert_int_equal(unlink(path), 0);
	/* A FIFO would block a reader: refused, not read. */
	assert_int_equal(mkfifo(path, 0644), 0);
	expect_skipped(-EINVAL);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	expect_skipped(-EINVAL);
	assert_int_equal(rmdir(path), 0);
}

/*
 * A file outside the root, and every way a tree can point at it: the
 * device's link, the device's directory, a file of it, absolute and
 * relative. No scan, read or write may reach it.
 */
static void test_writes_stay_beneath_root(void **state)
{
	char outside[] = "/tmp/devres-outside-XXXXXX";
	char path[4096], target[4096], buf[64];
	const char *orig = "untouched";
	struct pci_fake_dev od = fake_dev(BAD, 0x1af4, 2, 1);
	struct pci_dev *p;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(outside));
	snprintf(path, sizeof(path), "%s/enable", outside);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, orig, strlen(orig)), (ssize_t)strlen(orig));
	close(fd);
	two_devices();
	assert_int_equal(pci_bus_scan(), 2);
	p = pci_get_device(0x1af4, 2, NULL);
	pci_dev_put(p);

	/* `enable` is an absolute symlink out of the root. */
	assert_int_equal(
		pci_fake_path(ft, BAD, "enable", target, sizeof(target)), 0);
	assert_int_equal(unlink(target), 0);
	assert_int_equal(symlink(path, target), 0);
	/* A symlink where the file was is never followed (O_NOFOLLOW). */
	assert_int_equal(pci_enable_device(p), -ELOOP);
	/* A relative one climbing out with "..". */
	assert_int_equal(unlink(target), 0);
	snprintf(buf, sizeof(buf), "../../../../../../../../../..%s/enable",
		 outside);
	assert_int_equal(symlink(buf, target), 0);
	assert_int_equal(pci_enable_device(p), -ELOOP);
	assert_false(pci_is_enabled(p));
	/* `config` likewise: writes fail, reads too. */
	assert_int_equal(
		pci_fake_path(ft, BAD, "config", target, sizeof(target)), 0);
	assert_int_equal(unlink(target), 0);
	assert_int_equal(symlink(path, target), 0);
	assert_int_equal(pci_write_config_dword(p, 0, 0x41414141),
			 PCIBIOS_SET_FAILED);
	pci_set_master(p);
	pci_bus_remove_all();

	/* The device's link in bus/pci/devices leads out of the root. */
	snprintf(target, sizeof(target), "%s/bus/pci/devices/%s",
		 pci_fake_root(ft), BAD);
	assert_int_equal(unlink(target), 0);
	assert_int_equal(symlink(outside, target), 0);
	expect_skipped(-EXDEV);

	/* A whole device directory outside, reached through "..". */
	assert_int_equal(unlink(target), 0);
	snprintf(buf, sizeof(buf), "../../../..%s", outside);
	assert_int_equal(symlink(buf, target), 0);
	expect_skipped(-EXDEV);

	/* A fully formed device outside; scanned from the outside it works. */
	struct pci_fake *elsewhere = pci_fake_create();
	assert_non_null(elsewhere);
	assert_int_equal(pci_fake_add(elsewhere, &od), 0);
	assert_int_equal(unlink(target), 0);
	assert_int_equal(pci_fake_path(elsewhere, BAD, NULL, buf, sizeof(buf)),
			 0);
	assert_int_equal(symlink(buf, target), 0);
	expect_skipped(-EXDEV);

	/* The file outside was never written. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(orig));
	close(fd);
	assert_string_equal(buf, orig);
	assert_int_equal(pci_fake_path(elsewhere, BAD, "enable", target,
				       sizeof(target)),
			 0);
	assert_true(fake_read(GOOD, "enable", buf, sizeof(buf)) > 0);
	fd = open(target, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 2);
	close(fd);
	assert_int_equal(buf[0], '0');
	pci_fake_destroy(elsewhere);
	/* The outside file survives the tree's removal (no link followed). */
	snprintf(target, sizeof(target), "%s/bus/pci/devices/%s",
		 pci_fake_root(ft), BAD);
	assert_int_equal(unlink(target), 0);
	assert_int_equal(symlink(outside, target), 0);
	pci_fake_destroy(ft);
	ft = pci_fake_create();
	assert_non_null(ft);
	assert_int_equal(pci_sysfs_set_root(pci_fake_root(ft)), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(outside), 0);
}

/* bus/pci/devices as a file, then missing: the scan fails as a whole. */
static void test_root_is_a_file(void **state)
{
	char path[4096];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/bus/pci/devices", pci_fake_root(ft));
	assert_int_equal(rmdir(path), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pci_bus_scan(), -ENOTDIR);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pci_bus_scan(), -ENOENT);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(pci_bus_scan(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_resource_lines, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_huge_bar, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_missing_and_short_files,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_odd_names, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_symlink_loops, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_fifo_and_dirs, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_writes_stay_beneath_root,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_root_is_a_file, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
