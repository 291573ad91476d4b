// SPDX-License-Identifier: MIT
/*
 * A driver's pins: a walker that matches or probes with a registered
 * driver (a search of a device's drivers, driver_register()'s attach,
 * device_driver_attach()) counts in the driver's @active, and
 * driver_unregister() waits until none is left. Each pinning thread is
 * also a member of the driver's set in the record of waits while it
 * pins (drv_set()): a probe that waits for the thread unregistering its
 * driver closes a loop, and the later of the two waits is refused.
 *
 * A thread pins and unpins on itself; it holds a few pins at most (a
 * probe that registers a driver, whose attach probes ...). Past
 * DRV_PINS_MAX, a pin is counted but not recorded.
 */
#include <pthread.h>
#include "base.h"
#include "waits.h"

#define DRV_PINS_MAX 8

static TLS_FAST struct driver_private *pinned[DRV_PINS_MAX];
static TLS_FAST struct devres__wait_member member[DRV_PINS_MAX];
static TLS_FAST int npinned;

uintptr_t devres__drv_set(const struct driver_private *drvp)
{
	return (uintptr_t)&drvp->active;
}

void devres__drv_pin_locked(struct driver_private *drvp)
{
	drvp->active++;
	if (npinned == DRV_PINS_MAX)
		return;
	devres__wait_join(&member[npinned], devres__drv_set(drvp));
	pinned[npinned++] = drvp;
}

void devres__drv_unpin_locked(struct driver_private *drvp)
{
	int i;

	for (i = npinned - 1; i >= 0 && pinned[i] != drvp; i--)
		;
	if (i >= 0) {
		devres__wait_leave(&member[i]);
		pinned[i] = pinned[--npinned];
		/* The last pin moves to slot i, its membership with it. */
		if (i != npinned) {
			devres__wait_leave(&member[npinned]);
			devres__wait_join(&member[i],
					  devres__drv_set(pinned[i]));
		}
	}
	if (--drvp->active == 0 && drvp->dead)
		pthread_cond_broadcast(&devres__dm_cond);
}
