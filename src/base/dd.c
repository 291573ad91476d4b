// SPDX-License-Identifier: MIT
/*
 * Binding devices to drivers: match, probe, remove, and deferred probe.
 *
 * Everything a probe acquires through managed calls lands after a binding
 * marker the core puts on the device's list first; releasing the marker's
 * range undoes exactly the binding. The device's mutex is held across probe
 * and remove and nothing else, so callbacks may add devices and drivers.
 *
 * A callback may end its thread (pthread_exit(), or a cancellation it
 * enabled met at a cancellation point): each function here that holds
 * something across one (the device's lock, a pinned driver, a walk's
 * pinned device, the binding) gives it back in a cleanup handler as the
 * thread unwinds, so that what the dead thread held waits for nobody. A
 * probe that ended counts as failed; a remove that ended as returned.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "base.h"
#include "frame.h"
#include "waits.h"

/*
 * The device locks this thread holds, innermost first, with the driver
 * whose callback runs under each: so that a callback that would take its
 * own device's lock again, or unregister its own driver, is told so
 * instead of deadlocking.
 */
struct devres__held {
	struct device *dev;
	const struct device_driver *drv;
	struct devres__held *next;
	struct devres__dm_thread *t; /* this thread's */
	/* A last put of the device from its callbacks waits for the unlock. */
	struct devres__frame frame;
	/* Probe and remove run with cancellation off: the lock is held. */
	int cancel;
	/*
	 * This thread in the set of the lock's holders (mutex_set()): on
	 * its stack of held keys (held-keys.c), else as a member.
	 */
	bool keyed;
	struct devres__wait_member holder;
};

/* This thread's list of them is devres__dmt.held (frame.h). */

/* Counts successful binds, to know whether parked devices need a retry. */
static unsigned long bind_gen;
/* The last bound device's place in its driver's list, under dm_lock. */
static unsigned long bind_order;

/* Parked devices, oldest first; each remembers the round it was parked in. */
static struct dm_link deferred = { &deferred, &deferred };
static unsigned long defer_round;
/*
 * How many are parked: changed under devres__dm_lock, read without it by
 * a retry, which has nothing to do when it is 0 (see retry_deferred()).
 */
static unsigned long nparked;
/*
 * Counts the retries asked for by driver_deferred_probe_trigger() (or by
 * a callback, then made by the outermost call), sequentially consistent
 * with nparked: see park_checked().
 */
static unsigned long trigger_gen;

/*
 * The device's mutex on the record of waits (waits.h): its holder is the
 * one member of this set while it holds it, and a thread about to sleep
 * on it waits for the set. So a holder that waits, through waits of the
 * library, for a thread that waits for the lock (an unbind whose
 * revocation waits for a reader, and the reader unbinds the device) is
 * seen, and one of the two waits is refused instead of both hanging.
 */
static uintptr_t mutex_set(struct device *dev)
{
	return (uintptr_t)&dev->mutex;
}

static void hold(struct devres__dm_thread *t, struct device *dev,
		 struct devres__held *h)
{
	h->dev = dev;
	h->drv = NULL;
	h->next = t->held;
	h->t = t;
	t->held = h;
	devres__frame_push(t, &h->frame, dev);
	h->cancel = devres__cancel_off();
	h->keyed = devres__held_key_push(t, (void *)mutex_set(dev));
	if (!h->keyed)
		devres__wait_join(&h->holder, mutex_set(dev));
}

/* The WARN of a wait for @dev's lock refused by the record of waits. */
static void warn_lock_loop(struct device *dev, const char *func,
			   const struct devres__wait *w, const char *outcome)
{
	devres__warn(dev, func,
		     "the device's lock is held by a thread that waits for "
		     "this one (%s): %s",
		     w->loop, outcome);
}

/*
 * The wait for @dev's lock, held by another thread, on the record of
 * waits; one that would close a loop (the holder waits for this thread)
 * is refused with one WARN ending in @outcome: -EDEADLK, nothing held.
 * Out of line: the record of a wait is large, and a lock found free
 * needs none.
 */
static __attribute__((noinline)) int
dev_lock_wait(struct device *dev, const char *func, const char *outcome)
{
	struct devres__wait w;

	devres__wait_init(&w, func);
	devres__wait_target_set(&w, mutex_set(dev));
	if (devres__wait_begin(&w)) {
		warn_lock_loop(dev, func, &w, outcome);
		return -EDEADLK;
	}
	pthread_mutex_lock(&dev->mutex);
	devres__wait_end(&w);
	return 0;
}

/*
 * Takes @dev's lock for @func; a wait for it is on the record of waits
 * (dev_lock_wait()): -EDEADLK, WARNed, nothing held, when it would close
 * a loop.
 */
static int dev_lock(struct devres__dm_thread *t, struct device *dev,
		    struct devres__held *h, const char *func,
		    const char *outcome)
{
	if (unlikely(pthread_mutex_trylock(&dev->mutex)) &&
	    dev_lock_wait(dev, func, outcome))
		return -EDEADLK;
	hold(t, dev, h);
	return 0;
}

static void dev_unlock(struct devres__held *h)
{
	h->t->held = h->next;
	if (h->keyed)
		devres__held_key_pop(h->t);
	else
		devres__wait_leave(&h->holder);
	pthread_mutex_unlock(&h->dev->mutex);
	devres__frame_pop(h->t, &h->frame);
	devres__cancel_restore(h->cancel);
}

/*
 * The cleanup handler of a section under the device's lock, popped with
 * execution: the section's own unlock, and its unlock as the thread ends.
 */
static void unlock_held(void *arg)
{
	dev_unlock(arg);
}

/* A reference taken for a section, put as it ends or its thread does. */
static void put_held(void *arg)
{
	devres__put_taken(arg);
}

/* Names the driver or bus whose callback ended its thread, in the WARN. */
static void warn_ended(struct device *dev, const struct device_driver *drv,
		       bool by_bus, const char *cb, const char *outcome)
{
	if (by_bus)
		devres__warn(dev, cb,
			     "the thread ended inside bus %s's %s for driver "
			     "%s: %s",
			     dev->bus && dev->bus->name ? dev->bus->name
							: "(null)",
			     cb, drv->name ? drv->name : "(null)", outcome);
	else
		devres__warn(dev, cb,
			     "the thread ended inside driver %s's %s: %s",
			     drv->name ? drv->name : "(null)", cb, outcome);
}

static bool locked_by(const struct devres__dm_thread *t,
		      const struct device *dev)
{
	for (struct devres__held *h = t->held; h; h = h->next)
		if (h->dev == dev)
			return true;
	return false;
}

bool devres__dev_locked_by_me(const struct device *dev)
{
	return locked_by(&devres__dmt, dev);
}

bool devres__in_callback_of(const struct device_driver *drv)
{
	for (struct devres__held *h = devres__dm_me()->held; h; h = h->next)
		if (h->drv == drv)
			return true;
	return false;
}

/* Sequentially consistent, with nparked: see retry_deferred(). */
unsigned long devres__bind_gen(void)
{
	return __atomic_load_n(&bind_gen, __ATOMIC_SEQ_CST);
}

/*
 * Set once by device_add(), with a release store after the state it
 * points to, and cleared only by the release, which a caller holding a
 * reference never races: one acquire load, no lock round trip.
 */
static struct device_private *dev_private(struct device *dev)
{
	return __atomic_load_n(&dev->p, __ATOMIC_ACQUIRE);
}

static void unpark_locked(struct device_private *dp)
{
	if (!dp->deferred)
		return;
	dm_list_del(&dp->deferred_node);
	dp->deferred = false;
	__atomic_store_n(&nparked, nparked - 1, __ATOMIC_SEQ_CST);
}

static void park(struct device_private *dp)
{
	dm_lock();
	if (!dp->dead && !dp->deferred) {
		dp->deferred = true;
		dp->defer_round = defer_round;
		dm_list_add_tail(&deferred, &dp->deferred_node);
		__atomic_store_n(&nparked, nparked + 1, __ATOMIC_SEQ_CST);
	}
	dm_unlock();
}

/* What park_checked() compares with, read before a probe or match. */
static unsigned long trigger_mark(void)
{
	return __atomic_load_n(&trigger_gen, __ATOMIC_SEQ_CST);
}

/*
 * Parks @dp, whose probe or match deferred since @mark was read. A
 * triggered retry of another thread meanwhile found @dp being probed,
 * not parked: it skipped it, though what the probe waited for may have
 * come just before. As the kernel's, the park then asks for a retry of
 * its own, which the outermost call of the driver core in this thread
 * makes. The trigger's thread reads nparked after counting its retry,
 * this one trigger_gen after parking: both sequentially consistent, one
 * sees the other. Only retries made outside callbacks count, once each:
 * two threads whose probes trigger and defer would otherwise retry each
 * other's device for ever.
 */
static void park_checked(struct devres__dm_thread *t, struct device_private *dp,
			 unsigned long mark)
{
	park(dp);
	if (__atomic_load_n(&trigger_gen, __ATOMIC_SEQ_CST) != mark)
		t->retrigger = true;
}

/*
 * How many probes of one device in a row may bind a device in their own
 * thread (a child they added, a driver they registered) and then defer
 * before the device is no longer parked.
 */
#define DEFER_BINDS_MAX 8

/*
 * Parks @dp after its probe deferred, unless the probe bound a device in
 * this thread first, DEFER_BINDS_MAX times in a row. Each bind starts
 * another round of retries, whose probe of @dp binds again: retried for
 * ever, and the call that retries never returns. The kernel forbids it
 * (a probe must not defer once it registered children) and loops in its
 * retry work; here the device is left unbound, with one WARN, for
 * device_attach() or the next driver to try again.
 */
static void park_probe(struct devres__dm_thread *t, struct device_private *dp,
		       const struct device_driver *drv, bool bound_in_probe,
		       unsigned long mark)
{
	if (!bound_in_probe) {
		dp->defer_binds = 0;
		park_checked(t, dp, mark);
		return;
	}
	if (++dp->defer_binds < DEFER_BINDS_MAX) {
		park_checked(t, dp, mark);
		return;
	}
	dp->defer_binds = 0;
	devres__warn(dp->dev, drv->name,
		     "probe deferred %d times in a row after binding a device "
		     "(a child it added?): not parked, or its retries would "
		     "never end",
		     DEFER_BINDS_MAX);
}

/* A driver with no bus (bound by hand) has no bus wrapper. */
static bool bus_probes(const struct device_driver *drv)
{
	return drv->bus && drv->bus->probe;
}

static bool bus_removes(const struct device_driver *drv)
{
	return drv->bus && drv->bus->remove;
}

static int call_probe(struct device *dev, const struct device_driver *drv)
{
	if (bus_probes(drv))
		return drv->bus->probe(dev);
	return drv->probe ? drv->probe(dev) : 0;
}

static void call_remove(struct device *dev, const struct device_driver *drv)
{
	if (bus_removes(drv))
		drv->bus->remove(dev);
	else if (drv->remove)
		drv->remove(dev);
}

/* After a failed probe: the binding's resources go, the device is unbound. */
static void probe_failed(struct device *dev)
{
	devres__owned_release(dev, &dev->p->binding);
	__atomic_store_n(&dev->driver, NULL, __ATOMIC_RELEASE);
	dev->driver_data = NULL;
	dm_lock();
	dm_set_state(dev, DEV_ADDED);
	dm_unlock();
}

/*
 * The probe ended its thread: a failed probe, not parked (nothing will
 * come back to say it may be tried again), as the thread unwinds.
 */
static void probe_ended(void *arg)
{
	struct devres__held *h = arg;
	const struct device_driver *drv = h->drv;

	h->drv = NULL;
	warn_ended(h->dev, drv, bus_probes(drv), "probe",
		   "the probe failed, the device is left unbound");
	probe_failed(h->dev);
}

static int probe_held(struct device *dev, const struct device_driver *drv,
		      struct devres__held *h)
{
	int ret;

	h->drv = drv;
	pthread_cleanup_push(probe_ended, h);
	ret = call_probe(dev, drv);
	pthread_cleanup_pop(0);
	h->drv = NULL;
	return ret;
}

/*
 * Probes @drv on @dev, whose lock is held through @h and which is alive and
 * unbound. Returns 0 when bound, else the probe's error, which has released
 * everything the probe acquired. @search is the pinned driver of a search
 * of the bus (try_drivers()), or NULL: a bind ends the search in the
 * section that marks the device bound, one lock round trip instead of two.
 */
static int really_probe(struct device *dev, const struct device_driver *drv,
			struct devres__held *h, struct driver_private *search)
{
	struct device_private *dp = dev->p;
	unsigned long binds = h->t->binds;
	unsigned long mark;
	char *reason;
	int ret;

	/* Parked devices are never being probed: see retry_round(). */
	dm_lock();
	unpark_locked(dp);
	dm_set_state(dev, DEV_PROBING);
	dm_unlock();
	/*
	 * The binding is a group the devres core keeps for us: in the
	 * device's private state (binding allocates nothing), invisible to the
	 * driver's groups, and left on the list by a devres_release_all()
	 * while bound, so that only our own release below takes it.
	 */
	ret = devres__owned_open(dev, &dp->binding, "driver binding",
				 DEVRES_OWNED_KEEP);
	if (ret) {
		dm_lock();
		dm_set_state(dev, DEV_ADDED);
		dm_unlock();
		return ret;
	}
	__atomic_store_n(&dev->driver, (struct device_driver *)drv,
			 __ATOMIC_RELEASE);
	mark = trigger_mark();
	ret = probe_held(dev, drv, h);
	/* A negative past -MAX_ERRNO is no errno: no caller's check knows it. */
	if (ret > 0 || ret < -MAX_ERRNO) {
		devres__warn(dev, drv->name,
			     "probe returned %d, not 0 or "
			     "a negative errno",
			     ret);
		ret = -EINVAL;
	}
	if (ret) {
		probe_failed(dev);
		if (ret == -EPROBE_DEFER)
			park_probe(h->t, dp, drv, h->t->binds != binds, mark);
		else
			dp->defer_binds = 0;
		return ret;
	}
	dp->defer_binds = 0;
	h->t->binds++;
	dm_lock();
	dp->bound = drv;
	dp->bind_seq = ++bind_order;
	dm_set_state(dev, DEV_BOUND);
	unpark_locked(dp);
	reason = devres__defer_reason_take_locked(dp);
	if (search) {
		devres__drv_unpin_locked(search);
		dp->searching = false;
	}
	dm_unlock();
	free(reason);
	__atomic_add_fetch(&bind_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* A match that ended its thread holds nothing: the callers' handlers do. */
static void match_ended(void *arg)
{
	struct devres__held *h = arg;
	const struct device_driver *drv = h->drv;

	h->drv = NULL;
	warn_ended(h->dev, drv, true, "match", "no driver is bound");
}

/* The bus's opinion: > 0 match, 0 no match, < 0 an error. */
static int match(struct device *dev, const struct device_driver *drv,
		 struct devres__held *h)
{
	int ret;

	if (!dev->bus->match)
		return 1;
	h->drv = drv;
	pthread_cleanup_push(match_ended, h);
	ret = dev->bus->match(dev, drv);
	pthread_cleanup_pop(0);
	h->drv = NULL;
	if (unlikely(ret < -MAX_ERRNO)) {
		devres__warn(dev, drv->name,
			     "bus %s: match returned %d, not 1, 0 or a "
			     "negative errno: taken as -EINVAL",
			     dev->bus->name ? dev->bus->name : "", ret);
		ret = -EINVAL;
	}
	return ret;
}

/*
 * Matches and probes the driver of @drvp, pinned by a search. Returns 1
 * when bound (the search ended, @drvp unpinned), 0 to go on with the next
 * driver, < 0 to stop the search (a deferral, a match error).
 */
static int try_driver(struct device *dev, struct driver_private *drvp,
		      struct devres__held *h)
{
	const struct device_driver *drv = drvp->drv;
	unsigned long mark = trigger_mark();
	int ret = match(dev, drv, h);

	if (ret == 0)
		return 0;
	if (ret < 0) {
		if (ret == -EPROBE_DEFER)
			park_checked(h->t, dev->p, mark);
		return ret;
	}
	ret = really_probe(dev, drv, h, drvp);
	if (ret == 0)
		return 1;
	/* The kernel lets the next driver try, except after a deferral. */
	return ret == -EPROBE_DEFER ? ret : 0;
}

/*
 * Tries the drivers of @dev's bus in turn; @dev is locked, alive, unbound.
 *
 * While it runs, @dev is marked searching, and driver_register() does not
 * wait for it: a driver registered meanwhile is appended to the list this
 * search has not finished, so the search itself tries it. The mark is
 * cleared in the section that finds the end of the list, so no driver
 * falls between the two. Not waiting matters when a probe registers a
 * driver while another thread's probe does the same: each would wait for
 * the other's device.
 *
 * A deferral stops the search, as in the kernel, but the drivers
 * registered while it ran were skipped by their own driver_register(),
 * which would have tried them on @dev: the search goes on with those only,
 * so the outcome does not depend on when they came.
 */
struct search {
	struct device_private *dp;
	struct driver_private *cur; /* pinned while it is tried */
};

/* The thread ended while @s->cur was tried: the search ends unbound. */
static void search_ended(void *arg)
{
	struct search *s = arg;

	dm_lock();
	if (s->cur)
		devres__drv_unpin_locked(s->cur);
	s->dp->searching = false;
	dm_unlock();
}

static int try_drivers(struct device *dev, struct devres__held *h)
{
	struct search s = { dev->p, NULL };
	struct driver_private *prev;
	unsigned long min_seq = 0, since = 0;
	int ret = 0;

	pthread_cleanup_push(search_ended, &s);
	for (;;) {
		dm_lock();
		if (!s.cur && !min_seq) {
			s.dp->searching = true;
			since = s.dp->bus->drv_seq;
		}
		prev = s.cur;
		s.cur = devres__bus_next_drv_locked(s.dp->bus, prev, min_seq);
		if (prev)
			devres__drv_unpin_locked(prev);
		if (!s.cur)
			s.dp->searching = false;
		dm_unlock();
		if (!s.cur)
			break;
		ret = try_driver(dev, s.cur, h);
		/* Bound: the bind ended the search, and unpinned @cur. */
		if (ret > 0)
			break;
		if (ret < 0)
			min_seq = since + 1;
	}
	pthread_cleanup_pop(0);
	return ret > 0;
}

static bool alive_unbound(struct device *dev)
{
	return !dev->p->dead && !dev->driver;
}

void devres__probe_new_device(struct device *dev)
{
	struct devres__held h;

	if (dev_lock(devres__dm_me(), dev, &h, "device_add", "not probed"))
		return;
	pthread_cleanup_push(unlock_held, &h);
	if (alive_unbound(dev))
		try_drivers(dev, &h);
	pthread_cleanup_pop(1);
}

/* One retry of the devices parked before this round began. */
static void retry_round(struct devres__dm_thread *t)
{
	struct device_private *dp;
	unsigned long round;
	struct devres__held h;
	int locked;

	dm_lock();
	round = ++defer_round;
	dm_unlock();
	for (;;) {
		dm_lock();
		dp = NULL;
		if (!dm_list_empty(&deferred)) {
			dp = container_of(deferred.next, struct device_private,
					  deferred_node);
			if (dp->defer_round >= round)
				dp = NULL;
		}
		if (dp) {
			unpark_locked(dp);
			/* In a child of fork(), the parent's are dropped. */
			if (!devres__dev_mine(dp->dev)) {
				dm_unlock();
				continue;
			}
			dm_get_device_locked(dp->dev);
		}
		dm_unlock();
		if (!dp)
			return;
		/*
		 * A device whose probe is running in this thread is busy; one
		 * whose resources this thread is walking waits, parked, for
		 * the next round.
		 */
		pthread_cleanup_push(put_held, dp->dev);
		if (devres__devres_held_by_me(dp->dev))
			locked = -EBUSY;
		else if (locked_by(t, dp->dev))
			locked = -EALREADY;
		else
			locked = dev_lock(t, dp->dev, &h,
					  "driver_deferred_probe_trigger",
					  "left parked");
		/* A lock whose holder waits for this thread: parked too. */
		if (locked == -EBUSY || locked == -EDEADLK)
			park(dp);
		if (!locked) {
			pthread_cleanup_push(unlock_held, &h);
			if (alive_unbound(dp->dev))
				try_drivers(dp->dev, &h);
			pthread_cleanup_pop(1);
		}
		pthread_cleanup_pop(1);
	}
}

/*
 * A retry asked for while this thread holds a device's lock (from a probe
 * or remove), retry_wanted, is left to the outermost call of the driver
 * core in this thread: retrying there would lock other devices while
 * holding one, and two threads doing so in opposite order deadlock.
 */

/*
 * Another round follows while some bind happened during the last one: a
 * device of ours may have deferred just before what it waited for came.
 */
static void retry_deferred(struct devres__dm_thread *t)
{
	unsigned long gen;

	if (t->held) {
		t->retry_wanted = true;
		return;
	}
	/* Counted before nparked is read: see park_checked(). */
	if (t->retry_wanted)
		__atomic_add_fetch(&trigger_gen, 1, __ATOMIC_SEQ_CST);
	/*
	 * With nothing parked, a round would find nothing: a device parked
	 * after this read is retried by its own caller, which reads the
	 * bind count after parking it (devres__retry_if_bound()), as this
	 * thread read nparked after counting its bind. Both sides are
	 * sequentially consistent, so one of the two sees the other.
	 */
	if (!__atomic_load_n(&nparked, __ATOMIC_SEQ_CST)) {
		t->retry_wanted = false;
		t->retrigger = false;
		return;
	}
	/* Again too when a round's park missed another thread's trigger. */
	do {
		t->retrigger = false;
		gen = devres__bind_gen();
		retry_round(t);
	} while (devres__bind_gen() != gen || t->retrigger);
	/* Asked for by the probes of these rounds: they were the retry. */
	t->retry_wanted = false;
}

static void retry_if_bound(struct devres__dm_thread *t, unsigned long gen)
{
	if (devres__bind_gen() != gen ||
	    ((t->retry_wanted || t->retrigger) && !t->held))
		retry_deferred(t);
}

void devres__retry_if_bound(unsigned long gen)
{
	retry_if_bound(devres__dm_me(), gen);
}

/* After an unbind: a remove or release callback may have asked for one. */
static void retry_if_wanted(struct devres__dm_thread *t)
{
	if ((t->retry_wanted || t->retrigger) && !t->held)
		retry_deferred(t);
}

static void trigger_all(void)
{
	struct devres__dm_thread *t = devres__dm_me();

	t->retry_wanted = true;
	retry_deferred(t);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void driver_deferred_probe_trigger(void)
{
	int err = errno;

	trigger_all();
	errno = err;
}

static bool drv_dying(const struct driver_private *drvp)
{
	bool dead;

	dm_lock();
	dead = drvp->dead;
	dm_unlock();
	return dead;
}

/*
 * Locks @dev for a registration's attach of @drvp, without the lock-order
 * inversions a plain wait would make. Inside a callback (this thread holds
 * another device's lock), a busy device is parked instead, retried when
 * the outermost call is done: two probes registering drivers that match
 * each other's device would otherwise each wait for the other. Outside,
 * the wait ends if the driver is being unregistered: its unregister may
 * come from the probe that holds @dev, waiting for this registration.
 */
static bool lock_for_attach(struct devres__dm_thread *t,
			    struct device_private *dp,
			    const struct driver_private *drvp,
			    struct devres__held *h)
{
	struct device *dev = dp->dev;
	struct devres__wait w;
	struct timespec ts;

	if (t->held) {
		if (pthread_mutex_trylock(&dev->mutex)) {
			park(dp);
			t->retry_wanted = true;
			return false;
		}
	} else if (pthread_mutex_trylock(&dev->mutex)) {
		/*
		 * A wait with a way out, looked at before each poll rather
		 * than recorded (devres__wait_check()): recorded, it refused
		 * the unregister that is its way out.
		 */
		devres__wait_init(&w, "driver_register");
		devres__wait_target_set(&w, mutex_set(dev));
		/* Busy: the clock is read only for a wait that happens. */
		for (;;) {
			if (devres__wait_check(&w)) {
				warn_lock_loop(dev, "driver_register", &w,
					       "not tried with the driver");
				return false;
			}
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (!pthread_mutex_timedlock(&dev->mutex, &ts))
				break;
			if (drv_dying(drvp))
				return false;
		}
	}
	hold(t, dev, h);
	return true;
}

/* A walk's pinned device, let go as the thread ends inside a callback. */
static void walk_ended(void *arg)
{
	struct device_private **cur = arg;

	if (*cur)
		devres__bus_walk_stop(*cur);
}

void devres__driver_attach(struct device_driver *drv)
{
	struct driver_private *drvp = drv->p;
	struct bus_private *bp = drvp->bus;
	struct devres__dm_thread *t = devres__dm_me();
	struct device_private *cur = NULL;
	unsigned long mark;
	struct devres__held h;
	int ret;

	pthread_cleanup_push(walk_ended, &cur);
	while ((cur = devres__bus_walk(bp, cur, NULL, true))) {
		/* Being unregistered meanwhile: its devices are not tried. */
		if (drv_dying(drvp)) {
			devres__bus_walk_stop(cur);
			break;
		}
		/* Our caller's own device, bound by hand, registering drivers. */
		if (locked_by(t, cur->dev))
			continue;
		/* A match or for-each callback of the device registering. */
		if (devres__refuse_in_devres_cb(cur->dev, "driver_register"))
			continue;
		if (!lock_for_attach(t, cur, drvp, &h))
			continue;
		pthread_cleanup_push(unlock_held, &h);
		if (alive_unbound(cur->dev)) {
			mark = trigger_mark();
			ret = match(cur->dev, drv, &h);
			if (ret > 0)
				really_probe(cur->dev, drv, &h, NULL);
			else if (ret == -EPROBE_DEFER)
				park_checked(t, cur, mark);
		}
		pthread_cleanup_pop(1);
	}
	pthread_cleanup_pop(0);
}

/* What follows the remove, also when it ended its thread. */
static void unbound(struct device *dev);

/*
 * A release callback of the binding ended the thread: the devres core
 * released the rest of the binding as it unwound, and the unbind is
 * finished here. Run from remove_ended() too, this is the second end
 * while the first unwinds: left to the unwind, it skipped the rest of
 * unbind_finish(), and the device stayed bound to a driver whose binding
 * was gone.
 */
static void binding_ended(void *arg)
{
	unbound(arg);
}

static void unbind_finish(struct device *dev, struct devres__held *h)
{
	struct device_private *dp = dev->p;

	h->drv = NULL;
	pthread_cleanup_push(binding_ended, dev);
	devres__owned_release(dev, &dp->binding);
	pthread_cleanup_pop(0);
	unbound(dev);
}

/* The device is unbound: its driver and binding no longer its. */
static void unbound(struct device *dev)
{
	struct device_private *dp = dev->p;

	__atomic_store_n(&dev->driver, NULL, __ATOMIC_RELEASE);
	dev->driver_data = NULL;
	/*
	 * Bound until now, as in the kernel: a driver_unregister() running
	 * meanwhile finds the device among its driver's and waits for its
	 * lock, so it cannot return while this remove still uses the driver.
	 */
	dm_lock();
	dp->bound = NULL;
	dp->bind_seq = 0;
	dm_set_state(dev, dp->dead ? DEV_DELETED : DEV_ADDED);
	dm_unlock();
}

/* The remove ended its thread: the unbind completes as if it returned. */
static void remove_ended(void *arg)
{
	struct devres__held *h = arg;

	warn_ended(h->dev, h->drv, bus_removes(h->drv), "remove",
		   "the unbind completes as if it returned");
	unbind_finish(h->dev, h);
}

static void release_driver_locked(struct device *dev, struct devres__held *h)
{
	const struct device_driver *drv = dev->driver;
	struct device_private *dp;
	bool holders;

	if (!drv)
		return;
	/* Bound, so added: device_add() published it before the bind. */
	dp = dev_private(dev);
	dm_lock();
	dm_set_state(dev, DEV_UNBINDING);
	holders = dp->active != 0;
	dm_unlock();
	/*
	 * No new hold from here; the remove waits for those in progress. The
	 * count is read in the section that ends new holds, so the common
	 * unbind, with none, takes the lock once.
	 */
	if (unlikely(holders))
		devres__bound_drain(dev);
	h->drv = drv;
	pthread_cleanup_push(remove_ended, h);
	call_remove(dev, drv);
	pthread_cleanup_pop(0);
	unbind_finish(dev, h);
}

void devres__driver_detach(struct device_driver *drv, struct bus_private *bp)
{
	struct devres__dm_thread *t = devres__dm_me();
	struct device_private *cur = NULL;
	struct devres__held h;

	pthread_cleanup_push(walk_ended, &cur);
	while ((cur = devres__bus_walk(bp, cur, drv, false))) {
		/* Being unbound by this thread: a release callback of it. */
		if (locked_by(t, cur->dev))
			continue;
		if (dev_lock(t, cur->dev, &h, "driver_unregister",
			     "its unbind there is not waited for"))
			continue;
		pthread_cleanup_push(unlock_held, &h);
		if (cur->dev->driver == drv)
			release_driver_locked(cur->dev, &h);
		pthread_cleanup_pop(1);
	}
	pthread_cleanup_pop(0);
	retry_if_wanted(t);
}

int devres__device_kill(struct device *dev, bool *ret_killed, const char *func)
{
	struct devres__dm_thread *t = devres__dm_me();
	struct device_private *dp = dev->p;
	bool was_dead;
	struct devres__held h;
	char *reason;

	*ret_killed = false;
	if (dev_lock(t, dev, &h, func, "not deleted"))
		return -EDEADLK;
	pthread_cleanup_push(unlock_held, &h);
	dm_lock();
	was_dead = dp->dead;
	/* Written before the remove runs: it may end the thread. */
	*ret_killed = !was_dead;
	dp->dead = true;
	if (!was_dead)
		dm_set_state(dev, dev->driver ? DEV_UNBINDING : DEV_DELETED);
	unpark_locked(dp);
	reason = devres__defer_reason_take_locked(dp);
	dm_unlock();
	free(reason);
	if (!was_dead)
		release_driver_locked(dev, &h);
	pthread_cleanup_pop(1);
	retry_if_wanted(t);
	return !was_dead;
}

/* A callback binding or unbinding its own device would deadlock. */
static bool from_own_callback(const struct devres__dm_thread *t,
			      struct device *dev, const char *func)
{
	if (!locked_by(t, dev))
		return false;
	devres__state_warn(dev, func,
			   "called from the device's own probe or remove");
	return true;
}

/*
 * A registered driver bound by hand counts as one of its walkers, so that
 * driver_unregister() waits for the probe; one being unregistered is
 * refused. Returns the driver's private state to unpin, or NULL.
 */
static int pin_driver(const struct device_driver *drv,
		      struct driver_private **ret_drvp)
{
	struct driver_private *drvp;
	int ret = 0;

	dm_lock();
	/* Not registered (or a copy of a registered one): bound by hand. */
	drvp = devres__drv_state_locked(drv) == DRV_UNREGISTERED ? NULL
								 : drv->p;
	if (drvp && drvp->dead)
		ret = -ENODEV;
	else if (drvp)
		devres__drv_pin_locked(drvp);
	dm_unlock();
	*ret_drvp = ret ? NULL : drvp;
	return ret;
}

/* The driver pin_driver() pinned, if any, let go after the device's lock. */
static void unpin_held(void *arg)
{
	struct driver_private **drvp = arg;

	if (!*drvp)
		return;
	dm_lock();
	devres__drv_unpin_locked(*drvp);
	dm_unlock();
}

/*
 * Binds @dev to @drv, or, when @drv is NULL, to the first driver of its bus
 * that takes it; then retries parked devices if anything bound meanwhile.
 * Returns what device_attach() returns for a search, else 0 or -errno (a
 * deferral is -EPROBE_DEFER).
 */
static int attach_held(struct devres__dm_thread *t, struct device *dev,
		       const struct device_driver *drv, const char *func)
{
	struct driver_private *drvp = NULL;
	struct device_private *dp;
	unsigned long gen;
	struct devres__held h;
	int ret;

	if (from_own_callback(t, dev, func) ||
	    devres__refuse_in_devres_cb(dev, func))
		return -EDEADLK;
	dp = dev_private(dev);
	switch (dm_dev_state(dev)) {
	case DEV_INITIALIZED:
		devres__state_warn(dev, func, "device was never added");
		return -ENODEV;
	case DEV_RELEASING:
		devres__state_warn(dev, func, "device is being released");
		return -ENODEV;
	default:
		/* A deleted device is not an error here (the kernel's rule). */
		if (!dp)
			return -ENODEV;
	}
	gen = devres__bind_gen();
	pthread_cleanup_push(unpin_held, &drvp);
	ret = dev_lock(t, dev, &h, func, "refused");
	if (!ret) {
		pthread_cleanup_push(unlock_held, &h);
		/*
		 * The driver is pinned under the device's lock, not before:
		 * a probe of this device unregistering @drv must not wait
		 * for us while we wait for its lock.
		 */
		if (dp->dead)
			ret = -ENODEV;
		else if (dev->driver)
			ret = drv ? -EBUSY : 1;
		else if (!drv)
			ret = dp->bus ? try_drivers(dev, &h) : 0;
		else
			ret = pin_driver(drv, &drvp)
				      ?: really_probe(dev, drv, &h, NULL);
		pthread_cleanup_pop(1);
	}
	pthread_cleanup_pop(1);
	retry_if_bound(t, gen);
	return ret;
}

int devres__attach(struct device *dev, const struct device_driver *drv,
		   const char *func)
{
	struct devres__dm_thread *t = devres__dm_me();
	int held = devres__dev_hold(t, dev, func);
	int ret;

	if (held < 0)
		return -ENODEV;
	pthread_cleanup_push(put_held, dev);
	ret = attach_held(t, dev, drv, func);
	pthread_cleanup_pop(held);
	return ret;
}

int device_attach(struct device *dev)
{
	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	return devres__attach(dev, NULL, __func__);
}

int device_driver_attach(const struct device_driver *drv, struct device *dev)
{
	int ret;

	if (!devres__dev_ok(dev, __func__) ||
	    devres__arg_bad(dev, drv, __func__, "driver"))
		return -EINVAL;
	if (drv->bus && drv->bus != dev->bus) {
		devres__warn(dev, __func__, "driver %s is of bus %s",
			     drv->name ? drv->name : "(null)",
			     drv->bus->name ? drv->bus->name : "(null)");
		return -EINVAL;
	}
	ret = devres__attach(dev, drv, __func__);
	return ret == -EPROBE_DEFER ? -EAGAIN : ret;
}

void device_release_driver(struct device *dev)
{
	struct devres__dm_thread *t;
	int err = errno, held;
	struct devres__held h;

	if (!devres__dev_ok(dev, __func__))
		return;
	t = devres__dm_me();
	if (from_own_callback(t, dev, __func__) ||
	    devres__refuse_in_devres_cb(dev, __func__))
		return;
	held = devres__dev_hold(t, dev, __func__);
	if (held < 0)
		return;
	pthread_cleanup_push(put_held, dev);
	/* Refused when the wait would close a loop: WARNed, not unbound. */
	if (!dev_lock(t, dev, &h, __func__, "not unbound")) {
		pthread_cleanup_push(unlock_held, &h);
		release_driver_locked(dev, &h);
		pthread_cleanup_pop(1);
		retry_if_wanted(t);
	}
	pthread_cleanup_pop(held);
	errno = err; /* remove and the retried probes may change it */
}

bool device_is_bound(struct device *dev)
{
	bool bound;

	if (!devres__dev_ok(dev, __func__))
		return false;
	dm_lock();
	bound = dev->p && dev->p->bound;
	dm_unlock();
	return bound;
}
