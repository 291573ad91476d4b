/* SPDX-License-Identifier: MIT */
/*
 * pr_*() print to stderr with the kernel's level prefix; pr_debug() only
 * with DEBUG defined, as in the kernel without dynamic debug. A %n in a
 * format is refused, as the kernel's printk() refuses it: one WARN naming
 * the call, and nothing printed or written through its argument.
 */
#ifndef KCOMPAT_LINUX_PRINTK_H
#define KCOMPAT_LINUX_PRINTK_H

#include <stdarg.h>
#include <stdio.h>
#include <devres/devres.h>

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif

#define KERN_EMERG "<0>"
#define KERN_ALERT "<1>"
#define KERN_CRIT "<2>"
#define KERN_ERR "<3>"
#define KERN_WARNING "<4>"
#define KERN_NOTICE "<5>"
#define KERN_INFO "<6>"
#define KERN_DEBUG "<7>"
#define KERN_CONT ""

/* @func names the call in the WARN that refuses a %n in @fmt. */
__attribute__((format(printf, 2, 3))) static inline int
kcompat_printk(const char *func, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (devres_format_bad(NULL, func, fmt))
		return 0;
	va_start(ap, fmt);
	n = vfprintf(stderr, fmt, ap);
	va_end(ap);
	return n;
}

#define printk(fmt, ...) kcompat_printk("printk", fmt, ##__VA_ARGS__)
#define kcompat_pr(func, lvl, fmt, ...)                                        \
	kcompat_printk(func, lvl pr_fmt(fmt), ##__VA_ARGS__)
#define pr_emerg(fmt, ...)                                                     \
	kcompat_pr("pr_emerg", KERN_EMERG, fmt, ##__VA_ARGS__)
#define pr_alert(fmt, ...)                                                     \
	kcompat_pr("pr_alert", KERN_ALERT, fmt, ##__VA_ARGS__)
#define pr_crit(fmt, ...) kcompat_pr("pr_crit", KERN_CRIT, fmt, ##__VA_ARGS__)
#define pr_err(fmt, ...) kcompat_pr("pr_err", KERN_ERR, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...)                                                      \
	kcompat_pr("pr_warn", KERN_WARNING, fmt, ##__VA_ARGS__)
#define pr_notice(fmt, ...)                                                    \
	kcompat_pr("pr_notice", KERN_NOTICE, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) kcompat_pr("pr_info", KERN_INFO, fmt, ##__VA_ARGS__)
#define pr_cont(fmt, ...) kcompat_printk("pr_cont", fmt, ##__VA_ARGS__)
#ifdef DEBUG
#define pr_debug(fmt, ...)                                                     \
	kcompat_pr("pr_debug", KERN_DEBUG, fmt, ##__VA_ARGS__)
#else
#define pr_debug(fmt, ...)                                                     \
	do {                                                                   \
		if (0)                                                         \
			printk(pr_fmt(fmt), ##__VA_ARGS__);                    \
	} while (0)
#endif
#define pr_warn_once pr_warn
#define pr_err_once pr_err
#define pr_info_once pr_info
#define pr_err_ratelimited pr_err
#define pr_warn_ratelimited pr_warn

#endif /* KCOMPAT_LINUX_PRINTK_H */
