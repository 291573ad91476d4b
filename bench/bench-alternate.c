// SPDX-License-Identifier: MIT
/*
 * One device shared by N threads against the hand-written baseline, the
 * two sides alternated in short slices by the same threads.
 *
 * bench-contention runs each side for one window and the other after it:
 * on a loaded machine the other jobs' load changes from one window to the
 * next, and a window in which the scheduler gave the process less CPU
 * decides the ratio as much as either side's code. Here the same N threads
 * run both sides in turn: every SLICE ms the main thread switches them from
 * one side to the other (libdevres first in even pairs, the baseline first
 * in odd ones), so a change of load lands on both sides within a slice of
 * each other, and a thread the scheduler starves is starved on both sides.
 *
 * The libdevres side: devm_kmalloc(64), a little work, devm_kfree(), on
 * one device. The baseline: malloc() a node with a 16-byte header, link it
 * on one list under one pthread mutex, the same work, unlink it under the
 * mutex, free(). An operation begun in one side's slice counts for that
 * side. For each side: the wall-clock time of its slices times N over its
 * operations (what one thread sees of an allocate + free, the others
 * running: bench-contention's "ns per op"), the process's CPU time in its
 * slices over its operations, and fairness, the slowest thread's
 * operations over the average's.
 *
 * Whose the slowest thread's shortfall was: each thread counts, for each
 * side, its CPU time (CLOCK_THREAD_CPUTIME_ID), its time runnable but
 * waiting for a CPU (run delay, /proc/thread-self/schedstat) and the rest
 * of its time in that side's slices, the time it slept (on the lock or
 * the mutex), all read when it sees the side change. "cpu share" is the
 * slowest thread's CPU time over the average thread's; one below half its
 * share of the operations was short of the lock if it had at least half
 * its share of the CPU (it ran and did not get the lock) or slept longer
 * than it waited for a CPU, else short of a CPU (the scheduler kept it
 * off): bench-contention's "short of", per side.
 *
 *   bench-alternate [ms per side] [slice ms] [threads...]
 *
 * Defaults: 500 ms a side in slices of 10 ms, 2, 4 and 8 threads, three
 * runs of each, unpinned (BENCH_PINNED=1 pins thread i on CPU i modulo
 * the CPUs). BENCH_EACH=1 prints a line for each run as well (what
 * bench/lock-loaded.sh reads): its two sides' ns an operation, their
 * ratio, each side's fairness and its slowest thread's CPU share and
 * shortfall.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"
#include <devres/device.h>

#define MAX_THREADS 16
#define RUNS 3
#define OBJ 64

enum {
	LIB,
	HAND,
	SIDES
};

struct hnode {
	struct hnode *next, *prev;
};

static struct {
	pthread_mutex_t mutex;
	struct hnode head;
} __attribute__((aligned(64))) list;

struct worker {
	pthread_t t;
	int id;
	int pinned;
	unsigned long ops[SIDES]; /* published after every operation */
	unsigned long sum;
	/* In each side's slices once counted (gen > 0), in ns: read at end. */
	double cpu[SIDES], delay[SIDES], wall[SIDES];
} __attribute__((aligned(64)));

static struct device *dev;
static int side;
/* Bumped at every switch of side; 0 before the count begins. */
static int gen;
static int stop;
static int running;

static void dev_release(struct device *d)
{
	free(d);
}

static unsigned long op_lib(unsigned long i)
{
	void *p = devm_kmalloc(dev, OBJ, GFP_KERNEL);
	unsigned long s;

	if (!p)
		abort();
	s = bench_work(p, OBJ, i);
	devm_kfree(dev, p);
	return s;
}

static unsigned long op_hand(unsigned long i)
{
	struct hnode *n = malloc(sizeof(*n) + OBJ);
	unsigned long s;

	if (!n)
		abort();
	pthread_mutex_lock(&list.mutex);
	n->next = list.head.next;
	n->prev = &list.head;
	list.head.next->prev = n;
	list.head.next = n;
	pthread_mutex_unlock(&list.mutex);
	s = bench_work((unsigned char *)(n + 1), OBJ, i);
	pthread_mutex_lock(&list.mutex);
	n->prev->next = n->next;
	n->next->prev = n->prev;
	pthread_mutex_unlock(&list.mutex);
	free(n);
	return s;
}

static double clock_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The calling thread's run delay so far, in ns (0 without schedstat). */
static double run_delay(void)
{
	char buf[96];
	unsigned long long ran, delay;
	int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &ran, &delay) != 2)
		return 0;
	return (double)delay;
}

/* Where a thread's clocks stood when it last saw the side change. */
struct mark {
	double cpu, delay, wall;
	int side, gen;
};

/*
 * At a change of side (or the end): what the clocks advanced since @m
 * goes to the side @m was in, if the count had begun then.
 */
static void account(struct worker *w, struct mark *m, int s, int g)
{
	struct mark now = { clock_of(CLOCK_THREAD_CPUTIME_ID), run_delay(),
			    clock_of(CLOCK_MONOTONIC), s, g };

	if (m->gen > 0) {
		w->cpu[m->side] += now.cpu - m->cpu;
		w->delay[m->side] += now.delay - m->delay;
		w->wall[m->side] += now.wall - m->wall;
	}
	*m = now;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long i = 0, sum = 0;
	struct mark m = { 0 };

	if (w->pinned) {
		int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->id % (ncpu > 0 ? ncpu : 1), &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	__atomic_add_fetch(&running, 1, __ATOMIC_RELAXED);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int g = __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
		int s = __atomic_load_n(&side, __ATOMIC_RELAXED);

		if (g != m.gen)
			account(w, &m, s, g);
		sum += s == LIB ? op_lib(i) : op_hand(i);
		i++;
		__atomic_store_n(&w->ops[s], w->ops[s] + 1, __ATOMIC_RELAXED);
	}
	account(w, &m, m.side, m.gen);
	w->sum = sum;
	return NULL;
}

struct result {
	double ns[SIDES];  /* wall-clock per op, as one thread sees it */
	double cpu[SIDES]; /* the process's CPU per op */
	double fair[SIDES];
	/* The slowest thread's CPU share, and what it was short of. */
	double cpu_share[SIDES];
	int short_of[SIDES];
};

enum {
	SHORT_NONE, /* at least half its share of the operations */
	SHORT_LOCK, /* ran, or slept on the lock, without getting it */
	SHORT_CPU   /* runnable, waiting for a CPU */
};

static const char *const short_name[] = { "-", "lock", "CPU" };

/*
 * Of side @s, thread @k (the slowest): its CPU share into @r, and what it
 * was short of if it had less than half its share of the operations.
 */
static void shortfall(const struct worker *w, int n, int s, int k,
		      struct result *r)
{
	double all = 0, slept;

	for (int i = 0; i < n; i++)
		all += w[i].cpu[s];
	r->cpu_share[s] = all > 0 ? w[k].cpu[s] * n / all : 0;
	slept = w[k].wall[s] - w[k].cpu[s] - w[k].delay[s];
	if (r->fair[s] >= 0.5)
		r->short_of[s] = SHORT_NONE;
	else if (r->cpu_share[s] >= 0.5 || slept > w[k].delay[s])
		r->short_of[s] = SHORT_LOCK;
	else
		r->short_of[s] = SHORT_CPU;
}

static struct result run_case(int n, int pinned, int ms, int slice_ms)
{
	static struct worker w[MAX_THREADS];
	unsigned long base[MAX_THREADS][SIDES];
	double wall[SIDES] = { 0 }, cpu[SIDES] = { 0 };
	struct timespec poll = { 0, 50000 };
	struct timespec d = { slice_ms / 1000,
			      (long)(slice_ms % 1000) * 1000000L };
	int pairs = ms / slice_ms > 0 ? ms / slice_ms : 1;
	struct result r;

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		perror("calloc");
		exit(1);
	}
	dev->release = dev_release;
	dev->init_name = "bench";
	device_initialize(dev);
	pthread_mutex_init(&list.mutex, NULL);
	list.head.next = list.head.prev = &list.head;
	stop = running = gen = 0;
	side = LIB;
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ .id = i, .pinned = pinned };
		if (pthread_create(&w[i].t, NULL, run, &w[i])) {
			perror("pthread_create");
			exit(1);
		}
	}
	/* Counted from the moment every thread has run (bench-contention). */
	while (__atomic_load_n(&running, __ATOMIC_RELAXED) < n)
		nanosleep(&poll, NULL);
	for (int i = 0; i < n; i++)
		for (int s = 0; s < SIDES; s++)
			base[i][s] =
				__atomic_load_n(&w[i].ops[s], __ATOMIC_RELAXED);
	for (int k = 0; k < 2 * pairs; k++) {
		/* LIB HAND HAND LIB LIB HAND ...: each side first as often. */
		int s = (k + k / 2) % 2 ? HAND : LIB;
		double t0, c0;

		__atomic_store_n(&side, s, __ATOMIC_RELAXED);
		__atomic_store_n(&gen, k + 1, __ATOMIC_RELEASE);
		t0 = clock_of(CLOCK_MONOTONIC);
		c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
		nanosleep(&d, NULL);
		wall[s] += clock_of(CLOCK_MONOTONIC) - t0;
		cpu[s] += clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].t, NULL);
	for (int s = 0; s < SIDES; s++) {
		unsigned long total = 0, least = ~0UL;
		int slowest = 0;

		for (int i = 0; i < n; i++) {
			unsigned long ops = w[i].ops[s] - base[i][s];

			total += ops;
			if (ops < least) {
				least = ops;
				slowest = i;
			}
		}
		r.ns[s] = total ? wall[s] * n / (double)total : 0;
		r.cpu[s] = total ? cpu[s] / (double)total : 0;
		r.fair[s] = total ? (double)least * n / (double)total : 0;
		shortfall(w, n, s, slowest, &r);
	}
	devres_release_all(dev);
	put_device(dev);
	pthread_mutex_destroy(&list.mutex);
	return r;
}

static void minmax(const double *v, double *lo, double *hi)
{
	*lo = *hi = v[0];
	for (int i = 1; i < RUNS; i++) {
		if (v[i] < *lo)
			*lo = v[i];
		if (v[i] > *hi)
			*hi = v[i];
	}
}

/* One run of @n threads, on a line of its own (BENCH_EACH=1). */
static void print_run(int n, const struct result *r)
{
	double load[3] = { 0, 0, 0 };

	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("run: threads %d lib %.0f hand %.0f ratio %.2f "
	       "fair %.2f / %.2f cpu-share %.2f / %.2f short %s / %s "
	       "load %.2f\n",
	       n, r->ns[LIB], r->ns[HAND],
	       r->ns[HAND] > 0 ? r->ns[LIB] / r->ns[HAND] : 0, r->fair[LIB],
	       r->fair[HAND], r->cpu_share[LIB], r->cpu_share[HAND],
	       short_name[r->short_of[LIB]], short_name[r->short_of[HAND]],
	       load[0]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const int deflt[] = { 2, 4, 8 };
	int ms = argc > 1 ? atoi(argv[1]) : 500;
	int slice = argc > 2 ? atoi(argv[2]) : 10;
	const char *pe = getenv("BENCH_PINNED");
	const char *ee = getenv("BENCH_EACH");
	int pinned = pe && atoi(pe);
	int each = ee && atoi(ee);
	int counts[MAX_THREADS], ncounts = 0;
	double load[3] = { 0, 0, 0 };

	for (int a = 3; a < argc && ncounts < MAX_THREADS; a++)
		counts[ncounts++] = atoi(argv[a]);
	if (!ncounts)
		for (int i = 0; i < 3; i++)
			counts[ncounts++] = deflt[i];
	if (ms < 1 || slice < 1 || slice > ms) {
		fprintf(stderr,
			"usage: %s [ms per side] [slice ms] "
			"[threads...]\n",
			argv[0]);
		return 2;
	}
	for (int c = 0; c < ncounts; c++)
		if (counts[c] < 1 || counts[c] > MAX_THREADS) {
			fprintf(stderr, "threads: 1 to %d\n", MAX_THREADS);
			return 2;
		}
#ifndef NDEBUG
	printf("note: not a release build; figures are not representative\n");
#endif
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("%ld CPUs, %d ms a side in slices of %d ms, %s, load average "
	       "%.2f %.2f %.2f at the start\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), ms, slice,
	       pinned ? "pinned" : "unpinned", load[0], load[1], load[2]);
	printf("| threads | libdevres ns/op (3 runs) | by hand ns/op (3 runs) "
	       "| ratio, min-max | CPU an op, ratio min-max "
	       "| fair: libdevres / by hand, min-max "
	       "| slowest thread's cpu share: libdevres / by hand, min-max "
	       "| below half, short of (3 runs): libdevres / by hand |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (int c = 0; c < ncounts; c++) {
		struct result r[RUNS];
		double ra[RUNS], rc[RUNS], fa[RUNS], fb[RUNS];
		double sa[RUNS], sb[RUNS];
		double lo, hi, clo, chi, flo, fhi, glo, ghi, slo, shi, tlo, thi;

		for (int k = 0; k < RUNS; k++) {
			r[k] = run_case(counts[c], pinned, ms, slice);
			ra[k] = r[k].ns[HAND] > 0 ? r[k].ns[LIB] / r[k].ns[HAND]
						  : 0;
			rc[k] = r[k].cpu[HAND] > 0
					? r[k].cpu[LIB] / r[k].cpu[HAND]
					: 0;
			fa[k] = r[k].fair[LIB];
			fb[k] = r[k].fair[HAND];
			sa[k] = r[k].cpu_share[LIB];
			sb[k] = r[k].cpu_share[HAND];
			if (each)
				print_run(counts[c], &r[k]);
		}
		minmax(ra, &lo, &hi);
		minmax(rc, &clo, &chi);
		minmax(fa, &flo, &fhi);
		minmax(fb, &glo, &ghi);
		minmax(sa, &slo, &shi);
		minmax(sb, &tlo, &thi);
		printf("| %d | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f "
		       "| %.2f-%.2f | %.2f-%.2f | %.2f-%.2f / %.2f-%.2f "
		       "| %.2f-%.2f / %.2f-%.2f | %s %s %s / %s %s %s |\n",
		       counts[c], r[0].ns[LIB], r[1].ns[LIB], r[2].ns[LIB],
		       r[0].ns[HAND], r[1].ns[HAND], r[2].ns[HAND], lo, hi, clo,
		       chi, flo, fhi, glo, ghi, slo, shi, tlo, thi,
		       short_name[r[0].short_of[LIB]],
		       short_name[r[1].short_of[LIB]],
		       short_name[r[2].short_of[LIB]],
		       short_name[r[0].short_of[HAND]],
		       short_name[r[1].short_of[HAND]],
		       short_name[r[2].short_of[HAND]]);
		fflush(stdout);
	}
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("\nload average %.2f %.2f %.2f at the end\n", load[0], load[1],
	       load[2]);
	return 0;
}
