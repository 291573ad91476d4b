/* SPDX-License-Identifier: MIT */
/*
 * The check of an object pointer given to a compat inline function: NULL,
 * the first page or an ERR_PTR(), where the kernel would oops. One compare
 * inline (devres_ptr_bad()); the WARN, "(no device): <func>: NULL <what>",
 * out of line (devres_warn_bad_arg()). True: the caller returns what it
 * returns for nothing.
 */
#ifndef KCOMPAT_LINUX_KCOMPAT_CHECK_H
#define KCOMPAT_LINUX_KCOMPAT_CHECK_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>
#include <devres/devres.h>
#include <devres/types.h>
#include <linux/kcompat_cancel.h>
#include <linux/kcompat_lock.h>

static inline bool kcompat_bad(const void *p, const char *func,
			       const char *what)
{
	if (!devres_ptr_bad(p))
		return false;
	devres_warn_bad_arg(func, what, p);
	return true;
}

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
};

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

#endif /* KCOMPAT_LINUX_KCOMPAT_CHECK_H */
