// SPDX-License-Identifier: MIT
/*
 * A registered device is a live object (<devres/liveobj.h>): memory that
 * holds it (a child's struct device in its parent's devm_kzalloc() block,
 * a platform device in a managed block) is not freed under it. Its
 * registration starts with device_add() and ends with device_del(); a free
 * of managed memory that finds it registered WARNs, naming the device and
 * the call, and unregisters it first, as its owner should have.
 */
#include <devres/liveobj.h>
#include "base.h"
#include "liveobj.h"

/* Registered and not being deleted: its free would pull it from its bus. */
static enum devres_liveobj_state dev_live_state(void *obj)
{
	struct device *dev = obj;
	const struct device_private *dp;
	bool live;

	dm_lock();
	dp = dev->p;
	live = dev->magic == DEVRES_DEV_MAGIC && dp && !dp->dead;
	dm_unlock();
	return live ? DEVRES_LIVEOBJ_SELF : DEVRES_LIVEOBJ_IDLE;
}

static void dev_live_fixup(void *obj, enum devres_liveobj_state st)
{
	struct device *dev = obj;

	(void)st;
	devres__warn(dev, devres__liveobj_func,
		     "frees the memory of this device while it is "
		     "registered: device_unregister() must come first; it is "
		     "unregistered now, then freed");
	/* Another deletion that took it first is not this free's to WARN. */
	if (devres__device_del_once(dev, devres__liveobj_func))
		put_device(dev);
}

static const struct devres_liveobj_descr dev_live = {
	.name = "device",
	.hint = "device_unregister()",
	.state = dev_live_state,
	.fixup_free = dev_live_fixup,
};

void devres__dev_live_on_locked(struct device *dev)
{
	/* Past what the record can hold without memory: not tracked. */
	(void)devres_liveobj_activate(dev, &dev_live);
}

void devres__dev_live_off_locked(struct device *dev)
{
	devres_liveobj_deactivate(dev);
}
