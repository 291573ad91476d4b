// SPDX-License-Identifier: MIT
/*
 * The platform bus: devices named "name.id" and described by resources,
 * matched to drivers by name or by an id table.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "base.h"
#include "resource.h"

/* A platform device allocated here, with room for its name. */
struct platform_object {
	struct platform_device pdev;
	char name[];
};

static const struct platform_device_id *
match_id(const struct platform_device_id *id, struct platform_device *pdev)
{
	for (; id->name[0]; id++) {
		if (strcmp(pdev->name, id->name) == 0) {
			pdev->id_entry = id;
			return id;
		}
	}
	return NULL;
}

static int platform_match(struct device *dev, const struct device_driver *drv)
{
	struct platform_device *pdev = to_platform_device(dev);
	const struct platform_driver *pdrv =
		container_of(drv, const struct platform_driver, driver);

	if (pdrv->id_table)
		return match_id(pdrv->id_table, pdev) != NULL;
	return strcmp(pdev->name, drv->name) == 0;
}

static int platform_probe(struct device *dev)
{
	struct platform_driver *pdrv = to_platform_driver(dev->driver);

	return pdrv->probe ? pdrv->probe(to_platform_device(dev)) : 0;
}

static void platform_remove(struct device *dev)
{
	struct platform_driver *pdrv = to_platform_driver(dev->driver);

	if (pdrv->remove)
		pdrv->remove(to_platform_device(dev));
}

static const struct bus_type platform_bus_type = {
	.name = "platform",
	.match = platform_match,
	.probe = platform_probe,
	.remove = platform_remove,
};

/* Registered on first use; its state is static, so it cannot fail. */
static struct bus_private platform_bus = {
	.bus = &platform_bus_type,
	.is_static = true,
};
static pthread_once_t platform_bus_once = PTHREAD_ONCE_INIT;

static void platform_bus_init(void)
{
	devres__bus_add_static(&platform_bus);
}

static void platform_bus_ready(void)
{
	pthread_once(&platform_bus_once, platform_bus_init);
}

static void platform_device_release(struct device *dev)
{
	struct platform_object *pa =
		container_of(dev, struct platform_object, pdev.dev);

	free(pa->pdev.resource);
	free(pa);
}

struct platform_device *platform_device_alloc(const char *name, int id)
{
	struct platform_object *pa;
	size_t len;

	if (!name) {
		devres__warn(NULL, __func__, "NULL name");
		return NULL;
	}
	if (devres__should_fail())
		return NULL;
	len = strlen(name) + 1;
	pa = calloc(1, sizeof(*pa) + len);
	if (!pa)
		return NULL;
	memcpy(pa->name, name, len);
	pa->pdev.name = pa->name;
	pa->pdev.id = id;
	device_initialize(&pa->pdev.dev);
	pa->pdev.dev.release = platform_device_release;
	return &pa->pdev;
}

int platform_device_add_resources(struct platform_device *pdev,
				  const struct resource *res, unsigned int num)
{
	struct resource *r = NULL;

	if (!pdev || devres__device_was_added(&pdev->dev)) {
		devres__warn(pdev ? &pdev->dev : NULL, __func__, "%s",
			     pdev ? "device is already added" : "NULL device");
		return -EINVAL;
	}
	if (res && num) {
		if (devres__should_fail())
			return -ENOMEM;
		r = calloc(num, sizeof(*r));
		if (!r)
			return -ENOMEM;
		memcpy(r, res, num * sizeof(*r));
	}
	free(pdev->resource);
	pdev->resource = r;
	pdev->num_resources = r ? num : 0;
	return 0;
}

static int set_name(struct platform_device *pdev)
{
	static int next_auto_id;

	switch (pdev->id) {
	case PLATFORM_DEVID_NONE:
		return dev_set_name(&pdev->dev, "%s", pdev->name);
	case PLATFORM_DEVID_AUTO:
		/* The kernel reuses freed numbers; a counter is enough here. */
		pdev->id =
			__atomic_fetch_add(&next_auto_id, 1, __ATOMIC_RELAXED);
		pdev->id_auto = true;
		return dev_set_name(&pdev->dev, "%s.%d.auto", pdev->name,
				    pdev->id);
	default:
		return dev_set_name(&pdev->dev, "%s.%d", pdev->name, pdev->id);
	}
}

int platform_device_add(struct platform_device *pdev)
{
	int ret;

	if (!pdev || !pdev->name) {
		devres__warn(pdev ? &pdev->dev : NULL, __func__, "%s",
			     pdev ? "device has no name" : "NULL device");
		return -EINVAL;
	}
	/* Renaming a registered device first would corrupt it. */
	if (!devres__dev_ok(&pdev->dev, __func__))
		return -EINVAL;
	if (devres__device_was_added(&pdev->dev))
		return device_add(&pdev->dev);

	platform_bus_ready();
	pdev->dev.bus = &platform_bus_type;
	ret = set_name(pdev);
	if (ret)
		goto fail;
	for (unsigned int i = 0; i < pdev->num_resources; i++)
		if (!pdev->resource[i].name)
			pdev->resource[i].name = dev_name(&pdev->dev);
	/* MEM and IO resources enter the resource tree, as in the kernel. */
	ret = devres__insert_resources(pdev->resource, pdev->num_resources);
	if (ret)
		goto fail;
	ret = device_add(&pdev->dev);
	if (ret) {
		devres__remove_resources(pdev->resource, pdev->num_resources);
		goto fail;
	}
	return 0;

fail:
	if (pdev->id_auto) {
		pdev->id = PLATFORM_DEVID_AUTO;
		pdev->id_auto = false;
	}
	return ret;
}

static void pdev_del(struct platform_device *pdev)
{
	if (!pdev)
		return;
	device_del(&pdev->dev);
	devres__remove_resources(pdev->resource, pdev->num_resources);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void platform_device_del(struct platform_device *pdev)
{
	int err = errno;

	pdev_del(pdev);
	errno = err;
}

void platform_device_put(struct platform_device *pdev)
{
	if (pdev)
		put_device(&pdev->dev);
}

int platform_device_register(struct platform_device *pdev)
{
	if (!pdev) {
		devres__warn(NULL, __func__, "NULL device");
		return -EINVAL;
	}
	/* device_initialize() would wipe the state of a registered device. */
	if (pdev->dev.magic == DEVRES_DEV_MAGIC &&
	    devres__device_was_added(&pdev->dev)) {
		devres__warn(&pdev->dev, __func__, "device is already added");
		return -EEXIST;
	}
	device_initialize(&pdev->dev);
	return platform_device_add(pdev);
}

static void pdev_unregister(struct platform_device *pdev)
{
	/* Refused as a whole: the put alone would drop a reference. */
	if (pdev && !devres__may_delete(&pdev->dev, "platform_device_"
						    "unregister"))
		return;
	platform_device_del(pdev);
	platform_device_put(pdev);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void platform_device_unregister(struct platform_device *pdev)
{
	int err = errno;

	pdev_unregister(pdev);
	errno = err;
}

struct platform_device *
platform_device_register_simple(const char *name, int id,
				const struct resource *res, unsigned int num)
{
	struct platform_device *pdev;
	int ret;

	if (!name) {
		devres__warn(NULL, __func__, "NULL name");
		return ERR_PTR(-EINVAL);
	}
	pdev = platform_device_alloc(name, id);
	if (!pdev)
		return ERR_PTR(-ENOMEM);
	ret = platform_device_add_resources(pdev, res, num);
	if (!ret)
		ret = platform_device_add(pdev);
	if (ret) {
		platform_device_put(pdev);
		return ERR_PTR(ret);
	}
	return pdev;
}

int platform_driver_register(struct platform_driver *drv)
{
	if (!drv) {
		devres__warn(NULL, __func__, "NULL driver");
		return -EINVAL;
	}
	platform_bus_ready();
	drv->driver.bus = &platform_bus_type;
	return driver_register(&drv->driver);
}

static void pdrv_unregister(struct platform_driver *drv)
{
	if (!drv) {
		devres__warn(NULL, "platform_driver_unregister", "NULL driver");
		return;
	}
	driver_unregister(&drv->driver);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void platform_driver_unregister(struct platform_driver *drv)
{
	int err = errno;

	pdrv_unregister(drv);
	errno = err;
}

struct resource *platform_get_resource(struct platform_device *pdev,
				       unsigned int type, unsigned int num)
{
	if (!pdev)
		return NULL;
	for (unsigned int i = 0; i < pdev->num_resources; i++) {
		struct resource *r = &pdev->resource[i];

		if (resource_type(r) == type && num-- == 0)
			return r;
	}
	return NULL;
}

struct resource *platform_get_resource_byname(struct platform_device *pdev,
					      unsigned int type,
					      const char *name)
{
	if (!pdev || !name)
		return NULL;
	for (unsigned int i = 0; i < pdev->num_resources; i++) {
		struct resource *r = &pdev->resource[i];

		if (resource_type(r) == type && r->name &&
		    strcmp(r->name, name) == 0)
			return r;
	}
	return NULL;
}

int platform_get_irq_optional(struct platform_device *pdev, unsigned int num)
{
	struct resource *r = platform_get_resource(pdev, IORESOURCE_IRQ, num);

	/* The kernel's defers while the interrupt's controller is missing. */
	if (r && devres_should_defer(&pdev->dev, "platform_get_irq"))
		return -EPROBE_DEFER;
	if (!r)
		return -ENXIO;
	if (r->start == 0 || r->start > INT_MAX) {
		devres__warn(&pdev->dev, __func__, "invalid interrupt %llu",
			     (unsigned long long)r->start);
		return -EINVAL;
	}
	return (int)r->start;
}

int platform_get_irq(struct platform_device *pdev, unsigned int num)
{
	return platform_get_irq_optional(pdev, num);
}
