// SPDX-License-Identifier: MIT
/*
 * What the driver model asks of the devres core's lock: whether the calling
 * thread holds a device's devres lock, i.e. runs inside one of its match or
 * for-each callbacks. A driver-model call that would release the device's
 * resources from there would find its list half-walked: it is refused.
 */
#include "node.h"
#include "base.h"

bool devres__devres_held_by_me(const struct device *dev)
{
	return __atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
	       devres__me();
}

bool devres__refuse_in_devres_cb(const struct device *dev, const char *func)
{
	if (!devres__devres_held_by_me(dev))
		return false;
	devres__warn(dev, func,
		     "called from a match or for-each callback of this device");
	return true;
}
