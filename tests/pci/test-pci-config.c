// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Config space through the fake tree's `config` file: values, bounds and
 * alignment, PCIBIOS codes, a short config, capability walks (also looping
 * lists) and the command register's master bit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"

#define NAME "0000:00:05.0"

/* Scans a device whose config is @cfg (@len bytes) and returns it. */
static struct pci_dev *scan_with(const uint8_t *cfg, size_t len)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 1);
	struct pci_dev *p;

	d.cfg_size = len;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	if (cfg)
		assert_int_equal(fake_write(NAME, "config", cfg, len), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	return p;
}

static void test_read_values(void **state)
{
	struct pci_dev *p = scan_with(NULL, 0);
	uint32_t d;
	uint16_t w;
	uint8_t b;

	(void)state;
	assert_int_equal(pci_read_config_word(p, PCI_VENDOR_ID, &w), 0);
	assert_int_equal(w, 0x1af4);
	assert_int_equal(pci_read_config_word(p, PCI_DEVICE_ID, &w), 0);
	assert_int_equal(w, 0x1041);
	assert_int_equal(pci_read_config_dword(p, PCI_VENDOR_ID, &d), 0);
	assert_int_equal(d, 0x10411af4);
	assert_int_equal(pci_read_config_byte(p, PCI_REVISION_ID, &b), 0);
	assert_int_equal(b, 1);
	assert_int_equal(pci_read_config_dword(p, PCI_CLASS_REVISION, &d), 0);
	assert_int_equal(d >> 8, 0x020000);
	/* The BAR register holds what the resource file says. */
	assert_int_equal(pci_read_config_dword(p, PCI_BASE_ADDRESS_0, &d), 0);
	assert_int_equal(d, (uint32_t)pci_resource_start(p, 0));
	assert_int_equal(pci_read_config_byte(p, 255, &b), 0);
}

static void test_bounds(void **state)
{
	struct pci_dev *p = scan_with(NULL, 0);
	uint32_t d = 0;
	uint16_t w = 0;
	uint8_t b = 0;

	(void)state;
	assert_int_equal(pci_read_config_word(p, 1, &w),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(w, 0xffff);
	assert_int_equal(pci_read_config_dword(p, 2, &d),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(d, 0xffffffff);
	assert_int_equal(pci_read_config_byte(p, 256, &b),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(b, 0xff);
	assert_int_equal(pci_read_config_byte(p, -1, &b),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(pci_read_config_dword(p, 254, &d),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(pci_read_config_dword(p, 252, &d), 0);
	assert_int_equal(pci_write_config_word(p, 3, 1),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(pci_write_config_dword(p, 256, 1),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(pci_write_config_byte(p, INT32_MAX, 1),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(pci_read_config_byte(NULL, 0, &b),
			 PCIBIOS_DEVICE_NOT_FOUND);
	assert_int_equal(pcibios_err_to_errno(PCIBIOS_BAD_REGISTER_NUMBER),
			 -EFAULT);
	assert_int_equal(pcibios_err_to_errno(PCIBIOS_DEVICE_NOT_FOUND),
			 -ENODEV);
	assert_int_equal(pcibios_err_to_errno(PCIBIOS_SET_FAILED), -EIO);
	assert_int_equal(pcibios_err_to_errno(0), 0);
	assert_int_equal(pcibios_err_to_errno(-EINVAL), -EINVAL);
}

static void test_write_reaches_file(void **state)
{
	struct pci_dev *p = scan_with(NULL, 0);
	uint8_t cfg[257];

	(void)state;
	assert_int_equal(pci_write_config_dword(p, 0x40, 0xa1b2c3d4), 0);
	assert_int_equal(pci_write_config_word(p, 0x46, 0xbeef), 0);
	assert_int_equal(pci_write_config_byte(p, 0x48, 0x5a), 0);
	assert_int_equal(fake_read(NAME, "config", (char *)cfg, 257), 256);
	assert_int_equal(cfg[0x40], 0xd4);
	assert_int_equal(cfg[0x43], 0xa1);
	assert_int_equal(cfg[0x46], 0xef);
	assert_int_equal(cfg[0x47], 0xbe);
	assert_int_equal(cfg[0x48], 0x5a);
	pci_set_master(p);
	assert_true(p->is_busmaster);
	assert_int_equal(fake_read(NAME, "config", (char *)cfg, 257), 256);
	assert_int_equal(cfg[PCI_COMMAND] & PCI_COMMAND_MASTER,
			 PCI_COMMAND_MASTER);
	pci_clear_master(p);
	assert_false(p->is_busmaster);
	assert_int_equal(fake_read(NAME, "config", (char *)cfg, 257), 256);
	assert_int_equal(cfg[PCI_COMMAND] & PCI_COMMAND_MASTER, 0);
}

/* The 64 bytes an unprivileged reader gets of a 256-byte config. */
static void test_short_config(void **state)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 0);
	struct pci_dev *p;
	uint8_t cfg[64] = { 0xf4, 0x1a, 0x41, 0x10 };
	uint16_t w;

	(void)state;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(fake_write(NAME, "config", cfg, 64), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(0x1af4, 0x1041, NULL);
	assert_non_null(p);
	assert_int_equal(p->cfg_size, 64);
	assert_int_equal(pci_read_config_word(p, 62, &w), 0);
	assert_int_equal(pci_read_config_word(p, 64, &w),
			 PCIBIOS_BAD_REGISTER_NUMBER);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_MSI), 0);
	assert_int_equal(pci_find_ext_capability(p, PCI_EXT_CAP_ID_ERR), 0);
	pci_dev_put(p);
}

static void put16(uint8_t *c, int off, unsigned int v)
{
	c[off] = (uint8_t)v;
	c[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *c, int off, uint32_t v)
{
	put16(c, off, v & 0xffff);
	put16(c, off + 2, v >> 16);
}

static void base_cfg(uint8_t *c)
{
	put16(c, PCI_VENDOR_ID, 0x1af4);
	put16(c, PCI_DEVICE_ID, 0x1041);
	put16(c, PCI_STATUS, PCI_STATUS_CAP_LIST);
	c[PCI_CAPABILITY_LIST] = 0x40;
}

static void test_capabilities(void **state)
{
	static uint8_t c[4096];
	struct pci_dev *p;
	uint8_t pos;

	(void)state;
	memset(c, 0, sizeof(c));
	base_cfg(c);
	/* 0x40 PM -> 0x50 MSI -> 0x60 VNDR -> 0x70 VNDR -> end */
	c[0x40] = PCI_CAP_ID_PM;
	c[0x41] = 0x50;
	c[0x50] = PCI_CAP_ID_MSI;
	c[0x51] = 0x60;
	c[0x60] = PCI_CAP_ID_VNDR;
	c[0x61] = 0x70;
	c[0x70] = PCI_CAP_ID_VNDR;
	c[0x71] = 0;
	/* Extended: 0x100 AER -> 0x140 DSN -> end */
	put32(c, 0x100, PCI_EXT_CAP_ID_ERR | 1u << 16 | 0x140u << 20);
	put32(c, 0x140, PCI_EXT_CAP_ID_DSN | 1u << 16);
	p = scan_with(c, sizeof(c));
	assert_int_equal(p->cfg_size, 4096);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_PM), 0x40);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_MSI), 0x50);
	pos = pci_find_capability(p, PCI_CAP_ID_VNDR);
	assert_int_equal(pos, 0x60);
	assert_int_equal(pci_find_next_capability(p, pos, PCI_CAP_ID_VNDR),
			 0x70);
	assert_int_equal(pci_find_next_capability(p, 0x70, PCI_CAP_ID_VNDR), 0);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_MSIX), 0);
	assert_int_equal(pci_find_ext_capability(p, PCI_EXT_CAP_ID_ERR), 0x100);
	assert_int_equal(pci_find_ext_capability(p, PCI_EXT_CAP_ID_DSN), 0x140);
	assert_int_equal(pci_find_ext_capability(p, 0x10), 0);
	assert_int_equal(pci_find_capability(NULL, 1), 0);
}

static void test_looping_lists(void **state)
{
	static uint8_t c[4096];
	struct pci_dev *p;

	(void)state;
	memset(c, 0, sizeof(c));
	base_cfg(c);
	/* 0x40 -> 0x50 -> 0x40 ... never reaching MSI-X. */
	c[0x40] = PCI_CAP_ID_PM;
	c[0x41] = 0x50;
	c[0x50] = PCI_CAP_ID_MSI;
	c[0x51] = 0x40;
	/* 0x100 -> 0x100 ... */
	put32(c, 0x100, PCI_EXT_CAP_ID_ERR | 0x100u << 20);
	p = scan_with(c, sizeof(c));
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_MSIX), 0);
	assert_int_equal(pci_find_ext_capability(p, PCI_EXT_CAP_ID_DSN), 0);
	/* A pointer below 0x40 ends the walk. */
	c[0x51] = 0x10;
	assert_int_equal(fake_overwrite(NAME, "config", c, sizeof(c)), 0);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_MSIX), 0);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_MSI), 0x50);
	/* No capability list bit: nothing. */
	put16(c, PCI_STATUS, 0);
	assert_int_equal(fake_overwrite(NAME, "config", c, sizeof(c)), 0);
	assert_int_equal(pci_find_capability(p, PCI_CAP_ID_PM), 0);
}

/* A config file that vanished under a registered device. */
static void test_config_gone(void **state)
{
	struct pci_dev *p = scan_with(NULL, 0);
	char path[4096];
	uint16_t w;

	(void)state;
	assert_int_equal(pci_fake_path(ft, NAME, "config", path, sizeof(path)),
			 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pci_read_config_word(p, 0, &w),
			 PCIBIOS_DEVICE_NOT_FOUND);
	assert_int_equal(w, 0xffff);
	assert_int_equal(pci_write_config_word(p, 0, 1), PCIBIOS_SET_FAILED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_values, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_bounds, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_write_reaches_file,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_short_config, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_capabilities, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_looping_lists, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(test_config_gone, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
