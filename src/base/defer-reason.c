// SPDX-License-Identifier: MIT
/*
 * Why a device's probe deferred, as dev_err_probe() was told: the
 * kernel's deferred_probe_reason, shown with the device while it is
 * parked (devres_dump(), as the kernel's devices_deferred).
 *
 * The text lives in the device's private part, under devres__dm_lock,
 * the lock every reader of that part holds: a dev_err_probe() from
 * another thread finds the part or NULL, never freed memory. It is
 * replaced by the next deferral's, dropped when the device binds or is
 * deleted, and freed with the private part.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"

void devres__defer_reason_set(const struct device *dev, const char *drv,
			      const char *msg)
{
	struct device_private *dp;
	char *old, *reason;
	size_t len;

	/* "<driver>: <message>", as the kernel's. */
	len = strlen(drv) + strlen(msg) + 3;
	reason = malloc(len);
	if (reason) {
		if (*drv)
			(void)snprintf(reason, len, "%s: %s", drv, msg);
		else
			(void)snprintf(reason, len, "%s", msg);
	}
	dm_lock();
	dp = dev->p;
	if (dp && !dp->dead) {
		/* Out of memory, the old reason goes too: it is not this one. */
		old = dp->defer_reason;
		dp->defer_reason = reason;
		reason = old;
	}
	dm_unlock();
	free(reason);
}

char *devres__defer_reason_take_locked(struct device_private *dp)
{
	char *reason = dp->defer_reason;

	dp->defer_reason = NULL;
	return reason;
}

bool devres__defer_reason_copy(const struct device *dev, char *buf, size_t len)
{
	const struct device_private *dp;
	bool shown = false;

	dm_lock();
	dp = dev->p;
	if (dp && dp->deferred && dp->defer_reason) {
		(void)snprintf(buf, len, "%s", dp->defer_reason);
		shown = true;
	}
	dm_unlock();
	return shown;
}
