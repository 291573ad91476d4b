/* SPDX-License-Identifier: MIT */
/* Platform devices and drivers, with the kernel's helpers around them. */
#ifndef KCOMPAT_LINUX_PLATFORM_DEVICE_H
#define KCOMPAT_LINUX_PLATFORM_DEVICE_H

#include <devres/fault.h>
#include <devres/io.h>
#include <devres/platform.h>
#include <linux/device.h>
#include <linux/mod_devicetable.h>
#include <linux/module.h>
#include <linux/of.h>

/* Drivers of 6.3 to 6.10 name their void remove so. */
#define remove_new remove

static inline void __iomem *
devm_platform_ioremap_resource_byname(struct platform_device *pdev,
				      const char *name)
{
	return devm_ioremap_resource(
		&pdev->dev,
		platform_get_resource_byname(pdev, IORESOURCE_MEM, name));
}

/* Defers as platform_get_irq() does; -ENXIO when there is no such line. */
static inline int platform_get_irq_byname_optional(struct platform_device *pdev,
						   const char *name)
{
	struct resource *r =
		platform_get_resource_byname(pdev, IORESOURCE_IRQ, name);

	if (!r)
		return -ENXIO;
	if (devres_should_defer(&pdev->dev, "platform_get_irq_byname"))
		return -EPROBE_DEFER;
	return (int)r->start;
}

#define platform_get_irq_byname platform_get_irq_byname_optional

static inline int platform_irq_count(struct platform_device *pdev)
{
	int n = 0;

	while (platform_get_resource(pdev, IORESOURCE_IRQ, (unsigned int)n))
		n++;
	return n;
}

#define module_platform_driver(drv)                                            \
	module_driver(drv, platform_driver_register, platform_driver_unregister)
#define builtin_platform_driver module_platform_driver

/* A driver whose probe is given at registration (platform_driver_probe()). */
#define module_platform_driver_probe(drv, probefn)                             \
	int drv##_init(void);                                                  \
	void drv##_exit(void);                                                 \
	int drv##_init(void)                                                   \
	{                                                                      \
		(drv).probe = (probefn);                                       \
		return platform_driver_register(&(drv));                       \
	}                                                                      \
	void drv##_exit(void)                                                  \
	{                                                                      \
		platform_driver_unregister(&(drv));                            \
	}                                                                      \
	KCOMPAT_MODULE_TAG

#endif /* KCOMPAT_LINUX_PLATFORM_DEVICE_H */
