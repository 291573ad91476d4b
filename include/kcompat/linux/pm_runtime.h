/* SPDX-License-Identifier: MIT */
/*
 * Runtime PM: the device is always active, every call succeeds and does
 * nothing. devm_pm_runtime_enable() is still managed (its disable is a
 * managed action), so its place in the release order is real.
 */
#ifndef KCOMPAT_LINUX_PM_RUNTIME_H
#define KCOMPAT_LINUX_PM_RUNTIME_H

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

#define pm_runtime_get_sync(dev) ((void)(dev), 0)
#define pm_runtime_resume_and_get(dev) ((void)(dev), 0)
#define pm_runtime_get(dev) ((void)(dev), 0)
#define pm_runtime_get_noresume(dev) ((void)(dev))
#define pm_runtime_put(dev) ((void)(dev), 0)
#define pm_runtime_put_sync(dev) ((void)(dev), 0)
#define pm_runtime_put_noidle(dev) ((void)(dev))
#define pm_runtime_put_autosuspend(dev) ((void)(dev), 0)
#define pm_runtime_put_sync_suspend(dev) ((void)(dev), 0)
#define pm_runtime_mark_last_busy(dev) ((void)(dev))
#define pm_runtime_set_active(dev) ((void)(dev), 0)
#define pm_runtime_set_suspended(dev) ((void)(dev), 0)
#define pm_runtime_set_autosuspend_delay(dev, ms) ((void)(dev), (void)(ms))
#define pm_runtime_use_autosuspend(dev) ((void)(dev))
#define pm_runtime_dont_use_autosuspend(dev) ((void)(dev))
#define pm_runtime_irq_safe(dev) ((void)(dev))
#define pm_runtime_no_callbacks(dev) ((void)(dev))
#define pm_runtime_forbid(dev) ((void)(dev))
#define pm_runtime_allow(dev) ((void)(dev))
#define pm_runtime_suspended(dev) ((void)(dev), false)
#define pm_runtime_active(dev) ((void)(dev), true)
#define pm_runtime_enabled(dev) ((void)(dev), true)
#define pm_runtime_status_suspended(dev) ((void)(dev), false)
#define pm_runtime_put_sync_autosuspend(dev) ((void)(dev), 0)

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

#endif /* KCOMPAT_LINUX_PM_RUNTIME_H */
