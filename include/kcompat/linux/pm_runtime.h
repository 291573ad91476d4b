/* SPDX-License-Identifier: MIT */
/*
 * Runtime PM: the device is always active, every call succeeds and does
 * nothing. devm_pm_runtime_enable() is still managed (its disable is a
 * managed action), so its place in the release order is real.
 */
#ifndef KCOMPAT_LINUX_PM_RUNTIME_H
#define KCOMPAT_LINUX_PM_RUNTIME_H

#include <linux/kcompat_site.h>
#include <devres/devres.h>
#include <linux/pm.h>

static inline void pm_runtime_enable(struct device *dev)
{
	(void)dev;
}

static inline void pm_runtime_disable(struct device *dev)
{
	(void)dev;
}

static inline void kcompat_pm_runtime_disable(void *dev)
{
	pm_runtime_disable((struct device *)dev);
}

static inline int devm_pm_runtime_enable(struct device *dev)
{
	pm_runtime_enable(dev);
	return devm_add_action_or_reset(dev, kcompat_pm_runtime_disable, dev);
}

/*
 * Functions, not macros: a driver calls them as statements and as values.
 */
static inline int pm_runtime_get_sync(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline int pm_runtime_resume_and_get(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline int pm_runtime_get(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline void pm_runtime_get_noresume(struct device *dev)
{
	(void)dev;
}

static inline int pm_runtime_put(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline int pm_runtime_put_sync(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline void pm_runtime_put_noidle(struct device *dev)
{
	(void)dev;
}

static inline int pm_runtime_put_autosuspend(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline int pm_runtime_put_sync_suspend(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline void pm_runtime_mark_last_busy(struct device *dev)
{
	(void)dev;
}

static inline int pm_runtime_set_active(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline int pm_runtime_set_suspended(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline void pm_runtime_set_autosuspend_delay(struct device *dev, int ms)
{
	(void)dev;
	(void)ms;
}

static inline void pm_runtime_use_autosuspend(struct device *dev)
{
	(void)dev;
}

static inline void pm_runtime_dont_use_autosuspend(struct device *dev)
{
	(void)dev;
}

static inline void pm_runtime_irq_safe(struct device *dev)
{
	(void)dev;
}

static inline void pm_runtime_no_callbacks(struct device *dev)
{
	(void)dev;
}

static inline void pm_runtime_forbid(struct device *dev)
{
	(void)dev;
}

static inline void pm_runtime_allow(struct device *dev)
{
	(void)dev;
}

static inline bool pm_runtime_suspended(struct device *dev)
{
	(void)dev;
	return false;
}

static inline bool pm_runtime_active(struct device *dev)
{
	(void)dev;
	return true;
}

static inline bool pm_runtime_enabled(struct device *dev)
{
	(void)dev;
	return true;
}

static inline bool pm_runtime_status_suspended(struct device *dev)
{
	(void)dev;
	return false;
}

static inline int pm_runtime_put_sync_autosuspend(struct device *dev)
{
	(void)dev;
	return 0;
}

/* PM callbacks a driver may name in its dev_pm_ops: recorded, not called. */
static inline int pm_runtime_force_suspend(struct device *dev)
{
	(void)dev;
	return 0;
}

static inline int pm_runtime_force_resume(struct device *dev)
{
	(void)dev;
	return 0;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define devm_pm_runtime_enable(dev)                                            \
	KCOMPAT_AT(devm_pm_runtime_enable, devm_pm_runtime_enable(dev))

#endif /* KCOMPAT_LINUX_PM_RUNTIME_H */
