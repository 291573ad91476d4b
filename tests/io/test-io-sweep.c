// SPDX-License-Identifier: MIT
/* ctest-labels: fault */
/*
 * A fault sweep of a platform driver whose probe claims its regions and
 * maps two register windows (and claims I/O ports): failed at each of its
 * acquisitions in turn, it must leave nothing behind, neither regions nor
 * mappings nor their bytes nor nodes; the run that succeeds must reach the
 * device's registers.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/platform.h>
#include "testlib.h"
#include "iotest.h"

#define WIN_A 0xf0000000ull
#define WIN_B 0xf8000000ull
#define WIN_SIZE 0x1000u

#define REG_ID 0x00
#define REG_CTRL 0x04
#define REG_DATA 0x08

struct two {
	char *ctrl, *data, *more;
};

static int probe_runs;

static int two_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct resource *io = platform_get_resource(pdev, IORESOURCE_IO, 0);
	struct resource *data_res;
	struct two *t;

	probe_runs++;
	t = devm_kzalloc(dev, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->ctrl = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(t->ctrl))
		return (int)PTR_ERR(t->ctrl);
	t->data = devm_platform_get_and_ioremap_resource(pdev, 1, &data_res);
	if (IS_ERR(t->data))
		return (int)PTR_ERR(t->data);
	/* A scratch area past the claimed registers, mapped on its own. */
	t->more = devm_ioremap(dev, data_res->end + 1, 0x40);
	if (!t->more)
		return -ENOMEM;
	if (!devm_request_region(dev, io->start, resource_size(io), "ports"))
		return -EBUSY;
	if (readl(t->ctrl + REG_ID) != 0x1234)
		return -ENODEV;
	writel(readl(t->ctrl + REG_CTRL) + 1, t->ctrl + REG_CTRL);
	writeq(0x0123456789abcdefull, t->data + REG_DATA);
	writeb(0x5a, t->more);
	platform_set_drvdata(pdev, t);
	return 0;
}

static struct platform_driver two_driver = {
	.probe = two_probe,
	.driver = { .name = "io-sweep" },
};

static void sweep_two_windows(void **state)
{
	static const struct resource res[] = {
		DEFINE_RES_MEM_NAMED(WIN_A + 0x100, 0x100, "ctrl"),
		DEFINE_RES_IRQ(7),
		DEFINE_RES_MEM_NAMED(WIN_B + 0x200, 0x100, "data"),
		DEFINE_RES_IO(0x500, 0x10),
	};
	int fa = dev_memfd(WIN_SIZE), fb = dev_memfd(WIN_SIZE);
	volatile unsigned char *va = dev_view(fa, WIN_SIZE);
	volatile unsigned char *vb = dev_view(fb, WIN_SIZE);
	struct devres_sweep_result r = { 0 };
	struct devres_ledger before, after;
	struct platform_device *pdev;

	(void)state;
	assert_non_null(va);
	assert_non_null(vb);
	assert_int_equal(iomem_window_add(WIN_A, WIN_SIZE, fa, 0, "a"), 0);
	assert_int_equal(iomem_window_add(WIN_B, WIN_SIZE, fb, 0, "b"), 0);
	/* The simulated device: its ID register. */
	va[0x100] = 0x34;
	va[0x101] = 0x12;
	pdev = platform_device_register_simple("io-sweep", 0, res, 4);
	assert_false(IS_ERR(pdev));
	devres_ledger_snapshot(&before);
	assert_int_equal(driver_probe_sweep(&two_driver.driver, &pdev->dev, &r),
			 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(r.leaks, 0);
	/*
	 * kzalloc 1; each devm_ioremap_resource 5 (region node, region, map
	 * node, bookkeeping, mmap); devm_ioremap 3; devm_request_region 2.
	 */
	assert_int_equal(r.points, 16);
	assert_int_equal(probe_runs, 17);
	/* The run that succeeded reached the registers, through both. */
	assert_int_equal(va[0x104], 1);
	assert_int_equal(vb[0x208], 0xef);
	assert_int_equal(vb[0x20f], 0x01);
	assert_int_equal(vb[0x300], 0x5a);
	platform_device_unregister(pdev);
	assert_int_equal(iomem_window_remove(WIN_A), 0);
	assert_int_equal(iomem_window_remove(WIN_B), 0);
	munmap((void *)va, WIN_SIZE);
	munmap((void *)vb, WIN_SIZE);
	close(fa);
	close(fb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sweep_two_windows),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
