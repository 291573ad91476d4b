// SPDX-License-Identifier: MIT
/*
 * Whether an address lies inside a device's managed memory: the data of
 * one of its listed resources, [data, data + size). Asked off the hot
 * paths only (device_add(), for a struct device that its parent's
 * devm_kzalloc() block holds): a walk of the list under the device's
 * lock, as long as the list. A free never asks.
 */
#include "node.h"

/* Whether a live, listed resource of @dev has @p in its data. Locked. */
static bool holds_locked(struct device *dev, uintptr_t p)
{
	for (struct devres__node *n = list_head(dev); n; n = n->next) {
		uintptr_t data = (uintptr_t)node_data(n);

		if (!dr_is_marker(n) && !dr_dead(n) && p - data < n->size)
			return true;
	}
	return false;
}

bool devres__managed_holds(struct device *dev, const void *p, const char *func)
{
	bool found;

	if (!devres__dev_ok(dev, func) ||
	    !__atomic_load_n(&dev->devres_head, __ATOMIC_ACQUIRE))
		return false;
	/* Inside a callback of @dev under its lock: not to be taken again. */
	if (__atomic_load_n(&dev->devres_owner, __ATOMIC_RELAXED) ==
	    devres__me())
		return false;
	if (!lock_dev(dev, func))
		return false;
	found = holds_locked(dev, (uintptr_t)p);
	unlock_dev(dev);
	return found;
}
