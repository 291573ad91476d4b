// SPDX-License-Identifier: MIT
/*
 * Bus types: the registry of buses, and walks over a bus's devices and
 * drivers that may call out with no lock held.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"

pthread_mutex_t devres__dm_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t devres__dm_cond = PTHREAD_COND_INITIALIZER;

static struct bus_private *buses;

/*
 * fork() in a threaded program copies the lock as some other thread held
 * it: the child would wait for it forever. Holding it across fork() leaves
 * the child a lock in a known state, so it can use the driver model (on
 * devices of its own: another thread's device lock may still be held).
 */
static void fork_prepare(void)
{
	dm_lock();
}

static void fork_done(void)
{
	dm_unlock();
}

/*
 * The condition variable made new too: a waiter of the parent woken by a
 * broadcast just before the fork, which had not run since, stays counted
 * in it (glibc's group references), and the child's next broadcast that
 * found a waiter of its own waited for that count for ever.
 */
static void fork_child(void)
{
	devres__bound_forked();
	pthread_cond_init(&devres__dm_cond, NULL);
	dm_unlock();
}

/*
 * The core's question on a foreign release's misuse path (owners.c): every
 * device registered on a bus, not deleted, under the lock that keeps it
 * registered. The lock is tried, never waited for: the caller may be
 * inside a callback that holds it, or hold a device's devres lock that a
 * holder of it waits for. Held by another thread, it is tried again a few
 * times (it is held for a few pointer operations), then the walk gives up.
 */
static void owners_walk(bool (*visit)(struct device *dev, void *ctx), void *ctx)
{
	for (int tries = 0; pthread_mutex_trylock(&devres__dm_lock); tries++) {
		if (tries == 64)
			return;
		sched_yield();
	}
	for (struct bus_private *bp = buses; bp; bp = bp->next) {
		for (struct dm_link *l = bp->devices.next; l != &bp->devices;
		     l = l->next) {
			struct device_private *p = container_of(
				l, struct device_private, bus_node);

			if (!p->dead && !visit(p->dev, ctx))
				goto out;
		}
	}
out:
	dm_unlock();
}

__attribute__((constructor)) static void bus_init(void)
{
	devres__atfork(DEVRES_FORK_DM, fork_prepare, fork_done, fork_child);
	devres__owners_walk_set(owners_walk);
}

struct bus_private *devres__bus_find_locked(const struct bus_type *bus)
{
	struct bus_private *bp;

	for (bp = buses; bp; bp = bp->next)
		if (bp->bus == bus)
			return bp;
	return NULL;
}

static bool name_taken_locked(const char *name)
{
	for (struct bus_private *bp = buses; bp; bp = bp->next)
		if (strcmp(bp->bus->name, name) == 0)
			return true;
	return false;
}

static void link_locked(struct bus_private *bp)
{
	bp->refs = 1;
	dm_list_init(&bp->devices);
	dm_list_init(&bp->drivers);
	bp->next = buses;
	buses = bp;
}

void devres__bus_add_static(struct bus_private *bp)
{
	dm_lock();
	link_locked(bp);
	dm_unlock();
}

int bus_register(const struct bus_type *bus)
{
	return devres__bus_register_deleted(bus, NULL);
}

int devres__bus_register_deleted(const struct bus_type *bus,
				 void (*deleted)(struct device *dev))
{
	struct bus_private *bp;
	bool same, taken;

	if (devres__arg_bad(NULL, bus, "bus_register", "bus") ||
	    devres__opt_bad(NULL, bus->name, "bus_register", "name"))
		return -EINVAL;
	if (!bus->name || !*bus->name) {
		devres__warn(NULL, "bus_register", "bus %p has no name",
			     (void *)bus);
		return -EINVAL;
	}
	if (devres__should_fail_as("bus_register", -ENOMEM) ||
	    !(bp = calloc(1, sizeof(*bp))))
		return -ENOMEM;
	bp->bus = bus;
	bp->deleted = deleted;
	dm_lock();
	same = devres__bus_find_locked(bus) != NULL;
	taken = same || name_taken_locked(bus->name);
	if (!taken)
		link_locked(bp);
	dm_unlock();
	if (taken) {
		free(bp);
		devres__warn(NULL, "bus_register",
			     "bus %s is already registered "
			     "(state: %s)",
			     bus->name,
			     same ? "registered"
				  : "unregistered, but its name is taken");
		return -EBUSY;
	}
	return 0;
}

/*
 * Deleted devices a walk still holds, and a driver being unregistered, do
 * not count: their walkers and unregister hold references on the bus and
 * unlink them when they let go.
 */
static bool has_live_locked(struct bus_private *bp)
{
	struct dm_link *l;

	for (l = bp->devices.next; l != &bp->devices; l = l->next)
		if (!container_of(l, struct device_private, bus_node)->dead)
			return true;
	for (l = bp->drivers.next; l != &bp->drivers; l = l->next)
		if (!container_of(l, struct driver_private, node)->dead)
			return true;
	return false;
}

static void unregister_bus(const struct bus_type *bus)
{
	struct bus_private *bp, **pp;
	const char *why = NULL;

	if (devres__arg_bad(NULL, bus, "bus_unregister", "bus"))
		return;
	dm_lock();
	bp = devres__bus_find_locked(bus);
	if (!bp)
		why = "bus is not registered (state: unregistered)";
	else if (bp->is_static)
		why = "bus belongs to the library (state: registered)";
	else if (has_live_locked(bp))
		why = "bus still has devices or drivers (state: registered)";
	if (!why) {
		for (pp = &buses; *pp != bp; pp = &(*pp)->next)
			;
		*pp = bp->next;
	}
	dm_unlock();
	if (why) {
		devres__warn(NULL, "bus_unregister", "%s: %s",
			     bus && bus->name ? bus->name : "(null)", why);
		return;
	}
	/* A walk or a detach still using it frees it when it lets go. */
	devres__bus_put(bp);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void bus_unregister(const struct bus_type *bus)
{
	int err = errno;

	unregister_bus(bus);
	errno = err;
}

void devres__bus_put(struct bus_private *bp)
{
	bool last;

	dm_lock();
	last = --bp->refs == 0 && !bp->is_static;
	dm_unlock();
	if (last)
		free(bp);
}

/*
 * The live device after @cur (or the first), bound to @bound_to when that
 * is set, not searching for a driver when @skip_searching, pinned and with
 * a reference taken; the caller unpins @cur.
 */
struct device_private *
devres__bus_next_dev_locked(struct bus_private *bp, struct device_private *cur,
			    const struct device_driver *bound_to,
			    bool skip_searching)
{
	struct dm_link *l = cur ? cur->bus_node.next : bp->devices.next;

	for (; l != &bp->devices; l = l->next) {
		struct device_private *dp =
			container_of(l, struct device_private, bus_node);

		/*
		 * A walk for a driver's devices also takes the deleted ones
		 * still bound to it: their remove() may be running, and the
		 * driver must not be gone until it returns.
		 */
		/* A child of fork() walks none of its parent's devices. */
		if ((dp->dead && !bound_to) ||
		    (bound_to && dp->bound != bound_to) ||
		    (skip_searching && dp->searching) ||
		    !devres__dev_mine(dp->dev))
			continue;
		dp->pins++;
		dm_get_device_locked(dp->dev);
		return dp;
	}
	return NULL;
}

/* The caller drops the reference with put_device() once unlocked. */
void devres__dev_unpin_locked(struct device_private *dp)
{
	if (--dp->pins == 0 && dp->dead)
		dm_list_del(&dp->bus_node);
}

/*
 * One step of a walk over @bp's devices, taken without the lock held: pins
 * the next device as devres__bus_next_dev_locked() chooses it and lets go
 * of @cur. A walk that ends early lets go with devres__bus_walk_stop().
 */
struct device_private *devres__bus_walk(struct bus_private *bp,
					struct device_private *cur,
					const struct device_driver *bound_to,
					bool skip_searching)
{
	struct device_private *next;

	dm_lock();
	next = devres__bus_next_dev_locked(bp, cur, bound_to, skip_searching);
	if (cur)
		devres__dev_unpin_locked(cur);
	dm_unlock();
	if (cur)
		devres__put_taken(cur->dev);
	return next;
}

void devres__bus_walk_stop(struct device_private *cur)
{
	dm_lock();
	devres__dev_unpin_locked(cur);
	dm_unlock();
	devres__put_taken(cur->dev);
}

/* The live driver after @cur (or the first) registered as @min_seq or later. */
struct driver_private *devres__bus_next_drv_locked(struct bus_private *bp,
						   struct driver_private *cur,
						   unsigned long min_seq)
{
	struct dm_link *l = cur ? cur->node.next : bp->drivers.next;

	for (; l != &bp->drivers; l = l->next) {
		struct driver_private *drvp =
			container_of(l, struct driver_private, node);

		/* Nor tries its parent's drivers on devices of its own. */
		if (drvp->dead || drvp->seq < min_seq ||
		    drvp->pid != devres__pid_now())
			continue;
		devres__drv_pin_locked(drvp);
		return drvp;
	}
	return NULL;
}

struct for_each {
	struct bus_private *bp;
	struct device_private *cur; /* pinned while @fn runs on it */
};

/*
 * @fn ended the thread: the walk's device and bus are let go, or the
 * device could never leave the bus's list once deleted, nor the bus be
 * freed.
 */
static void for_each_ended(void *arg)
{
	struct for_each *w = arg;

	devres__warn(w->cur->dev, "bus_for_each_dev",
		     "the thread ended inside the walk's function: the walk "
		     "lets go of the device and the bus");
	devres__bus_walk_stop(w->cur);
	devres__bus_put(w->bp);
}

int bus_for_each_dev(const struct bus_type *bus, struct device *start,
		     void *data, int (*fn)(struct device *dev, void *data))
{
	struct device_private *cur = NULL;
	struct bus_private *bp;
	int ret = 0;

	bool bad_start = false;

	if (devres__arg_bad(NULL, bus, __func__, "bus") ||
	    devres__arg_bad(NULL, (const void *)fn, __func__, "function"))
		return -EINVAL;
	if (start && !devres__dev_ok(start, __func__))
		return -EINVAL;
	dm_lock();
	bp = devres__bus_find_locked(bus);
	if (bp && start) {
		/*
		 * A deleted device may be unlinked already: a walk from it
		 * would never find the bus's head again.
		 */
		cur = start->p;
		bad_start = !cur || cur->dead || cur->bus != bp;
		if (bad_start) {
			cur = NULL;
		} else {
			cur->pins++;
			dm_get_device_locked(start);
		}
	}
	if (bp && !bad_start)
		bp->refs++; /* fn may unregister everything, the bus too */
	dm_unlock();
	if (!bp || bad_start) {
		char buf[LIVE_LABEL_LEN];

		devres__warn_label(
			devres__dev_label_live(start, buf, sizeof(buf)),
			__func__,
			bp ? "device is not registered on bus %s%s%s%s"
			   : "bus %s is not registered%s%s%s",
			bus && bus->name ? bus->name : "(null)",
			start ? " (state: " : "",
			start ? devres__dev_state_name(dm_dev_state(start))
			      : "",
			start ? ")" : "");
		return -EINVAL;
	}
	while ((cur = devres__bus_walk(bp, cur, NULL, false))) {
		struct for_each w = { bp, cur };

		pthread_cleanup_push(for_each_ended, &w);
		ret = fn(cur->dev, data);
		pthread_cleanup_pop(0);
		if (ret) {
			devres__bus_walk_stop(cur);
			break;
		}
	}
	devres__bus_put(bp);
	return ret;
}
