// SPDX-License-Identifier: MIT
/*
 * struct device: initialization, names, registration, reference counting
 * and messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include "base.h"
#include "sweep.h"
#include "frame.h"

static bool dbg_on;

__attribute__((constructor)) static void core_init(void)
{
	const char *s = devres__getenv("DEVRES_DEBUG");

	if (s && *s && strcmp(s, "0") != 0)
		dbg_on = true;
}

static const char *const state_names[] = {
	[DEV_ZEROED] = "zeroed",     [DEV_INITIALIZED] = "initialized",
	[DEV_ADDED] = "added",	     [DEV_PROBING] = "probing",
	[DEV_BOUND] = "bound",	     [DEV_UNBINDING] = "unbinding",
	[DEV_DELETED] = "deleted",   [DEV_RELEASING] = "releasing",
	[DEV_RELEASED] = "released",
};

const char *devres__dev_state_name(enum dm_dev_state st)
{
	return (unsigned int)st <= DEV_RELEASED ? state_names[st] : "corrupt";
}

/*
 * Held by a WARN of another thread while it copies the name of a device
 * whose count it saw above zero, and taken once by a release before it
 * frees the names: either the WARN finds the count at zero, or the
 * release waits for its copy. A flag rather than a mutex: the copy calls
 * nothing, and a flag left set (its thread stopped, or gone in a child of
 * fork()) only makes the waits below give up, never hang.
 */
static int names_busy;

static bool names_take(void)
{
	for (int i = 0; i < 10000; i++) {
		int unheld = 0;

		if (__atomic_compare_exchange_n(&names_busy, &unheld, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		sched_yield();
	}
	return false;
}

static void names_give(void)
{
	__atomic_store_n(&names_busy, 0, __ATOMIC_RELEASE);
}

const char *devres__dev_label_live(const struct device *dev, char *buf,
				   size_t len)
{
	const char *label;

	if (!dev || devres__ptr_bad(dev) ||
	    devres__frame_on(devres__dm_me(), dev))
		return devres__dev_label(dev, buf, len);
	/* Another thread may be releasing it, which frees its names. */
	if (names_take()) {
		if (__atomic_load_n(&dev->refcount, __ATOMIC_ACQUIRE) > 0) {
			/* A name too long is cut as in every other line. */
			label = devres__dev_label(dev, buf,
						  len < 40 ? len : 40);
			if (label != buf)
				snprintf(buf, len, "%s", label);
			names_give();
			return buf;
		}
		names_give();
	}
	/* Being released: by address, as a device never initialized. */
	snprintf(buf, len, "device@%p", (const void *)dev);
	return buf;
}

/*
 * Whether no WARN copies a name any more. One that does not let go (its
 * thread stopped, or interrupted by a signal whose handler releases a
 * device) is not waited for: the names are then left, not freed under it.
 */
static bool name_readers_gone(void)
{
	if (!names_take())
		return false;
	names_give();
	return true;
}

void devres__state_warn(struct device *dev, const char *func, const char *why)
{
	char buf[LIVE_LABEL_LEN];

	devres__warn_label(devres__dev_label_live(dev, buf, sizeof(buf)), func,
			   "%s (state: %s)", why,
			   devres__dev_state_name(dm_dev_state(dev)));
}

/*
 * Why a device in state @st cannot be initialized or registered again:
 * that would wipe what the driver core, or the device's resources and
 * references, still use. NULL when it can.
 */
static const char *reinit_error(enum dm_dev_state st, int *ret_err)
{
	*ret_err = -EEXIST;
	switch (st) {
	case DEV_ZEROED:
	case DEV_RELEASED:
		return NULL;
	case DEV_INITIALIZED:
		*ret_err = -EINVAL;
		return "tried to initialize an initialized device";
	case DEV_DELETED:
		*ret_err = -ENODEV;
		return "device was deleted";
	case DEV_RELEASING:
		*ret_err = -ENODEV;
		return "device is being released";
	default:
		return "device is already added";
	}
}

/*
 * Returns the error device_register() gives, with one WARN naming @func,
 * or 0. A count that reached zero is a device being released whatever its
 * state says (the last put of an initialized device).
 */
int devres__dev_in_use(struct device *dev, const char *func)
{
	const char *why;
	int err;

	if (devres__dev_magic(dev) == DEVRES_DEV_MAGIC &&
	    !devres__dev_mine(dev)) {
		devres__dev_foreign_warn(dev, func);
		return -ECHILD;
	}
	if (devres__dev_magic(dev) == DEVRES_DEV_MAGIC &&
	    __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED) <= 0) {
		devres__state_warn(dev, func, "device is being released");
		return -ENODEV;
	}
	why = reinit_error(dm_dev_state(dev), &err);
	if (!why)
		return 0;
	devres__state_warn(dev, func, why);
	return err;
}

/*
 * Takes @dev, zeroed, released or never used, for one initialization: a
 * compare-and-swap of its magic, so that of two threads initializing the
 * same memory at once one does it and the other is refused, as if the
 * first had finished (nothing in zeroed memory can be locked). Returns 0,
 * or the error @func gives with its one WARN.
 */
static int init_claim(struct device *dev, const char *func)
{
	unsigned int old = __atomic_load_n(&dev->magic, __ATOMIC_ACQUIRE);
	int ret;

	for (;;) {
		if (old == DEVRES_DEV_CLAIMED) {
			/* Not by name: the other thread is writing it. */
			devres__warn(NULL, func,
				     "device@%p is being initialized by "
				     "another thread: refused (state: zeroed)",
				     (void *)dev);
			return -EINVAL;
		}
		if (old == DEVRES_DEV_MAGIC) {
			ret = devres__dev_in_use(dev, func);
			if (ret)
				return ret;
			/* Released, its magic not yet cleared: still its. */
			devres__state_warn(dev, func,
					   "device is being released");
			return -ENODEV;
		}
		if (__atomic_compare_exchange_n(
			    &dev->magic, &old, DEVRES_DEV_CLAIMED, false,
			    __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			return 0;
	}
}

int devres__device_init(struct device *dev, const char *func)
{
	int ret = init_claim(dev, func);

	if (ret)
		return ret;
	dev->name = NULL;
	dev->refcount = 1;
	dev->devres_lock = 0;
	dev->devres_bias_held = 0;
	dev->devres_bias_revoking = 0;
	dev->devres_bias = NULL;
	dev->devres_owner = NULL;
	dev->devres_head = NULL;
	dev->devres_kept = 0;
	dev->devres_listed = 0;
	dev->devres_dead = 0;
	dev->devres_index = NULL;
	dev->devres_open = NULL;
	dev->devres_slab = NULL;
	dev->p = NULL;
	pthread_mutex_init(&dev->mutex, NULL);
	dev->state =
		(int)((__atomic_load_n(&devres__dev_stamp, __ATOMIC_RELAXED)
		       << DEVRES_DEV_STATE_BITS) |
		      DEV_INITIALIZED);
	/* Counted until released: one never added nor put is a leak too. */
	devres__ledger_add(DL_DEVICES, 1);
	__atomic_store_n(&dev->magic, DEVRES_DEV_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

void device_initialize(struct device *dev)
{
	if (devres__arg_bad(NULL, dev, __func__, "device"))
		return;
	(void)devres__device_init(dev, __func__);
}

#define NAME_ADDED "device was added: its name is in use"
#define NAME_ADDING "device is being added: its name is in use"
#define NAME_RELEASING "device is being released by another thread"

/*
 * Once added, the name is the device's identity on its bus and is lent out
 * (resource names, messages): renaming would free memory in use. The
 * release callbacks of the last put may still rename it; another thread,
 * which holds no reference once the count is zero, may not: the release
 * reads the name once, to free it with those it replaced, and a name set
 * beside that read would be lost, or left to a device freed meanwhile.
 * NULL when open, else why not.
 */
static const char *name_shut(const struct device *dev)
{
	enum dm_dev_state st = dm_dev_state(dev);
	bool mine = devres__frame_on(devres__dm_me(), dev);

	/* Its last put done on another thread, before the state says so. */
	if (!mine && st != DEV_INITIALIZED &&
	    __atomic_load_n(&dev->refcount, __ATOMIC_ACQUIRE) <= 0)
		return NAME_RELEASING;
	switch (st) {
	case DEV_INITIALIZED:
		return NULL;
	case DEV_RELEASING:
		return mine ? NULL : NAME_RELEASING;
	default:
		return NAME_ADDED;
	}
}

static int name_busy(struct device *dev, const char *why)
{
	devres__state_warn(dev, "dev_set_name", why);
	return -EBUSY;
}

static struct devres__naming *naming;

bool devres__naming_locked(const struct device *dev)
{
	for (struct devres__naming *n = naming; n; n = n->next)
		if (n->dev == dev)
			return true;
	return false;
}

bool devres__naming_claim(struct devres__naming *n, const struct device *dev)
{
	bool busy;

	dm_lock();
	busy = devres__naming_locked(dev);
	if (!busy) {
		n->dev = dev;
		n->next = naming;
		naming = n;
	}
	dm_unlock();
	return !busy;
}

void devres__naming_drop(struct devres__naming *n)
{
	struct devres__naming **pp;

	dm_lock();
	for (pp = &naming; *pp != n; pp = &(*pp)->next)
		;
	*pp = n->next;
	dm_unlock();
}

/* @claimed: the call of the add that claimed @dev, which names it. */
static int set_name(struct device *dev, bool claimed, const char *fmt,
		    va_list ap)
{
	const char *why = NULL;
	char *name;

	if (!devres__dev_ok(dev, "dev_set_name") ||
	    devres__arg_bad(dev, fmt, "dev_set_name", "format") ||
	    devres__fmt_bad(dev, "dev_set_name", fmt))
		return -EINVAL;
	/* Refused before formatting, too: the usual misuse costs nothing. */
	why = name_shut(dev);
	if (why)
		return name_busy(dev, why);
	name = devres__name_format(fmt, ap);
	if (!name)
		return -ENOMEM;
	/*
	 * Checked again where device_add() makes the device added, and the
	 * name swapped there: the state read above may be stale by now (the
	 * format's own callbacks, another thread's device_add()), and two
	 * renames at once would both chain the one old name. An add naming
	 * the device has lent the name to its resources already. The old
	 * name stays until the release: another thread may be reading it.
	 */
	dm_lock();
	why = name_shut(dev);
	if (!why && !claimed && devres__naming_locked(dev))
		why = NAME_ADDING;
	if (!why) {
		devres__name_replaces(name, dev->name);
		__atomic_store_n(&dev->name, name, __ATOMIC_RELEASE);
	}
	dm_unlock();
	if (why) {
		devres__names_free(name);
		return name_busy(dev, why);
	}
	return 0;
}

int dev_set_name(struct device *dev, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = set_name(dev, false, fmt, ap);
	va_end(ap);
	return ret;
}

int devres__dev_set_name_claimed(struct device *dev, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = set_name(dev, true, fmt, ap);
	va_end(ap);
	return ret;
}

const char *dev_name(const struct device *dev)
{
	const char *name;

	if (!dev || devres__arg_bad(NULL, dev, __func__, "device"))
		return "";
	/* A plain load (x86, arm64): a rename never frees what it read. */
	name = __atomic_load_n(&dev->name, __ATOMIC_ACQUIRE);
	if (name)
		return name;
	return dev->init_name ? dev->init_name : "";
}

/*
 * Once the count has reached zero the device is being released and cannot
 * be revived: a get then WARNs and counts below zero instead, so that the
 * put that goes with it (put_device(get_device(dev)) in a release callback)
 * only balances it, and the release runs once.
 */
struct device *get_device(struct device *dev)
{
	int n;

	/* A pointer no device has is not given back: the caller would use it. */
	if (!dev || devres__arg_bad(NULL, dev, __func__, "device"))
		return NULL;
	if (!devres__dev_ok(dev, __func__))
		return dev;
	n = __atomic_add_fetch(&dev->refcount, 1, __ATOMIC_RELAXED);
	if (likely(n > 1 && n < DEV_REF_MAX))
		return dev;
	if (n >= DEV_REF_MAX) {
		__atomic_store_n(&dev->refcount, DEV_REF_MAX, __ATOMIC_RELAXED);
		/* Once: the get that reached the limit. */
		if (n == DEV_REF_MAX)
			devres__state_warn(dev, __func__,
					   "reference count saturated: the "
					   "device will never be released");
		return dev;
	}
	/*
	 * It was zero or below: a release callback of the last put, which
	 * runs in the releasing thread, so taking the increment back races
	 * with nothing legitimate (another thread would need a reference).
	 */
	__atomic_sub_fetch(&dev->refcount, 2, __ATOMIC_RELAXED);
	devres__state_warn(dev, __func__,
			   "reference count is zero: the device is being "
			   "released");
	return dev;
}

/*
 * Release callbacks run by a pass may record more (a late devm_*() call on
 * the dying device): pass again until the list is empty, a bounded number
 * of times, as a callback that re-adds itself would never end. One pass
 * at least, even with an empty list: it also frees the devres core's
 * per-device state (its index and memory blocks). False if it left
 * resources recorded, with a WARN.
 */
#define RELEASE_PASSES 16

static bool release_late(struct device *dev)
{
	for (int pass = 0;
	     !pass || __atomic_load_n(&dev->devres_head, __ATOMIC_ACQUIRE);
	     pass++) {
		if (pass == RELEASE_PASSES) {
			devres__warn(dev, "put_device",
				     "resources still recorded after %d "
				     "release passes: left unreleased",
				     RELEASE_PASSES);
			return false;
		}
		if (devres_release_all(dev) < 0)
			return false;
	}
	return true;
}

/*
 * A device's release in progress, in one place, so that a callback that
 * ends the thread (a release callback of a late resource, or ->release)
 * does not leave the release half done and the frame on a dead stack:
 * the thread's unwinding finishes it. @name is NULL until ->release runs.
 */
struct releasing {
	struct device *dev;
	struct device *parent;
	char *name;
	bool in_release; /* ->release is running */
	bool hooked;	 /* the subsystems' hooks have run */
	bool left;	 /* the late releases left resources, WARNed */
	struct devres__frame f;
	char label[64];
};

/* Everything after the late releases. */
static void release_rest(struct releasing *r)
{
	struct device *dev = r->dev;
	struct device_private *dp;

	/* What subsystems keep outside the list: once, the device usable. */
	if (!r->hooked) {
		r->hooked = true;
		devres__dev_hooks_run(dev);
	}
	/*
	 * Taken off under the lock its readers hold: a call from another
	 * thread (with no reference: misuse, but answered) finds it or NULL,
	 * never freed memory.
	 */
	dm_lock();
	dp = dev->p;
	dev->p = NULL;
	dm_unlock();
	if (dp)
		free(dp->defer_reason);
	free(dp);
	pthread_mutex_destroy(&dev->mutex);
	dm_set_state(dev, DEV_RELEASED);
	__atomic_store_n(&dev->magic, DEVRES_DEV_DEAD, __ATOMIC_RELEASE);
	devres__release_strays(dev, r->left);
	devres__ledger_add(DL_DEVICES, -1);
	/* Read now: a release callback above may have renamed the device. */
	r->name = dev->name;
	r->in_release = true;
	if (dev->release)
		dev->release(dev);
	else
		devres__warn(NULL, "put_device",
			     "device %s has no release function", r->label);
}

static void release_end(struct releasing *r)
{
	if (name_readers_gone())
		devres__names_free(r->name);
	/* The parent goes only after its child is gone. */
	put_device(r->parent);
	devres__frame_leave(&r->f);
}

/*
 * Ended inside a release callback of a late resource (whose chain was
 * finished on the way out, with its own WARN), or inside ->release: the
 * release completes as if the callback had returned. The containing
 * object that ->release would have freed is the owner's: left as it is.
 */
static void release_ended(void *arg)
{
	struct releasing *r = arg;

	if (r->in_release)
		devres__warn(NULL, "release",
			     "device %s: the thread ended inside the device's "
			     "release function: the release completes as if "
			     "it returned",
			     r->label);
	else
		release_rest(r);
	release_end(r);
}

static void device_release(struct device *dev)
{
	struct device_private *dp = dev->p;
	struct releasing r = { .dev = dev, .parent = dp ? dp->parent : NULL };
	char buf[40];

	snprintf(r.label, sizeof(r.label), "%s",
		 devres__dev_label(dev, buf, sizeof(buf)));
	/*
	 * The release callbacks and ->release may put the last reference of
	 * the parent (whose resources may hold this device): that release
	 * waits for the end of this one. So does the put below, which makes
	 * a chain of parents a loop rather than a recursion.
	 */
	devres__frame_enter(&r.f, dev);
	dm_set_state(dev, DEV_RELEASING);

	pthread_cleanup_push(release_ended, &r);
	/* Anything recorded after the device was deleted goes now. */
	r.left = !release_late(dev);
	release_rest(&r);
	pthread_cleanup_pop(0);
	release_end(&r);
}

static int del(struct device *dev, struct device_private *dp, bool quiet,
	       const char *func);

/*
 * The registration's reference keeps a registered device alive, so a device
 * reaching its last put while registered was put once too often: its
 * owner's reference is gone. The registration's reference is given back
 * and the device deleted properly (unbound: remove runs), which puts it.
 * From the device's own probe or remove that cannot be done: refused.
 */
void devres__last_put(struct device *dev)
{
	struct device_private *dp;
	bool registered;

	dm_lock();
	dp = dev->p;
	registered = dp && !dp->dead;
	dm_unlock();
	if (!registered) {
		device_release(dev);
		return;
	}
	/* The registration's reference back, and the deletion's own. */
	__atomic_add_fetch(&dev->refcount, 2, __ATOMIC_RELAXED);
	devres__state_warn(dev, "put_device",
			   "released while still registered");
	(void)del(dev, dp, false, "put_device");
}

void put_device(struct device *dev)
{
	if (dev && devres__dev_ok(dev, __func__))
		devres__dev_put(dev);
}

void devres__dev_put(struct device *dev)
{
	int old, new;

	old = __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED);
	do {
		/* Saturated: pinned for good (get_device() WARNed). */
		if (old >= DEV_REF_MAX)
			return;
		if (old == 0) {
			/* The caller's misuse: the public call's name. */
			devres__state_warn(dev, "put_device",
					   "no reference left to put");
			return;
		}
		/* Below zero: the pair of a refused get_device(). */
		new = old > 0 ? old - 1 : old + 1;
	} while (!__atomic_compare_exchange_n(&dev->refcount, &old, new, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	/*
	 * From a callback this thread runs on the device or a child of it
	 * (a release callback, probe, remove, a match): the release comes
	 * when that pass is over, which still uses the device.
	 */
	if (old == 1 && !devres__release_deferred(dev)) {
		int err = errno; /* release callbacks may change it */

		devres__last_put(dev);
		errno = err;
	}
}

/*
 * A reference a call of the library took on @dev for a section of its
 * own, put as the section ends. In a child of fork() made by a callback
 * of the section (a probe, a remove, a walk's function) that returned,
 * the section ends in the child on the parent's device: the reference is
 * the parent's, in a copy of memory the child does not own, and dropping
 * it is nothing to report (put_device() would WARN that the device
 * belongs to the parent, for a put the caller never made).
 */
void devres__put_taken(struct device *dev)
{
	if (devres__dev_magic(dev) != DEVRES_DEV_MAGIC)
		put_device(dev); /* its WARN */
	else if (devres__dev_mine(dev))
		/* The library's own reference: put_device()'s checks done. */
		devres__dev_put(dev);
}

static struct device_private *alloc_private(struct device *dev)
{
	struct device_private *dp;

	/* Injectable: a probe that adds children sees this fail in a sweep. */
	if (devres__should_fail())
		return NULL;
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return NULL;
	dp->dev = dev;
	dm_list_init(&dp->bus_node);
	dm_list_init(&dp->deferred_node);
	return dp;
}

/*
 * A reference on a device whose count has not reached zero: a parent being
 * released (a child added from its release callbacks) cannot be revived.
 */
bool devres__ref_if_alive(struct device *dev)
{
	int old = __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED);

	do {
		if (old <= 0)
			return false;
		/* Saturated: pinned for good, as devres__dev_ref_take() has it. */
		if (old >= DEV_REF_MAX)
			return true;
	} while (!__atomic_compare_exchange_n(&dev->refcount, &old, old + 1,
					      false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return true;
}

int devres__dev_hold(const struct devres__dm_thread *t, struct device *dev,
		     const char *func)
{
	if (devres__frame_on(t, dev))
		return 0;
	if (devres__ref_if_alive(dev))
		return 1;
	devres__state_warn(dev, func,
			   "device is being released: its last reference is "
			   "gone");
	return -1;
}

/*
 * Whether @parent may take a child: not deleted past its unbind. The
 * kernel refuses a child under a parent no longer in sysfs (-ENOENT from
 * its directory), which device_del() takes out after the unbind: a child
 * added from the remove that device_del() runs (or meanwhile, from another
 * thread) is the kernel's, and its owner's to delete. Later, a child would
 * outlive its place in the tree. A parent only initialized may group
 * children here (docs/driver-model.md). device_del() marks a device gone
 * under the same lock.
 */
static bool parent_open_locked(const struct device *parent)
{
	const struct device_private *pp = parent->p;

	return !pp || !pp->gone;
}

/*
 * Whether @dev is @parent or one of its ancestors: the child would hold a
 * reference on itself through its parents, and nothing would ever release
 * it. An added device's parent is the one its add referenced (dp->parent),
 * fixed from then on and alive while it is: the walk follows those only,
 * under the lock, and stops at a parent not yet added, whose own add walks
 * on from it. So no loop can close, one add at a time. (The kernel fails
 * such an add: the parent has no sysfs directory yet.)
 */
static bool parent_loops_locked(const struct device *dev,
				const struct device *parent)
{
	for (const struct device *x = parent; x; x = x->p ? x->p->parent : NULL)
		if (x == dev)
			return true;
	return false;
}

/* Whether another live device of @bp is named @name: names are unique. */
static bool name_taken_locked(struct bus_private *bp, const char *name)
{
	for (struct dm_link *l = bp->devices.next; l != &bp->devices;
	     l = l->next) {
		struct device_private *dp =
			container_of(l, struct device_private, bus_node);

		if (!dp->dead && strcmp(dev_name(dp->dev), name) == 0)
			return true;
	}
	return false;
}

/* What device_add() of a device in state @st gets, when not initialized. */
static int add_state_error(enum dm_dev_state st)
{
	switch (st) {
	case DEV_INITIALIZED:
		return 0;
	case DEV_DELETED:
		return -ENODEV;
	case DEV_RELEASING:
		return -ESTALE;
	default:
		return -EEXIST;
	}
}

static const char *add_error(int ret)
{
	switch (ret) {
	case -ENOTUNIQ:
		return "name is taken by another device of its bus";
	case -EEXIST:
		return "device is already added";
	case -ENODEV:
		return "device was deleted";
	case -ESRCH:
		return "parent is being released";
	case -ENOENT:
		return "parent was deleted";
	case -ELOOP:
		return "device is its own parent or ancestor";
	case -ESTALE:
		return "device is being released";
	case -EDOM:
		return "device has no name";
	default:
		return "bus is not registered";
	}
}

/* device_add()'s own reference, put as it ends or a probe ends its thread. */
static void put_added(void *arg)
{
	devres__put_taken(arg);
}

int device_add(struct device *dev)
{
	struct bus_private *bp = NULL;
	struct device_private *dp;
	struct device *parent;
	unsigned long gen;
	int ret;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	/* Read once: the one checked is the one linked and referenced. */
	parent = dev->parent;
	if (parent && !devres__dev_ok(parent, __func__))
		return -EINVAL;
	if (devres__refuse_in_devres_cb(dev, __func__))
		return -EDEADLK;
	ret = add_state_error(dm_dev_state(dev));
	if (ret)
		goto warn;
	if (!__atomic_load_n(&dev->name, __ATOMIC_ACQUIRE) && dev->init_name) {
		ret = dev_set_name(dev, "%s", dev->init_name);
		if (ret)
			return ret;
	}
	dp = alloc_private(dev);
	if (!dp)
		return -ENOMEM;

	dm_lock();
	ret = add_state_error(dm_dev_state(dev));
	if (ret)
		;
	else if (__atomic_load_n(&dev->refcount, __ATOMIC_RELAXED) <= 0)
		ret = -ESTALE; /* added from a release callback of its last put */
	else if (!*dev_name(dev))
		ret = -EDOM; /* read where a rename swaps it: not stale */
	else if (dev->bus && !(bp = devres__bus_find_locked(dev->bus)))
		ret = -EINVAL;
	else if (bp && name_taken_locked(bp, dev_name(dev)))
		ret = -ENOTUNIQ;
	else if (parent && parent_loops_locked(dev, parent))
		ret = -ELOOP;
	else if (parent && !parent_open_locked(parent) &&
		 __atomic_load_n(&parent->refcount, __ATOMIC_RELAXED) > 0)
		ret = -ENOENT; /* "being released" is the better news */
	else if (parent && !devres__ref_if_alive(parent))
		ret = -ESRCH;
	else
		ret = 0;
	if (!ret) {
		static unsigned long added;

		dp->bus = bp;
		dp->seq = ++added;
		if (bp)
			dm_list_add_tail(&bp->devices, &dp->bus_node);
		/* The registration's reference; the child's on its parent
		 * was taken above. */
		dm_get_device_locked(dev);
		/*
		 * And the add's own, as the kernel's: once on its bus, another
		 * thread may delete the device and put the owner's reference
		 * (a walk's callback that unregisters what it finds) while
		 * this add still probes it.
		 */
		dm_get_device_locked(dev);
		dp->parent = parent;
		/* Published: dd.c's dev_private() reads it without the lock. */
		__atomic_store_n(&dev->p, dp, __ATOMIC_RELEASE);
		dm_set_state(dev, DEV_ADDED);
	}
	dm_unlock();
	if (ret) {
		free(dp);
warn:
		devres__state_warn(dev, __func__, add_error(ret));
		if (ret == -ENOTUNIQ)
			return -EEXIST;
		if (ret == -ESRCH || ret == -EDOM || ret == -ELOOP)
			return -EINVAL;
		return ret == -ESTALE ? -ENODEV : ret;
	}
	pthread_cleanup_push(put_added, dev);
	devres__dev_live_on(dev, parent);
	gen = devres__bind_gen();
	if (bp)
		devres__probe_new_device(dev);
	devres__retry_if_bound(gen);
	pthread_cleanup_pop(1);
	return 0;
}

int device_register(struct device *dev)
{
	int ret;

	if (devres__arg_bad(NULL, dev, __func__, "device"))
		return -EINVAL;
	ret = devres__device_init(dev, __func__);
	if (ret)
		return ret;
	return device_add(dev);
}

bool devres__device_was_added(struct device *dev)
{
	bool added;

	dm_lock();
	added = dev->p != NULL;
	dm_unlock();
	return added;
}

/* Whether @func may delete @dev from here: not from its own callbacks. */
bool devres__may_delete(struct device *dev, const char *func)
{
	if (!devres__dev_ok(dev, func))
		return false;
	if (devres__dev_locked_by_me(dev)) {
		devres__state_warn(dev, func,
				   "called from the device's own "
				   "probe or remove");
		return false;
	}
	return !devres__refuse_in_devres_cb(dev, func);
}

/*
 * device_del(); @quiet: no WARN when another deletion took @dev first, or
 * when its last reference is gone. As del(); 0 also when refused by a
 * check (WARNed).
 *
 * A caller with no reference of its own (the owner's put by another
 * thread) may find the device being released: its count at zero, its
 * release running there. A reference taken and given back here would
 * release it a second time, beside that one. So the deletion's own
 * reference (del()'s) is taken only from a live count, in the same hold
 * as the read of its private part, which the release frees.
 */
static int del_checked(struct device *dev, const char *func, bool quiet)
{
	struct device_private *dp;
	int err = errno; /* remove and release callbacks may change it */
	int killed;
	bool held = false;

	if (!devres__may_delete(dev, func))
		return 0;
	dm_lock();
	dp = dev->p;
	if (dp)
		held = devres__ref_if_alive(dev);
	dm_unlock();
	if (!dp) {
		devres__state_warn(dev, func, "device was never added");
		return 0;
	}
	if (!held) {
		if (!quiet)
			devres__state_warn(dev, func,
					   "device is being released: its "
					   "last reference is gone");
		return 0;
	}
	killed = del(dev, dp, quiet, func);
	errno = err;
	return killed;
}

void device_del(struct device *dev)
{
	(void)del_checked(dev, __func__, false);
}

bool devres__device_del_once(struct device *dev, const char *func)
{
	return del_checked(dev, func, true) > 0;
}

/*
 * A deletion in progress, for its cleanup handler: a callback it runs (the
 * device's remove, a release callback of its unbound resources, one of
 * the device's release) may end the thread, and the deletion then
 * completes on the way out from where the callback stopped.
 */
struct deleting {
	struct device *dev;
	struct device_private *dp;
	struct bus_private *bp;
	/* Its bus's deletion steps, read while the bus was held. */
	void (*deleted)(struct device *dev);
	bool killed; /* by this call: set before the remove runs */
	enum {
		DEL_KILL,
		DEL_UNBOUND,
		DEL_PUT
	} step;
};

static void del_unbound(struct deleting *d);
static void del_put(struct deleting *d);

/*
 * Each step's own callbacks were finished by their handlers (the unbind
 * of a remove, the chain of a release callback, the device's release):
 * what follows them is done here.
 */
static void del_ended(void *arg)
{
	struct deleting *d = arg;

	switch (d->step) {
	case DEL_KILL:
		if (!d->killed) {
			/* Another deletion's: ours only lets go. */
			if (d->bp)
				devres__bus_put(d->bp);
			devres__put_taken(d->dev);
			return;
		}
		del_unbound(d);
		/* fall through */
	case DEL_UNBOUND:
		del_put(d);
		break;
	case DEL_PUT:
		break;
	}
}

/*
 * Unbinds and deletes @dev, added, then puts the registration's reference
 * and the deletion's own, which the caller took. 1 when this call deleted
 * it; 0 when another deletion did (a WARN unless @quiet); -EDEADLK when
 * the wait for its lock was refused as closing a loop (WARNed by the
 * driver core, naming @func): nothing done but the deletion's reference
 * given back.
 */
static int del(struct device *dev, struct device_private *dp, bool quiet,
	       const char *func)
{
	struct deleting d = { .dev = dev, .dp = dp, .step = DEL_KILL };
	int ret;

	/*
	 * The deletion's own reference is held across the callbacks below
	 * (remove, release callbacks), so that one putting a reference too
	 * many cannot free the device under us; the WARN comes at the end,
	 * where the count is known.
	 *
	 * Once dead, the device no longer keeps its bus registered: hold the
	 * bus until the device is off its list.
	 */
	dm_lock();
	d.bp = dp->dead ? NULL : dp->bus;
	if (d.bp) {
		d.bp->refs++;
		d.deleted = d.bp->deleted;
	}
	dm_unlock();
	pthread_cleanup_push(del_ended, &d);
	ret = devres__device_kill(dev, &d.killed, func);
	if (ret > 0) {
		del_unbound(&d);
		del_put(&d);
	}
	pthread_cleanup_pop(0);
	if (!d.killed) {
		if (d.bp)
			devres__bus_put(d.bp);
		if (!quiet && ret == 0)
			devres__state_warn(dev, "device_del",
					   "device is already deleted");
		devres__put_taken(dev);
	}
	return ret;
}

/* Off the bus; what the device acquired while unbound is released. */
static void del_unbound(struct deleting *d)
{
	struct device_private *dp = d->dp;

	d->step = DEL_UNBOUND;
	/* A bus walk holding the device unlinks it when it lets go. */
	dm_lock();
	dp->gone = true;
	devres__dev_live_off_locked(d->dev);
	if (!dp->pins)
		dm_list_del(&dp->bus_node);
	dm_unlock();
	if (d->bp)
		devres__bus_put(d->bp);
	/* The 2023 kernel rule. */
	devres_release_all(d->dev);
}

/* Ours and the registration's references, at once. */
static void del_put(struct deleting *d)
{
	struct device *dev = d->dev;
	int old;

	d->step = DEL_PUT;
	/*
	 * The bus's own steps, whichever call deleted the device; also after
	 * a release callback of the device ended the thread.
	 */
	if (d->deleted)
		d->deleted(dev);
	/*
	 * Saturated (get_device()): pinned for good, as put_device() leaves
	 * it. Taken down by two, it would count again from a number that is
	 * no longer the references held, and reach zero under their users.
	 */
	old = __atomic_load_n(&dev->refcount, __ATOMIC_RELAXED);
	do {
		if (old >= DEV_REF_MAX)
			return;
	} while (!__atomic_compare_exchange_n(&dev->refcount, &old, old - 2,
					      false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (old > 2)
		return;
	if (old < 2) {
		/* By name: this thread releases it, below. */
		devres__warn(dev, "device_del",
			     "a reference was put once too often while the "
			     "device was deleted (state: %s)",
			     devres__dev_state_name(dm_dev_state(dev)));
		__atomic_store_n(&dev->refcount, 0, __ATOMIC_RELAXED);
	}
	device_release(dev);
}

bool devres__may_unregister(struct device *dev, const char *func)
{
	const char *why;

	if (!devres__may_delete(dev, func))
		return false;
	switch (dm_dev_state(dev)) {
	case DEV_INITIALIZED:
		why = "device was never added";
		break;
	case DEV_DELETED:
		why = "device is already deleted";
		break;
	case DEV_RELEASING:
		why = "device is being released";
		break;
	case DEV_RELEASED:
	case DEV_ZEROED:
		/* Since the check above: released by another thread. */
		why = "device already released";
		break;
	default:
		return true;
	}
	devres__state_warn(dev, func, why);
	return false;
}

/*
 * The caller's reference, put also when the thread ends inside a callback
 * of the deletion: that completed as the thread unwound.
 */
static void put_unregistered(void *arg)
{
	devres__put_taken(arg);
}

void device_unregister(struct device *dev)
{
	int ret = 0;

	/*
	 * Refused as a whole: the put alone would drop a reference that is
	 * not the registration's. So is a deletion whose wait for the
	 * device's lock would close a loop: the device stays registered.
	 */
	if (!devres__may_unregister(dev, __func__))
		return;
	pthread_cleanup_push(put_unregistered, dev);
	ret = del_checked(dev, __func__, false);
	pthread_cleanup_pop(ret != -EDEADLK);
}

void devres_set_dev_dbg(bool on)
{
	__atomic_store_n(&dbg_on, on, __ATOMIC_RELAXED);
}

/*
 * What the kernel's dev_driver_string() says: the bound driver's name, else
 * the bus's. The driver core publishes dev->driver atomically, so a message
 * from another thread during a bind reads one or the other.
 */
static const char *driver_string(const struct device *dev)
{
	const struct device_driver *drv;

	if (devres__dev_magic(dev) != DEVRES_DEV_MAGIC)
		return "";
	drv = __atomic_load_n(&dev->driver, __ATOMIC_ACQUIRE);
	if (drv && drv->name)
		return drv->name;
	return dev->bus && dev->bus->name ? dev->bus->name : "";
}

static void vprint(int level, const struct device *dev, const char *fmt,
		   va_list ap)
{
	char msg[400], buf[40];
	const char *drv;
	size_t len;

	devres__vformat(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	if (len && msg[len - 1] == '\n')
		msg[len - 1] = '\0';
	if (!dev)
		devres__print(level, "(NULL device *): %s", msg);
	else if (*(drv = driver_string(dev)))
		devres__print(level, "%s %s: %s", drv,
			      devres__dev_label(dev, buf, sizeof(buf)), msg);
	else
		devres__print(level, "%s: %s",
			      devres__dev_label(dev, buf, sizeof(buf)), msg);
}

void dev_printk(int level, const struct device *dev, const char *fmt, ...)
{
	va_list ap;

	if (devres__arg_bad(NULL, fmt, __func__, "format"))
		return;
	if (devres__opt_bad(NULL, dev, __func__, "device"))
		dev = NULL;
	if (level >= DEVRES_LOG_DEBUG &&
	    !__atomic_load_n(&dbg_on, __ATOMIC_RELAXED))
		return;
	if (devres__fmt_bad(dev, __func__, fmt))
		return;
	va_start(ap, fmt);
	vprint(level, dev, fmt, ap);
	va_end(ap);
}

int dev_err_probe(const struct device *dev, int err, const char *fmt, ...)
{
	char msg[400], name[24];
	size_t len;
	va_list ap;

	if (devres__arg_bad(NULL, fmt, __func__, "format"))
		return err;
	if (devres__opt_bad(NULL, dev, __func__, "device"))
		dev = NULL;
	/* The sweep's report names the line a probe returned from. */
	devres__site_return(err);
	if (devres__fmt_bad(dev, __func__, fmt))
		return err;
	va_start(ap, fmt);
	devres__vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	len = strlen(msg);
	if (len && msg[len - 1] == '\n')
		msg[len - 1] = '\0';
	/* Kept, as the kernel's, for a dump of the parked device. */
	if (dev && err == -EPROBE_DEFER)
		devres__defer_reason_set(dev, driver_string(dev), msg);
	/* By name, as the kernel's "error %pe". */
	dev_printk(err == -EPROBE_DEFER ? DEVRES_LOG_DEBUG : DEVRES_LOG_ERR,
		   dev, "error %s: %s",
		   devres__errname(err, name, sizeof(name)), msg);
	return err;
}
