// SPDX-License-Identifier: MIT
/*
 * struct device: initialization, names, registration, reference counting
 * and messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "base.h"

static bool dbg_on;

__attribute__((constructor)) static void core_init(void)
{
	const char *s = devres__getenv("DEVRES_DEBUG");

	if (s && *s && strcmp(s, "0") != 0)
		dbg_on = true;
}

void device_initialize(struct device *dev)
{
	if (!dev) {
		devres__warn(NULL, __func__, "NULL device");
		return;
	}
	dev->name = NULL;
	dev->refcount = 1;
	dev->devres_lock = 0;
	dev->devres_bias_held = 0;
	dev->devres_bias_revoking = 0;
	dev->devres_bias = NULL;
	dev->devres_owner = NULL;
	dev->devres_head = NULL;
	dev->devres_kept = 0;
	dev->devres_listed = 0;
	dev->devres_dead = 0;
	dev->devres_index = NULL;
	dev->devres_open = NULL;
	dev->devres_slab = NULL;
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

/*
 * The registration reference keeps a registered device alive, so a device
 * reaching its last put while registered was put once too often: its
 * owner's reference is gone. Take it off the lists so nothing points to it.
 */
static void forget_registered(struct device *dev, struct device_private *dp)
{
	devres__warn(dev, "put_device", "released while still registered");
	dm_lock();
	dp->dead = true;
	if (dp->deferred)
		dm_list_del(&dp->deferred_node);
	dp->deferred = false;
	dm_list_del(&dp->bus_node);
	dm_unlock();
	devres__ledger_add(DL_DEVICES, -1);
}

static void device_release(struct device *dev)
{
	struct device_private *dp = dev->p;
	struct device *parent = dp ? dp->parent : NULL;
	char *name = dev->name;
	char label[64], buf[40];

	snprintf(label, sizeof(label), "%s",
		 devres__dev_label(dev, buf, sizeof(buf)));

	if (dp && !dp->dead)
		forget_registered(dev, dp);
	/* Anything recorded after the device was deleted goes now. */
	devres_release_all(dev);
	free(dp);
	dev->p = NULL;
	pthread_mutex_destroy(&dev->mutex);
	dev->magic = DEVRES_DEV_DEAD;
	if (dev->release)
		dev->release(dev);
	else
		devres__warn(NULL, "put_device",
			     "device %s has no release function", label);
	free(name);
	/* The parent goes only after its child is gone. */
	put_device(parent);
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
	if (old == 1) {
		int err = errno; /* release callbacks may change it */

		device_release(dev);
		errno = err;
	}
}

static struct device_private *alloc_private(struct device *dev)
{
	struct device_private *dp;

	/* Injectable: a probe that adds children sees this fail in a sweep. */
	if (devres__should_fail())
		return NULL;
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return NULL;
	dp->dev = dev;
	dm_list_init(&dp->bus_node);
	dm_list_init(&dp->deferred_node);
	return dp;
}

static const char *add_error(int ret)
{
	switch (ret) {
	case -EEXIST:
		return "device is already added";
	case -ENODEV:
		return "device was deleted";
	default:
		return "bus is not registered";
	}
}

int device_add(struct device *dev)
{
	struct bus_private *bp = NULL;
	struct device_private *dp;
	unsigned long gen;
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	if (dev->parent && !devres__dev_ok(dev->parent, __func__))
		return -EINVAL;
	if (!dev->name && dev->init_name) {
		ret = dev_set_name(dev, "%s", dev->init_name);
		if (ret)
			return ret;
	}
	if (!*dev_name(dev)) {
		devres__warn(dev, __func__, "device has no name");
		return -EINVAL;
	}
	dp = alloc_private(dev);
	if (!dp)
		return -ENOMEM;

	dm_lock();
	if (dev->p)
		ret = dev->p->dead ? -ENODEV : -EEXIST;
	else if (dev->bus && !(bp = devres__bus_find_locked(dev->bus)))
		ret = -EINVAL;
	else
		ret = 0;
	if (!ret) {
		dp->bus = bp;
		if (bp)
			dm_list_add_tail(&bp->devices, &dp->bus_node);
		/* The registration's reference, and the child's on its parent. */
		get_device(dev);
		dp->parent = get_device(dev->parent);
		dev->p = dp;
	}
	dm_unlock();
	if (ret) {
		free(dp);
		devres__warn(dev, __func__, "%s", add_error(ret));
		return ret;
	}
	devres__ledger_add(DL_DEVICES, 1);

	gen = devres__bind_gen();
	if (bp)
		devres__probe_new_device(dev);
	devres__retry_if_bound(gen);
	return 0;
}

int device_register(struct device *dev)
{
	if (!dev) {
		devres__warn(NULL, __func__, "NULL device");
		return -EINVAL;
	}
	device_initialize(dev);
	return device_add(dev);
}

bool devres__device_was_added(struct device *dev)
{
	bool added;

	dm_lock();
	added = dev->p != NULL;
	dm_unlock();
	return added;
}

void device_del(struct device *dev)
{
	struct device_private *dp;
	int err = errno; /* remove and release callbacks may change it */

	if (!devres__dev_ok(dev, __func__))
		return;
	if (devres__dev_locked_by_me(dev)) {
		devres__warn(dev, __func__,
			     "called from the device's own "
			     "probe or remove");
		return;
	}
	dm_lock();
	dp = dev->p;
	dm_unlock();
	if (!dp) {
		devres__warn(dev, __func__, "device was never added");
		return;
	}
	if (!devres__device_kill(dev)) {
		devres__warn(dev, __func__, "device is already deleted");
		return;
	}
	/* A bus walk holding the device unlinks it when it lets go. */
	dm_lock();
	if (!dp->pins)
		dm_list_del(&dp->bus_node);
	dm_unlock();

	/* What the device acquired while unbound (the 2023 kernel rule). */
	devres_release_all(dev);
	devres__ledger_add(DL_DEVICES, -1);
	put_device(dev);
	errno = err;
}

void device_unregister(struct device *dev)
{
	device_del(dev);
	put_device(dev);
}

void devres_set_dev_dbg(bool on)
{
	__atomic_store_n(&dbg_on, on, __ATOMIC_RELAXED);
}

static void vprint(int level, const struct device *dev, const char *fmt,
		   va_list ap)
{
	char msg[400], buf[40];
	size_t len;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	if (len && msg[len - 1] == '\n')
		msg[len - 1] = '\0';
	if (!dev)
		devres__print(level, "(NULL device *): %s", msg);
	else if (dev->magic == DEVRES_DEV_MAGIC && dev->bus && dev->bus->name)
		devres__print(level, "%s %s: %s", dev->bus->name,
			      devres__dev_label(dev, buf, sizeof(buf)), msg);
	else
		devres__print(level, "%s: %s",
			      devres__dev_label(dev, buf, sizeof(buf)), msg);
}

void dev_printk(int level, const struct device *dev, const char *fmt, ...)
{
	va_list ap;

	if (level >= DEVRES_LOG_DEBUG &&
	    !__atomic_load_n(&dbg_on, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vprint(level, dev, fmt, ap);
	va_end(ap);
}

int dev_err_probe(const struct device *dev, int err, const char *fmt, ...)
{
	char msg[400];
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	len = strlen(msg);
	if (len && msg[len - 1] == '\n')
		msg[len - 1] = '\0';
	dev_printk(err == -EPROBE_DEFER ? DEVRES_LOG_DEBUG : DEVRES_LOG_ERR,
		   dev, "error %d: %s", err, msg);
	return err;
}
