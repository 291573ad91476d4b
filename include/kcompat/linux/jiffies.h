/* SPDX-License-Identifier: MIT */
/* jiffies: milliseconds of CLOCK_MONOTONIC (HZ is 1000). */
#ifndef KCOMPAT_LINUX_JIFFIES_H
#define KCOMPAT_LINUX_JIFFIES_H

#include <linux/kernel.h>
#include <linux/ktime.h>

#define HZ 1000
#define MAX_JIFFY_OFFSET ((long)(~0UL >> 1) - 1)

static inline unsigned long kcompat_jiffies(void)
{
	return (unsigned long)(ktime_get() / NSEC_PER_MSEC);
}

#define jiffies kcompat_jiffies()
#define jiffies_64 ((u64)kcompat_jiffies())
/* As the kernel's: a "negative" or a too large time is the longest offset. */
static inline unsigned long kcompat_msecs_to_jiffies(unsigned int m)
{
	return (int)m < 0 ? (unsigned long)MAX_JIFFY_OFFSET : m;
}

static inline unsigned long kcompat_usecs_to_jiffies(unsigned long long u)
{
	/* Rounding up cannot wrap a huge value round to 0 jiffies. */
	if (u > (unsigned long long)MAX_JIFFY_OFFSET * 1000ull)
		return (unsigned long)MAX_JIFFY_OFFSET;
	return (unsigned long)(u / 1000 + (u % 1000 != 0));
}

#define msecs_to_jiffies(ms) kcompat_msecs_to_jiffies(ms)
#define usecs_to_jiffies(us) kcompat_usecs_to_jiffies(us)
#define MAX_SCHEDULE_TIMEOUT LONG_MAX
#define secs_to_jiffies(s) ((unsigned long)(s)*HZ)
#define jiffies_to_msecs(j) ((unsigned int)(j))
#define jiffies_to_usecs(j) ((unsigned int)(j)*1000u)
#define time_after(a, b) ((long)((b) - (a)) < 0)
#define time_before(a, b) time_after((b), (a))
#define time_after_eq(a, b) ((long)((a) - (b)) >= 0)
#define time_before_eq(a, b) time_after_eq((b), (a))
#define time_is_before_jiffies(a) time_after(jiffies, (a))
#define time_is_after_jiffies(a) time_before(jiffies, (a))

#endif /* KCOMPAT_LINUX_JIFFIES_H */
