/* SPDX-License-Identifier: MIT */
/*
 * The configuration the compat headers stand for, as the kernel's
 * generated autoconf.h would say it: device-tree matching and power
 * management are on (their tables and callbacks are recorded), so that
 * a driver's "#ifdef CONFIG_OF" table and its PM callbacks compile as
 * they do in a kernel built with them.
 */
#ifndef KCOMPAT_LINUX_KCONFIG_H
#define KCOMPAT_LINUX_KCONFIG_H

#ifndef CONFIG_OF
#define CONFIG_OF 1
#endif
#ifndef CONFIG_PM
#define CONFIG_PM 1
#endif
#ifndef CONFIG_PM_SLEEP
#define CONFIG_PM_SLEEP 1
#endif

/* IS_ENABLED(CONFIG_X): 1 when CONFIG_X is defined as 1, else 0. */
#define KCOMPAT_ARG_PLACEHOLDER_1 0,
#define KCOMPAT_TAKE_SECOND(ignored, val, ...) val
#define KCOMPAT_IS_DEFINED3(arg1_or_junk) KCOMPAT_TAKE_SECOND(arg1_or_junk 1, 0)
#define KCOMPAT_IS_DEFINED2(val)                                               \
	KCOMPAT_IS_DEFINED3(KCOMPAT_ARG_PLACEHOLDER_##val)
#define IS_ENABLED(option) KCOMPAT_IS_DEFINED2(option)
#define IS_BUILTIN(option) IS_ENABLED(option)
#define IS_REACHABLE(option) IS_ENABLED(option)
#define IS_MODULE(option) 0

#endif /* KCOMPAT_LINUX_KCONFIG_H */
