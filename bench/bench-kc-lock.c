// SPDX-License-Identifier: MIT
/*
 * What the compat locks' owner-process check costs: an uncontended lock
 * and unlock of a compat mutex (<linux/mutex.h>) and spinlock
 * (<linux/spinlock.h>), each of which compares the process that made the
 * lock with this one first, against the same pair on a plain pthread
 * mutex, which is what they were before. The three are interleaved in
 * each round, in one pinned process, so that the machine's load falls on
 * all of them alike; the ratios to the plain pair are the result.
 *
 * Usage: bench-kc-lock [ROUNDS]   (default 15; 1,000,000 pairs a round)
 */
#define _GNU_SOURCE
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <pthread.h>
#include "bench.h"

#define PAIRS 1000000

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static struct mutex mx;
static spinlock_t sl;

static double round_plain(void)
{
	double t0 = now_ns();

	for (int i = 0; i < PAIRS; i++) {
		pthread_mutex_lock(&plain);
		pthread_mutex_unlock(&plain);
	}
	return (now_ns() - t0) / PAIRS;
}

static double round_mutex(void)
{
	double t0 = now_ns();

	for (int i = 0; i < PAIRS; i++) {
		mutex_lock(&mx);
		mutex_unlock(&mx);
	}
	return (now_ns() - t0) / PAIRS;
}

static double round_spin(void)
{
	double t0 = now_ns();

	for (int i = 0; i < PAIRS; i++) {
		spin_lock(&sl);
		spin_unlock(&sl);
	}
	return (now_ns() - t0) / PAIRS;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	double *p, *m, *s;
	struct spread sp, sm, ss;

	if (rounds < 1)
		rounds = 15;
	p = calloc((size_t)rounds, sizeof(*p));
	m = calloc((size_t)rounds, sizeof(*m));
	s = calloc((size_t)rounds, sizeof(*s));
	if (!p || !m || !s)
		return 1;
	(void)pin_to_one_cpu();
	mutex_init(&mx);
	spin_lock_init(&sl);
	/* One round of each first, unrecorded: caches and the pid cached. */
	(void)round_plain();
	(void)round_mutex();
	(void)round_spin();
	for (int r = 0; r < rounds; r++) {
		p[r] = round_plain();
		m[r] = round_mutex();
		s[r] = round_spin();
	}
	sp = spread_of(p, rounds);
	sm = spread_of(m, rounds);
	ss = spread_of(s, rounds);
	printf("| pair | median ns | quartiles ns | median / plain |\n");
	printf("|---|---|---|---|\n");
	printf("| pthread_mutex_lock + unlock (before) | %.2f | %.2f-%.2f | "
	       "1.00 |\n",
	       sp.med, sp.q1, sp.q3);
	printf("| mutex_lock + mutex_unlock | %.2f | %.2f-%.2f | %.2f |\n",
	       sm.med, sm.q1, sm.q3, sm.med / sp.med);
	printf("| spin_lock + spin_unlock | %.2f | %.2f-%.2f | %.2f |\n",
	       ss.med, ss.q1, ss.q3, ss.med / sp.med);
	mutex_destroy(&mx);
	free(p);
	free(m);
	free(s);
	return 0;
}
