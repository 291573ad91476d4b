// SPDX-License-Identifier: MIT
/* ctest-labels: fault pci */
/*
 * Every managed PCI call swept on its own, as tests/base/test-sweep-
 * each-call does for the library's other calls: each of its fault
 * points failed in turn (the second BAR of pcim_iomap_regions(), the
 * mapping after the claim...), on a device that is added and not bound,
 * and in a probe. A failed call fails as a whole: its caller sees the
 * injected errno (strict), the ledger is back where it was just before
 * the call, nothing of it stays claimed or mapped; each call has a fault
 * point, and the sweep prints no WARN.
 *
 * Calls x {device, probe}: each cell in a child under an alarm.
 * Labelled out of make memcheck (not "unit"): each cell a child under
 * valgrind took 22 s in all; ASan runs it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/irq.h>
#include "testlib.h"
#include "pci/pcitest.h"
#define SWEEP_EACH_PCI
#include "sweep-each.h"

#define NAME "0000:00:07.0"

static int c_enable(struct pci_dev *pdev)
{
	int ret;

	begin();
	ret = pcim_enable_device(pdev);
	return ret ? failed(__func__, ret) : 0;
}

static int c_iomap(struct pci_dev *pdev)
{
	begin();
	errno = 0;
	/* NULL with errno: the caller returns what failed. */
	return pcim_iomap(pdev, 1, 0)
		       ? 0
		       : failed(__func__, errno ? -errno : -ENOMEM);
}

static int c_iomap_regions(struct pci_dev *pdev)
{
	int ret;

	begin();
	ret = pcim_iomap_regions(pdev, 0x7, "each");
	if (ret)
		return failed(__func__, ret);
	return pcim_iomap_table(pdev)[2] ? 0 : -EIO;
}

static int c_request_region(struct pci_dev *pdev)
{
	int ret;

	begin();
	ret = pcim_request_region(pdev, 1, "each");
	return ret ? failed(__func__, ret) : 0;
}

static int c_request_all(struct pci_dev *pdev)
{
	int ret;

	begin();
	ret = pcim_request_all_regions(pdev, "each");
	return ret ? failed(__func__, ret) : 0;
}

struct call {
	const char *name;
	int (*fn)(struct pci_dev *pdev);
};

static const struct call calls[] = {
	{ "pcim_enable_device", c_enable },
	{ "pcim_iomap", c_iomap },
	{ "pcim_iomap_regions", c_iomap_regions },
	{ "pcim_request_region", c_request_region },
	{ "pcim_request_all_regions", c_request_all },
};

#define NCALLS ((int)(sizeof(calls) / sizeof(calls[0])))

static const struct call *cur;

static int op_on_device(void *ctx)
{
	struct pci_dev *pdev = ctx;
	int ret = cur->fn(pdev);

	if (ret)
		devres_release_all(&pdev->dev);
	return ret;
}

static void undo_on_device(void *ctx)
{
	devres_release_all(&((struct pci_dev *)ctx)->dev);
}

static int each_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	return cur->fn(pdev);
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1077) },
	{ 0 },
};

static struct pci_driver each_driver = {
	.name = "pci-each",
	.id_table = ids,
	.probe = each_probe,
};

static int cell(int row, int col)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1077, 3);
	struct pci_dev *pdev;
	int ret;

	alarm(20);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (pci_setup(NULL) || pci_fake_add(ft, &d) || pci_bus_scan() != 1)
		return 10;
	pdev = pci_get_device(0x1af4, 0x1077, NULL);
	if (!pdev)
		return 11;
	cur = &calls[row];
	ret = sweep_cell(cur->name, col, op_on_device, undo_on_device, pdev,
			 &each_driver.driver, &pdev->dev);
	if (ret)
		return ret;
	pci_dev_put(pdev);
	return pci_teardown(NULL) ? 6 : 0;
}

static void each_call(void **state)
{
	const char *rows[NCALLS];
	int i;

	(void)state;
	for (i = 0; i < NCALLS; i++)
		rows[i] = calls[i].name;
	sweep_table(cell, rows, NCALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
