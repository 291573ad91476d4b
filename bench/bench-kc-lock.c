// SPDX-License-Identifier: MIT
/*
 * What the compat layer's owner-process checks cost: an uncontended lock
 * and unlock of a compat mutex (<linux/mutex.h>) and spinlock
 * (<linux/spinlock.h>), a complete() and try_wait_for_completion() of a
 * compat completion (<linux/completion.h>), and a work_pending() of an
 * idle compat work item (<linux/workqueue.h>), each of which compares the
 * process that made its object with this one first, against a lock and
 * unlock of a plain pthread mutex, which is what the locks were before.
 * The five are interleaved in each round, in one pinned process, so that
 * the machine's load falls on all of them alike; the ratios to the plain
 * pair are the result.
 *
 * Usage: bench-kc-lock [ROUNDS]   (default 15; 1,000,000 pairs a round)
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include "bench.h"

#define PAIRS 1000000

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static struct mutex mx;
static spinlock_t sl;
static struct completion done;
static struct work_struct idle;

static void idle_fn(struct work_struct *w)
{
	(void)w;
}

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

static double round_completion(void)
{
	double t0 = now_ns();

	for (int i = 0; i < PAIRS; i++) {
		complete(&done);
		(void)try_wait_for_completion(&done);
	}
	return (now_ns() - t0) / PAIRS;
}

static double round_work(void)
{
	double t0 = now_ns();
	int n = 0;

	for (int i = 0; i < PAIRS; i++)
		n += work_pending(&idle);
	if (n)
		abort();
	return (now_ns() - t0) / PAIRS;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	double *p, *m, *s, *c, *w;
	struct spread sp, sm, ss, sc, sw;

	if (rounds < 1)
		rounds = 15;
	p = calloc((size_t)rounds, sizeof(*p));
	m = calloc((size_t)rounds, sizeof(*m));
	s = calloc((size_t)rounds, sizeof(*s));
	c = calloc((size_t)rounds, sizeof(*c));
	w = calloc((size_t)rounds, sizeof(*w));
	if (!p || !m || !s || !c || !w)
		return 1;
	(void)pin_to_one_cpu();
	mutex_init(&mx);
	spin_lock_init(&sl);
	init_completion(&done);
	INIT_WORK(&idle, idle_fn);
	/* One round of each first, unrecorded: caches and the pid cached. */
	(void)round_plain();
	(void)round_mutex();
	(void)round_spin();
	(void)round_completion();
	(void)round_work();
	for (int r = 0; r < rounds; r++) {
		p[r] = round_plain();
		m[r] = round_mutex();
		s[r] = round_spin();
		c[r] = round_completion();
		w[r] = round_work();
	}
	sp = spread_of(p, rounds);
	sm = spread_of(m, rounds);
	ss = spread_of(s, rounds);
	sc = spread_of(c, rounds);
	sw = spread_of(w, rounds);
	printf("| pair | median ns | quartiles ns | median / plain |\n");
	printf("|---|---|---|---|\n");
	printf("| pthread_mutex_lock + unlock (before) | %.2f | %.2f-%.2f | "
	       "1.00 |\n",
	       sp.med, sp.q1, sp.q3);
	printf("| mutex_lock + mutex_unlock | %.2f | %.2f-%.2f | %.2f |\n",
	       sm.med, sm.q1, sm.q3, sm.med / sp.med);
	printf("| spin_lock + spin_unlock | %.2f | %.2f-%.2f | %.2f |\n",
	       ss.med, ss.q1, ss.q3, ss.med / sp.med);
	printf("| complete + try_wait_for_completion | %.2f | %.2f-%.2f | "
	       "%.2f |\n",
	       sc.med, sc.q1, sc.q3, sc.med / sp.med);
	printf("| work_pending (idle) | %.2f | %.2f-%.2f | %.2f |\n", sw.med,
	       sw.q1, sw.q3, sw.med / sp.med);
	mutex_destroy(&mx);
	free(p);
	free(m);
	free(s);
	free(c);
	free(w);
	return 0;
}
