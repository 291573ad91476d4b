// SPDX-License-Identifier: MIT
/*
 * kled: a LED controller written as a kernel driver is, with two bugs of
 * the kind a sweep's findings point at by line: a failed allocation
 * reported through dev_err_probe() with another errno than the one that
 * failed, and a failed managed action ignored (the probe goes on as if
 * it held). KC_TWIN 0 is the correct driver.
 */
#include <linux/io.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/slab.h>

#define KLED_CTRL 0x00
#define KLED_CTRL_ON BIT(0)
#define KLED_LEVEL 0x04

struct kled {
	void __iomem *base;
	struct mutex lock; /* guards the level */
	u8 *pattern;
};

static void kled_off(void *data)
{
	struct kled *l = data;

	writel(0, l->base + KLED_CTRL);
}

static int kled_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct kled *l;
	int ret;

	l = devm_kzalloc(dev, sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	l->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(l->base))
		return PTR_ERR(l->base);
	l->pattern = devm_kcalloc(dev, 16, sizeof(*l->pattern), GFP_KERNEL);
	if (!l->pattern)
#if KC_TWIN
		return dev_err_probe(dev, -EIO, "no pattern buffer\n");
#else
		return dev_err_probe(dev, -ENOMEM, "no pattern buffer\n");
#endif
	writel(KLED_CTRL_ON, l->base + KLED_CTRL);
	ret = devm_add_action_or_reset(dev, kled_off, l);
#if KC_TWIN
	if (ret)
		dev_warn(dev, "cannot turn off at unbind, going on\n");
#else
	if (ret)
		return ret;
#endif
	platform_set_drvdata(pdev, l);
	return devm_mutex_init(dev, &l->lock);
}

static struct platform_driver kled_driver = {
	.probe = kled_probe,
	.driver = {
		.name = "kled",
	},
};
module_platform_driver(kled_driver);

MODULE_DESCRIPTION("kcompat test LED");
MODULE_LICENSE("MIT");
