/* SPDX-License-Identifier: MIT */
/*
 * Polling a register until a condition holds or a timeout (in
 * microseconds, 0 for none) passes: 0, or -ETIMEDOUT with @val read one
 * last time after the deadline, as the kernel's do.
 */
#ifndef KCOMPAT_LINUX_IOPOLL_H
#define KCOMPAT_LINUX_IOPOLL_H

#include <errno.h>
#include <sched.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/ktime.h>

#define read_poll_timeout(op, val, cond, sleep_us, timeout_us,                 \
			  sleep_before_read, ...)                              \
	({                                                                     \
		u64 kc_to_ = (u64)(timeout_us);                                \
		ktime_t kc_end_ = kcompat_ktime_add_sat(ktime_get(), kc_to_,   \
							NSEC_PER_USEC);        \
		int kc_ret_ = 0;                                               \
		if ((sleep_before_read) && (sleep_us))                         \
			udelay(sleep_us);                                      \
		for (;;) {                                                     \
			(val) = op(__VA_ARGS__);                               \
			if (cond)                                              \
				break;                                         \
			if (kc_to_ && ktime_after(ktime_get(), kc_end_)) {     \
				(val) = op(__VA_ARGS__);                       \
				kc_ret_ = (cond) ? 0 : -ETIMEDOUT;             \
				break;                                         \
			}                                                      \
			if (sleep_us)                                          \
				udelay(sleep_us);                              \
			else                                                   \
				sched_yield();                                 \
		}                                                              \
		kc_ret_;                                                       \
	})
#define read_poll_timeout_atomic(op, val, cond, delay_us, timeout_us,          \
				 delay_before_read, ...)                       \
	read_poll_timeout(op, val, cond, delay_us, timeout_us,                 \
			  delay_before_read, __VA_ARGS__)

#define readx_poll_timeout(op, addr, val, cond, sleep_us, timeout_us)          \
	read_poll_timeout(op, val, cond, sleep_us, timeout_us, false, addr)
#define readx_poll_timeout_atomic(op, addr, val, cond, delay_us, timeout_us)   \
	readx_poll_timeout(op, addr, val, cond, delay_us, timeout_us)

#define readb_poll_timeout(addr, val, cond, us, to)                            \
	readx_poll_timeout(readb, addr, val, cond, us, to)
#define readw_poll_timeout(addr, val, cond, us, to)                            \
	readx_poll_timeout(readw, addr, val, cond, us, to)
#define readl_poll_timeout(addr, val, cond, us, to)                            \
	readx_poll_timeout(readl, addr, val, cond, us, to)
#define readq_poll_timeout(addr, val, cond, us, to)                            \
	readx_poll_timeout(readq, addr, val, cond, us, to)
#define readb_relaxed_poll_timeout(addr, val, cond, us, to)                    \
	readx_poll_timeout(readb_relaxed, addr, val, cond, us, to)
#define readl_relaxed_poll_timeout(addr, val, cond, us, to)                    \
	readx_poll_timeout(readl_relaxed, addr, val, cond, us, to)
#define readb_poll_timeout_atomic readb_poll_timeout
#define readw_poll_timeout_atomic readw_poll_timeout
#define readl_poll_timeout_atomic readl_poll_timeout
#define readq_poll_timeout_atomic readq_poll_timeout
#define readl_relaxed_poll_timeout_atomic readl_relaxed_poll_timeout

#endif /* KCOMPAT_LINUX_IOPOLL_H */
