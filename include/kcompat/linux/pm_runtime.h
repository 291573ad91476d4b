/* SPDX-License-Identifier: MIT */
/*
 * Runtime PM: the device is always active, every call succeeds and does
 * nothing. devm_pm_runtime_enable() (-EDEADLK, with a WARN, from a match
 * or for-each callback of the device) is still managed (its disable is a
 * managed action), so its place in the release order is real.
 */
#ifndef KCOMPAT_LINUX_PM_RUNTIME_H
#define KCOMPAT_LINUX_PM_RUNTIME_H

#include <linux/kcompat_site.h>
#include <errno.h>
#include <devres/devres.h>
#include <linux/pm.h>

/*
 * A device no object can be at (NULL, the first page, an ERR_PTR()): the
 * kernel would oops; here one compare, one WARN, and the call's error.
 */
static inline bool kcompat_pm_bad(const struct device *dev, const char *func)
{
	if (!devres_ptr_bad(dev))
		return false;
	devres_warn_bad_arg(func, "device", dev);
	return true;
}

static inline void pm_runtime_enable(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_enable"))
		return;
}

static inline void pm_runtime_disable(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_disable"))
		return;
}

static inline void kcompat_pm_runtime_disable(void *dev)
{
	pm_runtime_disable((struct device *)dev);
}

static inline int devm_pm_runtime_enable(struct device *dev)
{
	int ret;

	if (kcompat_pm_bad(dev, "devm_pm_runtime_enable"))
		return -EINVAL;
	/* Where its action would be refused, nothing is enabled. */
	ret = devres_may_add(dev, "devm_pm_runtime_enable");
	if (ret)
		return ret;
	pm_runtime_enable(dev);
	return devm_add_action_or_reset(dev, kcompat_pm_runtime_disable, dev);
}

/*
 * Functions, not macros: a driver calls them as statements and as values.
 */
static inline int pm_runtime_get_sync(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_get_sync"))
		return -EINVAL;
	return 0;
}

static inline int pm_runtime_resume_and_get(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_resume_and_get"))
		return -EINVAL;
	return 0;
}

static inline int pm_runtime_get(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_get"))
		return -EINVAL;
	return 0;
}

static inline void pm_runtime_get_noresume(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_get_noresume"))
		return;
}

static inline int pm_runtime_put(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_put"))
		return -EINVAL;
	return 0;
}

static inline int pm_runtime_put_sync(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_put_sync"))
		return -EINVAL;
	return 0;
}

static inline void pm_runtime_put_noidle(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_put_noidle"))
		return;
}

static inline int pm_runtime_put_autosuspend(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_put_autosuspend"))
		return -EINVAL;
	return 0;
}

static inline int pm_runtime_put_sync_suspend(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_put_sync_suspend"))
		return -EINVAL;
	return 0;
}

static inline void pm_runtime_mark_last_busy(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_mark_last_busy"))
		return;
}

static inline int pm_runtime_set_active(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_set_active"))
		return -EINVAL;
	return 0;
}

static inline int pm_runtime_set_suspended(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_set_suspended"))
		return -EINVAL;
	return 0;
}

static inline void pm_runtime_set_autosuspend_delay(struct device *dev, int ms)
{
	if (kcompat_pm_bad(dev, "pm_runtime_set_autosuspend_delay"))
		return;
	(void)ms;
}

static inline void pm_runtime_use_autosuspend(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_use_autosuspend"))
		return;
}

static inline void pm_runtime_dont_use_autosuspend(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_dont_use_autosuspend"))
		return;
}

static inline void pm_runtime_irq_safe(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_irq_safe"))
		return;
}

static inline void pm_runtime_no_callbacks(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_no_callbacks"))
		return;
}

static inline void pm_runtime_forbid(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_forbid"))
		return;
}

static inline void pm_runtime_allow(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_allow"))
		return;
}

static inline bool pm_runtime_suspended(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_suspended"))
		return false;
	return false;
}

static inline bool pm_runtime_active(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_active"))
		return false;
	return true;
}

static inline bool pm_runtime_enabled(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_enabled"))
		return false;
	return true;
}

static inline bool pm_runtime_status_suspended(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_status_suspended"))
		return false;
	return false;
}

static inline int pm_runtime_put_sync_autosuspend(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_put_sync_autosuspend"))
		return -EINVAL;
	return 0;
}

/* PM callbacks a driver may name in its dev_pm_ops: recorded, not called. */
static inline int pm_runtime_force_suspend(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_force_suspend"))
		return -EINVAL;
	return 0;
}

static inline int pm_runtime_force_resume(struct device *dev)
{
	if (kcompat_pm_bad(dev, "pm_runtime_force_resume"))
		return -EINVAL;
	return 0;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_pm_runtime_enable(dev)                                            \
	KCOMPAT_AT(devm_pm_runtime_enable, devm_pm_runtime_enable(dev))

#endif /* KCOMPAT_LINUX_PM_RUNTIME_H */
