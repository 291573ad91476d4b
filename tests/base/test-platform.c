// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * The platform bus: device names, copied resources, matching by name and
 * by id table, resource lookups, managed resources of a platform driver,
 * allocation failures, and misuse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/platform.h>
#include <devres/fault.h>
#include "testlib.h"

static struct resource uart_res[] = {
	DEFINE_RES_MEM_NAMED(0x10000000, 0x1000, "regs"),
	DEFINE_RES_MEM(0x10001000, 0x100),
	DEFINE_RES_IRQ(33),
	DEFINE_RES_IRQ_NAMED(34, "tx"),
};

static int probes, removes, actions;

static void count_action(void *data)
{
	(void)data;
	actions++;
}

static int uart_probe(struct platform_device *pdev)
{
	int *priv = devm_kzalloc(&pdev->dev, sizeof(*priv), GFP_KERNEL);

	if (!priv)
		return -ENOMEM;
	*priv = platform_get_irq(pdev, 0);
	platform_set_drvdata(pdev, priv);
	probes++;
	return devm_add_action_or_reset(&pdev->dev, count_action, NULL);
}

/*
 * Callbacks run with the device locked: they count what they find wrong
 * instead of asserting, which would jump out with the lock held.
 */
static int bad_removes;

static void uart_remove(struct platform_device *pdev)
{
	/* The binding's resources are still there. */
	if (*(int *)platform_get_drvdata(pdev) != 33 || actions != removes)
		bad_removes++;
	removes++;
}

static struct platform_driver uart_drv = {
	.probe = uart_probe,
	.remove = uart_remove,
	.driver = { .name = "uart" },
};

static int setup(void **state)
{
	(void)state;
	probes = removes = actions = bad_removes = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	/* What the test registered goes first, even after a failure. */
	t_undo_all();
	assert_int_equal(bad_removes, 0);
	return 0;
}

static long devices_now(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.devices;
}

static void register_simple(void **state)
{
	struct resource res[2] = { DEFINE_RES_MEM(0x1000, 0x10),
				   DEFINE_RES_IRQ(5) };
	struct platform_device *pdev;
	long before = devices_now();

	(void)state;
	pdev = platform_device_register_simple("plat", 3, res, 2);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_string_equal(dev_name(&pdev->dev), "plat.3");
	assert_int_equal(devices_now(), before + 1);
	/* The device has its own copy, named after it. */
	res[0].start = 0;
	assert_int_equal(pdev->num_resources, 2);
	assert_ptr_not_equal(pdev->resource, res);
	assert_int_equal(pdev->resource[0].start, 0x1000);
	assert_int_equal(resource_size(&pdev->resource[0]), 0x10);
	assert_string_equal(pdev->resource[0].name, "plat.3");
	assert_ptr_equal(to_platform_device(&pdev->dev), pdev);
	platform_device_unregister(pdev);
	assert_int_equal(devices_now(), before);

	/* No resources at all. */
	pdev = platform_device_register_simple("bare", PLATFORM_DEVID_NONE,
					       NULL, 0);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_string_equal(dev_name(&pdev->dev), "bare");
	assert_null(platform_get_resource(pdev, IORESOURCE_MEM, 0));
	assert_int_equal(platform_get_irq(pdev, 0), -ENXIO);
	platform_device_unregister(pdev);
}

static void auto_ids(void **state)
{
	struct platform_device *p1, *p2;
	char want[32];

	(void)state;
	p1 = platform_device_register_simple("auto", PLATFORM_DEVID_AUTO, NULL,
					     0);
	p2 = platform_device_register_simple("auto", PLATFORM_DEVID_AUTO, NULL,
					     0);
	assert_false(IS_ERR_OR_NULL(p1));
	assert_false(IS_ERR_OR_NULL(p2));
	assert_true(p1->id_auto);
	assert_int_not_equal(p1->id, p2->id);
	snprintf(want, sizeof(want), "auto.%d.auto", p2->id);
	assert_string_equal(dev_name(&p2->dev), want);
	platform_device_unregister(p1);
	platform_device_unregister(p2);
}

static void resources(void **state)
{
	struct platform_device *pdev;
	struct resource *r;

	(void)state;
	pdev = platform_device_register_simple("res", 0, uart_res, 4);
	assert_false(IS_ERR_OR_NULL(pdev));
	r = platform_get_resource(pdev, IORESOURCE_MEM, 1);
	assert_non_null(r);
	assert_int_equal(r->start, 0x10001000);
	assert_null(platform_get_resource(pdev, IORESOURCE_MEM, 2));
	assert_null(platform_get_resource(pdev, IORESOURCE_IO, 0));
	r = platform_get_resource_byname(pdev, IORESOURCE_MEM, "regs");
	assert_non_null(r);
	assert_int_equal(r->start, 0x10000000);
	assert_null(platform_get_resource_byname(pdev, IORESOURCE_IRQ, "regs"));
	assert_null(platform_get_resource_byname(pdev, IORESOURCE_MEM, "x"));
	r = platform_get_resource_byname(pdev, IORESOURCE_IRQ, "tx");
	assert_non_null(r);
	assert_int_equal(platform_get_irq(pdev, 0), 33);
	assert_int_equal(platform_get_irq(pdev, 1), 34);
	assert_int_equal(platform_get_irq_optional(pdev, 1), 34);
	/* As in the kernel: the missing interrupt is logged, unless optional. */
	start_log_capture();
	assert_int_equal(platform_get_irq(pdev, 2), -ENXIO);
	assert_int_equal(cap.n, 1);
	assert_non_null(strstr(cap.line[0], "IRQ index 2 not found"));
	assert_non_null(strstr(cap.line[0], dev_name(&pdev->dev)));
	assert_int_equal(platform_get_irq_optional(pdev, 2), -ENXIO);
	assert_int_equal(cap.n, 1);
	devres_set_log_sink(NULL, NULL);
	platform_device_unregister(pdev);
}

static void irq_zero_is_invalid(void **state)
{
	struct resource res = DEFINE_RES_IRQ(0);
	struct platform_device *pdev;
	int warns = devres_warn_count();

	(void)state;
	pdev = platform_device_register_simple("irq0", 0, &res, 1);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_int_equal(platform_get_irq(pdev, 0), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 1);
	platform_device_unregister(pdev);
}

static void match_by_name(void **state)
{
	struct platform_device *u0, *u1, *spi;

	(void)state;
	u0 = platform_device_register_simple("uart", 0, uart_res, 4);
	assert_false(IS_ERR_OR_NULL(u0));
	assert_int_equal(t_platform_driver_register(&uart_drv), 0);
	u1 = platform_device_register_simple("uart", 1, uart_res, 4);
	spi = platform_device_register_simple("spi", 0, uart_res, 4);
	assert_false(IS_ERR_OR_NULL(u1));
	assert_false(IS_ERR_OR_NULL(spi));
	assert_int_equal(probes, 2);
	assert_ptr_equal(u0->dev.driver, &uart_drv.driver);
	assert_ptr_equal(u1->dev.driver, &uart_drv.driver);
	assert_null(spi->dev.driver);
	assert_null(platform_get_device_id(u0));
	assert_int_equal(*(int *)platform_get_drvdata(u0), 33);

	/* Unregistering a bound device: remove, then its managed resources. */
	platform_device_unregister(u0);
	assert_int_equal(removes, 1);
	assert_int_equal(actions, 1);
	t_platform_driver_unregister(&uart_drv);
	assert_int_equal(removes, 2);
	assert_int_equal(actions, 2);
	assert_null(u1->dev.driver);
	platform_device_unregister(u1);
	platform_device_unregister(spi);
}

static const struct platform_device_id serial_ids[] = {
	{ .name = "uart-a", .driver_data = 1 },
	{ .name = "uart-b", .driver_data = 2 },
	{ .name = "" },
};

static unsigned long seen_data;

static int serial_probe(struct platform_device *pdev)
{
	seen_data = platform_get_device_id(pdev)->driver_data;
	return 0;
}

static void match_by_id_table(void **state)
{
	struct platform_driver serial = {
		.probe = serial_probe,
		.driver = { .name = "serial" },
		.id_table = serial_ids,
	};
	struct platform_device *b, *named;

	(void)state;
	assert_int_equal(t_platform_driver_register(&serial), 0);
	b = platform_device_register_simple("uart-b", 0, NULL, 0);
	assert_false(IS_ERR_OR_NULL(b));
	assert_ptr_equal(b->dev.driver, &serial.driver);
	assert_ptr_equal(platform_get_device_id(b), &serial_ids[1]);
	assert_int_equal(seen_data, 2);
	/* With an id table, the driver's own name does not match. */
	named = platform_device_register_simple("serial", 0, NULL, 0);
	assert_false(IS_ERR_OR_NULL(named));
	assert_null(named->dev.driver);
	platform_device_unregister(b);
	platform_device_unregister(named);
	t_platform_driver_unregister(&serial);
}

static void alloc_add_put(void **state)
{
	struct platform_device *pdev;
	int warns = devres_warn_count();

	(void)state;
	pdev = platform_device_alloc("staged", 7);
	assert_non_null(pdev);
	assert_int_equal(platform_device_add_resources(pdev, uart_res, 2), 0);
	assert_int_equal(platform_device_add_resources(pdev, uart_res, 4), 0);
	assert_int_equal(pdev->num_resources, 4);
	assert_int_equal(t_platform_driver_register(&uart_drv), 0);
	/* Not added yet: not bound. */
	assert_int_equal(probes, 0);
	pdev->name = "uart";
	assert_int_equal(platform_device_add(pdev), 0);
	assert_string_equal(dev_name(&pdev->dev), "uart.7");
	assert_int_equal(probes, 1);
	assert_int_equal(platform_get_irq(pdev, 1), 34);
	assert_int_equal(warns, devres_warn_count());

	assert_int_equal(platform_device_add_resources(pdev, uart_res, 4),
			 -EINVAL);
	assert_int_equal(platform_device_add(pdev), -EEXIST);
	assert_int_equal(devres_warn_count(), warns + 2);
	platform_device_del(pdev);
	assert_int_equal(removes, 1);
	platform_device_put(pdev);
	t_platform_driver_unregister(&uart_drv);

	/* Never added: a put frees it and its resources. */
	pdev = platform_device_alloc("unused", 0);
	assert_non_null(pdev);
	assert_int_equal(platform_device_add_resources(pdev, uart_res, 4), 0);
	platform_device_put(pdev);
	platform_device_put(NULL);
	platform_device_unregister(NULL);
	assert_int_equal(devres_warn_count(), warns + 2);
}

struct board_dev {
	struct platform_device pdev;
	int released;
};

static void board_release(struct device *dev)
{
	struct board_dev *b =
		container_of(to_platform_device(dev), struct board_dev, pdev);

	b->released++;
}

/* Not copied: the device names these after itself while it lives. */
static struct resource board_res[] = {
	DEFINE_RES_MEM(0x20000000, 0x1000),
	DEFINE_RES_IRQ(33),
};

static void register_static(void **state)
{
	static struct board_dev board = {
		.pdev = { .name = "uart",
			  .id = PLATFORM_DEVID_NONE,
			  .resource = board_res,
			  .num_resources = 2,
			  .dev = { .release = board_release } },
	};
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(t_platform_driver_register(&uart_drv), 0);
	assert_int_equal(platform_device_register(&board.pdev), 0);
	assert_string_equal(dev_name(&board.pdev.dev), "uart");
	assert_int_equal(probes, 1);
	assert_string_equal(board_res[1].name, "uart");
	assert_int_equal(platform_device_register(&board.pdev), -EEXIST);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_int_equal(probes, 1);
	platform_device_unregister(&board.pdev);
	assert_int_equal(board.released, 1);
	assert_int_equal(removes, 1);
	assert_int_equal(actions, 1);
	t_platform_driver_unregister(&uart_drv);
}

static void misuse(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(t_platform_driver_register(NULL), -EINVAL);
	t_platform_driver_unregister(NULL);
	assert_null(platform_device_alloc(NULL, 0));
	assert_ptr_equal(platform_device_register_simple(NULL, 0, NULL, 0),
			 ERR_PTR(-EINVAL));
	assert_int_equal(platform_device_add(NULL), -EINVAL);
	assert_int_equal(platform_device_register(NULL), -EINVAL);
	assert_int_equal(platform_device_add_resources(NULL, NULL, 0), -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 7);
	/* A second driver of the same name. */
	assert_int_equal(t_platform_driver_register(&uart_drv), 0);
	{
		struct platform_driver twin = { .driver = { .name = "uart" } };

		assert_int_equal(t_platform_driver_register(&twin), -EBUSY);
	}
	t_platform_driver_unregister(&uart_drv);
	assert_int_equal(devres_warn_count(), warns + 8);
}

/* Every allocation of register_simple() and of the probe may fail. */
static void allocation_failures(void **state)
{
	struct devres_ledger before, after;
	struct platform_device *pdev;
	unsigned int n;

	(void)state;
	assert_int_equal(t_platform_driver_register(&uart_drv), 0);
	devres_ledger_snapshot(&before);
	for (n = 1; n < 100; n++) {
		devres_fail_nth(n);
		pdev = platform_device_register_simple("uart", 9, uart_res, 4);
		if (devres_fail_nth_get() != 0) {
			/* Not reached: every point was tried. */
			devres_fail_nth(0);
			break;
		}
		if (IS_ERR(pdev)) {
			assert_int_equal(PTR_ERR(pdev), -ENOMEM);
		} else {
			/* A failed probe is not a failed registration. */
			assert_null(pdev->dev.driver);
			platform_device_unregister(pdev);
		}
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	/* alloc, resources, device_add, then the probe's two. */
	assert_int_equal(n, 6);
	assert_false(IS_ERR_OR_NULL(pdev));
	assert_non_null(pdev->dev.driver);
	/* The failed probe's action ran at once (or_reset): start over. */
	actions = removes = 0;
	platform_device_unregister(pdev);
	t_platform_driver_unregister(&uart_drv);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(register_simple, setup,
						teardown),
		cmocka_unit_test_setup_teardown(auto_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(resources, setup, teardown),
		cmocka_unit_test_setup_teardown(irq_zero_is_invalid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(match_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(match_by_id_table, setup,
						teardown),
		cmocka_unit_test_setup_teardown(alloc_add_put, setup, teardown),
		cmocka_unit_test_setup_teardown(register_static, setup,
						teardown),
		cmocka_unit_test_setup_teardown(misuse, setup, teardown),
		cmocka_unit_test_setup_teardown(allocation_failures, setup,
						teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
