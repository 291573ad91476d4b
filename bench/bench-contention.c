// SPDX-License-Identifier: MIT
/*
 * The devres lock under contention: N threads each loop on
 * devm_kmalloc(64), a little work, devm_kfree(), either all on one device
 * or each on a device of its own, against the same bookkeeping written by
 * hand: malloc() a node with a 16-byte header, link it on one list under
 * one pthread mutex, the same work, unlink it under the mutex, free().
 *
 * Each case runs for a fixed wall-clock time, counted from the moment
 * every thread has run since the start (operations before then are not
 * counted: on a loaded machine a thread may wait tens of ms for a CPU
 * first); "ns per op" is that time divided by the operations of an
 * average thread (what one thread sees of an allocate + free, others
 * running), and "fair" is the slowest thread's operations over the
 * average (1: every thread got its share). Pinned:
 * thread i on CPU i modulo the CPUs; unpinned: wherever the scheduler
 * puts it. Three runs of every case, one after the other.
 *
 *   bench-contention [ms per case] [data file] [threads]
 *
 * With a thread count, only that case (one device; libdevres, then by
 * hand), once: for perf record and perf c2c. BENCH_PINNED=1 pins its
 * threads, BENCH_PER_THREAD=1 gives each its own device (and list),
 * BENCH_SIDE=devres or BENCH_SIDE=hand runs that side alone (perf stat
 * of one side: its context switches, futex calls, cache misses).
 * BENCH_LINES=1 records the address of every object the libdevres side
 * gets (up to LINES_MAX a thread) and prints, per thread, the share of
 * its objects that shared a 64-byte line with an object another thread
 * held about then (within LINES_WINDOW operations of the same point of
 * progress), and the share that another thread had held just before:
 * false sharing and slot migration between the threads.
 * BENCH_SUBLISTS=1 measures what per-thread sub-lists of one device
 * would cost and give: the libdevres side gives each thread a device of
 * its own (its list, its biased lock: a sub-list nobody else takes) and
 * takes a number from one counter that every thread shares at each
 * allocation (the sequence that would keep release order across the
 * sub-lists), against the hand-written side on one shared list as usual.
 * BENCH_TRACE=1 prints, per thread and case, when it saw the start and
 * when its first operation ended, its operations in each tenth of the
 * case, its CPU time and context switches (getrusage(RUSAGE_THREAD)):
 * whether a thread that did nothing was never scheduled, or slept on the
 * lock. Built with -DDR_LOCK_TRACE and linked with a library built with it
 * (the static one), it prints the lock's own counts of each thread too:
 * spins that failed, sleeps and wakes, hand-overs given, taken and taken
 * back, bias revocations, waits past the bound of eventual fairness and
 * hand-overs to a due waiter; and of the spins that failed, first, after a
 * wake and as starving, those that found the lock's last taker on the
 * waiter's own CPU (preempted there), and how many wakes ran within 50 us
 * of the last wake sent (woken at once, preempting whatever ran).
 * Every case also measures, per thread from the moment every thread runs,
 * its CPU time (CLOCK_THREAD_CPUTIME_ID), its time runnable but waiting
 * for a CPU (run delay, /proc/<tid>/schedstat) and the rest, the time it
 * slept (on the lock, or the mutex); "cpu share" is the slowest thread's
 * CPU time over the average thread's, next to its operations ("fair"): a
 * thread slow for want of a CPU has both low, one that ran but did not get
 * the lock has only the operations low. A slowest thread below half its
 * share is said short of the lock if it had at least half its share of
 * the CPU, or slept (on the lock) longer than it waited for a CPU; short
 * of CPU if it waited for a CPU longer than it slept ("short of").
 * The lock's fairness apart from the scheduler's: each thread's operations
 * a second of the CPU it received (CLOCK_THREAD_CPUTIME_ID over the same
 * window), over the whole process's (all the threads' operations over all
 * their CPU time); "fair per CPU" is the lowest of them. A thread the
 * scheduler kept off its CPU has its raw share low and this one near 1; a
 * thread that ran and did not get the lock has both low. The goal stays
 * the raw share: this figure says whose the shortfall was. A thread that
 * received no CPU in the window has no rate and is left out of it. The
 * one-case run prints every thread's rate.
 * The data file gets one line a case and run: mode (0 one device, 1 one
 * device per thread), pinned, threads, run, libdevres ns per op, by hand
 * ns per op, libdevres fairness, by hand fairness, the slowest
 * thread's CPU share, libdevres then by hand, and what the slowest thread
 * was short of, libdevres then by hand (0 nothing: at least half its
 * share; 1 the lock; 2 a CPU), and fair per CPU, libdevres then by hand.
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
#include <sys/syscall.h>
#include "bench.h"
#include <devres/device.h>

#define MAX_THREADS 16
#define RUNS 3
#define OBJ 64

static const int nthreads[] = { 1, 2, 4, 8, 16 };
#define NCOUNTS ((int)(sizeof(nthreads) / sizeof(nthreads[0])))

/* The hand-written side: a 16-byte header on one doubly linked list. */
struct hnode {
	struct hnode *next, *prev;
};

struct hlist {
	pthread_mutex_t mutex;
	struct hnode head;
} __attribute__((aligned(64)));

struct worker {
	pthread_t t;
	int id;
	int pinned;
	int by_hand;
	int seq; /* BENCH_SUBLISTS: a number from seqno per allocation */
	struct device *dev;
	struct hlist *list;
	unsigned long ops;
	unsigned long sum;
	uintptr_t *addr; /* BENCH_LINES: the objects it got, in order */
	/* BENCH_TRACE: */
	int trace;
	unsigned long live; /* ops so far, for the window and the sampler */
	pid_t tid;
	/* From the moment every thread runs to the end, in ns: */
	double cpu0, cpu1;     /* CPU time */
	double delay0, delay1; /* runnable, waiting for a CPU */
	double t_go;	       /* saw go */
	double t_first;	       /* first operation done */
	struct rusage ru;
#ifdef DR_LOCK_TRACE
	struct devres__lock_trace {
		unsigned long slow, spin_fail, waits, woken, starved, handoffs,
			hand, hand_back, revokes, wakes, wakes_none;
		unsigned long spin_same, woken_fail, woken_same, starve_fail,
			starve_same, woken_quick, quick_same;
		bool quick;
		unsigned long revoke_ns, barrier_ns, owner_ns;
		unsigned long due, due_hand, due_taken;
		unsigned long grace, grace_taken;
	} lt;
#endif
} __attribute__((aligned(64)));

#ifdef DR_LOCK_TRACE
extern __thread struct devres__lock_trace devres__lock_trace;
#endif
static double t_go0;

#define LINES_MAX (1ul << 20)
#define LINES_WINDOW 8

static unsigned long seqno;
static int stop;
static int go;
static int ready;
static int running;

static void dev_release(struct device *dev)
{
	free(dev);
}

static struct device *new_dev(void)
{
	struct device *dev = calloc(1, sizeof(*dev));

	if (!dev) {
		perror("calloc");
		exit(1);
	}
	dev->release = dev_release;
	dev->init_name = "bench";
	device_initialize(dev);
	return dev;
}

static void pin(int id)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(id % (ncpu > 0 ? ncpu : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static double wall_ns(void);

/* The run delay of thread @tid so far, in ns (0 without schedstat). */
static double run_delay(pid_t tid)
{
	char path[64];
	unsigned long long ran, delay;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &ran, &delay);
	fclose(f);
	return n == 2 ? (double)delay : 0;
}

static double cpu_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long ops = 0, sum = 0;
	int trace = w->trace;

	if (w->pinned)
		pin(w->id);
	w->tid = (pid_t)syscall(SYS_gettid);
	__atomic_add_fetch(&ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	if (trace)
		w->t_go = wall_ns() - t_go0;
	__atomic_add_fetch(&running, 1, __ATOMIC_RELAXED);
	if (w->by_hand) {
		struct hlist *l = w->list;

		while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
			struct hnode *n = malloc(sizeof(*n) + OBJ);

			if (!n)
				abort();
			pthread_mutex_lock(&l->mutex);
			n->next = l->head.next;
			n->prev = &l->head;
			l->head.next->prev = n;
			l->head.next = n;
			pthread_mutex_unlock(&l->mutex);
			sum += bench_work((unsigned char *)(n + 1), OBJ, ops);
			pthread_mutex_lock(&l->mutex);
			n->prev->next = n->next;
			n->next->prev = n->prev;
			pthread_mutex_unlock(&l->mutex);
			free(n);
			ops++;
			__atomic_store_n(&w->live, ops, __ATOMIC_RELAXED);
			if (trace && ops == 1)
				w->t_first = wall_ns() - t_go0;
		}
	} else {
		struct device *dev = w->dev;

		while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
			void *p = devm_kmalloc(dev, OBJ, GFP_KERNEL);

			if (!p)
				abort();
			if (w->seq)
				*(unsigned long *)p = __atomic_fetch_add(
					&seqno, 1, __ATOMIC_RELAXED);
			if (w->addr && ops < LINES_MAX)
				w->addr[ops] = (uintptr_t)p;
			sum += bench_work(p, OBJ, ops);
			devm_kfree(dev, p);
			ops++;
			__atomic_store_n(&w->live, ops, __ATOMIC_RELAXED);
			if (trace && ops == 1)
				w->t_first = wall_ns() - t_go0;
		}
	}
	w->cpu1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	w->delay1 = run_delay(w->tid);
	if (trace) {
		getrusage(RUSAGE_THREAD, &w->ru);
#ifdef DR_LOCK_TRACE
		w->lt = devres__lock_trace;
#endif
	}
	w->ops = ops;
	w->sum = sum;
	return NULL;
}

static double wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Whether the objects at @a and @b (header and data) share a line. */
static int share_line(uintptr_t a, uintptr_t b)
{
	uintptr_t a0 = (a - 16) >> 6, a1 = (a + OBJ - 1) >> 6;
	uintptr_t b0 = (b - 16) >> 6, b1 = (b + OBJ - 1) >> 6;

	return a != b && a0 <= b1 && b0 <= a1;
}

/*
 * BENCH_LINES: for each thread, how many of its objects shared a line
 * with, or were, an object of another thread at the same point of
 * progress (the other's operations scaled to this one's).
 */
static void lines_report(struct worker *w, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned long ni = w[i].ops < LINES_MAX ? w[i].ops : LINES_MAX;
		unsigned long shared = 0, moved = 0;

		for (unsigned long k = 0; k < ni; k++) {
			uintptr_t a = w[i].addr[k];
			int s = 0, m = 0;

			for (int j = 0; j < n; j++) {
				unsigned long nj = w[j].ops < LINES_MAX
							   ? w[j].ops
							   : LINES_MAX;
				long c, lo, hi;

				if (j == i || !nj)
					continue;
				c = (long)((double)k * (double)w[j].ops /
					   (double)w[i].ops);
				lo = c - LINES_WINDOW;
				hi = c + LINES_WINDOW;
				for (long x = lo < 0 ? 0 : lo;
				     x <= hi && x < (long)nj; x++) {
					s |= share_line(a, w[j].addr[x]);
					m |= a == w[j].addr[x];
				}
			}
			shared += s;
			moved += m;
		}
		printf("  thread %d: %lu ops, %.1f %% shared a line, %.1f %% "
		       "another thread's slot\n",
		       i, w[i].ops, ni ? 100.0 * shared / ni : 0,
		       ni ? 100.0 * moved / ni : 0);
	}
}

#define SLICES 10

/* What is left of @window (ns) when @w neither ran nor waited for a CPU. */
static double slept(const struct worker *w, double window)
{
	double s = window - (w->cpu1 - w->cpu0) - (w->delay1 - w->delay0);

	return s > 0 ? s : 0;
}

/* BENCH_TRACE: what each thread did, and when. */
static void trace_report(struct worker *w, int n,
			 unsigned long slice[SLICES][MAX_THREADS],
			 const unsigned long *base, double start_ms,
			 double window, int by_hand)
{
	printf("%s, %d threads, every one running %.2f ms after the start:\n",
	       by_hand ? "by hand" : "libdevres", n, start_ms);
	for (int i = 0; i < n; i++) {
		double cpu = (double)w[i].ru.ru_utime.tv_sec * 1e3 +
			     (double)w[i].ru.ru_utime.tv_usec / 1e3 +
			     (double)w[i].ru.ru_stime.tv_sec * 1e3 +
			     (double)w[i].ru.ru_stime.tv_usec / 1e3;

		printf("  t%d: %7lu ops (%lu before), go seen %6.2f ms, first "
		       "op "
		       "%6.2f ms, cpu %6.1f ms, csw %ld+%ld inv; slices:",
		       i, w[i].ops - base[i], base[i], w[i].t_go / 1e6,
		       w[i].t_first / 1e6, cpu, w[i].ru.ru_nvcsw,
		       w[i].ru.ru_nivcsw);
		for (int k = 0; k < SLICES; k++)
			printf(" %lu",
			       slice[k][i] - (k ? slice[k - 1][i] : base[i]));
		printf("\n      counted: ran %.1f ms, waited for a CPU %.1f "
		       "ms, "
		       "slept %.1f ms\n",
		       (w[i].cpu1 - w[i].cpu0) / 1e6,
		       (w[i].delay1 - w[i].delay0) / 1e6,
		       slept(&w[i], window) / 1e6);
#ifdef DR_LOCK_TRACE
		if (!by_hand) {
			struct devres__lock_trace *t = &w[i].lt;

			printf("      locks %lu, spins that failed %lu, sleeps "
			       "%lu (woken %lu), starved %lu, hand-overs taken "
			       "%lu, given "
			       "%lu (taken back %lu), revocations %lu, wakes "
			       "sent %lu (found nobody %lu)\n",
			       t->slow, t->spin_fail, t->waits, t->woken,
			       t->starved, t->handoffs, t->hand, t->hand_back,
			       t->revokes, t->wakes, t->wakes_none);
			printf("      spins that failed with the holder on "
			       "this "
			       "CPU: first %lu of %lu, after a wake %lu of "
			       "%lu, "
			       "as starving %lu of %lu; wakes run within 50 us "
			       "%lu, their spin failed so %lu\n",
			       t->spin_same, t->spin_fail, t->woken_same,
			       t->woken_fail, t->starve_same, t->starve_fail,
			       t->woken_quick, t->quick_same);
			printf("      revoking the bias: %.2f ms (membarrier "
			       "%.2f, waiting for its owner %.2f)\n",
			       (double)t->revoke_ns / 1e6,
			       (double)t->barrier_ns / 1e6,
			       (double)t->owner_ns / 1e6);
			printf("      came due %lu times, took the lock as due "
			       "%lu, handed it to a due waiter %lu; takes in a "
			       "grace %lu, of them handed over %lu\n",
			       t->due, t->due_taken, t->due_hand, t->grace,
			       t->grace_taken);
		}
#endif
	}
}

struct result {
	double ns; /* per op of an average thread */
	double fair;
	/* The slowest thread (by operations): its CPU share, and where its
	 * time went, in ms. */
	double cpu_share, ran, waited, slept;
	int short_of; /* SHORT_* */
	/*
	 * The lowest operations a CPU second of a thread over the process's
	 * (0 if no thread received CPU in the window).
	 */
	double cpu_fair;
	/*
	 * CPU time per operation, all threads': what the lock and the
	 * bookkeeping cost, whatever share of the CPUs the process got.
	 */
	double cpu_ns;
};

enum {
	SHORT_NONE, /* at least half its share of the operations */
	SHORT_LOCK, /* ran, or slept on the lock, without getting it */
	SHORT_CPU   /* runnable, waiting for a CPU */
};

static const char *const short_name[] = { "-", "lock", "CPU" };

/*
 * What the slowest thread was short of, if it got less than half its
 * share: the lock if it had half its share of the CPU or more (it ran and
 * did not get the lock), or if it slept longer than it waited for a CPU
 * (asleep on the lock or the mutex); else a CPU.
 */
static int short_of(const struct result *r)
{
	if (r->fair >= 0.5)
		return SHORT_NONE;
	if (r->cpu_share >= 0.5 || r->slept > r->waited)
		return SHORT_LOCK;
	return SHORT_CPU;
}

/*
 * Each thread's operations a second of the CPU it received, over the
 * process's; the lowest into @r, every one printed with @verbose. A
 * thread that received no CPU in the window has no rate.
 */
static void cpu_rates(const struct worker *w, const unsigned long *base, int n,
		      unsigned long total, double cpu_total, struct result *r,
		      int verbose, int by_hand)
{
	double all = cpu_total > 0 ? (double)total / (cpu_total / 1e9) : 0;

	r->cpu_fair = 0;
	r->cpu_ns = total ? cpu_total / (double)total : 0;
	if (verbose)
		printf("%s, operations a CPU second (the process: %.0f):\n",
		       by_hand ? "by hand" : "libdevres", all);
	for (int i = 0; i < n; i++) {
		double cpu = w[i].cpu1 - w[i].cpu0;
		unsigned long ops = w[i].ops - base[i];
		double rate = cpu > 0 ? (double)ops / (cpu / 1e9) : 0;
		double rel = all > 0 ? rate / all : 0;

		if (verbose)
			printf("  t%d: %lu ops, cpu %.1f ms, waited for a CPU "
			       "%.1f ms: %.0f ops a CPU second, %.2f of the "
			       "process's\n",
			       i, ops, cpu / 1e6,
			       (w[i].delay1 - w[i].delay0) / 1e6, rate, rel);
		if (cpu > 0 && all > 0 &&
		    (r->cpu_fair == 0 || rel < r->cpu_fair))
			r->cpu_fair = rel;
	}
}

/* One case: @n threads, one device (or list) or one each, for @ms. */
static struct result run_case(int n, int per_thread, int pinned, int by_hand,
			      int ms, int verbose)
{
	static struct worker w[MAX_THREADS];
	struct hlist lists[MAX_THREADS];
	struct device *devs[MAX_THREADS];
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	unsigned long total = 0, least = ~0UL;
	const char *le = getenv("BENCH_LINES");
	int lines = !by_hand && le && atoi(le);
	const char *te = getenv("BENCH_TRACE");
	int trace = te && atoi(te);
	const char *se = getenv("BENCH_SUBLISTS");
	int sub = !by_hand && se && atoi(se);
	unsigned long slice[SLICES][MAX_THREADS], base[MAX_THREADS];
	struct timespec poll = { 0, 50000 };
	double t0, t1, tstop, cpu_total = 0;
	struct result r;
	int slowest = 0;

	for (int i = 0; i < n; i++) {
		pthread_mutex_init(&lists[i].mutex, NULL);
		lists[i].head.next = lists[i].head.prev = &lists[i].head;
		devs[i] = (i == 0 || per_thread || sub) ? new_dev() : NULL;
	}
	stop = go = ready = running = 0;
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ .id = i,
					.pinned = pinned,
					.by_hand = by_hand,
					.seq = sub,
					.trace = trace };
		w[i].dev = devs[per_thread || sub ? i : 0];
		w[i].list = &lists[per_thread ? i : 0];
		if (lines &&
		    !(w[i].addr = malloc(LINES_MAX * sizeof(uintptr_t)))) {
			perror("malloc");
			exit(1);
		}
		if (pthread_create(&w[i].t, NULL, run, &w[i])) {
			perror("pthread_create");
			exit(1);
		}
	}
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < n)
		sched_yield();
	t_go0 = wall_ns();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	/*
	 * The case starts once every thread has run since the start: on a
	 * loaded machine a thread can wait tens of ms for a CPU first, and
	 * counting from the start blamed that on the lock under test.
	 */
	while (__atomic_load_n(&running, __ATOMIC_RELAXED) < n)
		nanosleep(&poll, NULL);
	t0 = wall_ns();
	for (int i = 0; i < n; i++)
		base[i] = __atomic_load_n(&w[i].live, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		clockid_t c;

		w[i].cpu0 = pthread_getcpuclockid(w[i].t, &c) ? 0 : cpu_ns(c);
		w[i].delay0 = run_delay(w[i].tid);
	}
	if (trace) {
		long step = (long)ms * 1000000L / SLICES;

		for (int k = 0; k < SLICES; k++) {
			struct timespec ts = { step / 1000000000L,
					       step % 1000000000L };

			nanosleep(&ts, NULL);
			for (int i = 0; i < n; i++)
				slice[k][i] = __atomic_load_n(&w[i].live,
							      __ATOMIC_RELAXED);
		}
	} else {
		nanosleep(&d, NULL);
	}
	tstop = wall_ns();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].t, NULL);
	t1 = wall_ns();
	for (int i = 0; i < n; i++) {
		unsigned long ops = w[i].ops - base[i];

		total += ops;
		cpu_total += w[i].cpu1 - w[i].cpu0;
		if (ops < least) {
			least = ops;
			slowest = i;
		}
		if (devs[i]) {
			devres_release_all(devs[i]);
			put_device(devs[i]);
		}
		pthread_mutex_destroy(&lists[i].mutex);
	}
	if (lines)
		lines_report(w, n);
	if (trace)
		trace_report(w, n, slice, base, (t0 - t_go0) / 1e6, tstop - t0,
			     by_hand);
	for (int i = 0; i < n; i++)
		free(w[i].addr);
	r.ns = total ? (t1 - t0) * n / (double)total : 0;
	r.fair = total ? (double)least * n / (double)total : 0;
	r.cpu_share = cpu_total > 0 ? (w[slowest].cpu1 - w[slowest].cpu0) * n /
					      cpu_total
				    : 0;
	r.ran = (w[slowest].cpu1 - w[slowest].cpu0) / 1e6;
	r.waited = (w[slowest].delay1 - w[slowest].delay0) / 1e6;
	r.slept = slept(&w[slowest], tstop - t0) / 1e6;
	r.short_of = short_of(&r);
	cpu_rates(w, base, n, total, cpu_total, &r, verbose, by_hand);
	return r;
}

static void minmax(const double *v, int n, double *lo, double *hi)
{
	*lo = *hi = v[0];
	for (int i = 1; i < n; i++) {
		if (v[i] < *lo)
			*lo = v[i];
		if (v[i] > *hi)
			*hi = v[i];
	}
}

int main(int argc, char **argv)
{
	int ms = argc > 1 ? atoi(argv[1]) : 500;
	FILE *data = argc > 2 && strcmp(argv[2], "-") ? fopen(argv[2], "w")
						      : NULL;
	double load[3] = { 0, 0, 0 };

	if (ms < 1 || (argc > 2 && strcmp(argv[2], "-") && !data)) {
		fprintf(stderr, "usage: %s [ms per case] [data file]\n",
			argv[0]);
		return 2;
	}
#ifndef NDEBUG
	printf("note: not a release build; figures are not representative\n");
#endif
	/* Registers the kinds and the ledger's tally before anything counts. */
	{
		struct device *dev = new_dev();

		devm_kfree(dev, devm_kmalloc(dev, OBJ, GFP_KERNEL));
		put_device(dev);
	}
	if (argc > 3) {
		int n = atoi(argv[3]);
		const char *pe = getenv("BENCH_PINNED");
		const char *te = getenv("BENCH_PER_THREAD");
		const char *side = getenv("BENCH_SIDE");
		int p = pe && atoi(pe), t = te && atoi(te);
		struct result a = { 0 }, b = { 0 };

		if (n < 1 || n > MAX_THREADS)
			return 2;
		if (!side || strcmp(side, "hand"))
			a = run_case(n, t, p, 0, ms, 1);
		if (!side || strcmp(side, "devres"))
			b = run_case(n, t, p, 1, ms, 1);
		printf("%d threads: libdevres %.0f ns/op (fair %.2f), by hand "
		       "%.0f ns/op (fair %.2f)\n",
		       n, a.ns, a.fair, b.ns, b.fair);
		printf("slowest thread: libdevres cpu share %.2f, ran %.1f ms, "
		       "waited for a CPU %.1f ms, slept %.1f ms; by hand cpu "
		       "share %.2f, ran %.1f ms, waited %.1f ms, slept %.1f "
		       "ms\n",
		       a.cpu_share, a.ran, a.waited, a.slept, b.cpu_share,
		       b.ran, b.waited, b.slept);
		printf("below half, short of: libdevres %s, by hand %s\n",
		       short_name[a.short_of], short_name[b.short_of]);
		printf("fair per CPU (lowest operations a CPU second over the "
		       "process's): libdevres %.2f, by hand %.2f\n",
		       a.cpu_fair, b.cpu_fair);
		printf("CPU an operation: libdevres %.1f ns, by hand %.1f ns "
		       "(%.2f x)\n",
		       a.cpu_ns, b.cpu_ns,
		       b.cpu_ns > 0 ? a.cpu_ns / b.cpu_ns : 0);
		return 0;
	}
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("%ld CPUs, %d ms a case, load average %.2f %.2f %.2f at the "
	       "start\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), ms, load[0], load[1], load[2]);
	printf("| devices | pinned | threads | libdevres ns/op (3 runs) "
	       "| by hand ns/op (3 runs) | ratio, min-max "
	       "| fair: libdevres | fair: by hand "
	       "| slowest thread's cpu share: libdevres / by hand "
	       "| below half, short of (3 runs): libdevres / by hand "
	       "| fair per CPU: libdevres / by hand "
	       "| CPU an operation, ratio min-max |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int mode = 0; mode < 2; mode++)
		for (int pinned = 1; pinned >= 0; pinned--)
			for (int c = 0; c < NCOUNTS; c++) {
				int n = nthreads[c];
				struct result a[RUNS], b[RUNS];
				double ra[RUNS], fa[RUNS], fb[RUNS];
				double ca[RUNS], cb[RUNS], pa[RUNS], pb[RUNS];
				double rc[RUNS];
				double lo, hi, flo, fhi, glo, ghi, clo, chi,
					dlo, dhi, plo, phi, qlo, qhi, rlo, rhi;

				if (mode == 1 && n == 1)
					continue;
				for (int r = 0; r < RUNS; r++) {
					a[r] = run_case(n, mode, pinned, 0, ms,
							0);
					b[r] = run_case(n, mode, pinned, 1, ms,
							0);
					ra[r] = b[r].ns > 0 ? a[r].ns / b[r].ns
							    : 0;
					fa[r] = a[r].fair;
					fb[r] = b[r].fair;
					ca[r] = a[r].cpu_share;
					cb[r] = b[r].cpu_share;
					pa[r] = a[r].cpu_fair;
					pb[r] = b[r].cpu_fair;
					rc[r] = b[r].cpu_ns > 0
							? a[r].cpu_ns /
								  b[r].cpu_ns
							: 0;
					if (data)
						fprintf(data,
							"%d %d %d %d %.1f %.1f "
							"%.3f %.3f %.3f %.3f "
							"%d %d %.3f %.3f\n",
							mode, pinned, n, r,
							a[r].ns, b[r].ns,
							a[r].fair, b[r].fair,
							ca[r], cb[r],
							a[r].short_of,
							b[r].short_of, pa[r],
							pb[r]);
				}
				minmax(ra, RUNS, &lo, &hi);
				minmax(fa, RUNS, &flo, &fhi);
				minmax(fb, RUNS, &glo, &ghi);
				minmax(ca, RUNS, &clo, &chi);
				minmax(cb, RUNS, &dlo, &dhi);
				minmax(pa, RUNS, &plo, &phi);
				minmax(pb, RUNS, &qlo, &qhi);
				minmax(rc, RUNS, &rlo, &rhi);
				printf("| %s | %s | %d | %.0f / %.0f / %.0f "
				       "| %.0f / %.0f / %.0f | %.2f-%.2f "
				       "| %.2f-%.2f | %.2f-%.2f "
				       "| %.2f-%.2f / %.2f-%.2f "
				       "| %s %s %s / %s %s %s "
				       "| %.2f-%.2f / %.2f-%.2f "
				       "| %.2f-%.2f |\n",
				       mode ? "one each" : "one",
				       pinned ? "yes" : "no", n, a[0].ns,
				       a[1].ns, a[2].ns, b[0].ns, b[1].ns,
				       b[2].ns, lo, hi, flo, fhi, glo, ghi, clo,
				       chi, dlo, dhi, short_name[a[0].short_of],
				       short_name[a[1].short_of],
				       short_name[a[2].short_of],
				       short_name[b[0].short_of],
				       short_name[b[1].short_of],
				       short_name[b[2].short_of], plo, phi, qlo,
				       qhi, rlo, rhi);
				fflush(stdout);
			}
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("\nload average %.2f %.2f %.2f at the end\n", load[0], load[1],
	       load[2]);
	if (data)
		fclose(data);
	return 0;
}
