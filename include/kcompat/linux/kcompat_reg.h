/* SPDX-License-Identifier: MIT */
/*
 * The frameworks' registries (hwrng, watchdog, rtc): one lock for their
 * lists and records, one fork policy, records released by their last
 * user, and the driver's method calls counted, so that a take-back waits
 * for the calls in progress.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_REG_H
#define KCOMPAT_LINUX_KCOMPAT_REG_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/types.h>
#include <linux/kcompat_cancel.h>
#include <linux/kcompat_check.h>
#include <linux/kcompat_lock.h>
#include <linux/slab.h>

/*
 * A framework's registration record (hwrng, watchdog, rtc) begins with
 * the process that made it. In a child of fork(), a registration of the
 * parent is the parent's, as its devices are (docs/fork.md): a call that
 * would run the driver's method on it, or take it back, WARNs once and
 * does nothing; a lookup skips it without a word.
 */
struct kcompat_reg {
	pid_t pid;
	/*
	 * The device whose devres node takes the registration back, when a
	 * devm_ call made it; NULL once taken back, or when made by hand.
	 */
	struct device *managed;
	/*
	 * A devm_ call is putting its node on @managed (kcompat_reg_adding()):
	 * a take-back waits for it (kcompat_reg_being_added()).
	 */
	bool adding;
	pthread_t adder;
	/*
	 * The users of the record: the calls of the driver's methods running
	 * on it (a watchdog's start(), an rtc's read_time(), an hwrng's
	 * read()), and its take-back while it finishes. A take-back waits
	 * for the calls (kcompat_reg_wait_calls()). @gone: taken back, the
	 * last kcompat_reg_put() releases it. @orphan: taken back from one
	 * of its own methods, which it would wait for: the end of that call
	 * releases it.
	 */
	unsigned int calls;
	bool gone;
	bool orphan;
	/*
	 * Taken back as an orphan because a call in progress waits, through
	 * the library's record of waits, for the take-back's thread: the
	 * wait would never end (devres_wait_loop() says why).
	 */
	bool looped;
	/*
	 * What the last put runs before the record goes (NULL: nothing):
	 * the driver's method that ends a registration (an hwrng's
	 * cleanup()), on this registration's list of calls.
	 */
	void (*release)(struct kcompat_reg *r);
	/*
	 * The object's pointer to its record (an rng's, a watchdog's, an
	 * rtc's reg): set at registration, still set once taken back
	 * (@gone), until the last put has run @release and clears it. A new
	 * registration of the object waits for that (kcompat_reg_wait_gone()):
	 * the take-back's work on the object (a watchdog's stop(), an rng's
	 * cleanup()) then never runs after the next registration's.
	 */
	void **slot;
	/*
	 * An orphan's object, by the address of its pointer (@slot before
	 * it was cleared), compared, never read: a registration of that
	 * object waits for the orphan's release all the same (@orphan_next
	 * links the orphans not yet released, kcompat_reg_orphans).
	 */
	void *const *orphan_key;
	struct kcompat_reg *orphan_next;
	/*
	 * A reference on the parent device the registration names (a
	 * watchdog's parent), taken at registration and dropped by the last
	 * put, after the record is freed, as the kernel's device_add() holds
	 * its parent: the parent is not released while the registration
	 * lives, so its WARNs and lookups never read a freed device, nor one
	 * allocated since in its memory. NULL: none held (no parent, or the
	 * parent is the device whose devres node takes the registration back,
	 * which that node's release precedes).
	 */
	struct device *parent;
};

/*
 * A new registration record of @size bytes (at least a struct
 * kcompat_reg, which begins it), zeroed, this process's, for the object
 * whose pointer to it is *@slot; its last put runs @release (NULL:
 * nothing), clears *@slot and frees it. NULL when out of memory.
 */
static inline struct kcompat_reg *
kcompat_reg_alloc(size_t size, void (*release)(struct kcompat_reg *r),
		  void **slot)
{
	struct kcompat_reg *r = (struct kcompat_reg *)kzalloc(size, GFP_KERNEL);

	if (!r)
		return NULL;
	r->pid = kcompat_lock_pid();
	r->release = release;
	r->slot = slot;
	return r;
}

/*
 * The reference a registration record holds on @parent, the parent
 * device its object names (a watchdog's), unless that is @owner, the
 * device whose devres node takes the registration back: NULL when none
 * is taken (no parent, a bad pointer, or @owner). Dropped by
 * kcompat_reg_put() after the record's release, or by
 * kcompat_reg_parent_drop() for a record never made visible.
 */
static inline struct device *kcompat_reg_parent_get(struct device *parent,
						    const struct device *owner)
{
	if (!parent || parent == owner || devres_ptr_bad(parent))
		return NULL;
	return get_device(parent);
}

/* A record never made visible: freed, its parent's reference dropped. */
static inline void kcompat_reg_parent_drop(struct kcompat_reg *r)
{
	struct device *parent = r->parent;

	kfree(r);
	put_device(parent);
}

/* Whether @reg is another process's: one WARN naming @what and @func. */
static inline bool kcompat_reg_foreign(const void *reg, const char *func,
				       const char *what)
{
	pid_t pid = reg ? ((const struct kcompat_reg *)reg)->pid : 0;

	if (!pid || pid == kcompat_lock_pid())
		return false;
	devres_warn(NULL, func, "%s belongs to process %d: nothing done", what,
		    (int)pid);
	return true;
}

/*
 * The registrations of the hwrng, watchdog and rtc frameworks (and the
 * hwrng list), and the marks of devm_mutex_init() (<linux/mutex.h>): a
 * framework's pointer to its record is set and cleared under it, so that
 * a devm_ registration names its owner in the hold that makes it
 * (kcompat_reg_adding()), and the calls of the driver's methods are
 * counted under it. One lock, one fork policy: across fork() it is held
 * (the child's copy of a record whole), and the child's is free.
 */
__attribute__((weak))
pthread_mutex_t kcompat_reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* A registration's node went on its device, or a call on it ended. */
__attribute__((weak))
pthread_cond_t kcompat_reg_cond = PTHREAD_COND_INITIALIZER;
/* The orphans whose release has not run yet, under kcompat_reg_lock. */
__attribute__((weak)) struct kcompat_reg *kcompat_reg_orphans;

static inline void kcompat_reg_prepare(void)
{
	pthread_mutex_lock(&kcompat_reg_lock);
}

static inline void kcompat_reg_parent(void)
{
	pthread_mutex_unlock(&kcompat_reg_lock);
}

static inline void kcompat_reg_child(void)
{
	pthread_cond_init(&kcompat_reg_cond, NULL);
	pthread_mutex_unlock(&kcompat_reg_lock);
}

__attribute__((weak)) pthread_once_t kcompat_reg_once = PTHREAD_ONCE_INIT;

static inline void kcompat_reg_atfork(void)
{
	(void)pthread_atfork(kcompat_reg_prepare, kcompat_reg_parent,
			     kcompat_reg_child);
}

/* At start, before any thread: each file that includes this asks once. */
__attribute__((constructor)) static void kcompat_reg_ctor(void)
{
	pthread_once(&kcompat_reg_once, kcompat_reg_atfork);
}

/* The registrations whose method this thread runs, innermost first. */
struct kcompat_call_frame {
	const struct kcompat_reg *r;
	const struct kcompat_call_frame *outer;
	const char *func; /* the call that runs the method */
};
__attribute__((
	weak)) __thread const struct kcompat_call_frame *kcompat_call_cur;

static inline bool kcompat_reg_in_call(const struct kcompat_reg *r)
{
	for (const struct kcompat_call_frame *f = kcompat_call_cur; f;
	     f = f->outer)
		if (f->r == r)
			return true;
	return false;
}

/*
 * The registration *@key refers to, under kcompat_reg_lock: none once
 * taken back (kcompat_reg_get()'s lookup).
 */
static inline struct kcompat_reg *kcompat_reg_at(const void *key)
{
	struct kcompat_reg *r = *(struct kcompat_reg *const *)key;

	return r && r->pid == kcompat_lock_pid() && r->gone ? NULL : r;
}

/*
 * One sleep of a wait for @r, on the record of waits as a wait for the
 * set @r (begun when @r is not *@set, the set named so far, which it
 * ends): 0 after the sleep, or -EDEADLK, not sleeping, when the wait
 * would close a loop (*@set then 0). Under kcompat_reg_lock.
 */
static inline int kcompat_reg_sleep(struct kcompat_reg *r, uintptr_t *set,
				    const char *func)
{
	if ((uintptr_t)r != *set) {
		if (*set)
			devres_wait_end();
		*set = (uintptr_t)r;
		if (devres_wait_begin_set(*set, func)) {
			*set = 0;
			return -EDEADLK;
		}
	}
	pthread_cond_wait(&kcompat_reg_cond, &kcompat_reg_lock);
	return 0;
}

/*
 * A call of the driver's methods waits for its turn, as the kernel's
 * take the device's lock (an rng's reading_mutex, a watchdog's
 * wd_data->lock, an rtc's ops_lock): under kcompat_reg_lock, until no
 * call runs on the registration @find(@key) finds (found again after each
 * wait), unless this thread runs one (a method's own nested call; the
 * caller decides). The wait is in the library's record of waits, for the
 * threads in the calls (kcompat_reg_call()): a method of A whose call of
 * B waits while a method of B calls A, on another thread, would wait for
 * ever. Then -EDEADLK, the lock still held (the caller unlocks and
 * WARNs, kcompat_reg_refused()); else 0, *@ret_r the registration (NULL:
 * none), not yet counted.
 */
static inline int kcompat_reg_turn(struct kcompat_reg *(*find)(const void *),
				   const void *key, const char *func,
				   struct kcompat_reg **ret_r)
{
	struct kcompat_reg *r;
	uintptr_t set = 0;
	int ret = 0, old = kcompat_cancel_off();

	while ((r = find(key)) && r->pid == kcompat_lock_pid() && r->calls &&
	       !kcompat_reg_in_call(r)) {
		ret = kcompat_reg_sleep(r, &set, func);
		if (ret)
			break;
	}
	if (set)
		devres_wait_end();
	kcompat_cancel_restore(old);
	*ret_r = r;
	return ret;
}

/* A call kcompat_reg_turn() refused: one WARN naming @what and @func. */
static inline void kcompat_reg_refused(struct device *dev, const char *func,
				       const char *what)
{
	devres_warn(dev, func,
		    "%s: a call in progress on it waits for this thread "
		    "(%s): refused",
		    what, devres_wait_loop());
}

/*
 * The registration *@regp (a framework's record) for a call of @func
 * that runs a method of the driver, found under kcompat_reg_lock once the
 * call running on it ended (kcompat_reg_turn()), and counted: a
 * take-back waits for it. NULL when there is none (or it was taken back),
 * or (one WARN naming @what) it is another process's;
 * ERR_PTR(-EDEADLK), with one WARN, when its turn would never come.
 * kcompat_reg_put() after.
 */
static inline struct kcompat_reg *
kcompat_reg_get(void *const *regp, const char *func, const char *what)
{
	struct kcompat_reg *r, foreign;
	int ret;

	pthread_mutex_lock(&kcompat_reg_lock);
	ret = kcompat_reg_turn(kcompat_reg_at, regp, func, &r);
	if (ret) {
		pthread_mutex_unlock(&kcompat_reg_lock);
		kcompat_reg_refused(NULL, func, what);
		return (struct kcompat_reg *)ERR_PTR(ret);
	}
	if (r && r->pid != kcompat_lock_pid()) {
		foreign = *r;
		pthread_mutex_unlock(&kcompat_reg_lock);
		(void)kcompat_reg_foreign(&foreign, func, what);
		return NULL;
	}
	if (r)
		r->calls++;
	pthread_mutex_unlock(&kcompat_reg_lock);
	return r;
}

/*
 * @r's @release (an hwrng's cleanup()) on this thread's list of calls of
 * @r: a method that registers the object again is refused
 * (kcompat_reg_wait_gone()), and a wait for the calls of @r waits for it.
 */
static inline void kcompat_reg_run_release(struct kcompat_reg *r)
{
	struct kcompat_call_frame f = { r, kcompat_call_cur, "release" };

	kcompat_call_cur = &f;
	devres_wait_join((uintptr_t)r);
	r->release(r);
	devres_wait_leave();
	kcompat_call_cur = f.outer;
}

/*
 * A user of @r let go; the last one of a record taken back runs its
 * release, then takes it off its object (a registration waiting for that
 * goes on) and frees it.
 */
static inline void kcompat_reg_put(struct kcompat_reg *r)
{
	struct device *parent;
	bool last;

	pthread_mutex_lock(&kcompat_reg_lock);
	last = --r->calls == 0 && r->gone;
	pthread_cond_broadcast(&kcompat_reg_cond);
	pthread_mutex_unlock(&kcompat_reg_lock);
	if (!last)
		return;
	if (r->release)
		kcompat_reg_run_release(r);
	pthread_mutex_lock(&kcompat_reg_lock);
	if (r->slot && *r->slot == r)
		*r->slot = NULL;
	for (struct kcompat_reg **pp = &kcompat_reg_orphans; *pp;
	     pp = &(*pp)->orphan_next) {
		if (*pp == r) {
			*pp = r->orphan_next;
			break;
		}
	}
	pthread_cond_broadcast(&kcompat_reg_cond);
	pthread_mutex_unlock(&kcompat_reg_lock);
	parent = r->parent;
	kfree(r);
	/* Last: it may release the parent, and with it the object. */
	put_device(parent);
}

/*
 * The record of the object whose pointer to its record is *@regp whose
 * take-back is in progress: the one it points to, taken back, or an
 * orphan of it (no longer pointed to) not yet released. Under
 * kcompat_reg_lock.
 */
static inline struct kcompat_reg *kcompat_reg_going(void *const *regp)
{
	struct kcompat_reg *r = (struct kcompat_reg *)*regp;

	if (r && r->pid == kcompat_lock_pid() && r->gone)
		return r;
	for (r = kcompat_reg_orphans; r; r = r->orphan_next)
		if (r->orphan_key == regp && r->pid == kcompat_lock_pid())
			return r;
	return NULL;
}

/*
 * Before a registration of the object whose pointer to its record is
 * *@regp, under kcompat_reg_lock: waits until a take-back of it in
 * progress is over (its record released, kcompat_reg_put()), so that
 * the take-back's work on the object (a stop(), a cleanup()) runs before
 * the new registration's, as in one order of the two calls. The wait is
 * in the record of waits, for the threads in its calls and its release;
 * from one of them (-EBUSY), or closing a loop of waits (-EDEADLK), it
 * would never end: the caller unlocks and WARNs
 * (kcompat_reg_gone_refused()). Else 0.
 */
static inline int kcompat_reg_wait_gone(void *const *regp, const char *func)
{
	struct kcompat_reg *r;
	uintptr_t set = 0;
	int ret = 0, old = kcompat_cancel_off();

	while ((r = kcompat_reg_going(regp))) {
		if (kcompat_reg_in_call(r)) {
			ret = -EBUSY;
			break;
		}
		ret = kcompat_reg_sleep(r, &set, func);
		if (ret)
			break;
	}
	if (set)
		devres_wait_end();
	kcompat_cancel_restore(old);
	return ret;
}

/*
 * A registration kcompat_reg_wait_gone() refused with @ret: one WARN
 * naming @what and @func, and why.
 */
static inline void kcompat_reg_gone_refused(struct device *dev,
					    const char *func, const char *what,
					    int ret)
{
	if (ret == -EDEADLK)
		devres_warn(dev, func,
			    "%s is being taken back by a call that waits for "
			    "this thread (%s): refused",
			    what, devres_wait_loop());
	else
		devres_warn(dev, func,
			    "%s is being taken back, from a call of it on "
			    "this thread: refused",
			    what);
}

/*
 * A take-back, under kcompat_reg_lock, of @r, which it marks taken back
 * (@gone: no call finds it now, the object's pointer stays until the
 * last put): waits for the calls running on it, unless this thread runs
 * one (a method taking its own registration back), or one of them
 * waits, through the library's record of waits, for this thread
 * (@r->looped; @func names the take-back in that record): then @r is an
 * orphan, and true is returned. Either way @r is counted for the
 * take-back's own use: kcompat_reg_put() once done with it, and the last
 * put (this one, or the end of the method's call) releases it.
 */
static inline bool kcompat_reg_wait_calls(struct kcompat_reg *r,
					  const char *func)
{
	bool own = kcompat_reg_in_call(r);
	int old = kcompat_cancel_off();
	int rec = -1;

	r->gone = true;
	r->calls++;
	/*
	 * The threads in its calls are members of its set of waits
	 * (kcompat_reg_call()): one that waits for this thread would keep
	 * it waiting for ever. Then an orphan too: the caller says why.
	 */
	if (!own && r->calls > 1) {
		rec = devres_wait_begin_set((uintptr_t)r, func);
		r->looped = rec != 0;
		own = r->looped;
	}
	while (!own && r->calls > 1)
		pthread_cond_wait(&kcompat_reg_cond, &kcompat_reg_lock);
	if (!rec)
		devres_wait_end();
	kcompat_cancel_restore(old);
	r->orphan = own;
	/*
	 * An orphan's last put comes at the end of a method, whose object
	 * may be freed by then (a method that released its own device):
	 * off its object now. A registration of the object still waits for
	 * its release (the orphans' list): else the new registration's
	 * init() ran before the orphan's cleanup().
	 */
	if (own && r->slot && *r->slot == r)
		*r->slot = NULL;
	if (own && r->slot) {
		r->orphan_key = r->slot;
		r->orphan_next = kcompat_reg_orphans;
		kcompat_reg_orphans = r;
	}
	if (own)
		r->slot = NULL;
	return own;
}

/* A method that ended its thread (pthread_exit(), a cancel): let go. */
static inline void kcompat_call_ended(void *arg)
{
	const struct kcompat_call_frame *f =
		(const struct kcompat_call_frame *)arg;

	devres_warn(NULL, f->func,
		    "a driver's method ended the thread it ran in: the call "
		    "is let go");
	devres_wait_leave();
	kcompat_call_cur = f->outer;
	kcompat_reg_put((struct kcompat_reg *)f->r);
}

/*
 * @method(@arg), a method of the registration @r (kcompat_reg_get()) run
 * by @func, on this thread's list of calls, its end caught.
 */
static inline int kcompat_reg_call(struct kcompat_reg *r, const char *func,
				   int (*method)(void *), void *arg)
{
	struct kcompat_call_frame f = { r, kcompat_call_cur, func };
	int ret;

	kcompat_call_cur = &f;
	/* A take-back waits for this thread while the method runs. */
	devres_wait_join((uintptr_t)r);
	pthread_cleanup_push(kcompat_call_ended, (void *)&f);
	ret = method(arg);
	pthread_cleanup_pop(0);
	devres_wait_leave();
	kcompat_call_cur = f.outer;
	return ret;
}

/*
 * A registration made by a devm_ call is findable by a take-back by hand
 * only with its node on the device, or the take-back leaves the node for
 * a registration no longer there, which the device's release then takes
 * back again (or takes a later one of the same object). The devm_ call
 * names @dev the owner in the hold of the framework's lock that makes the
 * registration findable, and marks it being added; it then puts the node
 * on @dev unlocked (devres_add() may log, and a log sink may call the
 * framework) and clears the mark under the lock, if the registration is
 * still there. A take-back, by hand or the release's, that finds the mark
 * waits for it under that lock, so it finds the node on the device: the
 * effect of one hold. The thread adding it does not wait for itself (a
 * log sink of its devres_add()): by hand it is refused with a WARN, and
 * the release (the node is on the device when the ADD line is made) takes
 * the registration back, which the devm_ call then finds gone.
 */
static inline void kcompat_reg_adding(struct kcompat_reg *reg,
				      struct device *dev)
{
	reg->managed = dev;
	reg->adder = pthread_self();
	reg->adding = true;
}

/*
 * Whether a take-back must wait (under the framework's lock, cancellation
 * off, re-reading the registration after each wait) before it looks at
 * @reg: another thread is putting its node on the device.
 */
static inline bool kcompat_reg_being_added(const struct kcompat_reg *reg)
{
	return reg && reg->adding && !pthread_equal(reg->adder, pthread_self());
}

/*
 * The registration *@regp of this process, under kcompat_reg_lock, once
 * no other thread is putting its devm_ node on (kcompat_reg_adding()):
 * a take-back then finds the node on the device. NULL when it is taken
 * back already (@gone). Another process's is returned at once (not
 * waited for: nobody clears its mark in a child).
 *
 * The wait is on the record of waits, for the set @regp, whose member
 * the adding thread is while it puts the node on (kcompat_reg_adding_
 * join()): a log sink of its devres_add() that waits for this thread
 * would never return. Then *@ret_refused, and the registration is
 * returned still being added: the caller (@func) WARNs with
 * devres_wait_loop().
 */
static inline struct kcompat_reg *
kcompat_reg_find_added(void *const *regp, const char *func, bool *ret_refused)
{
	struct kcompat_reg *r;
	int old = kcompat_cancel_off();
	bool waiting = false;

	*ret_refused = false;
	while ((r = (struct kcompat_reg *)*regp) &&
	       r->pid == kcompat_lock_pid() && kcompat_reg_being_added(r)) {
		if (!waiting && devres_wait_begin_set((uintptr_t)regp, func)) {
			*ret_refused = true;
			break;
		}
		waiting = true;
		pthread_cond_wait(&kcompat_reg_cond, &kcompat_reg_lock);
	}
	kcompat_cancel_restore(old);
	if (waiting)
		devres_wait_end();
	return kcompat_reg_at(regp);
}

/*
 * The devm_ call that marked *@regp being added is a member of the set
 * kcompat_reg_find_added() waits for from here until
 * kcompat_reg_added() (same thread, unlocked).
 */
static inline void kcompat_reg_adding_join(void *const *regp)
{
	devres_wait_join((uintptr_t)regp);
}

/*
 * A devm_ registration's node is on its device: the mark cleared, unless
 * the node's release took @r back on this thread meanwhile (a log sink
 * of devres_add()), the take-backs waiting for it woken, and this thread
 * out of the set kcompat_reg_adding_join() put it in.
 */
static inline void kcompat_reg_added(void *const *regp, struct kcompat_reg *r)
{
	pthread_mutex_lock(&kcompat_reg_lock);
	if (*regp == r)
		r->adding = false;
	pthread_cond_broadcast(&kcompat_reg_cond);
	pthread_mutex_unlock(&kcompat_reg_lock);
	devres_wait_leave();
}

/*
 * A take-back by hand (@func) of @what, which is not registered: never,
 * or taken back already. The kernel oopses (a list_del() of an entry on
 * no list, a NULL private pointer); here one WARN and nothing done.
 */
static inline void kcompat_reg_none(struct device *dev, const char *func,
				    const char *what)
{
	devres_warn(dev, func, "%s is not registered: nothing done", what);
}

/*
 * A registration a devm_ call (@managed) made for @dev, taken back by
 * hand with @func: the device's node would take it back a second time at
 * unbind. One WARN naming the device and the managed call, and the node
 * (@release, @match, @data) dropped here, unreleased; the caller takes
 * the registration back as asked. Called without the framework's lock.
 */
static inline void kcompat_reg_by_hand(struct device *dev, const char *func,
				       const char *what, const char *managed,
				       dr_release_t release, dr_match_t match,
				       void *data)
{
	devres_warn(dev, func,
		    "%s registered by %s(): taken back here, its release at "
		    "unbind dropped",
		    what, managed);
	(void)devres_destroy(dev, release, match, data);
}

/*
 * What a driver's method returned where its contract is 0 or a negative
 * errno (a watchdog's start(), stop() and ping(), an rtc's read_time()
 * and set_time(), an hwrng's init()). A positive value or a negative one
 * past -MAX_ERRNO was handed on as it was: the caller's "if (ret)" saw a
 * failure where its "if (ret < 0)" saw a success, and an ERR_PTR() or
 * errname of it named no error. One WARN naming @what (as "watchdog 0")
 * and its @method, called from @func, and -EINVAL, as the driver core
 * takes a positive probe().
 */
static inline int kcompat_method_ret(struct device *dev, const char *func,
				     const char *what, const char *method,
				     int ret)
{
	if (ret <= 0 && ret >= -MAX_ERRNO)
		return ret;
	devres_warn(dev, func,
		    "%s: its %s method returned %d, not 0 or a negative "
		    "errno: taken as -EINVAL",
		    what, method, ret);
	return -EINVAL;
}

#endif /* KCOMPAT_LINUX_KCOMPAT_REG_H */
