/* SPDX-License-Identifier: MIT */
/*
 * Buses and drivers: matching, probe and remove, binding, deferred probe.
 *
 * A bus type groups devices and the drivers that can drive them. When a
 * device and a driver of the same bus match, the driver core probes the
 * driver on the device; everything the probe (and later the bound driver)
 * acquires through managed calls belongs to that binding, and is released,
 * newest first, when the probe fails or after the driver's remove.
 *
 * Locking: binding, unbinding and deleting one device are serialized by the
 * device's own lock, which is held while probe and remove run. No other lock
 * of the driver core is held during a callback, so probe may register child
 * devices and drivers. A callback must not bind, unbind or delete its own
 * device (that WARNs and fails instead of deadlocking).
 */
#ifndef DEVRES_DRIVER_H
#define DEVRES_DRIVER_H

#include <devres/types.h>
#include <devres/device.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What a probe returns when something it needs is not there yet: the
 * device is parked and probed again after the next successful bind.
 */
#define EPROBE_DEFER 517

struct driver_private;

struct of_device_id;
struct dev_pm_ops;
struct module;
struct attribute_group;

/**
 * struct bus_type - a kind of bus
 * @name: the bus's name, used in messages (``"<bus> <device>: ..."``)
 * @match: does this driver drive this device? > 0 yes, 0 no, < 0 an error
 *         (-EPROBE_DEFER parks the device). NULL matches every driver.
 * @probe: when set, called instead of the driver's probe; it calls the
 *         driver's own (through @dev->driver) as the bus sees fit
 * @remove: when set, called instead of the driver's remove; likewise
 *
 * Bus types are usually static and const. Register one with bus_register()
 * before adding its devices and drivers.
 *
 * A callback here or in struct device_driver that ends its thread
 * (pthread_exit(), or a cancellation it enabled: they run with
 * cancellation disabled) is taken, with a WARN, as a failed probe, a
 * match that binds nothing, a remove that returned; what the driver core
 * held across it is given back as the thread unwinds. longjmp() out of
 * one is not supported.
 */
struct bus_type {
	const char *name;
	int (*match)(struct device *dev, const struct device_driver *drv);
	int (*probe)(struct device *dev);
	void (*remove)(struct device *dev);
};

/**
 * struct device_driver - a driver
 * @name: the driver's name; unique on its bus
 * @bus: the bus the driver drives devices of
 * @probe: binds the driver to a device: acquire what the device needs
 *         (managed), return 0, or a negative errno (-EPROBE_DEFER to be
 *         retried later). NULL binds with nothing to do.
 * @remove: called when the driver is unbound, before the binding's managed
 *          resources are released; usually only stops the device. May be
 *          NULL.
 * @of_match_table: the compatible strings the driver handles, for
 *                  of_device_get_match_data() of the compat headers; the
 *                  driver core does not read it
 * @pm: the driver's power-management callbacks, recorded, not called
 * @owner: the kernel's module pointer (THIS_MODULE), recorded only
 * @dev_groups: the attribute groups a bound device shows, NULL-terminated,
 *              for the compat headers' attribute registry; the driver
 *              core does not read it
 *
 * Bus types wrap this one in their own driver structure (struct
 * platform_driver). The member after the comment is private.
 */
struct device_driver {
	const char *name;
	const struct bus_type *bus;
	int (*probe)(struct device *dev);
	void (*remove)(struct device *dev);
	const struct of_device_id *of_match_table;
	const struct dev_pm_ops *pm;
	struct module *owner;
	const struct attribute_group **dev_groups;

	/* private: */
	struct driver_private *p;
};

/**
 * bus_register() - register a bus type
 * @bus: the bus type, with a name
 *
 * Makes @bus known to the driver core, so that devices and drivers can be
 * added on it; its name is unique among registered buses. bus_unregister()
 * takes it away.
 *
 * Context: any thread. One fault-injection point (its record: -ENOMEM).
 * Return: 0; -EINVAL (with a WARN) for a NULL bus or one without a name;
 * -EBUSY (with a WARN) when @bus, or a bus of the same name, is already
 * registered; -ENOMEM.
 */
DEVRES_API int bus_register(const struct bus_type *bus);

/**
 * bus_unregister() - unregister a bus type
 * @bus: a registered bus type
 *
 * A bus must be empty: unregister its drivers and delete its devices
 * first. Unregistering a bus that is not registered, or that still has
 * devices or drivers, WARNs and does nothing. Deleted devices a walk still
 * holds, and a driver being unregistered, do not count: the bus is
 * unregistered at once and its private state lives until the last walk or
 * detach using it lets go (so it may be called from a bus_for_each_dev()
 * callback that deleted the last device).
 *
 * Context: any thread.
 */
DEVRES_API void bus_unregister(const struct bus_type *bus);

/**
 * driver_find_next_device() - the next device bound to a driver
 * @drv: the driver
 * @start: the device to start after, or NULL to start at the driver's first
 *
 * Walks the devices bound to @drv in the order they were bound (the
 * kernel's list of a driver's devices) and returns the one after @start,
 * with a reference taken (give it back with put_device()), as the
 * kernel's does. A @start no longer bound to @drv (unbound, or deleted,
 * by the caller or by another thread, since it was found) has left that
 * list: as the kernel's, the walk starts again from the driver's first
 * device, so a loop that unbinds each device it is given meets the
 * devices before it again. A device unbound and bound again is at the
 * end of the list.
 *
 * Context: any thread; not with a device's lock held by a callback.
 * Return: the device, or NULL when there is none, or (with a WARN) when
 * @drv has no bus, its bus is not registered, or @start was never on it.
 */
DEVRES_API struct device *
driver_find_next_device(const struct device_driver *drv, struct device *start);

/**
 * bus_for_each_dev() - call a function for each device of a bus
 * @bus: a registered bus type
 * @start: start after this device, or NULL for the first one
 * @data: passed to @fn
 * @fn: called for each registered device, in the order they were added;
 *      a non-zero return stops the walk
 *
 * @fn runs with no lock of the driver core held and a reference on the
 * device, so it may bind, unbind or delete it, or add devices (those may or
 * may not be visited). One that ends its thread ends the walk, which lets
 * go of the device and the bus, with a WARN.
 *
 * Context: any thread.
 * Return: what the last @fn call returned, 0 when none stopped the walk,
 * -EINVAL (with a WARN) when @bus is not registered, or when @start is not
 * a device registered on @bus (deleted, never added, of another bus, not
 * initialized); @fn is then never called.
 */
DEVRES_API int bus_for_each_dev(const struct bus_type *bus,
				struct device *start, void *data,
				int (*fn)(struct device *dev, void *data));

/**
 * driver_register() - register a driver
 * @drv: the driver, with a name and a registered bus
 *
 * Adds @drv to its bus and binds it to every registered, unbound device of
 * the bus it matches; a device whose search for a driver is running in
 * another thread is tried with @drv by that search, even when it ends in a
 * deferral. Probe failures are not errors of driver_register().
 * After a successful bind, devices whose probe was deferred are retried
 * before this call returns.
 *
 * Context: any thread, also from a probe callback. One fault-injection
 * point (its record: -ENOMEM, nothing registered, nothing bound).
 * Return: 0; -EINVAL (with a WARN) for a NULL driver, a driver without a
 * name or a bus, or a bus that is not registered; -EBUSY (with a WARN) when
 * @drv, or a driver of the same name on the bus, is already registered;
 * -ENOMEM.
 */
DEVRES_API int driver_register(struct device_driver *drv);

/**
 * driver_unregister() - unregister a driver
 * @drv: a registered driver
 *
 * Waits for probes of @drv running in other threads (those started by
 * device_driver_attach() too), then unbinds @drv from each of its devices
 * (remove, then the binding's resources). When it returns, the driver core
 * no longer uses @drv. Unregistering a driver that is not registered WARNs
 * and does nothing.
 *
 * The wait for the probes is in the library's record of waits between
 * threads (devres_wait_begin()): when a probe or match running with @drv
 * waits, through waits of the library (devm_thread_stop(), free_irq(),
 * flush_work() ...), for the caller, the wait would never end. Then one
 * WARN naming the loop, and nothing done: @drv stays registered. Of the
 * two waits, the later one is refused: a probe that stops this caller's
 * managed thread once this call waits gets -EDEADLK instead. So is the
 * wait for a device's lock to unbind it: when its holder (an unbind of
 * the device in progress) waits for the caller, one WARN, and the call
 * returns without waiting for that unbind, which the holder makes.
 *
 * Context: any thread; not from a probe or remove of @drv itself, nor from
 * a devres match or for-each callback of a device bound to @drv (WARN, no
 * effect).
 */
DEVRES_API void driver_unregister(struct device_driver *drv);

/**
 * device_attach() - try to bind a device to a driver of its bus
 * @dev: a registered device
 *
 * Tries the drivers of @dev's bus in the order they were registered: the
 * first that matches and probes successfully is bound. A probe that fails
 * lets the next driver try; a probe that defers parks the device and stops
 * the search. After a successful bind, parked devices are retried before
 * this call returns.
 *
 * Context: any thread; not from @dev's own probe or remove, nor from a
 * devres match or for-each callback of @dev (WARN); not while @dev's lock
 * is held by a thread that waits, through waits of the library, for this
 * one (an unbind of @dev whose revocation waits for this thread's access:
 * WARN, refused; docs/misuse.md S25).
 * Return: 1 when @dev is bound (also when it already was), 0 when no driver
 * bound it, -ENODEV when @dev is not registered (never added or being
 * released: with a WARN; deleted: without, as the kernel), -EINVAL for a NULL or uninitialized device, -EDEADLK (with a WARN) from
 * its own callbacks, or when the wait for @dev's lock would close a loop.
 */
DEVRES_API int device_attach(struct device *dev);

/**
 * device_driver_attach() - bind a device to a given driver
 * @drv: the driver; it need not be registered, but a driver with a bus can
 *       only drive devices of that bus
 * @dev: a registered device
 *
 * Probes @drv on @dev without asking the bus's match. On a deferral @dev is
 * parked, as for any probe. A registered @drv is in use while its probe
 * runs: driver_unregister() waits for it, and unbinds @dev after.
 *
 * Context: any thread; not from @dev's own probe or remove, nor from a
 * devres match or for-each callback of @dev (WARN); not while @dev's lock
 * is held by a thread that waits for this one (as device_attach()).
 * Return: 0 when bound; -EBUSY when @dev is already bound; -ENODEV when @dev
 * is not registered (a WARN unless it was deleted; also while another
 * thread's last put_device() releases it), or @drv is being
 * unregistered; -EAGAIN when the probe
 * deferred (as the kernel); the
 * probe's error when it failed; -EINVAL (with a WARN) for a NULL argument
 * or a driver of another bus; -EDEADLK (with a WARN) from its own
 * callbacks, or when the wait for @dev's lock would close a loop.
 */
DEVRES_API int device_driver_attach(const struct device_driver *drv,
				    struct device *dev);

/**
 * device_release_driver() - unbind a device from its driver
 * @dev: the device
 *
 * Runs the driver's remove (or the bus's), then releases every managed
 * resource of the binding, newest first, and clears @dev->driver and the
 * driver data. Resources the device acquired while unbound stay. Does
 * nothing when @dev is not bound.
 *
 * Context: any thread; not from @dev's own probe or remove, nor from a
 * devres match or for-each callback of @dev (WARN, no effect); nor once
 * another thread's last put_device() is releasing @dev (WARN, no effect);
 * nor while @dev's lock is held by a thread that waits, through waits of
 * the library, for this one (WARN, no effect; docs/misuse.md S25).
 */
DEVRES_API void device_release_driver(struct device *dev);

/**
 * device_is_bound() - is a driver bound to a device?
 * @dev: the device
 *
 * Whether a driver is bound to @dev: its probe returned 0 and the device has
 * not been unbound since.
 *
 * Context: any thread. The answer may be stale by the time it is used
 * unless the caller serializes binding itself.
 * Return: true when a probe of @dev succeeded and it was not unbound since.
 */
DEVRES_API bool device_is_bound(struct device *dev);

/* How many bindings one thread may hold at once with device_bound_get(). */
#define DEVRES_BOUND_HELD_MAX 16

/**
 * device_bound_get() - keep a device bound while a call into its driver runs
 * @dev: the device
 *
 * What sysfs does for an attribute's show() and store(): while the binding
 * is held, @dev stays bound; an unbind (device_release_driver(), the
 * driver's or the device's removal) waits for every holder before it
 * calls the driver's remove and releases the binding's resources, so a
 * call made under it never sees the driver's data freed. Held by this
 * thread until device_bound_put(); a thread may hold up to
 * DEVRES_BOUND_HELD_MAX bindings at once. An unbind of @dev from a thread
 * that holds its binding (a store() that unbinds its own device) WARNs and
 * does not wait for that thread's holds, which would never end; so does
 * an unbind that a holder on another thread waits for, through waits of
 * the library (a store() stopping the managed thread that unbinds its
 * device: the wait for the holders is on the library's record of waits,
 * and the later wait of the loop is refused with one WARN). A thread
 * that ends (returns, pthread_exit(), cancelled) with holds left has them
 * put at its end, with one WARN a device. A hold is a reference to @dev
 * too: a holder that unregisters @dev (or deletes it and puts the
 * owner's reference) still has it until device_bound_put(), which then
 * releases it. In a child of fork(), the holds of the thread that forked
 * are the parent's and are forgotten.
 *
 * Context: any thread; the holder must not wait for @dev to be unbound.
 * Return: 0 with the binding held; -ENODEV when no driver is bound, or one
 * is being probed or unbound; -EBUSY (WARN) when this thread holds
 * DEVRES_BOUND_HELD_MAX bindings already; -EINVAL (WARN) for a bad
 * device; -ECHILD (WARN) for a device of the parent in a child of fork().
 */
DEVRES_API int device_bound_get(struct device *dev);

/**
 * device_bound_put() - let an unbind of the device go on
 * @dev: a device whose binding this thread holds with device_bound_get()
 *
 * Ends the hold of one device_bound_get() of this thread; the last one
 * lets a waiting unbind go on.
 *
 * Context: the thread that called device_bound_get(); a put of a binding
 * this thread does not hold WARNs and does nothing.
 */
DEVRES_API void device_bound_put(struct device *dev);

/**
 * driver_deferred_probe_trigger() - retry the devices whose probe deferred
 *
 * Retries every parked device once, then again while the previous round
 * bound at least one device. A device that defers again stays parked,
 * unless its probe bound a device in its thread before deferring, 8
 * times in a row: each such bind would start another round for ever, so
 * the device is left unbound, not parked, with a WARN.
 * Useful after something a probe waits for appeared outside the driver
 * core. A probe or match of another thread that runs meanwhile and then
 * defers is retried by its own thread, before the call that probed
 * returns, as in the kernel. Called from a probe or remove (or anything they call), the retry
 * is left to the outermost driver-core call of this thread and runs before
 * it returns: retrying there would lock other devices while holding one.
 * The same holds for the retry after a successful bind.
 *
 * Context: any thread.
 */
DEVRES_API void driver_deferred_probe_trigger(void);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_DRIVER_H */
