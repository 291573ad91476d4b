/* SPDX-License-Identifier: MIT */
/*
 * Power-management callbacks: recorded in the driver (struct
 * device_driver's pm), never called. CONFIG_PM and CONFIG_PM_SLEEP are
 * on (<linux/kconfig.h>), so that a driver's callbacks compile as they do
 * in the kernel.
 */
#ifndef KCOMPAT_LINUX_PM_H
#define KCOMPAT_LINUX_PM_H

#include <linux/compiler.h>
#include <linux/kconfig.h>

struct device;

struct dev_pm_ops {
	int (*prepare)(struct device *dev);
	void (*complete)(struct device *dev);
	int (*suspend)(struct device *dev);
	int (*resume)(struct device *dev);
	int (*freeze)(struct device *dev);
	int (*thaw)(struct device *dev);
	int (*poweroff)(struct device *dev);
	int (*restore)(struct device *dev);
	int (*suspend_late)(struct device *dev);
	int (*resume_early)(struct device *dev);
	int (*suspend_noirq)(struct device *dev);
	int (*resume_noirq)(struct device *dev);
	int (*runtime_suspend)(struct device *dev);
	int (*runtime_resume)(struct device *dev);
	int (*runtime_idle)(struct device *dev);
};

#define SYSTEM_SLEEP_PM_OPS(s, r)                                              \
	.suspend = (s), .resume = (r), .freeze = (s), .thaw = (r),             \
	.poweroff = (s), .restore = (r),
#define SET_SYSTEM_SLEEP_PM_OPS SYSTEM_SLEEP_PM_OPS
#define LATE_SYSTEM_SLEEP_PM_OPS(s, r) .suspend_late = (s), .resume_early = (r),
#define SET_LATE_SYSTEM_SLEEP_PM_OPS LATE_SYSTEM_SLEEP_PM_OPS
#define NOIRQ_SYSTEM_SLEEP_PM_OPS(s, r)                                        \
	.suspend_noirq = (s), .resume_noirq = (r),
#define SET_NOIRQ_SYSTEM_SLEEP_PM_OPS NOIRQ_SYSTEM_SLEEP_PM_OPS
#define RUNTIME_PM_OPS(s, r, i)                                                \
	.runtime_suspend = (s), .runtime_resume = (r), .runtime_idle = (i),
#define SET_RUNTIME_PM_OPS RUNTIME_PM_OPS
#define DEFINE_SIMPLE_DEV_PM_OPS(name, s, r)                                   \
	const struct dev_pm_ops name = { SYSTEM_SLEEP_PM_OPS(s, r) }
#define SIMPLE_DEV_PM_OPS(name, s, r)                                          \
	const struct dev_pm_ops __maybe_unused name = { SYSTEM_SLEEP_PM_OPS(   \
		s, r) }
#define DEFINE_RUNTIME_DEV_PM_OPS(name, s, r, i)                               \
	const struct dev_pm_ops name = { SYSTEM_SLEEP_PM_OPS(s, r)             \
						 RUNTIME_PM_OPS(s, r, i) }
#define UNIVERSAL_DEV_PM_OPS(name, s, r, i)                                    \
	const struct dev_pm_ops __maybe_unused name = { SYSTEM_SLEEP_PM_OPS(   \
		s, r) RUNTIME_PM_OPS(s, r, i) }
#define pm_ptr(x) (x)
#define pm_sleep_ptr(x) (x)

#endif /* KCOMPAT_LINUX_PM_H */
