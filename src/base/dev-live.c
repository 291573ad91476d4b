// SPDX-License-Identifier: MIT
/*
 * A registered device in managed memory is a live object
 * (<devres/liveobj.h>): memory that holds it (a child's struct device in
 * its parent's devm_kzalloc() block, a platform device in one) is not
 * freed under it. device_add() looks, once the device is added, whether
 * the parent's managed memory holds it; only such a device is made live,
 * until device_del(). A free of that memory that finds it registered
 * WARNs, naming the device and the call, and unregisters it first, as its
 * owner should have. Any other device costs nothing: the free paths keep
 * their one load while no object is live.
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
	live = devres__dev_magic(dev) == DEVRES_DEV_MAGIC && dp && !dp->dead;
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

void devres__dev_live_on(struct device *dev, struct device *parent)
{
	if (!parent || !devres__managed_holds(parent, dev, "device_add"))
		return;
	dm_lock();
	/*
	 * Deleted meanwhile by another thread: its device_del() has taken
	 * it off (under this lock), and it is not to be made live again.
	 * Past what the record can hold without memory: not tracked.
	 */
	if (dev->p && !dev->p->gone)
		dev->p->live = !devres_liveobj_activate(dev, &dev_live);
	dm_unlock();
}

void devres__dev_live_off_locked(struct device *dev)
{
	/* Only one made live pays the record's lock. */
	if (dev->p->live)
		devres_liveobj_deactivate(dev);
	dev->p->live = false;
}
