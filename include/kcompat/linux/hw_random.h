/* SPDX-License-Identifier: MIT */
/*
 * A small hwrng framework: the kernel's registration API, devres-managed,
 * and reads for the program (what /dev/hwrng would do). It doubles as the
 * example of how to bring a framework over: a registration is a kmalloc()
 * record (so a forgotten unregister is a leak the ledger sees), the
 * registration is a fault point of its own (devres_should_fail()), and the
 * managed form is a devres node whose release unregisters.
 */
#ifndef KCOMPAT_LINUX_HW_RANDOM_H
#define KCOMPAT_LINUX_HW_RANDOM_H

#include <linux/kcompat_cancel.h>
#include <linux/kcompat_site.h>
#include <linux/kcompat_reg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <devres/fault.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/list.h>
#include <linux/slab.h>

struct hwrng;

/*
 * The framework's record of one registered rng, on kcompat_hwrngs, both
 * under the frameworks' kcompat_reg_lock (<linux/kcompat_reg.h>). The
 * driver's methods run without it, as the kernel's run without
 * rng_mutex: a method may call the framework (read another rng, register
 * or unregister one) and the lock is never held by a thread that waits
 * in a method or ends there. Instead the record counts the reads in
 * progress (owner.calls), which run one at a time, as the kernel's under
 * its reading_mutex (kcompat_reg_turn()); hwrng_unregister() takes it
 * off the list and waits for them, and the last put calls cleanup()
 * (kcompat_hwrng_cleanup_reg()) and frees it: the unregister's own, or
 * that of a read that unregistered its own rng. A registration of the
 * rng again waits for that cleanup().
 */
struct kcompat_hwrng_reg {
	struct kcompat_reg owner; /* first: the process, the calls */
	struct list_head node;
	struct hwrng *rng;
	bool ready; /* init() returned 0: found by reads */
};

struct hwrng {
	const char *name;
	int (*init)(struct hwrng *rng);
	void (*cleanup)(struct hwrng *rng);
	int (*data_present)(struct hwrng *rng, int wait);
	int (*data_read)(struct hwrng *rng, u32 *data);
	int (*read)(struct hwrng *rng, void *data, size_t max, bool wait);
	unsigned long priv;
	unsigned short quality;

	/* private: */
	void *reg; /* its struct kcompat_hwrng_reg while registered */
};

__attribute__((weak)) struct list_head kcompat_hwrngs = { &kcompat_hwrngs,
							  &kcompat_hwrngs };

/* The registration named @name, under kcompat_reg_lock. */
static inline struct kcompat_hwrng_reg *
kcompat_hwrng_find_locked(const char *name)
{
	struct kcompat_hwrng_reg *r;

	/* A parent's registration is not found in its child's lookups. */
	list_for_each_entry(r, &kcompat_hwrngs, node)
	{
		if (r->owner.pid == kcompat_lock_pid() &&
		    strcmp(r->rng->name, name) == 0)
			return r;
	}
	return NULL;
}

/*
 * A method of @rng, with cancellation off, as every callback the library
 * runs (<linux/kcompat_cancel.h>): a read cancelled in a sleep would end
 * with its record counted, and hwrng_unregister() would wait for ever.
 */
static inline void kcompat_hwrng_cleanup(struct hwrng *rng)
{
	int old;

	if (!rng->cleanup)
		return;
	old = kcompat_cancel_off();
	rng->cleanup(rng);
	kcompat_cancel_restore(old);
}

/* The last put of a registration taken back: cleanup() (then freed). */
static inline void kcompat_hwrng_cleanup_reg(struct kcompat_reg *owner)
{
	kcompat_hwrng_cleanup(((struct kcompat_hwrng_reg *)owner)->rng);
}

/*
 * A method of @rng that returned @ret outside its contract: a positive
 * init(), or a read method's negative value past -MAX_ERRNO.
 */
static inline int kcompat_hwrng_ret(const struct hwrng *rng, const char *func,
				    const char *method, int ret)
{
	char what[80];

	snprintf(what, sizeof(what), "hwrng '%s'", rng->name);
	return kcompat_method_ret(NULL, func, what, method, ret);
}

/*
 * hwrng_register(), and (@dev set) devm_hwrng_register()'s: the
 * registration is made ready and its owner @dev named, being added
 * (kcompat_reg_adding()), in one hold of the lock; *@ret_r is the record.
 */
static inline int kcompat_hwrng_register(struct hwrng *rng, struct device *dev,
					 struct kcompat_hwrng_reg **ret_r)
{
	struct kcompat_hwrng_reg *r;
	struct kcompat_reg *cur;
	int ret = 0, old;
	char what[80];
	bool twice;

	if (kcompat_bad(rng, "hwrng_register", "hwrng"))
		return -EINVAL;
	if (!rng->name || (!rng->read && !rng->data_read))
		return -EINVAL;
	if (devres_should_fail(NULL, "hwrng_register"))
		return -ENOMEM;
	r = (struct kcompat_hwrng_reg *)kcompat_reg_alloc(
		sizeof(*r), kcompat_hwrng_cleanup_reg, &rng->reg);
	if (!r)
		return -ENOMEM;
	r->rng = rng;
	/*
	 * The name is taken now; reads find it once init() said yes. The
	 * rng itself registered already (a parent's is not: the child may
	 * register its own) is a misuse; another rng of its name is not.
	 * An unregister of it in progress ends first, its cleanup() too.
	 */
	pthread_mutex_lock(&kcompat_reg_lock);
	ret = kcompat_reg_wait_gone(&rng->reg, "hwrng_register");
	if (ret) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		kfree(r);
		snprintf(what, sizeof(what), "hwrng '%s'", rng->name);
		kcompat_reg_gone_refused(dev, "hwrng_register", what, ret);
		return -EBUSY;
	}
	cur = (struct kcompat_reg *)rng->reg;
	twice = cur && cur->pid == kcompat_lock_pid();
	if (twice || kcompat_hwrng_find_locked(rng->name)) {
		ret = -EEXIST;
	} else {
		rng->reg = r;
		list_add_tail(&r->node, &kcompat_hwrngs);
	}
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (ret) {
		kfree(r);
		if (twice)
			devres_warn(dev,
				    dev ? "devm_hwrng_register"
					: "hwrng_register",
				    "hwrng '%s' is registered already: refused",
				    rng->name);
		return ret;
	}
	if (rng->init) {
		old = kcompat_cancel_off();
		ret = rng->init(rng);
		kcompat_cancel_restore(old);
		if (ret > 0 || ret < -MAX_ERRNO)
			ret = kcompat_hwrng_ret(rng, "hwrng_register", "init",
						ret);
	}
	pthread_mutex_lock(&kcompat_reg_lock);
	if (ret) {
		list_del(&r->node);
		rng->reg = NULL;
	} else {
		r->ready = true;
		if (dev)
			kcompat_reg_adding(&r->owner, dev);
	}
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (ret)
		kfree(r);
	else
		*ret_r = r;
	return ret;
}

/*
 * hwrng_register() - make @rng a source of randomness
 * Context: may sleep: an hwrng_unregister() of @rng in progress on
 * another thread ends first, its cleanup() too.
 * Return: 0; -EINVAL without a name or read method; -EEXIST for a name
 * taken, or (a WARN) for @rng registered already; -ENOMEM; what @rng's
 * init returned (-EINVAL, with a WARN, for a positive value or one past
 * -MAX_ERRNO); -EBUSY (a WARN) from a call its unregister in progress
 * waits for (its read(), its cleanup()), which would wait for ever.
 */
static inline int hwrng_register(struct hwrng *rng)
{
	struct kcompat_hwrng_reg *r;

	return kcompat_hwrng_register(rng, NULL, &r);
}

/*
 * Takes @rng off the list, waits for its reads in progress, calls its
 * cleanup(). Called from @rng's own read, which it would wait for (the
 * kernel deadlocks): one WARN, and the read's end finishes it.
 */
static inline void kcompat_hwrng_release(struct device *dev, void *res);
static inline int kcompat_hwrng_match(struct device *dev, void *res,
				      void *data);

/*
 * hwrng_unregister(), and (@by_hand false) the release of a registration
 * devm_hwrng_register() made; @func names the call in a WARN. By hand,
 * such a registration WARNs and its node goes (kcompat_reg_by_hand()).
 */
static inline void kcompat_hwrng_unregister(struct hwrng *rng, bool by_hand,
					    const char *func)
{
	struct kcompat_hwrng_reg *r;
	struct device *dev;
	char what[80];
	bool own, looped;

	if (kcompat_bad(rng, func, "hwrng"))
		return;
	pthread_mutex_lock(&kcompat_reg_lock);
	/* A devm_hwrng_register() putting its node on: found on, after. */
	r = (struct kcompat_hwrng_reg *)kcompat_reg_find_added(&rng->reg, func,
							       &looped);
	if (looped && by_hand) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		devres_warn(NULL, func,
			    "hwrng '%s' is being registered by "
			    "devm_hwrng_register() on a thread that waits for "
			    "this one (%s): not unregistered",
			    rng->name, devres_wait_loop());
		return;
	}
	if (r && r->owner.pid != kcompat_lock_pid()) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		(void)kcompat_reg_foreign(r, func, "hwrng");
		return;
	}
	if (r && (!r->ready || (r->owner.adding && by_hand))) {
		/*
		 * Its init() calls, or a log sink of this thread's
		 * devm_hwrng_register() while it adds the node: the
		 * registration decides. The node's release, from such a
		 * sink, takes it back.
		 */
		bool init = !r->ready;

		pthread_mutex_unlock(&kcompat_reg_lock);
		devres_warn(NULL, func,
			    "hwrng '%s' is being registered (%s): not "
			    "unregistered",
			    rng->name,
			    init ? "a call of its init()"
				 : "its node being added on this thread");
		return;
	}
	if (!r) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		snprintf(what, sizeof(what), "hwrng '%s'",
			 rng->name ? rng->name : "(null)");
		if (by_hand)
			kcompat_reg_none(NULL, func, what);
		return;
	}
	/* Off the list; rng->reg stays until its cleanup() ran. */
	list_del(&r->node);
	dev = by_hand ? r->owner.managed : NULL;
	r->owner.managed = NULL;
	/* Its reads in progress end first, unless this is one of them. */
	own = kcompat_reg_wait_calls(&r->owner, func);
	pthread_mutex_unlock(&kcompat_reg_lock);
	/* A release goes on: its node was on the device before it ran. */
	if (looped)
		devres_warn(NULL, func,
			    "hwrng '%s' is being registered by "
			    "devm_hwrng_register() on a thread that waits for "
			    "this one (%s): taken back without waiting",
			    rng->name, devres_wait_loop());
	if (dev)
		kcompat_reg_by_hand(dev, func, "hwrng", "devm_hwrng_register",
				    kcompat_hwrng_release, kcompat_hwrng_match,
				    rng);
	if (own && r->owner.looped)
		devres_warn(NULL, func,
			    "hwrng '%s': a read in progress waits for this "
			    "thread (%s): not waited for; its cleanup runs "
			    "when the read returns",
			    rng->name, devres_wait_loop());
	else if (own)
		devres_warn(NULL, func,
			    "hwrng '%s' unregistered from its own read: its "
			    "cleanup runs when the read returns",
			    rng->name);
	kcompat_reg_put(&r->owner);
}

static inline void hwrng_unregister(struct hwrng *rng)
{
	kcompat_hwrng_unregister(rng, true, "hwrng_unregister");
}

static inline void kcompat_hwrng_release(struct device *dev, void *res)
{
	(void)dev;
	kcompat_hwrng_unregister(*(struct hwrng **)res, false,
				 "hwrng_unregister");
}

/*
 * devm_hwrng_register() - hwrng_register(), taken back when @dev unbinds
 * Return: as hwrng_register(); -EDEADLK (a WARN, nothing registered) from
 * a match or for-each callback of @dev, where its node would be refused.
 */
static inline int devm_hwrng_register(struct device *dev, struct hwrng *rng)
{
	struct kcompat_hwrng_reg *r;
	struct hwrng **p;
	int ret;

	/* Before the registration: devres_add() of a bad device keeps none. */
	if (kcompat_bad(dev, "devm_hwrng_register", "device") ||
	    kcompat_bad(rng, "devm_hwrng_register", "hwrng"))
		return -EINVAL;
	/* Where its node would be refused, nothing is registered. */
	ret = devres_may_add(dev, "devm_hwrng_register");
	if (ret)
		return ret;
	p = devres_alloc(kcompat_hwrng_release, sizeof(struct hwrng *),
			 GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	*p = rng;
	/* Ready and owned by @dev in one hold; an unregister waits for this. */
	ret = kcompat_hwrng_register(rng, dev, &r);
	if (ret) {
		devres_free(p);
		return ret;
	}
	kcompat_reg_adding_join(&rng->reg);
	devres_add(dev, p);
	kcompat_reg_added(&rng->reg, &r->owner);
	return 0;
}

static inline int kcompat_hwrng_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(struct hwrng **)res == data;
}

/*
 * devm_hwrng_unregister() - unregister @rng, which devm_hwrng_register()
 * registered for @dev, now, and drop its node
 * Context: may sleep (waits for the reads in progress). An rng @dev has
 * no such node for (never registered, unregistered already, or
 * registered by hwrng_register()) is a misuse: one WARN, nothing done;
 * so is a call from a match or for-each callback of @dev.
 */
static inline void devm_hwrng_unregister(struct device *dev, struct hwrng *rng)
{
	if (kcompat_bad(dev, "devm_hwrng_unregister", "device") ||
	    kcompat_bad(rng, "devm_hwrng_unregister", "hwrng"))
		return;
	/* From a callback of @dev's devres: one WARN, the rng registered. */
	if (devres_may_add(dev, "devm_hwrng_unregister"))
		return;
	if (devres_release(dev, kcompat_hwrng_release, kcompat_hwrng_match,
			   rng))
		devres_warn(dev, "devm_hwrng_unregister",
			    "hwrng '%s' has no devm_hwrng_register() node on "
			    "the device: nothing done",
			    rng->name ? rng->name : "(null)");
}

/*
 * A read method that says it gave more bytes than it had room for: the
 * kernel's WARN_ON_ONCE() and the room's size. Left as it was, the count
 * made the caller read past the end of its buffer, and a data_read()
 * count past the end of the word it was given made the copy read past
 * the word.
 */
static inline int kcompat_hwrng_too_many(const struct hwrng *rng,
					 const char *method, int ret,
					 size_t room)
{
	devres_warn(NULL, "hwrng_read",
		    "hwrng '%s': its %s method returned %d bytes for %zu: "
		    "cut to %zu",
		    rng->name, method, ret, room, room);
	return (int)room;
}

/* A read of @rng, into @buf of @max bytes. */
struct kcompat_hwrng_read {
	struct hwrng *rng;
	void *buf;
	size_t max;
	bool wait;
};

/* The read methods of the rng of a read (kcompat_reg_call()'s method). */
static inline int kcompat_hwrng_call(void *arg)
{
	const struct kcompat_hwrng_read *rd =
		(const struct kcompat_hwrng_read *)arg;
	struct hwrng *rng = rd->rng;
	void *buf = rd->buf;
	size_t max = rd->max;
	bool wait = rd->wait;
	int ret;
	u32 word;

	if (rng->read) {
		ret = rng->read(rng, buf, max, wait);
		if (ret > 0 && (size_t)ret > max)
			ret = kcompat_hwrng_too_many(rng, "read", ret, max);
		else if (ret < -MAX_ERRNO)
			ret = kcompat_hwrng_ret(rng, "hwrng_read", "read", ret);
	} else {
		ret = rng->data_present ? rng->data_present(rng, wait) : 1;
		if (ret > 0) {
			ret = rng->data_read(rng, &word);
			if (ret > (int)sizeof(word))
				ret = kcompat_hwrng_too_many(rng, "data_read",
							     ret, sizeof(word));
			else if (ret < -MAX_ERRNO)
				ret = kcompat_hwrng_ret(rng, "hwrng_read",
							"data_read", ret);
			if (ret > 0) {
				ret = min_t(int, ret, (int)max);
				memcpy(buf, &word, (size_t)ret);
			}
		}
	}
	return ret;
}

/* The ready registration of the rng named @name, under kcompat_reg_lock. */
static inline struct kcompat_reg *kcompat_hwrng_ready(const void *name)
{
	struct kcompat_hwrng_reg *r =
		kcompat_hwrng_find_locked((const char *)name);

	return r && r->ready ? &r->owner : NULL;
}

/*
 * hwrng_read() - read from the registered rng called @name (what a reader
 * of /dev/hwrng gets): the bytes read, -ENODEV when there is none (or
 * its init() has not returned), -EDEADLK from a read method of that rng
 * (one WARN), or the driver's error. Reads of one rng run one at a time,
 * as the kernel's under its reading_mutex: a driver's read() keeps its
 * state unlocked. A read waits for the one in progress; one that would
 * wait for ever (that read's method waits, through the library's record
 * of waits, for this thread: two rngs whose reads read each other on two
 * threads) is refused with -EDEADLK and one WARN. The read is counted on
 * the registration: hwrng_unregister() on another thread waits for it,
 * and a read method that ends its thread is let go with one WARN
 * (kcompat_reg_call()).
 */
static inline int hwrng_read(const char *name, void *buf, size_t max, bool wait)
{
	struct kcompat_hwrng_read rd = { NULL, buf, max, wait };
	struct kcompat_hwrng_reg *r;
	struct kcompat_reg *owner;
	char what[80];
	int ret, old;

	if (kcompat_bad(name, "hwrng_read", "name") ||
	    kcompat_bad(buf, "hwrng_read", "buffer"))
		return -EINVAL;
	pthread_mutex_lock(&kcompat_reg_lock);
	/* One read of an rng at a time: the one running ends first. */
	ret = kcompat_reg_turn(kcompat_hwrng_ready, name, "hwrng_read", &owner);
	r = (struct kcompat_hwrng_reg *)owner;
	if (ret) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		snprintf(what, sizeof(what), "hwrng '%s'", name);
		kcompat_reg_refused(NULL, "hwrng_read", what);
		return ret;
	}
	if (!r) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		return -ENODEV;
	}
	if (kcompat_reg_in_call(&r->owner)) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		devres_warn(NULL, "hwrng_read",
			    "hwrng '%s' read from its own read method: refused",
			    name);
		return -EDEADLK;
	}
	r->owner.calls++;
	pthread_mutex_unlock(&kcompat_reg_lock);
	rd.rng = r->rng;
	old = kcompat_cancel_off();
	ret = kcompat_reg_call(&r->owner, "hwrng_read", kcompat_hwrng_call,
			       &rd);
	kcompat_cancel_restore(old);
	kcompat_reg_put(&r->owner);
	return ret;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define hwrng_register(rng) KCOMPAT_AT(hwrng_register, hwrng_register(rng))
#define devm_hwrng_register(dev, rng)                                          \
	KCOMPAT_AT(devm_hwrng_register, devm_hwrng_register(dev, rng))

#endif /* KCOMPAT_LINUX_HW_RANDOM_H */
