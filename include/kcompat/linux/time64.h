/* SPDX-License-Identifier: MIT */
/* time64_t and struct timespec64: the C library's time, 64 bits wide. */
#ifndef KCOMPAT_LINUX_TIME64_H
#define KCOMPAT_LINUX_TIME64_H

#include <time.h>
#include <linux/ktime.h>
#include <devres/types.h>
#include <linux/types.h>

typedef s64 time64_t;

struct timespec64 {
	time64_t tv_sec;
	long tv_nsec;
};

static inline void ktime_get_real_ts64(struct timespec64 *ts)
{
	struct timespec t;

	if (devres_ptr_bad(ts)) {
		devres_warn_bad_arg("ktime_get_real_ts64", "timespec64", ts);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &t);
	ts->tv_sec = t.tv_sec;
	ts->tv_nsec = t.tv_nsec;
}

static inline void ktime_get_ts64(struct timespec64 *ts)
{
	struct timespec t;

	if (devres_ptr_bad(ts)) {
		devres_warn_bad_arg("ktime_get_ts64", "timespec64", ts);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	ts->tv_sec = t.tv_sec;
	ts->tv_nsec = t.tv_nsec;
}

#define timespec64_to_ns(ts) ((s64)(ts)->tv_sec * NSEC_PER_SEC + (ts)->tv_nsec)

#endif /* KCOMPAT_LINUX_TIME64_H */
