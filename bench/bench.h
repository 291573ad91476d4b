/* SPDX-License-Identifier: MIT */
/*
 * What every benchmark program measures with: the thread's CPU time,
 * quartiles of a series of rounds, and a pin to one CPU. Header-only, so
 * that each bench-*.c stays one program of its own.
 */
#ifndef DEVRES_BENCH_H
#define DEVRES_BENCH_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The thread's CPU time: on a shared machine a round is often preempted,
 * and wall-clock time would count the other jobs' time slices. CPU time
 * still counts what the other jobs do to the caches.
 */
static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The spread of a series: its extremes, quartiles and median. */
struct spread {
	double min, q1, med, q3, max;
};

/* Of @v[0..@n), @n >= 1 (sorts a copy; @v is left as it is). */
static inline struct spread spread_of(const double *v, int n)
{
	double *s = malloc(sizeof(*s) * (size_t)n);
	struct spread r;

	if (!s) {
		perror("spread_of");
		exit(1);
	}
	memcpy(s, v, sizeof(*s) * (size_t)n);
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	r = (struct spread){ s[0], s[n / 4], s[n / 2], s[(3 * n) / 4],
			     s[n - 1] };
	free(s);
	return r;
}

/*
 * Pins the process to the CPU it runs on, so that no round migrates.
 * Returns that CPU, or -1 (and says why) when it cannot.
 */
static inline int pin_to_one_cpu(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		cpu = 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		return -1;
	}
	return cpu;
}

/*
 * A little work on the @len bytes at @p, round @i: what a caller would do
 * with an object between its allocation and its free.
 */
static inline unsigned long bench_work(unsigned char *p, size_t len,
				       unsigned long i)
{
	unsigned long s = 0;

	memset(p, (int)i, len);
	for (size_t k = 0; k < len; k += 8)
		s += p[k] * (i + (unsigned long)k);
	__asm__ volatile("" : : "r"(p) : "memory");
	return s;
}

#endif /* DEVRES_BENCH_H */
