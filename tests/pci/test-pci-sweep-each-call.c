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
#include "hostile/cell-child.h"

#define NAME "0000:00:07.0"

static int bad;
static struct devres_ledger before_call;

static void begin(struct pci_dev *pdev)
{
	(void)pdev;
	devres_ledger_snapshot(&before_call);
}

static int failed(const char *what, int err)
{
	struct devres_ledger now;

	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&before_call, &now, stderr)) {
		fprintf(stderr, "%s: failed with %d and left the above\n", what,
			err);
		bad++;
	}
	if (err >= 0) {
		fprintf(stderr, "%s: failed with %d\n", what, err);
		bad++;
		err = -EIO;
	}
	return err;
}

static int c_enable(struct pci_dev *pdev)
{
	int ret;

	devres_ledger_snapshot(&before_call);
	ret = pcim_enable_device(pdev);
	return ret ? failed(__func__, ret) : 0;
}

static int c_iomap(struct pci_dev *pdev)
{
	begin(pdev);
	errno = 0;
	/* NULL with errno: the caller returns what failed. */
	return pcim_iomap(pdev, 1, 0)
		       ? 0
		       : failed(__func__, errno ? -errno : -ENOMEM);
}

static int c_iomap_regions(struct pci_dev *pdev)
{
	int ret;

	begin(pdev);
	ret = pcim_iomap_regions(pdev, 0x7, "each");
	if (ret)
		return failed(__func__, ret);
	return pcim_iomap_table(pdev)[2] ? 0 : -EIO;
}

static int c_request_region(struct pci_dev *pdev)
{
	int ret;

	begin(pdev);
	ret = pcim_request_region(pdev, 1, "each");
	return ret ? failed(__func__, ret) : 0;
}

static int c_request_all(struct pci_dev *pdev)
{
	int ret;

	begin(pdev);
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

static const char *const col_names[] = { "device", "probe" };
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
	struct devres_sweep_result r = { 0 };
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1077, 3);
	struct devres_ledger b, a;
	struct pci_dev *pdev;
	int warns, ret;

	alarm(20);
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (pci_setup(NULL) || pci_fake_add(ft, &d) || pci_bus_scan() != 1)
		return 10;
	pdev = pci_get_device(0x1af4, 0x1077, NULL);
	if (!pdev)
		return 11;
	cur = &calls[row];
	devres_sweep_set_strict(true);
	devres_ledger_snapshot(&b);
	warns = devres_warn_count();
	if (col == 0)
		ret = devres_sweep(op_on_device, undo_on_device, pdev, &r);
	else
		ret = driver_probe_sweep(&each_driver.driver, &pdev->dev, &r);
	devres_ledger_snapshot(&a);
	if (ret || r.leaks || r.warns || r.findings) {
		fprintf(stderr,
			"%s/%s: sweep %d, %u leaks, %u warns, %u findings\n",
			cur->name, col_names[col], ret, r.leaks, r.warns,
			r.findings);
		return 1;
	}
	if (bad)
		return 2;
	if (r.points < 1)
		return 3;
	if (devres_ledger_diff(&b, &a, stderr))
		return 4;
	if (devres_warn_count() != warns)
		return 5;
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
	run_cells_in_children_wide(cell, rows, NCALLS, col_names, 2, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
