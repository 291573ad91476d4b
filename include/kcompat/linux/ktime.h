/* SPDX-License-Identifier: MIT */
/* ktime_t: nanoseconds of CLOCK_MONOTONIC. */
#ifndef KCOMPAT_LINUX_KTIME_H
#define KCOMPAT_LINUX_KTIME_H

#include <time.h>
#include <linux/types.h>

#define NSEC_PER_USEC 1000L
#define NSEC_PER_MSEC 1000000L
#define NSEC_PER_SEC 1000000000L
#define USEC_PER_MSEC 1000L
#define USEC_PER_SEC 1000000L
#define MSEC_PER_SEC 1000L

typedef s64 ktime_t;

static inline ktime_t ktime_get(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ktime_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static inline s64 ktime_get_real_seconds(void)
{
	return (s64)time(NULL);
}

#define ktime_get_ns() ((u64)ktime_get())
#define ktime_get_boottime ktime_get
#define ktime_set(s, ns) ((ktime_t)(s)*NSEC_PER_SEC + (ns))
#define ns_to_ktime(ns) ((ktime_t)(ns))
#define ms_to_ktime(ms) ((ktime_t)(ms)*NSEC_PER_MSEC)
#define us_to_ktime(us) ((ktime_t)(us)*NSEC_PER_USEC)
#define ktime_add(a, b) ((a) + (b))
#define ktime_sub(a, b) ((a) - (b))
#define ktime_add_ns(kt, ns) ((kt) + (ktime_t)(ns))
#define ktime_add_us(kt, us) ((kt) + (ktime_t)(us)*NSEC_PER_USEC)
#define ktime_add_ms(kt, ms) ((kt) + (ktime_t)(ms)*NSEC_PER_MSEC)
#define ktime_compare(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)
#define ktime_after(a, b) ((a) > (b))
#define ktime_before(a, b) ((a) < (b))
#define ktime_to_ns(kt) ((s64)(kt))
#define ktime_to_us(kt) ((s64)(kt) / NSEC_PER_USEC)
#define ktime_to_ms(kt) ((s64)(kt) / NSEC_PER_MSEC)
#define ktime_us_delta(a, b) ktime_to_us(ktime_sub((a), (b)))
#define ktime_ms_delta(a, b) ktime_to_ms(ktime_sub((a), (b)))
#define KTIME_MAX ((ktime_t)(~0ULL >> 1))

/*
 * @kt plus @n times @unit nanoseconds, or KTIME_MAX where that passes it:
 * the deadline of a wait whose timeout is "for ever" (the kernel's
 * MAX_SCHEDULE_TIMEOUT, a usecs_to_jiffies() of a huge value) is no
 * signed overflow that wraps it into the past, and so no wait that times
 * out at once. @kt is a time of the clock, not negative.
 */
static inline ktime_t kcompat_ktime_add_sat(ktime_t kt, u64 n, s64 unit)
{
	ktime_t ns, end;

	if (n > (u64)KTIME_MAX ||
	    __builtin_mul_overflow((ktime_t)n, unit, &ns) ||
	    __builtin_add_overflow(kt, ns, &end))
		return KTIME_MAX;
	return end;
}

#endif /* KCOMPAT_LINUX_KTIME_H */
