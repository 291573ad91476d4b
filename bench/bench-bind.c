// SPDX-License-Identifier: MIT
/*
 * bench-bind: what a bind/unbind cycle on the platform bus costs, next to
 * the same allocations and clean-ups done by hand, in one process pinned
 * to one CPU, with interleaved rounds (the order of the cases rotates
 * every round) and medians of at least 11 rounds with their interquartile
 * range, as bench-peers.
 *
 *   bench-bind [rounds] [data file]
 *
 * The driver's probe takes k = 0, 10 or 100 managed resources: k/2
 * devm_kmalloc(64) inside a group it opens and closes (a mid-layer's
 * habit), then k/2 devm_add_action(). Its remove does nothing: the
 * resources go with the binding. Three cycles:
 *
 *   register:  platform_device_register_simple() (matches, probes) +
 *              platform_device_unregister() (unbinds, releases, frees)
 *   rebind:    device_release_driver() + device_attach() of a device
 *              that stays registered
 *   driver:    platform_driver_register() (binds the waiting device) +
 *              platform_driver_unregister() (unbinds it)
 *
 * and by hand: calloc() of an object the size of a platform device, k/2
 * malloc(64) and k/2 clean-up functions recorded (a malloc() each), then
 * the clean-ups called newest first and everything freed.
 *
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), per cycle, a
 * batch of CYCLES cycles at a time (a clock reading costs about 1 us).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include <devres/platform.h>

#define MAX_ROUNDS 101
#define CYCLES 1000
#define MAX_K 100
#define NAME "benchbind"

static __attribute__((noreturn)) void die(const char *what, long got, long want)
{
	fprintf(stderr, "bench-bind: %s: %ld, expected %ld\n", what, got, want);
	exit(1);
}

/* The driver. */

static int probe_k;	/* resources a probe takes */
static long cleanups;	/* clean-up functions run, managed or by hand */
static char arg[MAX_K]; /* distinct arguments for the actions */

static void cleanup(void *data)
{
	(void)data;
	cleanups++;
}

static int bench_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	int mem = probe_k / 2, act = probe_k - mem;

	if (probe_k) {
		void *id = devres_open_group(dev, NULL, GFP_KERNEL);

		if (!id)
			return -ENOMEM;
		for (int i = 0; i < mem; i++)
			if (!devm_kmalloc(dev, 64, GFP_KERNEL))
				return -ENOMEM;
		devres_close_group(dev, NULL);
	}
	for (int i = 0; i < act; i++)
		if (devm_add_action(dev, cleanup, &arg[i]))
			return -ENOMEM;
	return 0;
}

static struct platform_driver bench_driver = {
	.driver = { .name = NAME },
	.probe = bench_probe,
};

/* The same work by hand. */

struct hand_cleanup {
	void (*fn)(void *);
	void *data;
	struct hand_cleanup *next;
};

static void *must(void *p)
{
	if (!p)
		die("out of memory", 0, 1);
	return p;
}

/*
 * A clean-up is recorded in a malloc() of its own, pushed on a list, as
 * devm_add_action() records it in a node of its own.
 */
static __attribute__((noinline)) void hand_cycle(void)
{
	size_t mem = (size_t)probe_k / 2, act = (size_t)probe_k - mem;
	struct platform_device *pdev =
		must(calloc(1, sizeof(*pdev) + sizeof(NAME)));
	void **bufs = NULL;
	struct hand_cleanup *list = NULL, *c;

	memcpy(pdev + 1, NAME, sizeof(NAME));
	if (mem)
		bufs = must(malloc(sizeof(*bufs) * mem));
	for (size_t i = 0; i < mem; i++)
		bufs[i] = must(malloc(64));
	for (size_t i = 0; i < act; i++) {
		c = must(malloc(sizeof(*c)));
		*c = (struct hand_cleanup){ cleanup, &arg[i], list };
		list = c;
	}

	while ((c = list)) {
		list = c->next;
		c->fn(c->data);
		free(c);
	}
	for (size_t i = mem; i-- > 0;)
		free(bufs[i]);
	free(bufs);
	free(pdev);
}

enum bind_case {
	B_REGISTER,
	B_REBIND,
	B_DRIVER,
	B_HAND,
	B_NR
};

static const char *const bname[B_NR] = {
	"register + unregister the device",
	"device_release_driver + device_attach",
	"register + unregister the driver",
	"by hand: calloc, malloc, clean-ups, free",
};

#define NR_K 3
static const int bind_k[NR_K] = { 0, 10, 100 };
static double bt[B_NR][NR_K][MAX_ROUNDS];

static struct platform_device *add_device(void)
{
	struct platform_device *pdev = platform_device_register_simple(
		NAME, PLATFORM_DEVID_NONE, NULL, 0);

	if (IS_ERR(pdev))
		die("platform_device_register_simple", PTR_ERR(pdev), 0);
	return pdev;
}

static void check_bound(struct platform_device *pdev, bool want)
{
	if (device_is_bound(&pdev->dev) != want)
		die("device_is_bound", !want, want);
}

/* One batch of CYCLES cycles; the setup and the teardown are not timed. */
static double batch(enum bind_case c, int k)
{
	struct platform_device *pdev = NULL;
	double t0, t;
	long want = (long)CYCLES * (k - k / 2);

	probe_k = k;
	if (c != B_DRIVER && c != B_HAND &&
	    platform_driver_register(&bench_driver))
		die("platform_driver_register", 1, 0);
	if (c == B_REBIND || c == B_DRIVER)
		pdev = add_device();
	cleanups = 0;
	t0 = now_ns();
	for (int i = 0; i < CYCLES; i++) {
		switch (c) {
		case B_REGISTER:
			platform_device_unregister(add_device());
			break;
		case B_REBIND:
			device_release_driver(&pdev->dev);
			if (device_attach(&pdev->dev) != 1)
				die("device_attach", 0, 1);
			break;
		case B_DRIVER:
			if (platform_driver_register(&bench_driver))
				die("platform_driver_register", 1, 0);
			platform_driver_unregister(&bench_driver);
			break;
		case B_HAND:
			hand_cycle();
			break;
		case B_NR:
			break;
		}
	}
	t = now_ns() - t0;
	if (cleanups != want)
		die("clean-ups run", cleanups, want);
	if (pdev) {
		check_bound(pdev, c == B_REBIND);
		platform_device_unregister(pdev);
	}
	if (c != B_DRIVER && c != B_HAND)
		platform_driver_unregister(&bench_driver);
	return t / CYCLES;
}

static void run(int rounds, FILE *dat)
{
	const int nc = B_NR * NR_K;

	for (int w = 0; w < 2; w++) /* warm-up, two rounds untimed */
		for (int c = 0; c < nc; c++)
			batch(c / NR_K, bind_k[c % NR_K]);
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < nc; j++) {
			int c = (r + j) % nc;

			bt[c / NR_K][c % NR_K][r] =
				batch(c / NR_K, bind_k[c % NR_K]);
		}

	printf("| k | cycle | ns per cycle, median (IQR) | ratio to by hand, "
	       "median (IQR) | ns per resource beyond k = 0 |\n"
	       "|---|---|---|---|---|\n");
	for (int ki = 0; ki < NR_K; ki++)
		for (int c = 0; c < B_NR; c++) {
			double ratio[MAX_ROUNDS], extra[MAX_ROUNDS];
			struct spread s, q, e;

			for (int r = 0; r < rounds; r++) {
				ratio[r] = bt[c][ki][r] / bt[B_HAND][ki][r];
				extra[r] = bt[c][ki][r] - bt[c][0][r];
			}
			s = spread_of(bt[c][ki], rounds);
			q = spread_of(ratio, rounds);
			e = spread_of(extra, rounds);
			printf("| %d | %s | %.0f (%.0f-%.0f) | ", bind_k[ki],
			       bname[c], s.med, s.q1, s.q3);
			if (c == B_HAND)
				printf("1 |");
			else
				printf("%.1fx (%.1f-%.1f) |", q.med, q.q1,
				       q.q3);
			if (bind_k[ki])
				printf(" %.1f (%.1f-%.1f) |\n",
				       e.med / bind_k[ki], e.q1 / bind_k[ki],
				       e.q3 / bind_k[ki]);
			else
				printf(" – |\n");
			if (dat)
				fprintf(dat, "%d %d %.2f %.2f %.2f %.3f\n",
					bind_k[ki], c, s.med, s.q1, s.q3,
					q.med);
		}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 11;
	FILE *dat = NULL;

	if (rounds < 3 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: %s [rounds (3..%d)] [data file]\n",
			argv[0], MAX_ROUNDS);
		return 2;
	}
	if (argc > 2 && !(dat = fopen(argv[2], "w"))) {
		perror(argv[2]);
		return 1;
	}
#ifndef NDEBUG
	fprintf(stderr, "note: not a release build; figures are not "
			"representative\n");
#endif
	pin_to_one_cpu();
	run(rounds, dat);
	if (dat)
		fclose(dat);
	return 0;
}
