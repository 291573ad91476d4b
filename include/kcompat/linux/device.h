/* SPDX-License-Identifier: MIT */
/*
 * Devices, drivers, managed resources and dev_*() printing; and, as the
 * kernel's does, the locks, atomics and lists a driver's state holds, and
 * device attributes (<linux/sysfs.h>).
 */
#ifndef KCOMPAT_LINUX_DEVICE_H
#define KCOMPAT_LINUX_DEVICE_H

#include <linux/kcompat_site.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>

#define dev_notice dev_info
#define dev_emerg dev_err
#define dev_crit dev_err
#define dev_alert dev_err
#define dev_vdbg dev_dbg
#define dev_err_once dev_err
#define dev_warn_once dev_warn
#define dev_info_once dev_info
#define dev_dbg_once dev_dbg
#define dev_err_ratelimited dev_err
#define dev_warn_ratelimited dev_warn
#define dev_info_ratelimited dev_info
#define dev_dbg_ratelimited dev_dbg
#define dev_get_platdata(dev) ((dev)->platform_data)
#define dev_to_node(dev) ((void)(dev), -1)
#define device_may_wakeup(dev) ((void)(dev), false)

/* Wakeup is for a system that sleeps: accepted, and nothing more. */
/* Wakeup is not modelled; a bad device is still the caller's bug. */
static inline int device_init_wakeup(struct device *dev, bool enable)
{
	(void)enable;
	if (devres_ptr_bad(dev)) {
		devres_warn_bad_arg("device_init_wakeup", "device", dev);
		return -EINVAL;
	}
	return 0;
}

static inline void device_set_wakeup_capable(struct device *dev, bool capable)
{
	(void)capable;
	if (devres_ptr_bad(dev))
		devres_warn_bad_arg("device_set_wakeup_capable", "device", dev);
}

static inline int dev_pm_set_wake_irq(struct device *dev, int irq)
{
	(void)irq;
	if (devres_ptr_bad(dev)) {
		devres_warn_bad_arg("dev_pm_set_wake_irq", "device", dev);
		return -EINVAL;
	}
	return 0;
}

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define dev_err_probe(...) KCOMPAT_AT(dev_err_probe, dev_err_probe(__VA_ARGS__))

#endif /* KCOMPAT_LINUX_DEVICE_H */
