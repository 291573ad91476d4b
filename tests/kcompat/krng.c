// SPDX-License-Identifier: MIT
/*
 * krng: a random number generator with a data-ready interrupt, written
 * as a kernel driver is, against the compat headers. Built twice:
 * KC_TWIN 1 is its buggy twin, whose remove frees the managed interrupt
 * with free_irq().
 */
#include <linux/bitfield.h>
#include <linux/clk.h>
#include <linux/completion.h>
#include <linux/hw_random.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>
#include <linux/slab.h>

#define KRNG_CTRL 0x00
#define KRNG_CTRL_EN BIT(0)
#define KRNG_CTRL_IRQ_EN BIT(1)
#define KRNG_STATUS 0x04
#define KRNG_STATUS_READY BIT(0)
#define KRNG_STATUS_BYTES GENMASK(7, 4)
#define KRNG_DATA 0x08

struct krng_cfg {
	unsigned short quality;
};

struct krng {
	void __iomem *base;
	struct hwrng rng;
	struct completion ready;
	int irq;
};

static irqreturn_t krng_irq(int irq, void *data)
{
	struct krng *k = data;

	(void)irq;
	if (!(readl(k->base + KRNG_STATUS) & KRNG_STATUS_READY))
		return IRQ_NONE;
	complete(&k->ready);
	return IRQ_HANDLED;
}

static int krng_read(struct hwrng *rng, void *buf, size_t max, bool wait)
{
	struct krng *k = container_of(rng, struct krng, rng);
	u32 status, data;
	size_t n;
	int ret;

	if (!(readl(k->base + KRNG_STATUS) & KRNG_STATUS_READY)) {
		if (!wait)
			return 0;
		if (!wait_for_completion_timeout(&k->ready,
						 msecs_to_jiffies(500)))
			return -ETIMEDOUT;
	}
	ret = readl_poll_timeout(k->base + KRNG_STATUS, status,
				 status & KRNG_STATUS_READY, 10, 10000);
	if (ret)
		return ret;
	n = min_t(size_t, max, FIELD_GET(KRNG_STATUS_BYTES, status));
	n = min_t(size_t, n, sizeof(data));
	data = readl(k->base + KRNG_DATA);
	memcpy(buf, &data, n);
	writel(0, k->base + KRNG_STATUS);
	return (int)n;
}

static void krng_disable(void *data)
{
	struct krng *k = data;

	writel(0, k->base + KRNG_CTRL);
}

static int krng_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	const struct krng_cfg *cfg;
	struct clk *clk;
	struct krng *k;
	int ret;

	cfg = device_get_match_data(dev);
	if (!cfg)
		return -ENODEV;
	k = devm_kzalloc(dev, sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	k->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(k->base))
		return PTR_ERR(k->base);
	clk = devm_clk_get_enabled(dev, NULL);
	if (IS_ERR(clk))
		return dev_err_probe(dev, PTR_ERR(clk), "no clock\n");
	k->irq = platform_get_irq(pdev, 0);
	if (k->irq < 0)
		return k->irq;
	init_completion(&k->ready);
	ret = devm_request_irq(dev, (unsigned int)k->irq, krng_irq, 0,
			       dev_name(dev), k);
	if (ret)
		return dev_err_probe(dev, ret, "cannot request irq\n");
	writel(KRNG_CTRL_EN | KRNG_CTRL_IRQ_EN, k->base + KRNG_CTRL);
	ret = devm_add_action_or_reset(dev, krng_disable, k);
	if (ret)
		return ret;
	ret = devm_pm_runtime_enable(dev);
	if (ret)
		return ret;
	k->rng.name = "krng";
	k->rng.read = krng_read;
	k->rng.quality = cfg->quality;
	platform_set_drvdata(pdev, k);
	return devm_hwrng_register(dev, &k->rng);
}

#if KC_TWIN
/* The bug: the interrupt is managed, and is freed once more at release. */
static void krng_remove(struct platform_device *pdev)
{
	struct krng *k = platform_get_drvdata(pdev);

	free_irq((unsigned int)k->irq, k);
}
#endif

static const struct krng_cfg krng_v2 = { .quality = 900 };

static const struct of_device_id krng_of_match[] = {
	{ .compatible = "kc,krng-v2", .data = &krng_v2 }, {}
};
MODULE_DEVICE_TABLE(of, krng_of_match);

static struct platform_driver krng_driver = {
	.probe = krng_probe,
#if KC_TWIN
	.remove = krng_remove,
#endif
	.driver = {
		.name = "krng",
		.of_match_table = krng_of_match,
	},
};
module_platform_driver(krng_driver);

MODULE_DESCRIPTION("kcompat test RNG");
MODULE_LICENSE("MIT");
