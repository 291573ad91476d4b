/* SPDX-License-Identifier: MIT */
/* Delays and sleeps: all of them sleep, a process has nothing to spin for. */
#ifndef KCOMPAT_LINUX_DELAY_H
#define KCOMPAT_LINUX_DELAY_H

#include <errno.h>
#include <time.h>

static inline void kcompat_sleep_ns(unsigned long long ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
			       (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#define ndelay(ns) kcompat_sleep_ns((unsigned long long)(ns))
#define udelay(us) kcompat_sleep_ns((unsigned long long)(us)*1000ull)
#define mdelay(ms) kcompat_sleep_ns((unsigned long long)(ms)*1000000ull)
#define msleep(ms) mdelay(ms)
#define ssleep(s) mdelay((unsigned long long)(s)*1000ull)
#define usleep_range(lo, hi) ((void)(hi), udelay(lo))
#define fsleep(us) udelay(us)
#define msleep_interruptible(ms) (msleep(ms), 0UL)

#endif /* KCOMPAT_LINUX_DELAY_H */
