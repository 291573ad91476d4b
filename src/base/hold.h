/* SPDX-License-Identifier: MIT */
/*
 * What a build with -DDR_HOLD_TRACE (hold.c) records of the sections the
 * device lock is held in devm_kmalloc() and devm_kfree(), and the clock it
 * reads: shared with bench/bench-hold.c, which times its hand-written
 * baseline with the same clock and reads the record.
 */
#ifndef DEVRES_BASE_HOLD_H
#define DEVRES_BASE_HOLD_H

#include <time.h>

/* 0: devm_kmalloc, 1: devm_kfree (read by bench-hold). */
struct devres__hold_trace {
	int what; /* of the section now held; -1: neither */
	unsigned long long t0;
	unsigned int n[2];
	unsigned int *ticks[2];
};

static inline unsigned long long devres__hold_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned long long t;

	/* Not before what precedes it, nor after what follows. */
	__builtin_ia32_lfence();
	t = __builtin_ia32_rdtsc();
	__builtin_ia32_lfence();
	return t;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
#endif
}

#endif
