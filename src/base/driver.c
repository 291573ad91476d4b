// SPDX-License-Identifier: MIT
/*
 * Drivers: registration on a bus and unregistration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "waits.h"

static bool name_taken_locked(struct bus_private *bp, const char *name)
{
	for (struct dm_link *l = bp->drivers.next; l != &bp->drivers;
	     l = l->next) {
		struct driver_private *drvp =
			container_of(l, struct driver_private, node);

		if (!drvp->dead && strcmp(drvp->drv->name, name) == 0)
			return true;
	}
	return false;
}

static const char *const drv_state_names[] = {
	[DRV_UNREGISTERED] = "unregistered",
	[DRV_REGISTERED] = "registered",
	[DRV_UNREGISTERING] = "unregistering",
};

const char *devres__drv_state_name(enum dm_drv_state st)
{
	return drv_state_names[st];
}

/*
 * Zeroed memory reads unregistered; so does a copy of a registered
 * driver, whose private pointer is not its own.
 */
enum dm_drv_state devres__drv_state_locked(const struct device_driver *drv)
{
	const struct driver_private *drvp = drv->p;

	if (!drvp || drvp->drv != drv)
		return DRV_UNREGISTERED;
	return drvp->dead ? DRV_UNREGISTERING : DRV_REGISTERED;
}

static const char *register_error(int ret, enum dm_drv_state st)
{
	if (ret != -EBUSY)
		return "bus is not registered";
	switch (st) {
	case DRV_REGISTERED:
		return "driver is already registered";
	case DRV_UNREGISTERING:
		return "driver is being unregistered";
	default:
		return "a driver of that name is registered on its bus";
	}
}

void devres__driver_fill(struct device_driver *drv, const struct bus_type *bus,
			 const char *name)
{
	dm_lock();
	if (drv->bus != bus)
		drv->bus = bus;
	if (!drv->name && name)
		drv->name = name;
	dm_unlock();
}

/*
 * The registration's own pin, let go also when a probe or match of its
 * attach ended the thread: the driver stays registered, and the devices
 * its walk had not reached yet are tried by the next attach or retry.
 */
static void unpin_registering(void *arg)
{
	dm_lock();
	devres__drv_unpin_locked(arg);
	dm_unlock();
}

int driver_register(struct device_driver *drv)
{
	struct driver_private *drvp;
	struct bus_private *bp;
	enum dm_drv_state st = DRV_UNREGISTERED;
	unsigned long gen;
	int ret = 0;

	if (devres__arg_bad(NULL, drv, __func__, "driver") ||
	    devres__opt_bad(NULL, drv->name, __func__, "name"))
		return -EINVAL;
	if (!drv->name || !*drv->name || !drv->bus) {
		devres__warn(NULL, __func__, "driver %s has no %s",
			     drv->name ? drv->name : "(null)",
			     drv->name && *drv->name ? "bus" : "name");
		return -EINVAL;
	}
	if (devres__should_fail() || !(drvp = calloc(1, sizeof(*drvp))))
		return -ENOMEM;
	drvp->drv = drv;
	drvp->pid = devres__pid_now();
	dm_lock();
	st = devres__drv_state_locked(drv);
	bp = devres__bus_find_locked(drv->bus);
	if (!bp && st == DRV_UNREGISTERED)
		ret = -EINVAL;
	else if (st != DRV_UNREGISTERED || name_taken_locked(bp, drv->name))
		ret = -EBUSY;
	if (!ret) {
		drvp->bus = bp;
		/* Held while this call binds, like any walker's. */
		devres__drv_pin_locked(drvp);
		drvp->seq = ++bp->drv_seq;
		dm_list_add_tail(&bp->drivers, &drvp->node);
		drv->p = drvp;
	}
	dm_unlock();
	if (ret) {
		free(drvp);
		devres__warn(NULL, __func__, "%s: %s (state: %s)", drv->name,
			     register_error(ret, st),
			     devres__drv_state_name(st));
		return ret;
	}

	gen = devres__bind_gen();
	pthread_cleanup_push(unpin_registering, drvp);
	devres__driver_attach(drv);
	pthread_cleanup_pop(1);
	devres__retry_if_bound(gen);
	return 0;
}

/*
 * A device bound to @drvp whose devres lock this thread holds: unbinding it
 * from inside its own match or for-each callback would corrupt its list.
 */
static struct device *held_bound_dev_locked(struct driver_private *drvp)
{
	struct bus_private *bp = drvp->bus;

	for (struct dm_link *l = bp->devices.next; l != &bp->devices;
	     l = l->next) {
		struct device_private *dp =
			container_of(l, struct device_private, bus_node);

		if (dp->bound == drvp->drv &&
		    devres__devres_held_by_me(dp->dev))
			return dp->dev;
	}
	return NULL;
}

/* What follows the detach of a driver being unregistered. */
struct unregistering {
	struct device_driver *drv;
	struct driver_private *drvp;
};

static void unregister_finish(struct unregistering *u)
{
	struct bus_private *bp = u->drvp->bus;

	/* Until here device_driver_attach() sees it dying and refuses. */
	dm_lock();
	u->drv->p = NULL; /* unregistered */
	dm_unlock();
	free(u->drvp);
	devres__bus_put(bp);
}

/*
 * A remove ended the thread: its unbind was completed on the way out, and
 * the unregister completes as if it had returned, unbinding the devices
 * left (their removes run here, as the thread unwinds). Left half done,
 * the driver could never be registered again. One of those removes may
 * end the thread again: that unwind starts here and skips the rest of
 * this handler, so the handler is registered again for it, and each end
 * unbinds one more device until none is left.
 */
static void unregister_ended(void *arg)
{
	struct unregistering *u = arg;

	pthread_cleanup_push(unregister_ended, u);
	devres__driver_detach(u->drv, u->drvp->bus);
	pthread_cleanup_pop(0);
	unregister_finish(u);
}

static void unregister_driver(struct device_driver *drv)
{
	enum dm_drv_state st = DRV_REGISTERED;
	struct driver_private *drvp;
	struct device *held = NULL;
	struct devres__wait w;
	bool loop = false, recorded = false;
	int pid = 0;

	if (devres__arg_bad(NULL, drv, "driver_unregister", "driver"))
		return;
	if (devres__in_callback_of(drv)) {
		dm_lock();
		st = devres__drv_state_locked(drv);
		dm_unlock();
		devres__warn(NULL, "driver_unregister",
			     "%s: called from the driver's own probe or remove "
			     "(state: %s)",
			     drv->name ? drv->name : "(null)",
			     devres__drv_state_name(st));
		return;
	}
	dm_lock();
	st = devres__drv_state_locked(drv);
	drvp = st == DRV_UNREGISTERED ? NULL : drv->p;
	if (drvp && drvp->pid != devres__pid_now()) {
		/* Its walkers may be threads of the parent: never waited for. */
		pid = drvp->pid;
		drvp = NULL;
	}
	if (drvp && !drvp->dead)
		held = held_bound_dev_locked(drvp);
	/*
	 * On the record of waits, for the threads pinning the driver: a
	 * probe that waits for this thread (it stops the managed thread
	 * unregistering its driver) would never return. Refused before
	 * anything changes: the driver stays registered.
	 */
	if (drvp && !drvp->dead && !held && drvp->active) {
		devres__wait_init(&w, "driver_unregister");
		devres__wait_target_set(&w, devres__drv_set(drvp));
		loop = devres__wait_begin(&w) != 0;
		recorded = true;
	}
	if (drvp && !drvp->dead && !held && !loop) {
		/*
		 * New walks and binds by hand skip it; wait for the probes
		 * running with it (device_driver_attach() counts as one).
		 * The bus stays alive for the detach below even if it is
		 * unregistered as soon as the driver leaves its list.
		 */
		drvp->dead = true;
		drvp->bus->refs++;
		/* Cancellation is turned off only for a wait that happens. */
		if (unlikely(drvp->active)) {
			int cancel = devres__cancel_off();

			while (drvp->active)
				pthread_cond_wait(&devres__dm_cond,
						  &devres__dm_lock);
			devres__cancel_restore(cancel);
		}
		dm_list_del(&drvp->node);
	} else {
		drvp = NULL;
	}
	dm_unlock();
	if (recorded)
		devres__wait_end(&w);
	if (loop) {
		devres__warn(NULL, "driver_unregister",
			     "%s: a probe or match with the driver waits for "
			     "this thread (%s): refused, the driver stays "
			     "registered",
			     drv->name ? drv->name : "(null)", w.loop);
		return;
	}
	if (held) {
		devres__refuse_in_devres_cb(held, "driver_unregister");
		return;
	}
	if (pid) {
		devres__warn(NULL, "driver_unregister",
			     "%s: driver belongs to process %d",
			     drv->name ? drv->name : "(null)", pid);
		return;
	}
	if (!drvp) {
		devres__warn(NULL, "driver_unregister",
			     "%s: driver is not registered (state: %s)",
			     drv->name ? drv->name : "(null)",
			     devres__drv_state_name(st));
		return;
	}
	{
		struct unregistering u = { drv, drvp };

		pthread_cleanup_push(unregister_ended, &u);
		devres__driver_detach(drv, drvp->bus);
		pthread_cleanup_pop(0);
		unregister_finish(&u);
	}
}

/* Callbacks run from here may change errno; the caller's is given back. */
void driver_unregister(struct device_driver *drv)
{
	int err = errno;

	unregister_driver(drv);
	errno = err;
}

/*
 * The device bound to @drv next after @sp in the order they were bound
 * (the kernel's list of the driver's devices), or the first one when
 * @sp is NULL or no longer bound to @drv (unbound, deleted): as the
 * kernel's, whose walk starts again from the head when its start's node
 * has left the driver's list. Live devices of this process only, with a
 * reference taken.
 */
static struct device *next_bound_locked(struct bus_private *bp,
					struct device_private *sp,
					const struct device_driver *drv)
{
	unsigned long after = sp && sp->bound == drv ? sp->bind_seq : 0;
	struct device_private *best = NULL;

	for (struct dm_link *l = bp->devices.next; l != &bp->devices;
	     l = l->next) {
		struct device_private *dp =
			container_of(l, struct device_private, bus_node);

		if (dp->bound != drv || dp->bind_seq <= after || dp->dead ||
		    !devres__dev_mine(dp->dev))
			continue;
		if (!best || dp->bind_seq < best->bind_seq)
			best = dp;
	}
	if (!best)
		return NULL;
	dm_get_device_locked(best->dev);
	return best->dev;
}

struct device *driver_find_next_device(const struct device_driver *drv,
				       struct device *start)
{
	struct device_private *sp = NULL;
	struct device *found = NULL;
	struct bus_private *bp;
	const char *why = NULL;
	const char *name;

	if (devres__arg_bad(NULL, drv, __func__, "driver"))
		return NULL;
	if (!drv->bus) {
		devres__warn(NULL, __func__, "driver %s has no bus",
			     drv->name ? drv->name : "(null)");
		return NULL;
	}
	if (start && !devres__dev_ok(start, __func__))
		return NULL;
	dm_lock();
	bp = devres__bus_find_locked(drv->bus);
	if (start)
		sp = start->p;
	if (!bp)
		why = "is not registered";
	else if (start && (!sp || sp->bus != bp))
		why = "does not have the device";
	else
		found = next_bound_locked(bp, sp, drv);
	dm_unlock();
	name = drv->bus->name ? drv->bus->name : "(null)";
	if (why) {
		char buf[LIVE_LABEL_LEN];

		devres__warn_label(devres__dev_label_live(start, buf,
							  sizeof(buf)),
				   __func__, "bus %s %s", name, why);
	}
	return found;
}
