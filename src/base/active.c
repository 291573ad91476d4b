// SPDX-License-Identifier: MIT
/*
 * Holds on a device's binding, as sysfs keeps an attribute's file alive
 * while its show() or store() runs: an unbind waits for the holders before
 * the driver's remove runs, so a call into the driver made under a hold
 * never meets its data freed. The count is in the device's private state
 * under devres__dm_lock; each thread keeps the devices it holds, to tell
 * its own holds from others' when it unbinds one of them itself.
 */
#include <errno.h>
#include "base.h"

static TLS_FAST struct device *mine[DEVRES_BOUND_HELD_MAX];
static TLS_FAST int nmine;

static int held_here(const struct device *dev)
{
	int n = 0;

	for (int i = 0; i < nmine; i++)
		n += mine[i] == dev;
	return n;
}

int device_bound_get(struct device *dev)
{
	int ret = 0;

	if (!devres__dev_ok(dev, __func__))
		return devres__dev_err(dev);
	if (nmine == DEVRES_BOUND_HELD_MAX) {
		devres__warn(dev, __func__,
			     "this thread holds %d bindings already: refused",
			     DEVRES_BOUND_HELD_MAX);
		return -EBUSY;
	}
	dm_lock();
	if (dm_dev_state(dev) == DEV_BOUND)
		dev->p->active++;
	else
		ret = -ENODEV;
	dm_unlock();
	if (!ret)
		mine[nmine++] = dev;
	return ret;
}

void device_bound_put(struct device *dev)
{
	int i;

	if (!devres__dev_ok(dev, __func__))
		return;
	for (i = nmine - 1; i >= 0 && mine[i] != dev; i--)
		;
	if (i < 0) {
		devres__warn(dev, __func__,
			     "this thread holds no binding of the device");
		return;
	}
	mine[i] = mine[--nmine];
	dm_lock();
	if (--dev->p->active == 0)
		pthread_cond_broadcast(&devres__dm_cond);
	dm_unlock();
}

void devres__bound_drain(struct device *dev)
{
	int own = held_here(dev);

	if (own)
		devres__warn(dev, "device_release_driver",
			     "unbound by a call that holds its binding (a "
			     "show() or store() of its own): not waiting for "
			     "that call, which goes on after the remove");
	dm_lock();
	while (dev->p->active > own)
		pthread_cond_wait(&devres__dm_cond, &devres__dm_lock);
	dm_unlock();
}
