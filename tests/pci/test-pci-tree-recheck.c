// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * What the scan read of a function's config space and a driver relies on
 * later is read again at use, as a table: the config file rewritten in
 * place after the scan (the same file: a function that now shows another
 * identity behind it) in one field at a time, times each use that checks
 * it (a driver's probe, which matched on those fields; the first enable;
 * a BAR mapping). A changed field refuses the use (-ENODEV; the probe is
 * not called and the device stays unbound) with a line in the log and no
 * WARN; an unchanged one lets it through. Each cell on a tree of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"

#define DEV "0000:00:08.0"
#define VENDOR 0x1af4
#define DEVICE 0x1042

static const struct field {
	const char *name;
	int off; /* the byte changed in config, or -1 for none */
} fields[] = {
	{ "nothing changed", -1 },
	{ "vendor id", PCI_VENDOR_ID },
	{ "class", PCI_CLASS_DEVICE },
	{ "prog-if", PCI_CLASS_PROG },
	{ "revision", PCI_REVISION_ID },
	{ "header type", PCI_HEADER_TYPE },
	{ "subsystem vendor", PCI_SUBSYSTEM_VENDOR_ID },
	{ "subsystem id", PCI_SUBSYSTEM_ID },
};

static int probes;

static int drv_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)pdev;
	(void)id;
	probes++;
	return 0;
}

/* Matches on every field the scan read but the revision. */
static const struct pci_device_id drv_ids[] = {
	{ .vendor = VENDOR,
	  .device = DEVICE,
	  .subvendor = 0x1af4,
	  .subdevice = 0x1100,
	  .DEVRES_PCI_CLASS = 0x020000,
	  .class_mask = 0xffffff },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "recheck",
	.id_table = drv_ids,
	.probe = drv_probe,
};

enum {
	USE_PROBE,
	USE_ENABLE,
	USE_IOMAP,
	NUSES
};
static const char *const use_names[NUSES] = { "probe", "pci_enable_device",
					      "pci_iomap" };

static void change(const struct field *f)
{
	char buf[256];
	ssize_t n;

	if (f->off < 0)
		return;
	n = fake_read(DEV, "config", buf, sizeof(buf));
	assert_true(n >= 64);
	buf[f->off] ^= 0x01;
	assert_int_equal(fake_overwrite(DEV, "config", buf, (size_t)n), 0);
}

static void one(const struct field *f, int use)
{
	struct pci_fake_dev d = fake_dev(DEV, VENDOR, DEVICE, 1);
	bool same = f->off < 0;
	struct pci_dev *p;
	int warns;
	void *a;

	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(p);
	change(f);
	warns = devres_warn_count();
	probes = 0;
	switch (use) {
	case USE_PROBE:
		assert_int_equal(pci_register_driver(&drv), 0);
		assert_int_equal(probes, same ? 1 : 0);
		assert_true((p->dev.driver != NULL) == same);
		pci_unregister_driver(&drv);
		break;
	case USE_ENABLE:
		assert_int_equal(pci_enable_device(p), same ? 0 : -ENODEV);
		if (same)
			pci_disable_device(p);
		break;
	default:
		errno = 0;
		a = pci_iomap(p, 0, 0);
		assert_true((a != NULL) == same);
		if (a)
			pci_iounmap(p, a);
		else
			assert_int_equal(errno, ENODEV);
		break;
	}
	assert_int_equal(devres_warn_count(), warns);
	pci_dev_put(p);
	assert_int_equal(pci_teardown(NULL), 0);
}

static void every_field_every_use(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		for (int use = 0; use < NUSES; use++) {
			fprintf(stderr, "cell %s / %s\n", fields[i].name,
				use_names[use]);
			one(&fields[i], use);
		}
	}
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_field_every_use),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
