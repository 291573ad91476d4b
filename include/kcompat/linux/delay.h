/* SPDX-License-Identifier: MIT */
/* Delays and sleeps: all of them sleep, a process has nothing to spin for. */
#ifndef KCOMPAT_LINUX_DELAY_H
#define KCOMPAT_LINUX_DELAY_H

#include <errno.h>
#include <time.h>
#include <linux/kcompat_held.h>

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
/*
 * The kernel's delays spin and may be called holding a spinlock; its
 * sleeps may not: they WARN then (kcompat_might_sleep()), and sleep.
 */
static inline void kcompat_sleep(unsigned long long ns, enum kcompat_sleeper id)
{
	kcompat_might_sleep(id);
	kcompat_sleep_ns(ns);
}

#define msleep(ms)                                                             \
	kcompat_sleep((unsigned long long)(ms)*1000000ull, KCOMPAT_SLEEP_msleep)
#define ssleep(s)                                                              \
	kcompat_sleep((unsigned long long)(s)*1000000000ull,                   \
		      KCOMPAT_SLEEP_ssleep)
#define usleep_range(lo, hi)                                                   \
	((void)(hi), kcompat_sleep((unsigned long long)(lo)*1000ull,           \
				   KCOMPAT_SLEEP_usleep_range))
#define fsleep(us)                                                             \
	kcompat_sleep((unsigned long long)(us)*1000ull, KCOMPAT_SLEEP_fsleep)
#define msleep_interruptible(ms) (msleep(ms), 0UL)

#endif /* KCOMPAT_LINUX_DELAY_H */
