/* SPDX-License-Identifier: MIT */
/*
 * The platform bus: devices described by a name and a list of resources
 * (register windows, I/O ports, interrupts), matched to drivers by name.
 */
#ifndef DEVRES_PLATFORM_H
#define DEVRES_PLATFORM_H

#include <devres/types.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/ioport.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The id of the only device of its name: named "name", not "name.id". */
#define PLATFORM_DEVID_NONE (-1)
/* An id chosen by the bus: the device is named "name.N.auto". */
#define PLATFORM_DEVID_AUTO (-2)

#define PLATFORM_NAME_SIZE 20

/**
 * struct platform_device_id - a device name a driver handles
 * @name: the device name; an entry with an empty name ends a table
 * @driver_data: the driver's cookie for this name
 */
struct platform_device_id {
	char name[PLATFORM_NAME_SIZE];
	unsigned long driver_data;
};

/**
 * struct platform_device - a device on the platform bus
 * @name: the device's base name, matched against drivers
 * @id: instance number, PLATFORM_DEVID_NONE or PLATFORM_DEVID_AUTO
 * @id_auto: true when the bus chose the number (PLATFORM_DEVID_AUTO)
 * @dev: the device
 * @num_resources: the number of entries in @resource
 * @resource: the device's resources
 * @id_entry: the entry of the bound driver's id_table that matched, or NULL
 */
struct platform_device {
	const char *name;
	int id;
	bool id_auto;
	struct device dev;
	unsigned int num_resources;
	struct resource *resource;
	const struct platform_device_id *id_entry;
};

/**
 * struct platform_driver - a driver of platform devices
 * @probe: binds to a device; as struct device_driver's probe
 * @remove: unbinds; as struct device_driver's remove
 * @driver: the driver: set at least its name
 * @id_table: the device names it handles, ended by an empty entry; when
 *            NULL, devices are matched against @driver.name
 */
struct platform_driver {
	int (*probe)(struct platform_device *pdev);
	void (*remove)(struct platform_device *pdev);
	struct device_driver driver;
	const struct platform_device_id *id_table;
};

#define to_platform_device(d) container_of((d), struct platform_device, dev)
#define to_platform_driver(d) container_of((d), struct platform_driver, driver)

/**
 * platform_get_device_id() - the id_table entry a device was matched by
 * @pdev: the device
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and gives NULL.
 *
 * Return: the entry, or NULL when the driver matched by name.
 */
static inline const struct platform_device_id *
platform_get_device_id(const struct platform_device *pdev)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("platform_get_device_id", "platform device",
				    pdev);
		return NULL;
	}
	return pdev->id_entry;
}

/**
 * platform_get_drvdata() - the driver's private data
 * @pdev: the device
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and gives NULL.
 *
 * Return: what platform_set_drvdata() stored, or NULL.
 */
static inline void *platform_get_drvdata(const struct platform_device *pdev)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("platform_get_drvdata", "platform device",
				    pdev);
		return NULL;
	}
	return pdev->dev.driver_data;
}

/**
 * platform_set_drvdata() - store the driver's private data
 * @pdev: the device
 * @data: the data
 */
static inline void platform_set_drvdata(struct platform_device *pdev,
					void *data)
{
	if (devres_ptr_bad(pdev)) {
		devres_warn_bad_arg("platform_set_drvdata", "platform device",
				    pdev);
		return;
	}
	pdev->dev.driver_data = data;
}

/**
 * platform_device_alloc() - allocate a platform device
 * @name: the base name (copied)
 * @id: instance number, PLATFORM_DEVID_NONE or PLATFORM_DEVID_AUTO
 *
 * A bad @pdev (NULL, ERR_PTR, a small integer) WARNs and stores nothing.
 *
 * The device is initialized, not yet added: give it resources with
 * platform_device_add_resources(), then platform_device_add(). Drop it with
 * platform_device_put(), which frees it and its resources.
 *
 * Context: any thread. A fault-injection point.
 * Return: the device, or NULL when memory is short (or @name is NULL, with
 * a WARN).
 */
DEVRES_API struct platform_device *platform_device_alloc(const char *name,
							 int id);

/**
 * platform_device_add_resources() - give a device a copy of resources
 * @pdev: a device from platform_device_alloc(), not yet added
 * @res: the resources, or NULL
 * @num: how many
 *
 * Replaces the device's resources with a copy of @res[0..@num), their names
 * included: nothing the device keeps points into the caller's memory.
 *
 * The library frees only the copies it made: the one this call replaces,
 * and a platform_device_alloc() device's at its release. An array the
 * owner pointed @pdev->resource at itself is never freed nor written by
 * this call. On a device of the caller's own (not from
 * platform_device_alloc()), the copy lives until the next call:
 * platform_device_add_resources(pdev, NULL, 0) gives it back, allowed
 * also once the device is deleted or from its release callback.
 *
 * Context: any thread. A fault-injection point. An add of @pdev that
 * lands while the copy is made (another thread's) wins: the call is then
 * refused, and the device keeps the resources its add put in the tree.
 * Return: 0, -ENOMEM, or -EINVAL (with a WARN) for a bad @pdev, @res or
 * resource name pointer, or a device that is already added or being
 * added by platform_device_add().
 */
DEVRES_API int platform_device_add_resources(struct platform_device *pdev,
					     const struct resource *res,
					     unsigned int num);

/**
 * platform_device_add() - add a platform device
 * @pdev: an initialized platform device (platform_device_alloc())
 *
 * Names the device "name.id" ("name" for PLATFORM_DEVID_NONE, "name.N.auto"
 * for PLATFORM_DEVID_AUTO), gives its unnamed resources the device's name
 * and adds it to the platform bus, where a matching driver binds at once.
 *
 * Context: as device_add().
 * Return: 0, or as device_add(); -EINVAL (with a WARN) for NULL.
 */
DEVRES_API int platform_device_add(struct platform_device *pdev);

/**
 * platform_device_del() - remove a platform device from the bus
 * @pdev: an added device, or NULL
 *
 * device_del() for a platform device; drop it then with
 * platform_device_put().
 *
 * Context: as device_del().
 */
DEVRES_API void platform_device_del(struct platform_device *pdev);

/**
 * platform_device_put() - drop a reference on a platform device
 * @pdev: the device, or NULL
 *
 * Drops a reference on @pdev's device, as the kernel's platform_device_put()
 * does; the last one releases it. NULL is accepted and ignored.
 *
 * Context: as put_device().
 */
DEVRES_API void platform_device_put(struct platform_device *pdev);

/**
 * platform_device_register() - initialize and add a platform device
 * @pdev: a platform device the caller allocated, with @name, @id and
 *        resources set, and a @dev.release that frees it
 *
 * Initializes @pdev's device and adds it to the platform bus, where a matching
 * platform driver is probed at once.
 *
 * Context: as device_add().
 * Return: as platform_device_add(); -EEXIST (with a WARN) when @pdev is
 * already added; -ECHILD (with a WARN) in a child of fork() for a device
 * of its parent.
 */
DEVRES_API int platform_device_register(struct platform_device *pdev);

/**
 * platform_device_unregister() - delete a platform device and drop it
 * @pdev: a registered device, or NULL
 *
 * platform_device_del() then platform_device_put(). Called where
 * device_del() would be refused (the device's own probe or remove, a devres
 * match or for-each callback of it), it WARNs once and does nothing at all:
 * the put is refused with the delete.
 *
 * Context: as device_del().
 */
DEVRES_API void platform_device_unregister(struct platform_device *pdev);

/**
 * platform_device_register_simple() - allocate, describe and add a device
 * @name: the base name (copied)
 * @id: instance number, PLATFORM_DEVID_NONE or PLATFORM_DEVID_AUTO
 * @res: its resources (copied), or NULL
 * @num: how many
 *
 * Allocates a platform device called @name with instance @id, copies @num
 * resources from @res into it and adds it to the platform bus, where a
 * matching platform driver is probed at once.
 *
 * Context: as device_add(). A fault-injection point.
 * Return: the device, to be dropped with platform_device_unregister(); or
 * ERR_PTR(-ENOMEM), or the error of platform_device_add().
 */
DEVRES_API struct platform_device *
platform_device_register_simple(const char *name, int id,
				const struct resource *res, unsigned int num);

/**
 * platform_driver_register() - register a platform driver
 * @drv: the driver; its @driver.bus is set to the platform bus
 *
 * Registers @drv on the platform bus and probes it against every platform
 * device it matches by name or id table.
 *
 * Context: as driver_register().
 * Return: as driver_register().
 */
DEVRES_API int platform_driver_register(struct platform_driver *drv);

/**
 * platform_driver_unregister() - unregister a platform driver
 * @drv: a registered driver
 *
 * Unbinds @drv from every platform device it is bound to (each remove, then
 * each device's managed resources) and takes it off the platform bus.
 *
 * Context: as driver_unregister().
 */
DEVRES_API void platform_driver_unregister(struct platform_driver *drv);

/**
 * platform_get_resource() - a resource of a given type, by index
 * @pdev: the device
 * @type: IORESOURCE_MEM, IORESOURCE_IO, IORESOURCE_IRQ, ...
 * @num: which one of that type, from 0
 *
 * The @num-th resource of @pdev whose flags include @type (IORESOURCE_MEM,
 * IORESOURCE_IRQ ...), counted among those of that type only.
 *
 * Context: any thread.
 * Return: the resource, or NULL when there is no such one.
 */
DEVRES_API struct resource *platform_get_resource(struct platform_device *pdev,
						  unsigned int type,
						  unsigned int num);

/**
 * platform_get_resource_byname() - a resource of a given type, by name
 * @pdev: the device
 * @type: IORESOURCE_MEM, IORESOURCE_IO, IORESOURCE_IRQ, ...
 * @name: the resource's name
 *
 * Looks @pdev's resources of @type up by the name they were given, as
 * devm_platform_ioremap_resource_byname() does. An unnamed resource is
 * named after the device by platform_device_add() and loses that name
 * when the device is deleted.
 *
 * Context: any thread, also while another thread adds or deletes @pdev
 * (the caller holding a reference): the lookup sees each name before or
 * after the change.
 * Return: the first resource of @type named @name, or NULL.
 */
DEVRES_API struct resource *
platform_get_resource_byname(struct platform_device *pdev, unsigned int type,
			     const char *name);

/**
 * platform_get_irq() - a device's interrupt number, by index
 * @pdev: the device
 * @num: which IORESOURCE_IRQ resource, from 0
 *
 * The interrupt line of @pdev's @num-th IORESOURCE_IRQ resource, for
 * request_irq() and devm_request_irq(). As in the kernel, a missing one is logged ("IRQ index %u not found"); platform_get_irq_optional() is the silent form.
 *
 * Context: any thread.
 * Return: the interrupt number (> 0); -ENXIO when the device has no such
 * interrupt; -EINVAL (with a WARN) when the resource says 0, which is
 * never a valid interrupt.
 */
DEVRES_API int platform_get_irq(struct platform_device *pdev, unsigned int num);

/**
 * platform_get_irq_optional() - platform_get_irq(), for optional interrupts
 * @pdev: the device
 * @num: which IORESOURCE_IRQ resource, from 0
 *
 * The same as platform_get_irq(): the library prints nothing in either
 * case. Kept for drivers written against the kernel.
 *
 * Context: any thread.
 * Return: as platform_get_irq().
 */
DEVRES_API int platform_get_irq_optional(struct platform_device *pdev,
					 unsigned int num);

/**
 * devm_platform_get_and_ioremap_resource() - claim and map a device's
 * memory resource, and say which
 * @pdev: the device
 * @index: which IORESOURCE_MEM resource, from 0
 * @res: where the resource is written (NULL when there is none), or NULL
 *
 * platform_get_resource() then devm_ioremap_resource() (devres/io.h):
 * the region is claimed and mapped through the register window that holds
 * it, both given back when the device lets go.
 *
 * Context: any thread. A fault-injection point.
 * Return: the address of the first register, or an ERR_PTR as
 * devm_ioremap_resource(): -EINVAL when the device has no such resource.
 */
DEVRES_API void *
devm_platform_get_and_ioremap_resource(struct platform_device *pdev,
				       unsigned int index,
				       struct resource **res);

/**
 * devm_platform_ioremap_resource() - claim and map a device's memory
 * resource
 * @pdev: the device
 * @index: which IORESOURCE_MEM resource, from 0
 *
 * devm_platform_get_and_ioremap_resource() without the resource.
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_platform_get_and_ioremap_resource().
 */
DEVRES_API void *devm_platform_ioremap_resource(struct platform_device *pdev,
						unsigned int index);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_PLATFORM_H */
