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

static bool parked(struct device *dev)
{
	bool ret;

	dm_lock();
	ret = dev->p && dev->p->deferred;
	dm_unlock();
	return ret;
}

/*
 * After a deferral: the retry a provider's arrival would start. A driver
 * that is not registered is not found by the retry, which only tries a
 * bus's drivers: it is bound by hand, as the retry would have.
 */
static int retry_bind(struct probe_sweep *ps)
{
	driver_deferred_probe_trigger();
	if (ps->dev->driver == ps->drv)
		return 0;
	if (ps->dev->driver)
		return -EBUSY;
	return bind_op(ps);
}

/*
 * One defer run: the n-th deferrable lookup of the probe defers. The
 * probe must return -EPROBE_DEFER with the device parked and nothing
 * held; the retry must bind with what a plain bind holds (@bound).
 * Returns 1 when the lookup was not reached (the runs are over), else 0;
 * a failed run is counted in @r.
 */
static int defer_run(const struct devres__sweep *s, struct probe_sweep *ps,
		     unsigned int n, const struct devres_ledger *bound,
		     struct devres_sweep_result *r)
{
	struct devres_ledger base, now;
	struct devres__site failed, after, returned;
	const char *what;
	char err[24], where[200];
	int ret, returned_err, warns = devres_warn_count();
	bool bad = false;

	devres_ledger_snapshot(&base);
	devres__site_reset();
	devres_defer_nth(n);
	ret = bind_op(ps);
	devres__site_get(&failed, &after, &returned, &returned_err);
	devres__sweep_where(s, ret, &failed, &after, &returned, returned_err,
			    where, sizeof(where));
	if (devres_defer_nth_get()) {
		devres_defer_nth(0);
		if (ret >= 0)
			unbind_op(ps);
		return 1;
	}
	devres_defer_nth(0);
	r->defer_points++;
	what = devres__defer_last();
	devres__errname(ret, err, sizeof(err));
	devres__print(DEVRES_LOG_INFO,
		      "%s: defer point %u: %s defers: probe returned %s",
		      s->label, n, what, err);
	if (ret == 0) {
		devres__sweep_say(s,
				  "FAIL: %s returned -EPROBE_DEFER and the "
				  "probe returned 0: the deferral was "
				  "swallowed (defer point %u)%s",
				  what, n, where);
		unbind_op(ps);
		bad = true;
	} else if (ret != -EPROBE_DEFER) {
		devres__sweep_say(s,
				  "FAIL: %s returned -EPROBE_DEFER and the "
				  "probe returned %s: the deferral was "
				  "turned into an error and is never retried "
				  "(defer point %u)%s",
				  what, err, n, where);
		bad = true;
	} else {
		devres_ledger_snapshot(&now);
		if (!parked(ps->dev)) {
			devres__sweep_say(s,
					  "FAIL: the probe deferred at %s but "
					  "the device is not parked",
					  what);
			bad = true;
		}
		if (devres_ledger_diff(&base, &now, NULL)) {
			devres__sweep_say(s,
					  "FAIL: the deferred probe (%s) left "
					  "resources behind:",
					  what);
			devres__sweep_kinds(s, &base, &now);
			bad = true;
		}
		ret = retry_bind(ps);
		if (ret) {
			devres__sweep_say(
				s,
				"FAIL: after the deferral at %s the "
				"retry did not bind (%s)",
				what, devres__errname(ret, err, sizeof(err)));
			bad = true;
		} else {
			devres_ledger_snapshot(&now);
			if (devres_ledger_diff(bound, &now, NULL)) {
				devres__sweep_say(s,
						  "FAIL: bound after the "
						  "deferral at %s, the device "
						  "holds other resources than "
						  "after a plain bind:",
						  what);
				devres__sweep_kinds(s, bound, &now);
				bad = true;
			}
			unbind_op(ps);
		}
	}
	warns = devres_warn_count() - warns;
	if (warns) {
		devres__sweep_say(s, "FAIL: %d WARN%s at defer point %u (%s)",
				  warns, warns > 1 ? "s" : "", n, what);
		bad = true;
	}
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&base, &now, NULL)) {
		devres__sweep_say(s, "FAIL: leak at defer point %u (%s):", n,
				  what);
		devres__sweep_kinds(s, &base, &now);
		bad = true;
	}
	if (bad)
		r->defer_failures++;
	return 0;
}

/*
 * The defer sweep: each deferrable lookup of the probe (devres_should_
 * defer()) made to defer once, in turn; @bound is what the plain bind of
 * the fault sweep's last run held, @lookups how many it made.
 */
static void defer_sweep(const struct devres__sweep *s,
			struct devres_sweep_result *r, unsigned int lookups,
			const struct devres_ledger *bound)
{
	struct probe_sweep *ps = s->ctx;
	unsigned int n;

	for (n = 1; n <= lookups && n <= DEVRES_SWEEP_MAX_POINTS; n++)
		if (defer_run(s, ps, n, bound, r))
			break;
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
		      const void *result, const char *func)
{
	if (!devres__dev_ok(dev, func) ||
	    devres__arg_bad(dev, drv, func, "driver") ||
	    devres__arg_bad(dev, result, func, "result"))
		return -EINVAL;
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

/*
 * The bus lent to an unregistered driver, given back also when a probe
 * ends the thread.
 */
static void unset_bus(void *drv)
{
	((struct device_driver *)drv)->bus = NULL;
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
		.after = defer_sweep,
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
		pthread_cleanup_push(unset_bus, drv);
		ret = devres__sweep_run(&s, ret_result);
		pthread_cleanup_pop(1);
		return ret;
	}
	return devres__sweep_run(&s, ret_result);
}

/*
 * One run of driver_probe_sweep(), by itself: the same bind (and unbind)
 * with the same count of injectable calls before the probe, so point N of
 * a sweep's report fails here at the same call.
 */
static int fail_nth_run(struct probe_sweep *ps, unsigned int n)
{
	int ret;

	devres_fail_nth(n);
	ret = bind_op(ps);
	devres_fail_nth(0);
	if (ret >= 0)
		unbind_op(ps);
	return ret;
}

int driver_probe_fail_nth(struct device_driver *drv, struct device *dev,
			  unsigned int n)
{
	struct probe_sweep ps = { .drv = drv, .dev = dev };
	int ret = check_args(drv, dev, &ps, __func__);

	if (ret)
		return ret;
	/*
	 * The bus lent as the sweep lends it, and given back as the sweep
	 * gives it back, also when the probe ends the thread: left set, it
	 * made the driver one of @dev's bus that nobody registered.
	 */
	if (!drv->bus && dev->bus) {
		drv->bus = dev->bus;
		pthread_cleanup_push(unset_bus, drv);
		ret = fail_nth_run(&ps, n);
		pthread_cleanup_pop(1);
		return ret;
	}
	return fail_nth_run(&ps, n);
}
