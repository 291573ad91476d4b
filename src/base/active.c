// SPDX-License-Identifier: MIT
/*
 * Holds on a device's binding, as sysfs keeps an attribute's file alive
 * while its show() or store() runs: an unbind waits for the holders before
 * the driver's remove runs, so a call into the driver made under a hold
 * never meets its data freed. The count is in the device's private state
 * under devres__dm_lock; each thread keeps the devices it holds, to tell
 * its own holds from others' when it unbinds one of them itself.
 *
 * A hold is also a reference to the device, as an open sysfs file holds
 * its kobject: a holder that deletes its device (a store() that
 * unregisters it), or puts its last reference, still has the device until
 * its device_bound_put(), which then releases it. Without the reference,
 * that put, and the one at the thread's end, read the freed device.
 */
#include <errno.h>
#include <pthread.h>
#include "base.h"
#include "waits.h"

static TLS_FAST struct device *mine[DEVRES_BOUND_HELD_MAX];
/*
 * Each hold's thread a member of its device's set in the record of
 * waits (bound_set()) while it holds: an unbind's wait for the holders
 * names that set, and one that a holder waits for is refused.
 */
static TLS_FAST struct devres__wait_member held[DEVRES_BOUND_HELD_MAX];
static TLS_FAST int nmine;
/* This thread's holds are put at its end (holder_ended()). */
static TLS_FAST bool enrolled;

static pthread_key_t end_key;
static pthread_once_t end_once = PTHREAD_ONCE_INIT;
static bool have_key;

/* The set of the threads holding @dev's binding. */
static uintptr_t bound_set(const struct device *dev)
{
	return (uintptr_t)&dev->p->active;
}

static int held_here(const struct device *dev)
{
	int n = 0;

	for (int i = 0; i < nmine; i++)
		n += mine[i] == dev;
	return n;
}

/*
 * A thread that ends (returns, pthread_exit(), cancelled) with holds left
 * would keep every unbind of those devices waiting for ever: its holds
 * are put here, at its end, with one WARN a device.
 */
static void holder_ended(void *arg)
{
	(void)arg;
	while (nmine) {
		struct device *dev = mine[nmine - 1];
		int n = held_here(dev);

		devres__warn(dev, "device_bound_get",
			     "a thread ended holding %d binding(s) of the "
			     "device: put at its end",
			     n);
		while (n--)
			device_bound_put(dev);
	}
}

static void make_key(void)
{
	have_key = !pthread_key_create(&end_key, holder_ended);
}

/* The first hold of a thread arranges for holder_ended() at its end. */
static void enrol(void)
{
	pthread_once(&end_once, make_key);
	enrolled = have_key && !pthread_setspecific(end_key, &end_key);
}

int device_bound_get(struct device *dev)
{
	int ret = 0;

	if (!devres__dev_ok(dev, __func__))
		return devres__dev_err(dev);
	if (nmine == DEVRES_BOUND_HELD_MAX) {
		devres__warn(dev, __func__,
			     "this thread holds %d bindings already: refused",
			     DEVRES_BOUND_HELD_MAX);
		return -EBUSY;
	}
	dm_lock();
	if (dm_dev_state(dev) == DEV_BOUND) {
		dev->p->active++;
		dm_get_device_locked(dev);
	} else {
		ret = -ENODEV;
	}
	dm_unlock();
	if (!ret) {
		devres__wait_join(&held[nmine], bound_set(dev));
		mine[nmine++] = dev;
	}
	if (!ret && unlikely(!enrolled))
		enrol();
	return ret;
}

void device_bound_put(struct device *dev)
{
	int i;

	if (!devres__dev_ok(dev, __func__))
		return;
	for (i = nmine - 1; i >= 0 && mine[i] != dev; i--)
		;
	if (i < 0) {
		devres__warn(dev, __func__,
			     "this thread holds no binding of the device");
		return;
	}
	devres__wait_leave(&held[i]);
	mine[i] = mine[--nmine];
	/* The last hold moves to slot i, its membership with it. */
	if (i != nmine) {
		devres__wait_leave(&held[nmine]);
		devres__wait_join(&held[i], bound_set(mine[i]));
	}
	dm_lock();
	if (--dev->p->active == 0)
		pthread_cond_broadcast(&devres__dm_cond);
	dm_unlock();
	/* The hold's reference: the last one when the holder deleted it. */
	put_device(dev);
}

/*
 * In a child of fork(), in the thread that forked: its holds are the
 * parent's, on devices the child cannot use (docs/fork.md). Forgotten, as
 * an access to a revocable is; kept, its end put them, each put refused
 * for a device of the parent and the hold left to put again, for ever.
 */
void devres__bound_forked(void)
{
	nmine = 0;
}

void devres__bound_drain(struct device *dev)
{
	int own = held_here(dev);
	struct devres__wait w;

	if (own)
		devres__warn(dev, "device_release_driver",
			     "unbound by a call that holds its binding (a "
			     "show() or store() of its own): not waiting for "
			     "that call, which goes on after the remove");
	/*
	 * On the record of waits, for the holders on other threads: one
	 * that waits for this thread (a store() stopping the managed
	 * thread that unbinds its device) is not waited for, as a call of
	 * this thread's own.
	 */
	devres__wait_init(&w, "device_release_driver");
	devres__wait_target_others(&w, bound_set(dev));
	dm_lock();
	if (dev->p->active > own && devres__wait_begin(&w)) {
		dm_unlock();
		devres__warn(dev, "device_release_driver",
			     "a call that holds its binding (a show() or "
			     "store()) waits for this thread (%s): not waiting "
			     "for that call, which goes on after the remove",
			     w.loop);
		return;
	}
	while (dev->p->active > own)
		pthread_cond_wait(&devres__dm_cond, &devres__dm_lock);
	dm_unlock();
	devres__wait_end(&w);
}
