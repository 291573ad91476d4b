// SPDX-License-Identifier: MIT
/*
 * struct device: initialization, names and reference counting.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "internal.h"

void device_initialize(struct device *dev)
{
	if (!dev) {
		devres__warn(NULL, __func__, "NULL device");
		return;
	}
	dev->name = NULL;
	dev->refcount = 1;
	dev->devres_lock = 0;
	dev->devres_owner = NULL;
	dev->devres_head = NULL;
	dev->p = NULL;
	pthread_mutex_init(&dev->mutex, NULL);
	dev->magic = DEVRES_DEV_MAGIC;
}

int dev_set_name(struct device *dev, const char *fmt, ...)
{
	char *name, *old;
	va_list ap;
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	va_start(ap, fmt);
	ret = vasprintf(&name, fmt, ap);
	va_end(ap);
	if (ret < 0)
		return -ENOMEM;
	old = dev->name;
	dev->name = name;
	free(old);
	return 0;
}

const char *dev_name(const struct device *dev)
{
	if (!dev)
		return "";
	if (dev->name)
		return dev->name;
	return dev->init_name ? dev->init_name : "";
}

struct device *get_device(struct device *dev)
{
	if (dev && devres__dev_ok(dev, __func__))
		__atomic_add_fetch(&dev->refcount, 1, __ATOMIC_RELAXED);
	return dev;
}

static void device_release(struct device *dev)
{
	char *name = dev->name;
	char label[64], buf[40];

	snprintf(label, sizeof(label), "%s",
		 devres__dev_label(dev, buf, sizeof(buf)));

	/* Anything recorded after the device was deleted goes now. */
	devres_release_all(dev);
	pthread_mutex_destroy(&dev->mutex);
	dev->magic = DEVRES_DEV_DEAD;
	if (dev->release)
		dev->release(dev);
	else
		devres__warn(NULL, "put_device",
			     "device %s has no release function", label);
	free(name);
}

void put_device(struct device *dev)
{
	int old;

	if (!dev || !devres__dev_ok(dev, __func__))
		return;
	old = __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED);
	do {
		if (old <= 0) {
			devres__warn(dev, __func__, "no reference left to put");
			return;
		}
	} while (!__atomic_compare_exchange_n(&dev->refcount, &old, old - 1,
					      false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (old == 1)
		device_release(dev);
}
