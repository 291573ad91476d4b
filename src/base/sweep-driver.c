// SPDX-License-Identifier: MIT
/*
 * driver_probe_sweep(): the sweep of one driver's probe on one device,
 * through the driver core's real bind and unbind paths.
 */
#include <errno.h>
#include <stdio.h>
#include "base.h"
#include "sweep.h"

struct probe_sweep {
	struct device_driver *drv;
	struct device *dev;
};

/*
 * device_driver_attach()'s path, the driver core's probe path for a driver
 * given by hand: it needs no registration and asks no match. A deferral is
 * reported as the probe said it (-EPROBE_DEFER), not as -EAGAIN.
 */
static int bind_op(void *ctx)
{
	struct probe_sweep *ps = ctx;

	return devres__attach(ps->dev, ps->drv, "driver_probe_sweep");
}

static void unbind_op(void *ctx)
{
	struct probe_sweep *ps = ctx;

	device_release_driver(ps->dev);
}

/* Added and not deleted: the state device_driver_attach() can bind. */
static bool registered(struct device *dev)
{
	struct device_private *dp;
	bool ret;

	dm_lock();
	dp = dev->p;
	ret = dp && !dp->dead;
	dm_unlock();
	return ret;
}

/*
 * Refuses up front what would make every run fail the same way before
 * reaching any failure point: the sweep would look clean and test nothing.
 */
static int check_args(struct device_driver *drv, struct device *dev,
		      bool has_result, const char *func)
{
	if (!devres__dev_ok(dev, func))
		return -EINVAL;
	if (!drv || !has_result) {
		devres__warn(dev, func, "NULL %s", drv ? "result" : "driver");
		return -EINVAL;
	}
	if (drv->bus && drv->bus != dev->bus) {
		devres__warn(dev, func, "driver %s is of bus %s",
			     drv->name ? drv->name : "(null)",
			     drv->bus->name ? drv->bus->name : "(null)");
		return -EINVAL;
	}
	if (devres__dev_locked_by_me(dev)) {
		devres__state_warn(dev, func,
				   "called from the device's own probe or "
				   "remove");
		return -EDEADLK;
	}
	if (devres__refuse_in_devres_cb(dev, func))
		return -EDEADLK;
	if (!registered(dev)) {
		devres__state_warn(dev, func, "device is not added");
		return -ENODEV;
	}
	if (dev->driver) {
		devres__warn(dev, func, "device is bound to %s (state: %s)",
			     dev->driver->name,
			     devres__dev_state_name(dm_dev_state(dev)));
		return -EBUSY;
	}
	return 0;
}

int driver_probe_sweep(struct device_driver *drv, struct device *dev,
		       struct devres_sweep_result *ret_result)
{
	struct probe_sweep ps = { .drv = drv, .dev = dev };
	char label[160], repro[160];
	struct devres__sweep s = {
		.label = label,
		.op_name = "probe",
		.repro_pre = repro,
		.repro_post = ")",
		.op = bind_op,
		.undo = unbind_op,
		.ctx = &ps,
	};
	int ret = check_args(drv, dev, ret_result, __func__);

	if (ret)
		return ret;
	snprintf(label, sizeof(label), "probe sweep of %s on %s",
		 drv->name ? drv->name : "(unnamed)", dev_name(dev));
	snprintf(repro, sizeof(repro), "driver_probe_fail_nth(<%s>, <%s>, ",
		 drv->name ? drv->name : "(unnamed)", dev_name(dev));
	/*
	 * An unregistered driver has no bus yet (registering gives it one,
	 * as platform_driver_register() does); it is swept as a driver of
	 * @dev's bus, so that the bus's probe wraps it as it will in use.
	 */
	if (!drv->bus && dev->bus) {
		drv->bus = dev->bus;
		ret = devres__sweep_run(&s, ret_result);
		drv->bus = NULL;
		return ret;
	}
	return devres__sweep_run(&s, ret_result);
}

/*
 * One run of driver_probe_sweep(), by itself: the same bind (and unbind)
 * with the same count of injectable calls before the probe, so point N of
 * a sweep's report fails here at the same call.
 */
int driver_probe_fail_nth(struct device_driver *drv, struct device *dev,
			  unsigned int n)
{
	struct probe_sweep ps = { .drv = drv, .dev = dev };
	bool lend_bus;
	int ret = check_args(drv, dev, true, __func__);

	if (ret)
		return ret;
	lend_bus = !drv->bus && dev->bus;
	if (lend_bus)
		drv->bus = dev->bus;
	devres_fail_nth(n);
	ret = bind_op(&ps);
	devres_fail_nth(0);
	if (ret >= 0)
		unbind_op(&ps);
	if (lend_bus)
		drv->bus = NULL;
	return ret;
}
