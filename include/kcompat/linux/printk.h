/* SPDX-License-Identifier: MIT */
/*
 * pr_*() print to stderr with the kernel's level prefix; pr_debug() only
 * with DEBUG defined, as in the kernel without dynamic debug.
 */
#ifndef KCOMPAT_LINUX_PRINTK_H
#define KCOMPAT_LINUX_PRINTK_H

#include <stdio.h>

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

#define printk(fmt, ...) fprintf(stderr, fmt, ##__VA_ARGS__)
#define pr_emerg(fmt, ...) printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_alert(fmt, ...) printk(KERN_ALERT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...) printk(KERN_CRIT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...) printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...) printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...) printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...) printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...) printk(fmt, ##__VA_ARGS__)
#ifdef DEBUG
#define pr_debug(fmt, ...) printk(KERN_DEBUG pr_fmt(fmt), ##__VA_ARGS__)
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
