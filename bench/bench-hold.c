// SPDX-License-Identifier: MIT
/*
 * How long the lock is held on a device that several threads share, and
 * how long the hand-written baseline of bench-contention holds its mutex:
 * N threads each loop on devm_kmalloc(64), a little work, devm_kfree() on
 * one device, then on malloc() + one list + one pthread mutex. The device
 * is shared from the first operation on (the main thread took its lock
 * first, so the workers revoke its bias), even with one thread.
 *
 *   bench-hold [ms] [threads]
 *
 * The baseline's sections are timed here, with the time stamp counter
 * read right after pthread_mutex_lock() returns and right before
 * pthread_mutex_unlock(). libdevres's are timed by the library, at the
 * same points of its lock, when it is built with -DDR_HOLD_TRACE (hold.c)
 * and linked statically:
 *
 *   cmake --preset static -B build/hold -DCMAKE_C_FLAGS=-DDR_HOLD_TRACE
 *   cmake --build build/hold --target bench-hold
 *
 * Prints, for each side and each of its two sections (the insertion and
 * the removal), the mean of the sections shorter than 2 us (the time
 * stamp counter of this machine's VM moves in steps of about 10 ns: the
 * percentiles are that coarse, the mean is not), the median, 90th, 99th
 * and 99.9th percentiles and the maximum in ns, how many sections a
 * million took 2 us or more (preempted, interrupted) and the time they
 * took, and the share of the threads' CPU time spent holding the lock in
 * the short ones: the chance that a preemption lands inside the lock.
 * Reading the counter costs the same on both sides and is counted in both.
 *
 * Built with -DDR_HOLD_CALLGRIND as well (library and bench), the
 * sections of both sides toggle callgrind's collection:
 *
 *   valgrind --tool=callgrind --collect-atstart=no bench-hold 300 1
 *
 * counts the instructions (and data reads and writes) run while holding.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include "bench.h"
#include "../src/base/hold.h"
#include <devres/device.h>

#ifdef DR_HOLD_CALLGRIND
#include <valgrind/callgrind.h>
#define HOLD_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#else
#define HOLD_TOGGLE() ((void)0)
#endif

#define MAX_THREADS 16
#define OBJ 64
#define HOLD_MAX (1u << 20)

#ifdef DR_HOLD_TRACE
extern __thread struct devres__hold_trace devres__hold_trace;
#endif

struct hnode {
	struct hnode *next, *prev;
};

static struct {
	pthread_mutex_t mutex;
	struct hnode head;
} __attribute__((aligned(64))) list;

struct worker {
	pthread_t t;
	int by_hand;
	struct device *dev;
	unsigned long ops;
	unsigned long sum;
	double cpu_ns;
	unsigned int n[2];
	unsigned int *ticks[2];
} __attribute__((aligned(64)));

static int stop, go;

static double wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void dev_release(struct device *dev)
{
	free(dev);
}

static void note(struct worker *w, int k, unsigned long long t0)
{
	unsigned long long t1 = devres__hold_ticks();

	HOLD_TOGGLE();
	if (w->n[k] < HOLD_MAX)
		w->ticks[k][w->n[k]++] = (unsigned int)(t1 - t0);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long ops = 0, sum = 0;
	struct rusage ru;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	if (w->by_hand) {
		while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
			struct hnode *n = malloc(sizeof(*n) + OBJ);
			unsigned long long t0;

			if (!n)
				abort();
			pthread_mutex_lock(&list.mutex);
			HOLD_TOGGLE();
			t0 = devres__hold_ticks();
			n->next = list.head.next;
			n->prev = &list.head;
			list.head.next->prev = n;
			list.head.next = n;
			note(w, 0, t0);
			pthread_mutex_unlock(&list.mutex);
			sum += bench_work((unsigned char *)(n + 1), OBJ, ops);
			pthread_mutex_lock(&list.mutex);
			HOLD_TOGGLE();
			t0 = devres__hold_ticks();
			n->prev->next = n->next;
			n->next->prev = n->prev;
			note(w, 1, t0);
			pthread_mutex_unlock(&list.mutex);
			free(n);
			ops++;
		}
	} else {
		while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
			void *p = devm_kmalloc(w->dev, OBJ, GFP_KERNEL);

			if (!p)
				abort();
			sum += bench_work(p, OBJ, ops);
			devm_kfree(w->dev, p);
			ops++;
		}
#ifdef DR_HOLD_TRACE
		for (int k = 0; k < 2; k++) {
			w->n[k] = devres__hold_trace.n[k];
			if (w->n[k])
				memcpy(w->ticks[k], devres__hold_trace.ticks[k],
				       w->n[k] * sizeof(unsigned int));
			free(devres__hold_trace.ticks[k]);
			devres__hold_trace.ticks[k] = NULL;
			devres__hold_trace.n[k] = 0;
		}
#endif
	}
	getrusage(RUSAGE_THREAD, &ru);
	w->cpu_ns = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
		    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
	w->ops = ops;
	w->sum = sum;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

static double ns_per_tick;

/* A section this long was preempted or interrupted (or slept in malloc). */
#define LONG_NS 2000.0

/* The ticks per ns of the counter, against CLOCK_MONOTONIC over 50 ms. */
static void calibrate(void)
{
	struct timespec d = { 0, 50000000 };
	double w0 = wall_ns();
	unsigned long long t0 = devres__hold_ticks();

	nanosleep(&d, NULL);
	ns_per_tick = (wall_ns() - w0) / (double)(devres__hold_ticks() - t0);
}

static void report(const char *side, const char *what, struct worker *w, int n,
		   int k, double cpu)
{
	unsigned long total = 0, at = 0, short_n = 0, long_n = 0;
	unsigned int *all;
	double held = 0, long_ns = 0;
	static const double q[] = { 0.5, 0.9, 0.99, 0.999 };

	for (int i = 0; i < n; i++)
		total += w[i].n[k];
	if (!total) {
		printf("| %s | %s | no samples |\n", side, what);
		return;
	}
	all = malloc(total * sizeof(*all));
	if (!all)
		exit(1);
	for (int i = 0; i < n; i++) {
		memcpy(all + at, w[i].ticks[k], w[i].n[k] * sizeof(*all));
		at += w[i].n[k];
	}
	qsort(all, total, sizeof(*all), cmp);
	for (unsigned long i = 0; i < total; i++) {
		double ns = all[i] * ns_per_tick;

		if (ns < LONG_NS) {
			held += ns;
			short_n++;
		} else {
			long_n++;
			long_ns += ns;
		}
	}
	printf("| %s | %s | %lu | %.1f |", side, what, total,
	       short_n ? held / (double)short_n : 0);
	for (int i = 0; i < 4; i++)
		printf(" %.0f |",
		       all[(unsigned long)(q[i] * (double)(total - 1))] *
			       ns_per_tick);
	printf(" %.0f | %.1f | %.2f ms | %.2f %% |\n",
	       all[total - 1] * ns_per_tick, 1e6 * long_n / (double)total,
	       long_ns / 1e6, cpu > 0 ? 100.0 * held / cpu : 0);
	free(all);
}

static void run_case(int n, int by_hand, int ms)
{
	static struct worker w[MAX_THREADS];
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	struct device *dev = calloc(1, sizeof(*dev));
	unsigned long total = 0;
	double t0, t1, cpu = 0;

	if (!dev)
		exit(1);
	dev->release = dev_release;
	dev->init_name = "bench";
	device_initialize(dev);
	/* The main thread takes the lock first: the workers share it. */
	devm_kfree(dev, devm_kmalloc(dev, OBJ, GFP_KERNEL));
	pthread_mutex_init(&list.mutex, NULL);
	list.head.next = list.head.prev = &list.head;
	stop = go = 0;
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ .by_hand = by_hand, .dev = dev };
		for (int k = 0; k < 2; k++)
			if (!(w[i].ticks[k] =
				      malloc(HOLD_MAX * sizeof(unsigned int))))
				exit(1);
		if (pthread_create(&w[i].t, NULL, run, &w[i]))
			exit(1);
	}
	t0 = wall_ns();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	nanosleep(&d, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].ops;
		cpu += w[i].cpu_ns;
	}
	t1 = wall_ns();
	printf("| %s | ns per op | %lu | %.0f |\n",
	       by_hand ? "by hand" : "libdevres", total,
	       total ? (t1 - t0) * n / (double)total : 0);
	report(by_hand ? "by hand" : "libdevres", "insert", w, n, 0, cpu);
	report(by_hand ? "by hand" : "libdevres", "remove", w, n, 1, cpu);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			free(w[i].ticks[k]);
	devres_release_all(dev);
	put_device(dev);
	pthread_mutex_destroy(&list.mutex);
}

int main(int argc, char **argv)
{
	int ms = argc > 1 ? atoi(argv[1]) : 300;
	int n = argc > 2 ? atoi(argv[2]) : 2;
	double load[3] = { -1, -1, -1 };

	if (ms < 1 || n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "usage: %s [ms] [threads]\n", argv[0]);
		return 2;
	}
#ifndef DR_HOLD_TRACE
	printf("note: not built with -DDR_HOLD_TRACE: libdevres's sections "
	       "are not timed\n");
#endif
#ifndef NDEBUG
	printf("note: not a release build; figures are not representative\n");
#endif
	calibrate();
	(void)getloadavg(load, 3);
	printf("%d threads, %d ms, load %.2f; %.3f ns a tick\n\n", n, ms,
	       load[0], ns_per_tick);
	printf("| side | section | samples | mean ns (< 2 us) | p50 ns | p90 "
	       "| p99 | p99.9 | max | per million >= 2 us | time in those "
	       "| held < 2 us / CPU |\n"
	       "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	run_case(n, 0, ms);
	run_case(n, 1, ms);
	return 0;
}
