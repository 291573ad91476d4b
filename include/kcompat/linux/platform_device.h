/* SPDX-License-Identifier: MIT */
/* Platform devices and drivers, with the kernel's helpers around them. */
#ifndef KCOMPAT_LINUX_PLATFORM_DEVICE_H
#define KCOMPAT_LINUX_PLATFORM_DEVICE_H

#include <linux/kcompat_site.h>
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
	/* One WARN, not one of each call below. */
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("devm_platform_ioremap_resource_byname",
				    "platform device", pdev);
		return (void __iomem *)ERR_PTR(-EINVAL);
	}
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

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define platform_get_irq(pdev, num)                                            \
	KCOMPAT_AT(platform_get_irq, platform_get_irq(pdev, num))
#define platform_get_irq_optional(pdev, num)                                   \
	KCOMPAT_AT(platform_get_irq_optional,                                  \
		   platform_get_irq_optional(pdev, num))
#define platform_get_irq_byname_optional(pdev, name)                           \
	KCOMPAT_AT(platform_get_irq_byname_optional,                           \
		   platform_get_irq_byname_optional(pdev, name))
#define devm_platform_ioremap_resource(pdev, index)                            \
	KCOMPAT_AT(devm_platform_ioremap_resource,                             \
		   devm_platform_ioremap_resource(pdev, index))
#define devm_platform_ioremap_resource_byname(pdev, name)                      \
	KCOMPAT_AT(devm_platform_ioremap_resource_byname,                      \
		   devm_platform_ioremap_resource_byname(pdev, name))
#define devm_platform_get_and_ioremap_resource(pdev, index, res)               \
	KCOMPAT_AT(devm_platform_get_and_ioremap_resource,                     \
		   devm_platform_get_and_ioremap_resource(pdev, index, res))

#endif /* KCOMPAT_LINUX_PLATFORM_DEVICE_H */
