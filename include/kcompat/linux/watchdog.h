/* SPDX-License-Identifier: MIT */
/*
 * A small watchdog framework: the kernel's registration API,
 * devres-managed, and the calls a program makes where the kernel's
 * /dev/watchdog would (start, ping, stop). Built as hw_random.h is: a
 * registration is a kmalloc() record and a fault point of its own.
 */
#ifndef KCOMPAT_LINUX_WATCHDOG_H
#define KCOMPAT_LINUX_WATCHDOG_H

#include <linux/kcompat_reg.h>
#include <linux/kcompat_site.h>
#include <pthread.h>
#include <stdio.h>
#include <devres/fault.h>
#include <linux/bitops.h>
#include <linux/device.h>
#include <linux/slab.h>

#define WDIOF_OVERHEAT 0x0001
#define WDIOF_FANFAULT 0x0002
#define WDIOF_EXTERN1 0x0004
#define WDIOF_EXTERN2 0x0008
#define WDIOF_POWERUNDER 0x0010
#define WDIOF_CARDRESET 0x0020
#define WDIOF_POWEROVER 0x0040
#define WDIOF_SETTIMEOUT 0x0080
#define WDIOF_MAGICCLOSE 0x0100
#define WDIOF_PRETIMEOUT 0x0200
#define WDIOF_ALARMONLY 0x0400
#define WDIOF_KEEPALIVEPING 0x8000

/* Bits of struct watchdog_device's status. */
#define WDOG_ACTIVE 0
#define WDOG_NO_WAY_OUT 1
#define WDOG_STOP_ON_REBOOT 2
#define WDOG_HW_RUNNING 3
#define WDOG_STOP_ON_UNREGISTER 4

#define WATCHDOG_NOWAYOUT 0

struct watchdog_device;

struct watchdog_info {
	u32 options;
	u32 firmware_version;
	u8 identity[32];
};

struct watchdog_ops {
	struct module *owner;
	int (*start)(struct watchdog_device *wdd);
	int (*stop)(struct watchdog_device *wdd);
	int (*ping)(struct watchdog_device *wdd);
	unsigned int (*status)(struct watchdog_device *wdd);
	int (*set_timeout)(struct watchdog_device *wdd, unsigned int t);
	int (*set_pretimeout)(struct watchdog_device *wdd, unsigned int t);
	unsigned int (*get_timeleft)(struct watchdog_device *wdd);
	int (*restart)(struct watchdog_device *wdd, unsigned long action,
		       void *data);
	long (*ioctl)(struct watchdog_device *wdd, unsigned int cmd,
		      unsigned long arg);
};

struct watchdog_device {
	int id;
	struct device *parent;
	const struct watchdog_info *info;
	const struct watchdog_ops *ops;
	unsigned int bootstatus;
	unsigned int timeout;
	unsigned int pretimeout;
	unsigned int min_timeout;
	unsigned int max_timeout;
	unsigned int min_hw_heartbeat_ms;
	unsigned int max_hw_heartbeat_ms;
	void *driver_data;
	unsigned long status;

	/* private: */
	void *reg;
	unsigned long pretimeout_events; /* watchdog_notify_pretimeout() */
};

/*
 * The next id, taken by one atomic add: no lock, so none that a thread of
 * the parent could leave held in a child of fork().
 */
__attribute__((weak)) int kcompat_wdt_next_id;

/*
 * A watchdog no object can be at (NULL, the first page, an ERR_PTR()):
 * the kernel would oops; here one compare, one WARN, the call's error.
 */
static inline bool kcompat_wdt_bad(const struct watchdog_device *wdd,
				   const char *func)
{
	if (!devres_ptr_bad(wdd))
		return false;
	devres_warn_bad_arg(func, "watchdog device", wdd);
	return true;
}

static inline void watchdog_set_drvdata(struct watchdog_device *wdd, void *d)
{
	if (kcompat_wdt_bad(wdd, "watchdog_set_drvdata"))
		return;
	wdd->driver_data = d;
}

static inline void *watchdog_get_drvdata(struct watchdog_device *wdd)
{
	if (kcompat_wdt_bad(wdd, "watchdog_get_drvdata"))
		return NULL;
	return wdd->driver_data;
}

static inline bool watchdog_active(struct watchdog_device *wdd)
{
	if (kcompat_wdt_bad(wdd, "watchdog_active"))
		return false;
	return test_bit(WDOG_ACTIVE, &wdd->status);
}

static inline bool watchdog_hw_running(struct watchdog_device *wdd)
{
	if (kcompat_wdt_bad(wdd, "watchdog_hw_running"))
		return false;
	return test_bit(WDOG_HW_RUNNING, &wdd->status);
}

static inline void watchdog_set_nowayout(struct watchdog_device *wdd, bool on)
{
	if (kcompat_wdt_bad(wdd, "watchdog_set_nowayout"))
		return;
	if (on)
		set_bit(WDOG_NO_WAY_OUT, &wdd->status);
}

static inline void watchdog_stop_on_reboot(struct watchdog_device *wdd)
{
	if (kcompat_wdt_bad(wdd, "watchdog_stop_on_reboot"))
		return;
	set_bit(WDOG_STOP_ON_REBOOT, &wdd->status);
}

static inline void watchdog_stop_on_unregister(struct watchdog_device *wdd)
{
	if (kcompat_wdt_bad(wdd, "watchdog_stop_on_unregister"))
		return;
	set_bit(WDOG_STOP_ON_UNREGISTER, &wdd->status);
}

#define watchdog_set_restart_priority(wdd, prio) ((void)(wdd), (void)(prio))

/*
 * What the kernel's noop pretimeout governor does: say so, and count it
 * (in pretimeout_events, for the program). Only while @wdd is registered,
 * as the kernel's, which finds no governor otherwise and returns: once
 * unregistered, nothing is read but its record, and its parent, which
 * no reference holds then and may be gone, is not named. The
 * registration is counted as a call meanwhile, not waiting for a method
 * in progress (the kernel's takes only its pretimeout_lock): an
 * unregister on another thread waits for the line, so the parent it
 * names is there. Context: any, a handler too.
 */
static inline int kcompat_wdt_pretimeout_say(void *arg)
{
	struct watchdog_device *wdd = (struct watchdog_device *)arg;

	__atomic_add_fetch(&wdd->pretimeout_events, 1, __ATOMIC_RELAXED);
	if (wdd->parent)
		dev_info(wdd->parent, "watchdog%d: pretimeout event\n",
			 wdd->id);
	return 0;
}

static inline void watchdog_notify_pretimeout(struct watchdog_device *wdd)
{
	struct kcompat_reg *r;

	if (kcompat_wdt_bad(wdd, "watchdog_notify_pretimeout"))
		return;
	pthread_mutex_lock(&kcompat_reg_lock);
	r = kcompat_reg_at(&wdd->reg);
	if (r && r->pid != kcompat_lock_pid())
		r = NULL; /* the parent's, in a child of fork(): not ours */
	if (r)
		r->calls++;
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (!r)
		return;
	/* On this thread's list of calls: a log sink may unregister it. */
	(void)kcompat_reg_call(r, "watchdog_notify_pretimeout",
			       kcompat_wdt_pretimeout_say, wdd);
	kcompat_reg_put(r);
}

static inline bool kcompat_wdt_timeout_bad(struct watchdog_device *wdd,
					   unsigned int t)
{
	return t < wdd->min_timeout ||
	       (wdd->max_timeout && t > wdd->max_timeout);
}

/*
 * watchdog_init_timeout() - take @param (a module parameter) as the
 * timeout when it is valid; there is no device tree to read.
 * Return: 0, or -EINVAL when @param is set but out of range.
 */
static inline int watchdog_init_timeout(struct watchdog_device *wdd,
					unsigned int param, struct device *dev)
{
	if (kcompat_wdt_bad(wdd, "watchdog_init_timeout"))
		return -EINVAL;
	(void)dev;
	if (!param)
		return 0;
	if (kcompat_wdt_timeout_bad(wdd, param))
		return -EINVAL;
	wdd->timeout = param;
	return 0;
}

/*
 * What a registration of @wdd found under the lock: @cur its record (a
 * copy, read there: once the lock is let go, an unregister on another
 * thread may free the record), and @id its id then.
 */
struct kcompat_wdt_seen {
	struct kcompat_reg cur;
	bool busy;
	int id;
};

/*
 * Under kcompat_reg_lock, once an unregister of @wdd in progress ended
 * (kcompat_reg_wait_gone()): what is registered, in *@seen. That wait's
 * error (-EBUSY, -EDEADLK) when it would never end.
 */
static inline int kcompat_wdt_look(struct watchdog_device *wdd,
				   struct kcompat_wdt_seen *seen)
{
	int ret = kcompat_reg_wait_gone(&wdd->reg, "watchdog_register_device");

	seen->busy = wdd->reg != NULL;
	if (seen->busy)
		seen->cur = *(struct kcompat_reg *)wdd->reg;
	seen->id = wdd->id;
	return ret;
}

/* Whether @wdd may be registered, from @seen; one WARN when not. Unlocked. */
static inline int kcompat_wdt_busy(struct watchdog_device *wdd,
				   const struct kcompat_wdt_seen *seen, int ret)
{
	char what[32];

	if (ret) {
		snprintf(what, sizeof(what), "watchdog %d", seen->id);
		kcompat_reg_gone_refused(wdd->parent,
					 "watchdog_register_device", what, ret);
		return -EBUSY;
	}
	if (!seen->busy)
		return 0;
	if (kcompat_reg_foreign(&seen->cur, "watchdog_register_device",
				"watchdog"))
		return -EBUSY;
	devres_warn(wdd->parent, "watchdog_register_device",
		    "watchdog %d is registered already: refused", seen->id);
	return -EBUSY;
}

/*
 * watchdog_register_device(), and (@dev set) that of
 * devm_watchdog_register_device(): the record is set and its owner @dev
 * named, being added (kcompat_reg_adding()), in one hold of the lock.
 */
static inline int kcompat_wdt_register(struct watchdog_device *wdd,
				       struct device *dev,
				       struct kcompat_reg **ret_reg)
{
	struct kcompat_wdt_seen seen;
	struct kcompat_reg *reg;
	int ret;

	if (kcompat_wdt_bad(wdd, "watchdog_register_device"))
		return -EINVAL;
	if (!wdd->ops || !wdd->ops->start || !wdd->info)
		return -EINVAL;
	if (wdd->timeout && kcompat_wdt_timeout_bad(wdd, wdd->timeout))
		return -EINVAL;
	pthread_mutex_lock(&kcompat_reg_lock);
	ret = kcompat_wdt_look(wdd, &seen);
	pthread_mutex_unlock(&kcompat_reg_lock);
	ret = kcompat_wdt_busy(wdd, &seen, ret);
	if (ret)
		return ret;
	if (devres_should_fail(wdd->parent, "watchdog_register_device"))
		return -ENOMEM;
	reg = kcompat_reg_alloc(sizeof(*reg), NULL, &wdd->reg);
	if (!reg)
		return -ENOMEM;
	/* The kernel's watchdog device holds its parent: so does the record. */
	reg->parent = kcompat_reg_parent_get(wdd->parent, dev);
	pthread_mutex_lock(&kcompat_reg_lock);
	/* Registered by another thread meanwhile: as if it came first. */
	ret = kcompat_wdt_look(wdd, &seen);
	if (!ret && !seen.busy) {
		wdd->reg = reg;
		wdd->id = __atomic_fetch_add(&kcompat_wdt_next_id, 1,
					     __ATOMIC_RELAXED);
		if (dev)
			kcompat_reg_adding(reg, dev);
	}
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (ret || seen.busy) {
		ret = kcompat_wdt_busy(wdd, &seen, ret);
		kcompat_reg_parent_drop(reg);
		return ret < 0 ? ret : -EBUSY;
	}
	*ret_reg = reg;
	return 0;
}

/*
 * watchdog_register_device() - register @wdd
 * Context: may sleep: an unregister of @wdd in progress on another thread
 * ends first (its stop() on unregister too).
 * Return: 0; -EINVAL without ops, start or info, or with a timeout out of
 * range; -EBUSY when it is registered already (a WARN), or (a WARN) from
 * a call its unregister in progress waits for; -ENOMEM.
 */
static inline int watchdog_register_device(struct watchdog_device *wdd)
{
	struct kcompat_reg *reg;

	return kcompat_wdt_register(wdd, NULL, &reg);
}

/* A start(), stop() or ping() of @wdd that returned @ret. */
static inline int kcompat_wdt_ret(struct watchdog_device *wdd, const char *func,
				  const char *method, int ret)
{
	char what[32];

	if (ret <= 0 && ret >= -MAX_ERRNO)
		return ret;
	snprintf(what, sizeof(what), "watchdog %d", wdd->id);
	return kcompat_method_ret(wdd->parent, func, what, method, ret);
}

/* Unregistered, with WDOG_STOP_ON_UNREGISTER: stopped, if it runs. */
static inline int kcompat_wdt_stop_gone_call(void *arg)
{
	struct watchdog_device *wdd = (struct watchdog_device *)arg;

	if (watchdog_active(wdd) &&
	    test_bit(WDOG_STOP_ON_UNREGISTER, &wdd->status) && wdd->ops->stop &&
	    kcompat_wdt_ret(wdd, "watchdog_unregister_device", "stop",
			    wdd->ops->stop(wdd)) == 0)
		clear_bit(WDOG_ACTIVE, &wdd->status);
	return 0;
}

/*
 * The stop on unregister, as a call on the registration @r taken back
 * (the kernel's under wd_data->lock): after the calls in progress, before
 * a new registration (which waits for @r's last put).
 */
static inline void kcompat_wdt_stop_gone(struct watchdog_device *wdd,
					 struct kcompat_reg *r)
{
	(void)kcompat_reg_call(r, "watchdog_unregister_device",
			       kcompat_wdt_stop_gone_call, wdd);
}

/* The calls of a watchdog's methods (<linux/kcompat_reg.h>). */
static inline struct kcompat_reg *kcompat_wdt_get(struct watchdog_device *wdd,
						  const char *func)
{
	struct kcompat_reg *r = kcompat_reg_get(&wdd->reg, func, "watchdog");

	/*
	 * A method's call on its own watchdog: the kernel's waits for the
	 * wd_data->lock its caller holds, for ever. Refused, as a loop.
	 */
	if (!IS_ERR_OR_NULL(r) && kcompat_reg_in_call(r)) {
		kcompat_reg_put(r);
		devres_warn(NULL, func,
			    "watchdog %d: called from its own method, would "
			    "wait for itself: refused",
			    wdd->id);
		return (struct kcompat_reg *)ERR_PTR(-EDEADLK);
	}
	return r;
}

struct kcompat_wdt_method {
	struct watchdog_device *wdd;
	int (*method)(struct watchdog_device *wdd);
};

static inline int kcompat_wdt_thunk(void *arg)
{
	struct kcompat_wdt_method *m = (struct kcompat_wdt_method *)arg;

	return m->method(m->wdd);
}

static inline int kcompat_wdt_call(struct watchdog_device *wdd,
				   struct kcompat_reg *r, const char *func,
				   int (*method)(struct watchdog_device *))
{
	struct kcompat_wdt_method m = { wdd, method };

	return kcompat_reg_call(r, func, kcompat_wdt_thunk, &m);
}

static inline void kcompat_wdt_release(struct device *dev, void *res);

static inline int kcompat_wdt_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(struct watchdog_device **)res == data;
}

/*
 * watchdog_unregister_device(), and (@by_hand false) the release of a
 * registration devm_watchdog_register_device() made. By hand, such a
 * registration WARNs and its node goes (kcompat_reg_by_hand()).
 */
static inline void kcompat_wdt_unregister(struct watchdog_device *wdd,
					  bool by_hand)
{
	struct kcompat_reg *reg, seen = { 0 };
	struct device *dev;
	char what[32];
	bool own, looped;
	int id;

	if (kcompat_wdt_bad(wdd, "watchdog_unregister_device"))
		return;
	pthread_mutex_lock(&kcompat_reg_lock);
	/* A devm_ registration putting its node on: found on, after. */
	reg = kcompat_reg_find_added(&wdd->reg, "watchdog_unregister_device",
				     &looped);
	/* Read here: a register on another thread sets it under the lock. */
	id = wdd->id;
	if (looped && by_hand) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		devres_warn(wdd->parent, "watchdog_unregister_device",
			    "watchdog %d is being registered by "
			    "devm_watchdog_register_device() on a thread that "
			    "waits for this one (%s): not unregistered",
			    id, devres_wait_loop());
		return;
	}
	/* The node's release, from a log sink of the adding thread, goes on. */
	if (!reg || reg->pid != kcompat_lock_pid() ||
	    (reg->adding && by_hand)) {
		/* A copy: unlocked, the record may go. */
		if (reg)
			seen = *reg;
		pthread_mutex_unlock(&kcompat_reg_lock);
		snprintf(what, sizeof(what), "watchdog %d", id);
		/*
		 * Not registered: no reference holds wdd->parent, which
		 * may be gone (a remove run twice): not read.
		 */
		if (!reg && by_hand)
			kcompat_reg_none(NULL, "watchdog_unregister_device",
					 what);
		else if (reg && seen.adding && seen.pid == kcompat_lock_pid())
			devres_warn(wdd->parent, "watchdog_unregister_device",
				    "watchdog %d is being registered by "
				    "devm_watchdog_register_device() on this "
				    "thread: not unregistered",
				    id);
		else if (reg)
			(void)kcompat_reg_foreign(&seen,
						  "watchdog_unregister_device",
						  "watchdog");
		return;
	}
	dev = reg->managed;
	reg->managed = NULL;
	/*
	 * Its start(), stop() or ping() running: ended first, unless ours.
	 * wdd->reg stays, taken back, until the last put: a register of
	 * @wdd waits for the stop below.
	 */
	own = kcompat_reg_wait_calls(reg, "watchdog_unregister_device");
	pthread_mutex_unlock(&kcompat_reg_lock);
	/* A release goes on: its node was on the device before it ran. */
	if (looped)
		devres_warn(wdd->parent, "watchdog_unregister_device",
			    "watchdog %d is being registered by "
			    "devm_watchdog_register_device() on a thread that "
			    "waits for this one (%s): taken back without "
			    "waiting",
			    id, devres_wait_loop());
	if (by_hand && dev)
		kcompat_reg_by_hand(dev, "watchdog_unregister_device",
				    "watchdog", "devm_watchdog_register_device",
				    kcompat_wdt_release, kcompat_wdt_match,
				    wdd);
	if (own && reg->looped)
		devres_warn(wdd->parent, "watchdog_unregister_device",
			    "watchdog %d: a method call in progress waits for "
			    "this thread (%s): not waited for; its record goes "
			    "when the method returns",
			    id, devres_wait_loop());
	else if (own)
		devres_warn(wdd->parent, "watchdog_unregister_device",
			    "watchdog %d unregistered from its own method: "
			    "its record goes when the method returns",
			    id);
	kcompat_wdt_stop_gone(wdd, reg);
	kcompat_reg_put(reg);
}

static inline void watchdog_unregister_device(struct watchdog_device *wdd)
{
	kcompat_wdt_unregister(wdd, true);
}

static inline void kcompat_wdt_release(struct device *dev, void *res)
{
	(void)dev;
	kcompat_wdt_unregister(*(struct watchdog_device **)res, false);
}

/*
 * devm_watchdog_register_device() - watchdog_register_device(), taken
 * back when @dev unbinds. Return: as watchdog_register_device(); -EINVAL
 * for a bad @dev; -EDEADLK (a WARN, nothing registered) from a match or
 * for-each callback of @dev, where its node would be refused.
 */
static inline int devm_watchdog_register_device(struct device *dev,
						struct watchdog_device *wdd)
{
	struct watchdog_device **p;
	struct kcompat_reg *reg;
	int ret;

	/* Before the node: one WARN, nothing to take back. */
	if (kcompat_wdt_bad(wdd, "devm_watchdog_register_device"))
		return -EINVAL;
	if (devres_ptr_bad(dev)) {
		devres_warn_bad_arg("devm_watchdog_register_device", "device",
				    dev);
		return -EINVAL;
	}
	/* Where its node would be refused, nothing is registered. */
	ret = devres_may_add(dev, "devm_watchdog_register_device");
	if (ret)
		return ret;
	p = devres_alloc(kcompat_wdt_release, sizeof(struct watchdog_device *),
			 GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	*p = wdd;
	/* Set and owned by @dev in one hold; an unregister waits for this. */
	ret = kcompat_wdt_register(wdd, dev, &reg);
	if (ret) {
		devres_free(p);
		return ret;
	}
	kcompat_reg_adding_join(&wdd->reg);
	devres_add(dev, p);
	kcompat_reg_added(&wdd->reg, reg);
	return 0;
}

/*
 * What opening /dev/watchdogN does: start it. The start(), ping() and
 * stop() below return 0 or a negative errno; any other value is taken as
 * -EINVAL with a WARN (kcompat_method_ret()). They find the registration
 * under the lock and run one at a time on it, as the kernel's under
 * wd_data->lock (a method's own nested call excepted); an unregister on
 * another thread waits for the one running, and those after it find
 * nothing: -ENODEV. A call whose turn would never come (the method
 * running waits, through the library's record of waits, for this thread:
 * two watchdogs whose methods call each other's on two threads) is
 * refused: -EDEADLK, one WARN. Context: may sleep.
 */
static inline int watchdog_dev_start(struct watchdog_device *wdd)
{
	struct kcompat_reg *r;
	int ret = 0;

	if (kcompat_wdt_bad(wdd, "watchdog_dev_start"))
		return -EINVAL;
	r = kcompat_wdt_get(wdd, "watchdog_dev_start");
	if (IS_ERR_OR_NULL(r))
		return r ? (int)PTR_ERR(r) : -ENODEV;
	if (!watchdog_active(wdd)) {
		ret = kcompat_wdt_ret(wdd, "watchdog_dev_start", "start",
				      kcompat_wdt_call(wdd, r,
						       "watchdog_dev_start",
						       wdd->ops->start));
		if (!ret)
			set_bit(WDOG_ACTIVE, &wdd->status);
		/* Its start() unregistered it (one WARN): as if after. */
		if (!ret && r->orphan)
			kcompat_wdt_stop_gone(wdd, r);
	}
	kcompat_reg_put(r);
	return ret;
}

/* What a write to /dev/watchdogN does: ping (or restart) it. */
static inline int watchdog_dev_ping(struct watchdog_device *wdd)
{
	struct kcompat_reg *r;
	int ret = -ENODEV;

	if (kcompat_wdt_bad(wdd, "watchdog_dev_ping"))
		return -EINVAL;
	r = kcompat_wdt_get(wdd, "watchdog_dev_ping");
	if (IS_ERR_OR_NULL(r))
		return r ? (int)PTR_ERR(r) : -ENODEV;
	if (watchdog_active(wdd) && wdd->ops->ping)
		ret = kcompat_wdt_ret(wdd, "watchdog_dev_ping", "ping",
				      kcompat_wdt_call(wdd, r,
						       "watchdog_dev_ping",
						       wdd->ops->ping));
	else if (watchdog_active(wdd))
		ret = kcompat_wdt_ret(wdd, "watchdog_dev_ping", "start",
				      kcompat_wdt_call(wdd, r,
						       "watchdog_dev_ping",
						       wdd->ops->start));
	kcompat_reg_put(r);
	return ret;
}

/* What the magic close does: stop it, unless it may never stop. */
static inline int watchdog_dev_stop(struct watchdog_device *wdd)
{
	struct kcompat_reg *r;
	int ret = -EBUSY;

	if (kcompat_wdt_bad(wdd, "watchdog_dev_stop"))
		return -EINVAL;
	r = kcompat_wdt_get(wdd, "watchdog_dev_stop");
	if (IS_ERR_OR_NULL(r))
		return r ? (int)PTR_ERR(r) : -ENODEV;
	if (!test_bit(WDOG_NO_WAY_OUT, &wdd->status) && wdd->ops->stop) {
		ret = kcompat_wdt_ret(wdd, "watchdog_dev_stop", "stop",
				      kcompat_wdt_call(wdd, r,
						       "watchdog_dev_stop",
						       wdd->ops->stop));
		if (!ret)
			clear_bit(WDOG_ACTIVE, &wdd->status);
	}
	kcompat_reg_put(r);
	return ret;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define watchdog_register_device(wdd)                                          \
	KCOMPAT_AT(watchdog_register_device, watchdog_register_device(wdd))
#define devm_watchdog_register_device(dev, wdd)                                \
	KCOMPAT_AT(devm_watchdog_register_device,                              \
		   devm_watchdog_register_device(dev, wdd))

#endif /* KCOMPAT_LINUX_WATCHDOG_H */
