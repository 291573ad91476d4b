/* SPDX-License-Identifier: MIT */
/*
 * The driver model's private state, shared by core.c, bus.c, driver.c,
 * dd.c and platform.c. The devres core knows nothing of it.
 *
 * Locks, outermost first:
 *  - dev->mutex: binding, unbinding and deleting that one device; held
 *    while its probe and remove callbacks run; a wait for it is on the
 *    record of waits (dd.c, dev_lock());
 *  - devres__dm_lock: the lists (buses, their devices and drivers, the
 *    deferred devices) and the state flags below; held for a few pointer
 *    moves only, never while a callback of a bus or driver runs.
 * The devres core's per-device devres lock nests inside both.
 */
#ifndef DEVRES_BASE_H
#define DEVRES_BASE_H

#include <stdarg.h>
#include <limits.h>
#include <pthread.h>
#include <devres/driver.h>
#include "internal.h"

/* A circular, doubly linked list. */
struct dm_link {
	struct dm_link *next, *prev;
};

static inline void dm_list_init(struct dm_link *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool dm_list_empty(const struct dm_link *head)
{
	return head->next == head;
}

static inline void dm_list_add_tail(struct dm_link *head, struct dm_link *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void dm_list_del(struct dm_link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n;
	n->prev = n;
}

/*
 * A registered bus. Walks over its lists drop devres__dm_lock while they
 * call out, so an entry stays linked while a walker holds it (pins for a
 * device, active for a driver) even after it is deleted; dead entries are
 * skipped, and unlinked by whoever lets go of them last.
 */
struct bus_private {
	const struct bus_type *bus;
	struct dm_link devices; /* device_private.bus_node */
	struct dm_link drivers; /* driver_private.node */
	struct bus_private *next;
	/*
	 * The registration's reference, and one for each walk or detach
	 * that uses the bus with the lock dropped: bus_unregister() unlinks
	 * the bus, the last reference frees it.
	 */
	int refs;
	unsigned long drv_seq; /* drivers registered so far */
	bool is_static;	       /* not freed by bus_unregister() */
	/* The bus's own deletion steps (subsys.h); NULL when it has none. */
	void (*deleted)(struct device *dev);
};

struct driver_private {
	struct device_driver *drv;
	struct bus_private *bus;
	struct dm_link node;
	int active; /* walkers using the driver; unregister waits for 0 */
	unsigned long seq; /* its bus's drv_seq when it was registered */
	int pid;	   /* the process that registered it */
	bool dead;
};

struct device_private {
	struct device *dev;
	struct devres__group binding; /* the binding marker's storage */
	struct bus_private *bus;
	struct dm_link bus_node;
	struct dm_link deferred_node;
	struct device *parent; /* the reference taken at device_add() */
	const struct device_driver *bound; /* set once probe succeeded */
	unsigned long defer_round;
	/*
	 * Its place in the order of device_add(), under devres__dm_lock:
	 * a bus's list is in this order, so a walk that resumes from a
	 * device deleted (unlinked) since finds the devices after it.
	 */
	unsigned long seq;
	/*
	 * Its place in its driver's list of devices, the order in which
	 * they were bound (under devres__dm_lock); 0 while not bound. A
	 * driver's walk goes in this order, as the kernel's klist does.
	 */
	unsigned long bind_seq;
	int pins;
	int active; /* device_bound_get() holds, under devres__dm_lock */
	/*
	 * Its probes in a row that bound a device in their thread and then
	 * deferred (dd.c, park_probe()), under the device's lock.
	 */
	int defer_binds;
	bool dead; /* device_del() was called */
	/*
	 * device_del() is past the unbind (the kernel's kobject_del()): no
	 * child joins from here on, under devres__dm_lock.
	 */
	bool gone;
	bool live;     /* a live object: managed memory holds it (dev-live.c) */
	bool deferred; /* on the deferred list */
	/* What dev_err_probe() said of its last deferral (defer-reason.c). */
	char *defer_reason;
	bool searching; /* a thread is trying the bus's drivers on it */
};

/*
 * Where a device is in its life, in dev->state. Each transition is made
 * with devres__dm_lock held (the device's lock too, from probing to
 * deleted), except device_initialize()'s and the release's, which only the
 * owner of the last reference makes. Zeroed memory reads DEV_ZEROED; the
 * state is trusted only while the magic says the device is initialized.
 */
enum dm_dev_state {
	DEV_ZEROED,
	DEV_INITIALIZED,
	DEV_ADDED,
	DEV_PROBING,
	DEV_BOUND,
	DEV_UNBINDING,
	DEV_DELETED,
	DEV_RELEASING,
	DEV_RELEASED,
};

/* One load and a compare on the usual path. */
static inline enum dm_dev_state dm_dev_state(const struct device *dev)
{
	unsigned int magic = __atomic_load_n(&dev->magic, __ATOMIC_RELAXED);

	if (likely(magic == DEVRES_DEV_MAGIC))
		return (enum dm_dev_state)(
			(unsigned int)__atomic_load_n(&dev->state,
						      __ATOMIC_ACQUIRE) &
			DEVRES_DEV_STATE_MASK);
	return magic == DEVRES_DEV_DEAD ? DEV_RELEASED : DEV_ZEROED;
}

/* The process bits above the state were set once, by device_initialize(). */
static inline void dm_set_state(struct device *dev, enum dm_dev_state st)
{
	unsigned int s =
		(unsigned int)__atomic_load_n(&dev->state, __ATOMIC_RELAXED);

	__atomic_store_n(&dev->state,
			 (int)((s & ~DEVRES_DEV_STATE_MASK) | (unsigned int)st),
			 __ATOMIC_RELEASE);
}

/* A driver's state: what its private part says, if it is its own. */
enum dm_drv_state {
	DRV_UNREGISTERED,
	DRV_REGISTERED,
	DRV_UNREGISTERING,
};

extern HIDDEN pthread_mutex_t devres__dm_lock;
extern HIDDEN pthread_cond_t devres__dm_cond;

static inline void dm_lock(void)
{
	pthread_mutex_lock(&devres__dm_lock);
}

static inline void dm_unlock(void)
{
	pthread_mutex_unlock(&devres__dm_lock);
}

/*
 * Where a device's count stops, as the kernel's refcount_t saturates: a
 * count there is a leak of references, and wrapping would free the device
 * under its users. It stays there; puts leave it; the device is never
 * released (a leak, never a use after free). Far below INT_MAX, so that
 * racing gets past it cannot wrap either.
 */
#define DEV_REF_MAX (INT_MAX / 2)

/*
 * A reference the driver core takes and gives back itself, no WARN. On a
 * saturated count (get_device()) it stays there, pinned: the put paired
 * with it leaves the count, so counted on, each walk over the device or
 * delete of it would take it one further for good, and a loop of them
 * past INT_MAX.
 */
static inline void devres__dev_ref_take(struct device *dev)
{
	if (__atomic_add_fetch(&dev->refcount, 1, __ATOMIC_RELAXED) >
	    DEV_REF_MAX)
		__atomic_store_n(&dev->refcount, DEV_REF_MAX, __ATOMIC_RELAXED);
}

/*
 * A reference the driver core takes for itself, with devres__dm_lock held:
 * never a WARN there (a log sink may call back), and a device on a list
 * always has the registration's reference.
 */
static inline void dm_get_device_locked(struct device *dev)
{
	devres__dev_ref_take(dev);
}

/*
 * active.c: waits, with @dev's lock held and its state DEV_UNBINDING, until
 * no device_bound_get() holds its binding but this thread's own.
 */
HIDDEN void devres__bound_drain(struct device *dev);
/* active.c: in a child of fork(), forgets the forking thread's holds. */
HIDDEN void devres__bound_forked(void);

/* bus.c; the *_locked ones with devres__dm_lock held. */
HIDDEN struct bus_private *devres__bus_find_locked(const struct bus_type *bus);
HIDDEN void devres__bus_put(struct bus_private *bp);
HIDDEN void devres__bus_add_static(struct bus_private *bp);
HIDDEN struct device_private *
devres__bus_next_dev_locked(struct bus_private *bp, struct device_private *cur,
			    const struct device_driver *bound_to,
			    bool skip_searching);
HIDDEN void devres__dev_unpin_locked(struct device_private *dp);
HIDDEN struct device_private *
devres__bus_walk(struct bus_private *bp, struct device_private *cur,
		 const struct device_driver *bound_to, bool skip_searching);
HIDDEN void devres__bus_walk_stop(struct device_private *cur);
HIDDEN struct driver_private *
devres__bus_next_drv_locked(struct bus_private *bp, struct driver_private *cur,
			    unsigned long min_seq);

/* drv-pin.c: a walker's pin of a driver, on the record of waits. */
HIDDEN void devres__drv_pin_locked(struct driver_private *drvp);
HIDDEN void devres__drv_unpin_locked(struct driver_private *drvp);
/* The set of the threads pinning @drvp, in the record of waits. */
HIDDEN uintptr_t devres__drv_set(const struct driver_private *drvp);

/*
 * defer-reason.c, under devres__dm_lock inside: "<@drv>: <@msg>" as
 * @dev's reason of deferral, replacing the last; nothing if it is not
 * added or deleted.
 */
HIDDEN void devres__defer_reason_set(const struct device *dev, const char *drv,
				     const char *msg);
/* The reason taken off @dp (or NULL), to free after unlocking. */
HIDDEN char *devres__defer_reason_take_locked(struct device_private *dp);

/* core.c */
/*
 * The release of a device whose count has just reached zero; a registered
 * one is first deleted, with a WARN (its owner put once too often).
 */
HIDDEN void devres__last_put(struct device *dev);
HIDDEN bool devres__device_was_added(struct device *dev);
HIDDEN const char *devres__dev_state_name(enum dm_dev_state st);
/*
 * 0 when @dev may be initialized (zeroed or released), else the error
 * device_register() gives, after one WARN naming @func.
 */
HIDDEN int devres__dev_in_use(struct device *dev, const char *func);
/*
 * device_initialize() for @func: one thread of any number racing on the
 * same memory takes it (a compare-and-swap); the others, and a device in
 * use, get the error device_register() gives, with one WARN. 0 when done.
 */
HIDDEN int devres__device_init(struct device *dev, const char *func);
/*
 * dev-live.c: an added device that its parent's managed memory holds, as
 * a live object, made so by device_add() once it is added (after the
 * lock: it takes the parent's devres lock, then devres__dm_lock) and
 * taken off by device_del(), under devres__dm_lock (the record's lock is
 * a leaf): a free of that memory unregisters it first.
 */
HIDDEN void devres__dev_live_on(struct device *dev, struct device *parent);
HIDDEN void devres__dev_live_off_locked(struct device *dev);
/*
 * The devices an add is naming (platform_device_add()), under
 * devres__dm_lock, each with a node on its adder's stack: a second add,
 * dev_set_name() and platform_device_add_resources() are refused while
 * the add names the device and puts its resources in the tree.
 */
struct devres__naming {
	const struct device *dev;
	struct devres__naming *next;
};

/* Claims @dev for @n; false (nothing changed) when another add has it. */
HIDDEN bool devres__naming_claim(struct devres__naming *n,
				 const struct device *dev);
HIDDEN void devres__naming_drop(struct devres__naming *n);
HIDDEN bool devres__naming_locked(const struct device *dev);
/* dev_set_name() for the add that claimed @dev. */
HIDDEN int devres__dev_set_name_claimed(struct device *dev, const char *fmt,
					...)
	__attribute__((format(printf, 2, 3)));
/*
 * dev-name.c: a device's name, formatted ('/' made '!'), for
 * devres__names_free() only; NULL when out of memory or the format fails.
 */
HIDDEN char *devres__name_format(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));
/* Chains @old (or NULL) behind @name: freed with it, not before. */
HIDDEN void devres__name_replaces(char *name, char *old);
/* Frees @name (or NULL) and every name it replaced: at the release only. */
HIDDEN void devres__names_free(char *name);
/*
 * A reference for @func, called by thread @t (devres__dm_me()), which may
 * hold none (its owner put it on another thread): 1 when taken from a
 * live count (give it back with devres__dev_put()); 0 when none is
 * needed, this thread running the device's own callbacks; -1, with one
 * WARN, when another thread is releasing the device.
 */
struct devres__dm_thread;
HIDDEN int devres__dev_hold(const struct devres__dm_thread *t,
			    struct device *dev, const char *func);
/* put_device() of a device the caller checked and holds a reference on. */
HIDDEN void devres__dev_put(struct device *dev);
/* One WARN: "<dev>: <func>: <why> (state: <state>)". */
HIDDEN void devres__state_warn(struct device *dev, const char *func,
			       const char *why);
/* driver.c: with devres__dm_lock held. */
HIDDEN enum dm_drv_state
devres__drv_state_locked(const struct device_driver *drv);
HIDDEN const char *devres__drv_state_name(enum dm_drv_state st);
/* Not from @dev's own probe, remove or devres callbacks: else one WARN. */
HIDDEN bool devres__may_delete(struct device *dev, const char *func);
/* The same, and @dev is added (not deleted): else one WARN. */
HIDDEN bool devres__may_unregister(struct device *dev, const char *func);

/* dd.c */
HIDDEN void devres__probe_new_device(struct device *dev);
HIDDEN void devres__driver_attach(struct device_driver *drv);
HIDDEN void devres__driver_detach(struct device_driver *drv,
				  struct bus_private *bp);
/*
 * Marks @dev dead and unbinds it, under its lock: 1 when this call did,
 * 0 when it was dead already, -EDEADLK when the wait for its lock would
 * close a loop (WARNed, naming @func; nothing done).
 */
HIDDEN int devres__device_kill(struct device *dev, bool *ret_killed,
			       const char *func);
HIDDEN bool devres__dev_locked_by_me(const struct device *dev);
HIDDEN bool devres__in_callback_of(const struct device_driver *drv);
HIDDEN unsigned long devres__bind_gen(void);
HIDDEN void devres__retry_if_bound(unsigned long gen);
HIDDEN int devres__attach(struct device *dev, const struct device_driver *drv,
			  const char *func);

/* owner.c: is this thread inside a match or for-each callback of @dev? */
HIDDEN bool devres__devres_held_by_me(const struct device *dev);
/* The same, with the WARN that refuses the call @func. */
HIDDEN bool devres__refuse_in_devres_cb(const struct device *dev,
					const char *func);

/* errname.c: "-ENODEV" for -ENODEV, the number when it has no name. */
HIDDEN const char *devres__errname(int err, char *buf, size_t len);

#endif /* DEVRES_BASE_H */
