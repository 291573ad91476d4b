// SPDX-License-Identifier: MIT
/*
 * krtc: a real-time clock with an alarm interrupt, written as a kernel
 * driver is. KC_TWIN 1 is its buggy twin, which turns every error of
 * platform_get_irq() into -ENODEV: a deferral becomes a failure that is
 * never retried.
 */
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/rtc.h>

#define KRTC_SECONDS 0x00
#define KRTC_CTRL 0x04
#define KRTC_CTRL_EN BIT(0)
#define KRTC_ALARM_STATUS 0x08

struct krtc {
	void __iomem *base;
	struct rtc_device *rtc;
};

static int krtc_read_time(struct device *dev, struct rtc_time *tm)
{
	struct krtc *k = dev_get_drvdata(dev);

	rtc_time64_to_tm(readl(k->base + KRTC_SECONDS), tm);
	return 0;
}

static int krtc_set_time(struct device *dev, struct rtc_time *tm)
{
	struct krtc *k = dev_get_drvdata(dev);

	writel((u32)rtc_tm_to_time64(tm), k->base + KRTC_SECONDS);
	return 0;
}

static const struct rtc_class_ops krtc_ops = {
	.read_time = krtc_read_time,
	.set_time = krtc_set_time,
};

static irqreturn_t krtc_alarm(int irq, void *data)
{
	struct krtc *k = data;

	(void)irq;
	if (!readl(k->base + KRTC_ALARM_STATUS))
		return IRQ_NONE;
	writel(0, k->base + KRTC_ALARM_STATUS);
	rtc_update_irq(k->rtc, 1, RTC_IRQF | RTC_AF);
	return IRQ_HANDLED;
}

static int krtc_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct krtc *k;
	int irq, ret;

	k = devm_kzalloc(dev, sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	k->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(k->base))
		return PTR_ERR(k->base);
	irq = platform_get_irq(pdev, 0);
	if (irq < 0)
#if KC_TWIN
		return -ENODEV; /* the bug: a deferral is not retried */
#else
		return irq;
#endif
	k->rtc = devm_rtc_allocate_device(dev);
	if (IS_ERR(k->rtc))
		return PTR_ERR(k->rtc);
	platform_set_drvdata(pdev, k);
	ret = devm_request_irq(dev, (unsigned int)irq, krtc_alarm, 0, "krtc",
			       k);
	if (ret)
		return ret;
	writel(KRTC_CTRL_EN, k->base + KRTC_CTRL);
	k->rtc->ops = &krtc_ops;
	k->rtc->range_min = RTC_TIMESTAMP_BEGIN_2000;
	k->rtc->range_max = U32_MAX;
	return devm_rtc_register_device(k->rtc);
}

static const struct of_device_id krtc_of_match[] = { { .compatible = "kc,"
								     "krtc" },
						     {} };
MODULE_DEVICE_TABLE(of, krtc_of_match);

static struct platform_driver krtc_driver = {
	.probe = krtc_probe,
	.driver = {
		.name = "krtc",
		.of_match_table = krtc_of_match,
	},
};
module_platform_driver(krtc_driver);

MODULE_DESCRIPTION("kcompat test RTC");
MODULE_LICENSE("MIT");
