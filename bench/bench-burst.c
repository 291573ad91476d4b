// SPDX-License-Identifier: MIT
/*
 * bench-burst: a million small managed objects made and released again,
 * round after round, on one device, next to malloc + free of the same; and
 * what the process still holds after the last round, at once and after a
 * pause (the blocks beyond the slab's 64 MiB cache go back only once they
 * stayed unused for a while, src/base/slab.c).
 *
 *   ./build/release/bench/bench-burst [rounds] [objects] [size] [pause ms]
 *
 * Defaults: 6 rounds of 1 000 000 objects of 128 B, a pause of 2500 ms.
 * Times are the thread's CPU time per object of each round after the
 * first (the first maps the memory for both sides). "Resident" is the
 * process's resident set, "lazy" what of it the kernel may take back at
 * will (LazyFree in /proc/self/smaps_rollup): memory given back.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"
#include <devres/device.h>

#define MAX_ROUNDS 101

static void dev_release(struct device *dev)
{
	(void)dev;
}

/* Resident and lazily freed KiB of this process, or -1. */
static void memory_kib(long *ret_rss, long *ret_lazy)
{
	char line[256];
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	*ret_rss = -1;
	*ret_lazy = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Rss: %ld kB", ret_rss);
		sscanf(line, "LazyFree: %ld kB", ret_lazy);
	}
	fclose(f);
}

static double round_devres(struct device *dev, long n, size_t size)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		if (!devm_kmalloc(dev, size, GFP_KERNEL)) {
			fprintf(stderr, "devm_kmalloc failed\n");
			exit(1);
		}
	devres_release_all(dev);
	return (now_ns() - t0) / (double)n;
}

static double round_malloc(void **ptrs, long n, size_t size)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		if (!(ptrs[i] = malloc(size))) {
			fprintf(stderr, "malloc failed\n");
			exit(1);
		}
	for (long i = n - 1; i >= 0; i--)
		free(ptrs[i]);
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	struct device dev = { .release = dev_release, .init_name = "burst" };
	struct device other = { .release = dev_release, .init_name = "later" };
	int rounds = argc > 1 ? atoi(argv[1]) : 6;
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	size_t size = argc > 3 ? (size_t)atol(argv[3]) : 128;
	long pause_ms = argc > 4 ? atol(argv[4]) : 2500;
	double td[MAX_ROUNDS], tm[MAX_ROUNDS], load[3] = { -1, -1, -1 };
	long rss, lazy;
	struct timespec pause;
	void **ptrs;

	if (rounds < 2 || rounds > MAX_ROUNDS || n < 1 || !size ||
	    pause_ms < 0) {
		fprintf(stderr,
			"usage: %s [rounds 2..%d] [objects] [size] "
			"[pause ms]\n",
			argv[0], MAX_ROUNDS);
		return 2;
	}
	ptrs = malloc(sizeof(*ptrs) * (size_t)n);
	if (!ptrs)
		return 1;
	device_initialize(&dev);
	device_initialize(&other);
	(void)pin_to_one_cpu();
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("bench-burst: %d rounds of %ld objects of %zu B, load %.2f\n",
	       rounds, n, size, load[0]);
	/* Interleaved, the order alternating: a slow moment hits both. */
	for (int r = 0; r < rounds; r++) {
		if (r % 2) {
			tm[r] = round_malloc(ptrs, n, size);
			td[r] = round_devres(&dev, n, size);
		} else {
			td[r] = round_devres(&dev, n, size);
			tm[r] = round_malloc(ptrs, n, size);
		}
		printf("  round %d: libdevres %7.1f ns, malloc+free %6.1f ns "
		       "an object\n",
		       r, td[r], tm[r]);
	}
	{
		struct spread d = spread_of(td + 1, rounds - 1);
		struct spread m = spread_of(tm + 1, rounds - 1);

		printf("after the first round: libdevres %.1f ns (%.1f-%.1f), "
		       "malloc+free %.1f ns (%.1f-%.1f), ratio of medians "
		       "%.2f\n",
		       d.med, d.min, d.max, m.med, m.min, m.max, d.med / m.med);
	}
	memory_kib(&rss, &lazy);
	printf("after the last release: resident %ld KiB, of it lazily freed "
	       "%ld KiB\n",
	       rss, lazy);
	pause.tv_sec = pause_ms / 1000;
	pause.tv_nsec = (pause_ms % 1000) * 1000000L;
	nanosleep(&pause, NULL);
	/* Another device's few objects: the library looks at the clock. */
	for (int i = 0; i < 4; i++)
		(void)devm_kmalloc(&other, size, GFP_KERNEL);
	devres_release_all(&other);
	memory_kib(&rss, &lazy);
	printf("%ld ms later, after a few objects on another device: resident "
	       "%ld KiB, of it lazily freed %ld KiB\n",
	       pause_ms, rss, lazy);
	put_device(&other);
	put_device(&dev);
	free(ptrs);
	return 0;
}
