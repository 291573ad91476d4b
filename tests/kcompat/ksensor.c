// SPDX-License-Identifier: MIT
/*
 * ksensor: a temperature sensor written as a kernel driver is, for what
 * an ordinary driver takes beyond resources: platform data from its
 * board, device attributes (its driver's dev_groups and a group added in
 * probe), and work items (an interrupt hands its reading to a work, and
 * a delayed work polls while a poll period is set).
 */
#include <linux/device.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#define KSENSOR_TEMP 0x00      /* millidegrees, read only */
#define KSENSOR_THRESHOLD 0x04 /* alert above this */
#define KSENSOR_CTRL 0x08
#define KSENSOR_CTRL_EN BIT(0)

/* What the board says of the sensor. */
struct ksensor_pdata {
	u32 offset; /* added to every reading, millidegrees */
	bool debug; /* shows debug/raw */
};

struct ksensor {
	void __iomem *base;
	const struct ksensor_pdata *pdata;
	struct work_struct alert_work;
	struct delayed_work poll_work;
	struct mutex lock; /* guards the fields below */
	int last;	   /* the last reading, millidegrees */
	unsigned int alerts;
	unsigned int polls;
	unsigned int poll_ms;
};

static int ksensor_read(struct ksensor *s)
{
	return (int)readl(s->base + KSENSOR_TEMP) + (int)s->pdata->offset;
}

static void ksensor_alert_work(struct work_struct *work)
{
	struct ksensor *s = container_of(work, struct ksensor, alert_work);
	int t = ksensor_read(s);

	mutex_lock(&s->lock);
	s->last = t;
	s->alerts++;
	mutex_unlock(&s->lock);
}

static void ksensor_poll_work(struct work_struct *work)
{
	struct ksensor *s =
		container_of(to_delayed_work(work), struct ksensor, poll_work);
	int t = ksensor_read(s);
	unsigned int ms;

	mutex_lock(&s->lock);
	s->last = t;
	s->polls++;
	ms = s->poll_ms;
	mutex_unlock(&s->lock);
	if (ms)
		schedule_delayed_work(&s->poll_work, msecs_to_jiffies(ms));
}

/* The handler does not read in interrupt context: its work does. */
static irqreturn_t ksensor_irq(int irq, void *data)
{
	struct ksensor *s = data;

	(void)irq;
	schedule_work(&s->alert_work);
	return IRQ_HANDLED;
}

static ssize_t temp_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct ksensor *s = dev_get_drvdata(dev);

	(void)attr;
	return sysfs_emit(buf, "%d\n", ksensor_read(s));
}
static DEVICE_ATTR_RO(temp);

static ssize_t threshold_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct ksensor *s = dev_get_drvdata(dev);

	(void)attr;
	return sysfs_emit(buf, "%u\n", readl(s->base + KSENSOR_THRESHOLD));
}

static ssize_t threshold_store(struct device *dev,
			       struct device_attribute *attr, const char *buf,
			       size_t count)
{
	struct ksensor *s = dev_get_drvdata(dev);
	unsigned int v;
	int ret;

	(void)attr;
	ret = kstrtouint(buf, 0, &v);
	if (ret)
		return ret;
	writel(v, s->base + KSENSOR_THRESHOLD);
	return (ssize_t)count;
}
static DEVICE_ATTR_RW(threshold);

static ssize_t last_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct ksensor *s = dev_get_drvdata(dev);
	int n;

	(void)attr;
	mutex_lock(&s->lock);
	n = sysfs_emit(buf, "%d %u %u\n", s->last, s->alerts, s->polls);
	mutex_unlock(&s->lock);
	return n;
}
static DEVICE_ATTR_RO(last);

static ssize_t poll_ms_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct ksensor *s = dev_get_drvdata(dev);
	unsigned int ms;

	(void)attr;
	mutex_lock(&s->lock);
	ms = s->poll_ms;
	mutex_unlock(&s->lock);
	return sysfs_emit(buf, "%u\n", ms);
}

static ssize_t poll_ms_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t count)
{
	struct ksensor *s = dev_get_drvdata(dev);
	unsigned int ms;
	int ret;

	(void)attr;
	ret = kstrtouint(buf, 10, &ms);
	if (ret)
		return ret;
	mutex_lock(&s->lock);
	s->poll_ms = ms;
	mutex_unlock(&s->lock);
	if (ms)
		mod_delayed_work(system_wq, &s->poll_work,
				 msecs_to_jiffies(ms));
	else
		cancel_delayed_work_sync(&s->poll_work);
	return (ssize_t)count;
}
static DEVICE_ATTR_RW(poll_ms);

static struct attribute *ksensor_attrs[] = {
	&dev_attr_temp.attr,
	&dev_attr_threshold.attr,
	&dev_attr_last.attr,
	&dev_attr_poll_ms.attr,
	NULL,
};
ATTRIBUTE_GROUPS(ksensor);

static ssize_t raw_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	struct ksensor *s = dev_get_drvdata(dev);

	(void)attr;
	return sysfs_emit(buf, "0x%08x\n", readl(s->base + KSENSOR_TEMP));
}
static DEVICE_ATTR_RO(raw);

static struct attribute *ksensor_debug_attrs[] = {
	&dev_attr_raw.attr,
	NULL,
};

static umode_t ksensor_debug_visible(struct kobject *kobj,
				     struct attribute *attr, int n)
{
	struct ksensor *s = dev_get_drvdata(kobj_to_dev(kobj));

	(void)n;
	return s->pdata->debug ? attr->mode : 0;
}

static const struct attribute_group ksensor_debug_group = {
	.name = "debug",
	.is_visible = ksensor_debug_visible,
	.attrs = ksensor_debug_attrs,
};

static int ksensor_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct ksensor *s;
	int irq, ret;

	s = devm_kzalloc(dev, sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->pdata = dev_get_platdata(dev);
	if (!s->pdata)
		return dev_err_probe(dev, -EINVAL, "no platform data\n");
	s->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(s->base))
		return PTR_ERR(s->base);
	ret = devm_mutex_init(dev, &s->lock);
	if (ret)
		return ret;
	/* Cancelled at unbind, after the interrupt is freed (newest first). */
	ret = devm_work_autocancel(dev, &s->alert_work, ksensor_alert_work);
	if (ret)
		return ret;
	ret = devm_delayed_work_autocancel(dev, &s->poll_work,
					   ksensor_poll_work);
	if (ret)
		return ret;
	irq = platform_get_irq(pdev, 0);
	if (irq < 0)
		return irq;
	ret = devm_request_irq(dev, (unsigned int)irq, ksensor_irq, 0,
			       dev_name(dev), s);
	if (ret)
		return ret;
	platform_set_drvdata(pdev, s);
	ret = devm_device_add_group(dev, &ksensor_debug_group);
	if (ret)
		return ret;
	writel(KSENSOR_CTRL_EN, s->base + KSENSOR_CTRL);
	return 0;
}

static struct platform_driver ksensor_driver = {
	.probe = ksensor_probe,
	.driver = {
		.name = "ksensor",
		.dev_groups = ksensor_groups,
	},
};
module_platform_driver(ksensor_driver);

MODULE_DESCRIPTION("kcompat test sensor");
MODULE_LICENSE("MIT");
