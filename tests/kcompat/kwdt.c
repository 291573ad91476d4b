// SPDX-License-Identifier: MIT
/*
 * kwdt: a watchdog timer with an optional pretimeout interrupt, written
 * as a kernel driver is. KC_TWIN 1 is its buggy twin, which ignores every
 * error of platform_get_irq_optional(): a deferral makes it run without
 * its interrupt, for good.
 */
#include <linux/bitfield.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/watchdog.h>

#define KWDT_CTRL 0x00
#define KWDT_CTRL_EN BIT(0)
#define KWDT_CTRL_PRE_IRQ BIT(1)
#define KWDT_LOAD 0x04
#define KWDT_KICK 0x08
#define KWDT_KICK_MAGIC 0x4b494b
#define KWDT_COUNT 0x0c
#define KWDT_TICKS_PER_SEC 1000

static unsigned int timeout;
module_param(timeout, uint, 0);

struct kwdt {
	void __iomem *base;
	struct watchdog_device wdd;
	atomic_t pretimeouts;
};

static int kwdt_start(struct watchdog_device *wdd)
{
	struct kwdt *w = watchdog_get_drvdata(wdd);

	writel(wdd->timeout * KWDT_TICKS_PER_SEC, w->base + KWDT_LOAD);
	writel(KWDT_CTRL_EN | KWDT_CTRL_PRE_IRQ, w->base + KWDT_CTRL);
	return 0;
}

static int kwdt_stop(struct watchdog_device *wdd)
{
	struct kwdt *w = watchdog_get_drvdata(wdd);

	writel(0, w->base + KWDT_CTRL);
	return 0;
}

static int kwdt_ping(struct watchdog_device *wdd)
{
	struct kwdt *w = watchdog_get_drvdata(wdd);

	writel(KWDT_KICK_MAGIC, w->base + KWDT_KICK);
	return 0;
}

static unsigned int kwdt_get_timeleft(struct watchdog_device *wdd)
{
	struct kwdt *w = watchdog_get_drvdata(wdd);

	return readl(w->base + KWDT_COUNT) / KWDT_TICKS_PER_SEC;
}

static irqreturn_t kwdt_pretimeout(int irq, void *data)
{
	struct kwdt *w = data;

	(void)irq;
	atomic_inc(&w->pretimeouts);
	return IRQ_HANDLED;
}

static const struct watchdog_info kwdt_info = {
	.options = WDIOF_SETTIMEOUT | WDIOF_KEEPALIVEPING | WDIOF_MAGICCLOSE,
	.identity = "kwdt",
};

static const struct watchdog_ops kwdt_ops = {
	.owner = THIS_MODULE,
	.start = kwdt_start,
	.stop = kwdt_stop,
	.ping = kwdt_ping,
	.get_timeleft = kwdt_get_timeleft,
};

static int kwdt_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct kwdt *w;
	int irq, ret;

	w = devm_kzalloc(dev, sizeof(*w), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	w->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(w->base))
		return PTR_ERR(w->base);

	irq = platform_get_irq_optional(pdev, 0);
#if !KC_TWIN
	if (irq < 0 && irq != -ENXIO)
		return irq;
#endif
	if (irq > 0) {
		ret = devm_request_irq(dev, (unsigned int)irq, kwdt_pretimeout,
				       0, "kwdt", w);
		if (ret)
			return ret;
	}

	w->wdd.info = &kwdt_info;
	w->wdd.ops = &kwdt_ops;
	w->wdd.parent = dev;
	w->wdd.min_timeout = 1;
	w->wdd.max_timeout = 60;
	w->wdd.timeout = 30;
	watchdog_set_drvdata(&w->wdd, w);
	ret = watchdog_init_timeout(&w->wdd, timeout, dev);
	if (ret)
		dev_warn(dev, "timeout %u out of range, using %u\n", timeout,
			 w->wdd.timeout);
	watchdog_stop_on_unregister(&w->wdd);
	platform_set_drvdata(pdev, w);
	return devm_watchdog_register_device(dev, &w->wdd);
}

static const struct of_device_id kwdt_of_match[] = { { .compatible = "kc,"
								     "kwdt" },
						     {} };
MODULE_DEVICE_TABLE(of, kwdt_of_match);

static struct platform_driver kwdt_driver = {
	.probe = kwdt_probe,
	.driver = {
		.name = "kwdt",
		.of_match_table = kwdt_of_match,
	},
};
module_platform_driver(kwdt_driver);

MODULE_DESCRIPTION("kcompat test watchdog");
MODULE_LICENSE("MIT");
