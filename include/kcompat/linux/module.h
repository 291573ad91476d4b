/* SPDX-License-Identifier: MIT */
/*
 * Modules. A driver file is not loaded but linked: module_driver() and
 * its platform and PCI forms define <driver>_init() and <driver>_exit(),
 * which a program (or a test) calls where the kernel would load and
 * unload the module. The MODULE_*() tags are declarations that say nothing.
 */
#ifndef KCOMPAT_LINUX_MODULE_H
#define KCOMPAT_LINUX_MODULE_H

#include <linux/compiler.h>
#include <linux/init.h>
#include <linux/mod_devicetable.h>

struct module;
#define THIS_MODULE ((struct module *)0)
#define KBUILD_MODNAME "kcompat"

#define KCOMPAT_MODULE_TAG extern int kcompat_module_tag
#define MODULE_LICENSE(x) KCOMPAT_MODULE_TAG
#define MODULE_AUTHOR(x) KCOMPAT_MODULE_TAG
#define MODULE_DESCRIPTION(x) KCOMPAT_MODULE_TAG
#define MODULE_ALIAS(x) KCOMPAT_MODULE_TAG
#define MODULE_VERSION(x) KCOMPAT_MODULE_TAG
#define MODULE_FIRMWARE(x) KCOMPAT_MODULE_TAG
#define MODULE_SOFTDEP(x) KCOMPAT_MODULE_TAG
#define MODULE_IMPORT_NS(x) KCOMPAT_MODULE_TAG
#define MODULE_DEVICE_TABLE(type, name) KCOMPAT_MODULE_TAG
#define MODULE_PARM_DESC(name, desc) KCOMPAT_MODULE_TAG
/* A parameter keeps its default; naming it marks the variable used. */
#define module_param(name, type, perm)                                         \
	static __typeof__(name) *const kcompat_param_##name                    \
		__attribute__((unused)) = &(name)
#define module_param_named(name, var, type, perm)                              \
	static __typeof__(var) *const kcompat_param_##name                     \
		__attribute__((unused)) = &(var)
#define EXPORT_SYMBOL(x) KCOMPAT_MODULE_TAG
#define EXPORT_SYMBOL_GPL(x) KCOMPAT_MODULE_TAG
#define EXPORT_SYMBOL_NS_GPL(x, ns) KCOMPAT_MODULE_TAG

/*
 * module_init(fn) and module_exit(fn): nothing runs them by themselves;
 * they define <fn>_load() and <fn>_unload(), which call the static <fn>
 * where the kernel would load and unload the module.
 */
#define module_init(fn)                                                        \
	int fn##_load(void);                                                   \
	int fn##_load(void)                                                    \
	{                                                                      \
		return fn();                                                   \
	}                                                                      \
	KCOMPAT_MODULE_TAG
#define module_exit(fn)                                                        \
	void fn##_unload(void);                                                \
	void fn##_unload(void)                                                 \
	{                                                                      \
		fn();                                                          \
	}                                                                      \
	KCOMPAT_MODULE_TAG

#define module_driver(drv, reg, unreg)                                         \
	int drv##_init(void);                                                  \
	void drv##_exit(void);                                                 \
	int drv##_init(void)                                                   \
	{                                                                      \
		return reg(&(drv));                                            \
	}                                                                      \
	void drv##_exit(void)                                                  \
	{                                                                      \
		unreg(&(drv));                                                 \
	}                                                                      \
	KCOMPAT_MODULE_TAG

#endif /* KCOMPAT_LINUX_MODULE_H */
