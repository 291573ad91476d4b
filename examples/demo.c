// SPDX-License-Identifier: MIT
/*
 * The demo: the whole driver stack, end to end.
 *
 * A UART driver needs a clock that another driver provides. Its device is
 * registered first, so its first probe gets half way, finds no clock and
 * defers: everything it acquired is released, by the same code that will
 * release it at detach. When the clock's driver binds, the UART is probed
 * again and binds. Then the driver is unbound, and its probe is swept: made
 * to fail at every acquisition in turn, each time checking that nothing
 * leaked. Every acquisition and release is logged.
 */
#include <errno.h>
#include <stdio.h>
#include <devres/fault.h>
#include <devres/platform.h>

/* ---- the clock provider ---------------------------------------------- */

static unsigned long clk_rate; /* 0 while the clock is not there */

static void clk_stop(void *data)
{
	(void)data;
	clk_rate = 0;
}

static int clk_probe(struct platform_device *pdev)
{
	clk_rate = 48000000;
	return devm_add_action_or_reset(&pdev->dev, clk_stop, NULL);
}

static struct platform_driver clk_driver = {
	.probe = clk_probe,
	.driver = { .name = "demo-clk" },
};

/* ---- the UART driver ------------------------------------------------- */

struct uart {
	char *label;
	unsigned char *rx, *tx;
	unsigned long baud_base;
};

static void uart_power_off(void *data)
{
	printf("  [uart] %s powered off\n", ((struct uart *)data)->label);
}

/* A mid-layer: takes its buffers in a group, gives back only its own. */
static int uart_ring_init(struct device *dev, struct uart *u)
{
	if (!devres_open_group(dev, uart_ring_init, GFP_KERNEL))
		return -ENOMEM;
	u->rx = devm_kzalloc(dev, 4096, GFP_KERNEL);
	u->tx = devm_kzalloc(dev, 4096, GFP_KERNEL);
	if (!u->rx || !u->tx) {
		devres_release_group(dev, uart_ring_init);
		return -ENOMEM;
	}
	devres_remove_group(dev, uart_ring_init);
	return 0;
}

static int uart_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct uart *u;
	int ret;

	u = devm_kzalloc(dev, sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	u->label = devm_kasprintf(dev, GFP_KERNEL, "uart@%llx",
				  (unsigned long long)pdev->resource[0].start);
	if (!u->label)
		return -ENOMEM;
	ret = uart_ring_init(dev, u);
	if (ret)
		return ret;
	if (!clk_rate) /* half way: no unwinding, the core releases */
		return dev_err_probe(dev, -EPROBE_DEFER, "no clock yet\n");
	u->baud_base = clk_rate / 16;
	ret = devm_add_action_or_reset(dev, uart_power_off, u);
	if (ret)
		return ret;
	platform_set_drvdata(pdev, u);
	printf("  [uart] %s bound, baud base %lu\n", u->label, u->baud_base);
	return 0;
}

static struct platform_driver uart_driver = {
	.probe = uart_probe,
	.driver = { .name = "demo-uart" },
};

/* ---- the board ------------------------------------------------------- */

static void to_stdout(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	printf("    %s\n", line);
}

static const struct resource uart_res[] = {
	DEFINE_RES_MEM(0x10000000, 0x100),
	DEFINE_RES_IRQ(33),
};

int main(void)
{
	struct platform_device *uart, *clk;
	struct devres_sweep_result r;
	struct devres_ledger before, after;
	int leaks;

	setvbuf(stdout, NULL, _IOLBF, 0);
	devres_set_log_sink(to_stdout, NULL);
	devres_ledger_snapshot(&before);
	devres_set_log(true);

	printf("1. the UART appears; its probe defers half way:\n");
	uart = platform_device_register_simple("demo-uart", PLATFORM_DEVID_NONE,
					       uart_res, 2);
	if (IS_ERR(uart) || platform_driver_register(&uart_driver))
		return 1;

	printf("\n2. the clock appears; the parked UART is probed again:\n");
	clk = platform_device_register_simple("demo-clk", PLATFORM_DEVID_NONE,
					      NULL, 0);
	if (IS_ERR(clk) || platform_driver_register(&clk_driver))
		return 1;
	devres_set_log(false);
	printf("\n3. what the UART holds now:\n");
	devres_dump(&uart->dev, stdout);

	printf("\n4. unbind: remove, then everything, newest first:\n");
	devres_set_log(true);
	device_release_driver(&uart->dev);
	devres_set_log(false);

	printf("\n5. sweep the UART's probe over every failure point:\n");
	leaks = driver_probe_sweep(&uart_driver.driver, &uart->dev, &r);

	platform_device_unregister(uart);
	platform_device_unregister(clk);
	platform_driver_unregister(&uart_driver);
	platform_driver_unregister(&clk_driver);
	devres_ledger_snapshot(&after);
	printf("\n6. all unregistered; still alive: %d kinds of resource\n",
	       devres_ledger_diff(&before, &after, stdout));
	return leaks != 0;
}
