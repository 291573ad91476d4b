/* SPDX-License-Identifier: MIT */
/*
 * struct device: what resources are recorded against, with its lifetime.
 */
#ifndef DEVRES_DEVICE_H
#define DEVRES_DEVICE_H

#include <pthread.h>
#include <devres/types.h>
#include <devres/devres.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bus_type;
struct device_driver;
struct device_private;

/**
 * struct device - a device resources are recorded against
 * @parent: the parent device, or NULL; a registered child holds a reference
 * @bus: the bus the device sits on, or NULL
 * @driver: the bound driver, or NULL; set by the driver core
 * @release: called by the last put_device(); frees the containing object
 * @driver_data: the driver's private data (dev_set_drvdata())
 * @init_name: name used by device_add() when dev_set_name() was not called
 *
 * Bus types embed this and get back with container_of(). The members after
 * the comment are private: initialize them with device_initialize() and
 * never touch them.
 */
struct device {
	struct device *parent;
	const struct bus_type *bus;
	struct device_driver *driver;
	void (*release)(struct device *dev);
	void *driver_data;
	const char *init_name;

	/* private: */
	char *name;
	unsigned int magic;
	int refcount;
	int devres_lock;
	void *devres_owner;
	void *devres_head;
	pthread_mutex_t mutex;
	struct device_private *p;
};

/**
 * device_initialize() - prepare a device for use
 * @dev: the device, its public members set as wanted
 *
 * Sets the reference count to 1 and makes @dev ready for devres. Release
 * the device with put_device(), never by freeing it directly.
 *
 * Context: any thread, before @dev is shared.
 */
DEVRES_API void device_initialize(struct device *dev);

/**
 * dev_set_name() - name a device
 * @dev: the device
 * @fmt: printf-style format, then its arguments
 *
 * Context: any thread.
 * Return: 0, -ENOMEM, or -EINVAL for a NULL or uninitialized @dev.
 */
DEVRES_API int dev_set_name(struct device *dev, const char *fmt, ...)
	DEVRES_PRINTF(2, 3);

/**
 * dev_name() - a device's name
 * @dev: the device
 *
 * Context: any thread.
 * Return: the name set by dev_set_name(), else @dev->init_name, else "".
 */
DEVRES_API const char *dev_name(const struct device *dev);

/**
 * get_device() - take a reference
 * @dev: the device, or NULL
 *
 * Context: any thread.
 * Return: @dev.
 */
DEVRES_API struct device *get_device(struct device *dev);

/**
 * put_device() - drop a reference
 * @dev: the device, or NULL
 *
 * The last put releases anything still recorded against @dev, frees its
 * name and calls @dev->release (a device without one is WARNed, as in the
 * kernel). A put with no reference left is a misuse: WARN, no effect.
 *
 * Context: any thread; the last put runs the release in the caller.
 */
DEVRES_API void put_device(struct device *dev);

/**
 * dev_get_drvdata() - the driver's private data
 * @dev: the device
 *
 * Context: any thread.
 * Return: what dev_set_drvdata() stored, or NULL.
 */
static inline void *dev_get_drvdata(const struct device *dev)
{
	return dev->driver_data;
}

/**
 * dev_set_drvdata() - store the driver's private data
 * @dev: the device
 * @data: the data
 *
 * Context: any thread.
 */
static inline void dev_set_drvdata(struct device *dev, void *data)
{
	dev->driver_data = data;
}

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_DEVICE_H */
