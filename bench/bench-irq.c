// SPDX-License-Identifier: MIT
/*
 * Interrupt dispatch: what libdevres adds to a bare eventfd + epoll loop.
 *
 * Latency: from irq_line_raise() to the handler's first instruction, against
 * write() on an eventfd to the first instruction of a function called by a
 * thread waiting in epoll_wait() on it. Rounds of the two alternate in one
 * process; median and 99th percentile of all samples of each.
 *
 * Rate: interrupts handled per second when every handler raises its own
 * line again (so each interrupt is one handler call, none coalesce), on one
 * line and on 16 lines at once; the same for the bare loop.
 *
 * The process is pinned to one CPU, as every benchmark here: unpinned, the
 * scheduler may put the dispatcher and the bare loop's thread on different
 * CPUs from the raising thread, and on a VM a wake-up across CPUs costs
 * several times one on the same CPU; that measures the placement, not the
 * library. bench-irq --unpinned shows it; bench-irq --apart puts it in the
 * worst place on purpose: the raising thread on CPU 0, the dispatcher and
 * the bare loop's thread on CPU 1 (the latency part only). bench-irq
 * --split puts only the dispatcher there, the bare loop's thread with the
 * raiser on CPU 0: the placement unpinned runs fell into when the other
 * CPU was idle (the bare loop's handler on the raiser's CPU, the
 * dispatcher's not), the latency part only.
 *
 * Usage: bench-irq [rounds] [--unpinned|--apart|--split]
 * (default 10 rounds of 2000 samples)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <devres/irq.h>
#include "bench.h"

#define SAMPLES 2000
#define LINES 16
#define RATE_NS 1000000000L

static long long wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-irq: %s: %s\n", what, strerror(err));
	exit(1);
}

/* The handler's side of a latency sample: entry time, then "done". */
static long long entry_ns;
static int done_fd;

static void signal_done(void)
{
	uint64_t one = 1;

	if (write(done_fd, &one, sizeof(one)) < 0)
		die("write", errno);
}

static void wait_done(void)
{
	uint64_t v;

	if (read(done_fd, &v, sizeof(v)) < 0)
		die("read", errno);
}

/* Where the handler ran, against the raising thread's CPU. */
static int entry_cpu;

static bool same_cpu(void)
{
	return __atomic_load_n(&entry_cpu, __ATOMIC_ACQUIRE) == sched_getcpu();
}

static irqreturn_t lat_handler(int irq, void *dev_id)
{
	__atomic_store_n(&entry_ns, wall_ns(), __ATOMIC_RELEASE);
	__atomic_store_n(&entry_cpu, sched_getcpu(), __ATOMIC_RELEASE);
	(void)irq;
	(void)dev_id;
	signal_done();
	return IRQ_HANDLED;
}

/* The bare loop: one thread, one epoll set, handlers called directly. */
struct bare {
	int epfd;
	int fds[LINES];
	int nfds;
	irqreturn_t (*handler)(int irq, void *dev_id);
	void *dev_id[LINES];
	int stop;
	pthread_t thread;
};

static void *bare_loop(void *arg)
{
	struct bare *b = arg;
	struct epoll_event ev[LINES];

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		int n = epoll_wait(b->epfd, ev, LINES, 100);

		for (int i = 0; i < n; i++) {
			int k = (int)ev[i].data.u32;
			uint64_t v;

			if (read(b->fds[k], &v, sizeof(v)) == sizeof(v))
				b->handler(k, b->dev_id[k]);
		}
	}
	return NULL;
}

static void bare_start(struct bare *b, int nfds,
		       irqreturn_t (*handler)(int, void *), void **dev_id)
{
	memset(b, 0, sizeof(*b));
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	b->nfds = nfds;
	b->handler = handler;
	for (int i = 0; i < nfds; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

		b->fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		b->dev_id[i] = dev_id ? dev_id[i] : NULL;
		if (b->fds[i] < 0 ||
		    epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->fds[i], &ev) < 0)
			die("eventfd/epoll", errno);
	}
	if (pthread_create(&b->thread, NULL, bare_loop, b))
		die("pthread_create", EAGAIN);
}

static void bare_stop(struct bare *b)
{
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	pthread_join(b->thread, NULL);
	for (int i = 0; i < b->nfds; i++)
		close(b->fds[i]);
	close(b->epfd);
}

static void bare_raise(struct bare *b, int k)
{
	uint64_t one = 1;

	if (write(b->fds[k], &one, sizeof(one)) < 0)
		die("write", errno);
}

/* --apart, --split: threads made from here on go on @cpu, as this one does. */
static int apart, split;

static void move_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity", errno);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static void latency(int rounds)
{
	long long *lib = calloc((size_t)rounds * SAMPLES, sizeof(*lib));
	long long *bare = calloc((size_t)rounds * SAMPLES, sizeof(*bare));
	int irq = irq_line_create("bench"), token;
	size_t n = (size_t)rounds * SAMPLES, lib_same = 0, bare_same = 0;
	struct bare b;

	if (!lib || !bare || irq < 0)
		die("setup", ENOMEM);
	/* The dispatcher and the bare thread inherit this thread's CPUs. */
	if (apart || split)
		move_to(1);
	if (request_irq(irq, lat_handler, 0, "bench", &token))
		die("request_irq", EINVAL);
	if (split)
		move_to(0);
	bare_start(&b, 1, lat_handler, NULL);
	if (apart)
		move_to(0);
	/* One warm-up round each, then alternate. */
	for (int r = -1; r < rounds; r++) {
		for (int s = 0; s < SAMPLES; s++) {
			long long t0 = wall_ns();

			irq_line_raise(irq);
			wait_done();
			lib_same += r >= 0 && same_cpu();
			if (r >= 0)
				lib[r * SAMPLES + s] =
					__atomic_load_n(&entry_ns,
							__ATOMIC_ACQUIRE) -
					t0;
		}
		for (int s = 0; s < SAMPLES; s++) {
			long long t0 = wall_ns();

			bare_raise(&b, 0);
			wait_done();
			bare_same += r >= 0 && same_cpu();
			if (r >= 0)
				bare[r * SAMPLES + s] =
					__atomic_load_n(&entry_ns,
							__ATOMIC_ACQUIRE) -
					t0;
		}
	}
	bare_stop(&b);
	free_irq(irq, &token);
	irq_line_destroy(irq);
	qsort(lib, n, sizeof(*lib), cmp_ll);
	qsort(bare, n, sizeof(*bare), cmp_ll);
	printf("latency, raise to handler entry (%zu samples each, %d "
	       "alternating rounds)\n",
	       n, rounds);
	printf("                      median ns     p99 ns\n");
	printf("  bare eventfd+epoll  %9lld  %9lld\n", bare[n / 2],
	       bare[n * 99 / 100]);
	printf("  libdevres           %9lld  %9lld\n", lib[n / 2],
	       lib[n * 99 / 100]);
	printf("  ratio               %9.2fx %9.2fx   (goal: median <= "
	       "1.20x)\n",
	       (double)lib[n / 2] / (double)bare[n / 2],
	       (double)lib[n * 99 / 100] / (double)bare[n * 99 / 100]);
	printf("  handler on the raising thread's CPU: bare %zu, libdevres %zu "
	       "of %zu\n",
	       bare_same, lib_same, n);
	free(lib);
	free(bare);
}

/* Rate: each handler raises its own line again until time is up. */
struct chain {
	int irq;
	int bare_k;
	struct bare *b;
	long calls;
	int stop;
};

static irqreturn_t chain_handler(int irq, void *dev_id)
{
	struct chain *c = dev_id;

	c->calls++;
	if (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		irq_line_raise(irq);
	return IRQ_HANDLED;
}

static irqreturn_t bare_chain_handler(int k, void *dev_id)
{
	struct chain *c = dev_id;

	c->calls++;
	if (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
		bare_raise(c->b, k);
	return IRQ_HANDLED;
}

static double run_chains(struct chain *c, int nlines, bool lib, struct bare *b)
{
	long long t0, t1;
	long total = 0;

	for (int i = 0; i < nlines; i++) {
		c[i].calls = 0;
		__atomic_store_n(&c[i].stop, 0, __ATOMIC_RELEASE);
	}
	t0 = wall_ns();
	for (int i = 0; i < nlines; i++) {
		if (lib)
			irq_line_raise(c[i].irq);
		else
			bare_raise(b, i);
	}
	while (wall_ns() - t0 < RATE_NS / 2)
		usleep(10000);
	for (int i = 0; i < nlines; i++)
		__atomic_store_n(&c[i].stop, 1, __ATOMIC_RELEASE);
	t1 = wall_ns();
	if (lib) {
		for (int i = 0; i < nlines; i++)
			synchronize_irq(c[i].irq);
	} else {
		usleep(20000);
	}
	for (int i = 0; i < nlines; i++)
		total += __atomic_load_n(&c[i].calls, __ATOMIC_ACQUIRE);
	return (double)total * 1e9 / (double)(t1 - t0);
}

static void rate(int nlines, int rounds)
{
	struct chain c[LINES];
	void *ids[LINES];
	double best_lib = 0, best_bare = 0, sum_lib = 0, sum_bare = 0;
	struct bare b;

	memset(c, 0, sizeof(c));
	for (int i = 0; i < nlines; i++) {
		c[i].irq = irq_line_create("rate");
		c[i].b = &b;
		ids[i] = &c[i];
		if (c[i].irq < 0 ||
		    request_irq(c[i].irq, chain_handler, 0, "rate", &c[i]))
			die("request", EINVAL);
	}
	bare_start(&b, nlines, bare_chain_handler, ids);
	for (int r = 0; r < rounds; r++) {
		double l = run_chains(c, nlines, true, &b);
		double x = run_chains(c, nlines, false, &b);

		sum_lib += l;
		sum_bare += x;
		best_lib = l > best_lib ? l : best_lib;
		best_bare = x > best_bare ? x : best_bare;
	}
	bare_stop(&b);
	for (int i = 0; i < nlines; i++) {
		free_irq(c[i].irq, &c[i]);
		irq_line_destroy(c[i].irq);
	}
	printf("interrupts per second, %d line%s, each handler raising its "
	       "own line (%d rounds of 0.5 s)\n",
	       nlines, nlines > 1 ? "s" : "", rounds);
	printf("                      mean/s      best/s\n");
	printf("  bare eventfd+epoll  %9.0f  %9.0f\n", sum_bare / rounds,
	       best_bare);
	printf("  libdevres           %9.0f  %9.0f   (%.2fx of bare)\n",
	       sum_lib / rounds, best_lib, sum_lib / sum_bare);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	bool pinned = !(argc > 2 && (!strcmp(argv[2], "--unpinned") ||
				     !strcmp(argv[2], "--apart") ||
				     !strcmp(argv[2], "--split")));
	int cpu = pinned ? pin_to_one_cpu() : -1;

	if (rounds < 1)
		rounds = 1;
	apart = argc > 2 && !strcmp(argv[2], "--apart");
	split = argc > 2 && !strcmp(argv[2], "--split");
	if (apart || split) {
		if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
			printf("--apart needs two CPUs\n");
			return 77;
		}
		printf(apart ? "apart: raising on CPU 0, the dispatcher and "
			       "the "
			       "bare loop on CPU 1\n"
			     : "split: raising and the bare loop on CPU 0, "
			       "the dispatcher on CPU 1\n");
	} else if (pinned) {
		printf("pinned to CPU %d, with every thread it starts\n", cpu);
	} else {
		printf("not pinned: threads go where the scheduler puts "
		       "them\n");
	}
	done_fd = eventfd(0, EFD_CLOEXEC);
	if (done_fd < 0)
		die("eventfd", errno);
	latency(rounds);
	if (!apart && !split) {
		rate(1, rounds < 4 ? rounds : 4);
		rate(LINES, rounds < 4 ? rounds : 4);
	}
	close(done_fd);
	return 0;
}
