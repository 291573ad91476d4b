/* SPDX-License-Identifier: MIT */
/*
 * struct device: what resources are recorded against, with its lifetime.
 */
#ifndef DEVRES_DEVICE_H
#define DEVRES_DEVICE_H

#include <pthread.h>
#include <devres/types.h>
#include <devres/devres.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bus_type;
struct device_driver;
struct device_private;
struct devres_dma_ops;

/**
 * struct device - a device resources are recorded against
 * @parent: the parent device, or NULL; a registered child holds a reference
 * @bus: the bus the device sits on, or NULL
 * @driver: the bound driver, or NULL; set by the driver core
 * @release: called by the last put_device(); frees the containing object.
 *           One that ends its thread is taken as returned, with a WARN
 * @driver_data: the driver's private data (dev_set_drvdata())
 * @init_name: name used by device_add() when dev_set_name() was not called
 * @dma_mask: the streaming DMA mask (dma_set_mask()); NULL for the default
 * @coherent_dma_mask: the coherent DMA mask; 0 for the default, 32 bits
 * @dma_ops: how DMA addresses are made (set_dma_ops()); NULL for the default
 * @dma_state: the DMA layer's per-device state; never touch it
 * @platform_data: what board code hands the driver (the kernel's
 *                 platform data); the library never reads it
 *
 * A device starts zero-filled (calloc(), memset() or static storage):
 * device_initialize() leaves the members above as they are, and a zero DMA
 * member means its default.
 *
 * Bus types embed this and get back with container_of(). The members after
 * the comment are private: initialize them with device_initialize() and
 * never touch them.
 */
struct device {
	struct device *parent;
	const struct bus_type *bus;
	struct device_driver *driver;
	void (*release)(struct device *dev);
	void *driver_data;
	const char *init_name;
	uint64_t *dma_mask;
	uint64_t coherent_dma_mask;
	const struct devres_dma_ops *dma_ops;
	void *dma_state;
	void *platform_data;

	/* private: */
	char *name;
	unsigned int magic;
	int refcount;
	int devres_lock;
	int devres_bias_held;
	int devres_bias_revoking;
	int state;
	void *devres_bias;
	void *devres_owner;
	void *devres_head;
	unsigned long devres_kept;
	unsigned long devres_listed;
	unsigned long devres_dead;
	void *devres_index;
	void *devres_open;
	void *devres_slab;
	pthread_mutex_t mutex;
	struct device_private *p;
};

/**
 * device_initialize() - prepare a device for use
 * @dev: the device, its public members set as wanted
 *
 * Sets the reference count to 1 and makes @dev ready for devres. Release
 * the device with put_device(), never by freeing it directly. @dev must be
 * zeroed, or released; a device that is initialized, registered, deleted or
 * being released is not initialized again (WARN, no effect: its references,
 * resources and name stay). The ledger counts @dev until its release.
 *
 * Context: any thread, before @dev is shared.
 */
DEVRES_API void device_initialize(struct device *dev);

/**
 * dev_set_name() - name a device
 * @dev: the device
 * @fmt: printf-style format, then its arguments
 *
 * Formats the name of @dev, as the kernel's dev_set_name() does; it replaces
 * any name set before and is freed with the device. The name is what
 * dev_name() returns and what dev_err() and the WARNs print. A name
 * replaced stays valid until the device is released too: another thread
 * may be reading it.
 *
 * The name is fixed once @dev is added (resource names and messages point
 * at it): naming is for an initialized device, or from a release callback
 * of its last put (not from another thread while that put releases it).
 *
 * Context: any thread. An add of @dev that lands while the name is
 * formatted (another thread's) wins: the call is then refused.
 * Return: 0, -ENOMEM, -EINVAL for a NULL or uninitialized @dev or a %n
 * in @fmt (WARN, nothing written through its argument), -EBUSY
 * (WARN) once @dev was added, also by an add made while this call ran,
 * or while platform_device_add() is naming it, or while another thread's
 * last put_device() releases it.
 */
DEVRES_API int dev_set_name(struct device *dev, const char *fmt, ...)
	DEVRES_PRINTF(2, 3);

/**
 * dev_name() - a device's name
 * @dev: the device
 *
 * The name logs and WARNs print for @dev. The string belongs to the device: it
 * stays valid until the device is released, also when another thread
 * renames the device meanwhile (dev_set_name() frees no name before).
 *
 * Context: any thread.
 * Return: the name set by dev_set_name(), else @dev->init_name, else "".
 */
DEVRES_API const char *dev_name(const struct device *dev);

/**
 * device_add() - register a device
 * @dev: an initialized device, named with dev_set_name() or @dev->init_name
 *
 * Makes @dev visible: it joins its bus (when @dev->bus is set) and the
 * driver core tries to bind it to a driver of that bus at once; a probe that
 * fails or defers does not make device_add() fail. A registered device holds
 * a reference on itself until device_del(), and on its parent until its own
 * last put_device(). Resources recorded against @dev before any driver binds
 * belong to the device, not to a binding: they are released by device_del().
 * After a successful bind, devices whose probe was deferred are retried
 * before this call returns. On failure, drop the reference with put_device().
 * Once on its bus, @dev may be found, deleted and put by another thread
 * (a bus_for_each_dev() callback) before this call returns: as the
 * kernel's, the add holds a reference of its own until then, so @dev is
 * released at its return at the latest.
 *
 * Context: any thread, also from a probe callback (to add child devices);
 * not with @dev's own lock held (from @dev's probe or remove), nor from a
 * devres match or for-each callback of @dev (-EDEADLK).
 * Return: 0; -EINVAL for a NULL or uninitialized device or parent, a parent
 * being released, a device that is its own parent or an ancestor of it (a
 * parent only initialized may take children, so a chain can lead back), a
 * device with no name, or a bus that is not registered;
 * -EEXIST when @dev is already added, or another live device of its bus
 * has its name; -ENODEV when @dev was deleted or is being released;
 * -EDEADLK; -ENOMEM. Every error but -ENOMEM also WARNs.
 */
DEVRES_API int device_add(struct device *dev);

/**
 * device_register() - initialize and add a device
 * @dev: the device, its public members set as wanted
 *
 * device_initialize() then device_add(), for a zeroed (or released)
 * device. Even when device_add() fails, @dev was initialized: drop it with
 * put_device(), never free it directly. An initialized device is refused
 * whole (use device_add()), so that nothing set on it is lost.
 *
 * Context: as device_add().
 * Return: as device_add(); -EINVAL (WARN) when @dev is already initialized;
 * -ECHILD (WARN) in a child of fork() for a device of its parent.
 */
DEVRES_API int device_register(struct device *dev);

/**
 * device_del() - unregister a device
 * @dev: a device added with device_add()
 *
 * Unbinds @dev from its driver (the driver's remove runs, then the
 * binding's resources are released, newest first), takes it off its bus and
 * the deferred-probe list, and releases every resource still recorded
 * against it (those acquired while it was not bound). Anything recorded
 * after this is released by the last put_device(). Deleting a device that
 * was never added, or twice, WARNs and does nothing; so does deleting one
 * whose last put_device() on another thread is releasing it (the caller
 * held no reference).
 *
 * Context: any thread; not from @dev's own probe or remove callback, nor
 * from a devres match or for-each callback of @dev (WARN, no effect); not
 * while @dev's lock is held by a thread that waits, through waits of the
 * library, for this one (WARN, no effect; docs/misuse.md S25).
 */
DEVRES_API void device_del(struct device *dev);

/**
 * device_unregister() - delete a device and drop the caller's reference
 * @dev: a device registered with device_register()
 *
 * device_del() then put_device(). Where device_del() is refused (its own
 * callbacks, a loop through @dev's lock), or @dev was never added, is
 * deleted or is being released,
 * neither is done (WARN): the put would drop a reference that is not the
 * registration's.
 *
 * Context: as device_del().
 */
DEVRES_API void device_unregister(struct device *dev);

/**
 * get_device() - take a reference
 * @dev: the device, or NULL
 *
 * A device whose count has reached zero is being released and cannot be
 * revived (a release callback of its last put taking a reference): WARN,
 * no reference is taken, and the put_device() that goes with it is
 * absorbed, so the release runs once. A count that reaches INT_MAX / 2 (a
 * leak of references) saturates there with one WARN, as the kernel's
 * refcount_t: puts leave it, and the device is never released rather than
 * freed under its users by a wrapped count.
 *
 * Context: any thread.
 * Return: @dev; NULL for NULL, and for an ERR_PTR or first-page @dev
 * (WARNed).
 */
DEVRES_API struct device *get_device(struct device *dev);

/**
 * put_device() - drop a reference
 * @dev: the device, or NULL
 *
 * The last put releases anything still recorded against @dev (again while
 * release callbacks record more, up to 16 passes, WARN past that), frees
 * its name and calls @dev->release (a device without one is WARNed, as in
 * the kernel). A put with no reference left is a misuse: WARN, no effect.
 * The last put of a device still registered WARNs, then deletes it as
 * device_del() would (remove runs) before releasing it. The last put from
 * a callback the library runs on @dev or on a child of @dev (a release
 * callback, a match or for-each callback, probe, remove, a bus's match, a
 * device's release) is carried out when that pass of the library is over,
 * in the same thread: the pass still uses @dev.
 *
 * Context: any thread; the last put runs the release in the caller, at
 * once or at the end of the library's pass that called the caller.
 */
DEVRES_API void put_device(struct device *dev);

/**
 * dev_get_drvdata() - the driver's private data
 * @dev: the device
 *
 * A bad @dev (NULL, ERR_PTR, a small integer) WARNs and gives NULL.
 *
 * Context: any thread.
 * Return: what dev_set_drvdata() stored, or NULL.
 */
static inline void *dev_get_drvdata(const struct device *dev)
{
	if (devres_ptr_bad(dev)) {
		devres_warn_bad_arg("dev_get_drvdata", "device", dev);
		return NULL;
	}
	return dev->driver_data;
}

/**
 * dev_set_drvdata() - store the driver's private data
 * @dev: the device
 * @data: the data
 *
 * A bad @dev (NULL, ERR_PTR, a small integer) WARNs and stores nothing.
 *
 * Context: any thread.
 */
static inline void dev_set_drvdata(struct device *dev, void *data)
{
	if (devres_ptr_bad(dev)) {
		devres_warn_bad_arg("dev_set_drvdata", "device", dev);
		return;
	}
	dev->driver_data = data;
}

/**
 * dev_printk() - print a message about a device
 * @level: DEVRES_LOG_ERR, DEVRES_LOG_WARNING, DEVRES_LOG_INFO or
 *         DEVRES_LOG_DEBUG
 * @dev: the device, or NULL
 * @fmt: printf-style format, then its arguments
 *
 * Sends one line ``"<bus> <name>: <message>"`` (``"<name>: <message>"`` for
 * a device on no bus) to the log sink (devres_set_log_sink()). One trailing
 * newline of the message is dropped, so kernel-style ``"...\n"`` formats
 * work. DEVRES_LOG_DEBUG lines are dropped unless debug output is on:
 * DEVRES_DEBUG=1 in the environment, or devres_set_dev_dbg(true).
 * Use it through dev_err(), dev_warn(), dev_info() and dev_dbg().
 * A %n in @fmt is refused, as the kernel's printf refuses it: nothing is
 * written through its argument, the line is not sent, and one WARN says
 * why. errno is kept, also when a conversion fails. A line is at most 511
 * bytes: a message cut to fit ends with "...", and a device name longer
 * than 128 characters is given as its first 36 and "..." (in every line
 * and WARN of the library), so that what follows it still fits.
 *
 * Context: any thread.
 */
DEVRES_API void dev_printk(int level, const struct device *dev, const char *fmt,
			   ...) DEVRES_PRINTF(3, 4);

/**
 * devres_set_dev_dbg() - switch dev_dbg() output on or off
 * @on: true to print dev_dbg() lines
 *
 * dev_dbg() lines are compiled in but not printed until this is called with
 * true, or DEVRES_DEBUG=1 is in the environment at start; the switch is
 * process-wide.
 *
 * Context: any thread.
 */
DEVRES_API void devres_set_dev_dbg(bool on);

/**
 * dev_err_probe() - report a probe error, quietly when it is a deferral
 * @dev: the device being probed
 * @err: the error, a negative errno
 * @fmt: printf-style format, then its arguments
 *
 * Prints like dev_err(), with the error by name (``"error -ENODEV: ..."``),
 * unless @err is -EPROBE_DEFER, which is printed with dev_dbg() only: a
 * deferral is expected and retried. Lets a probe write ``return dev_err_probe(dev, ret,
 * "...");``. A %n in @fmt is refused as dev_printk() refuses it: one
 * WARN, no line, @err still returned. errno is kept.
 *
 * For -EPROBE_DEFER on a device added and not deleted, the message is also
 * kept, with the driver's name, as the reason of the deferral, replacing
 * the last one, until the device binds or is deleted: devres_dump() shows
 * it while the device is parked (as the kernel's devices_deferred). Out of
 * memory, the last reason is dropped and none kept.
 *
 * Context: any thread.
 * Return: @err.
 */
DEVRES_API int dev_err_probe(const struct device *dev, int err, const char *fmt,
			     ...) DEVRES_PRINTF(3, 4);

/* Messages about a device, as the kernel's; see dev_printk(). */
#define dev_err(dev, ...) dev_printk(DEVRES_LOG_ERR, (dev), __VA_ARGS__)
#define dev_warn(dev, ...) dev_printk(DEVRES_LOG_WARNING, (dev), __VA_ARGS__)
#define dev_info(dev, ...) dev_printk(DEVRES_LOG_INFO, (dev), __VA_ARGS__)
#define dev_dbg(dev, ...) dev_printk(DEVRES_LOG_DEBUG, (dev), __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_DEVICE_H */
