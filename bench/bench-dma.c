// SPDX-License-Identifier: MIT
/*
 * bench-dma: what a streaming DMA mapping costs with the default DMA ops
 * (a per-device IOVA space): dma_map_single() + dma_unmap_single() of a
 * 64-byte buffer, with 0, 1000 and 100000 other mappings live on the
 * device (random replacement, so the free ranges fragment), next to
 * malloc() + free() of 64 bytes for scale, and a 4 KiB coherent buffer
 * (mmap, populate, mlock) for contrast: plain, managed
 * (dmam_alloc_coherent() + dmam_free_coherent(), whose buffer is also
 * recorded in the process's table of managed mappings), and plain with a
 * managed buffer live (every munmap() then looks the table up).
 *
 *   cmake --preset release && cmake --build build/release --target bench-dma
 *   ./build/release/bench/bench-dma [rounds]
 *
 * Each round runs every contender once, their order rotating, after two
 * warm-up rounds; a contender's figure is its median round, with the
 * fastest and slowest rounds beside it. Time is the thread's CPU time, not
 * the wall clock: on a shared machine the wall clock counts the time the
 * thread waits for a CPU (the caches other jobs trash still count).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include <devres/device.h>
#include <devres/dma.h>

#define OPS 100000	  /* map + unmap pairs per round */
#define COHERENT_OPS 2000 /* coherent alloc + free pairs per round */
#define DEFAULT_ROUNDS 11
#define MAX_ROUNDS 201
#define BIG 100000

enum {
	C_MALLOC,
	C_EMPTY,
	C_1000,
	C_BIG,
	C_COHERENT,
	C_DMAM,
	C_COHERENT_LIVE,
	C_NR
};

static const char *const names[C_NR] = {
	"malloc+free 64 B (scale)",	   "map+unmap, 0 others live",
	"map+unmap, 1000 others live",	   "map+unmap, 100000 others live",
	"coherent 4 KiB alloc+free",	   "dmam coherent 4 KiB alloc+free",
	"coherent 4 KiB, a dmam one live",
};

static struct device dev;
static unsigned char bufs[BIG][8];
static dma_addr_t live[BIG];
static unsigned int seed = 12345;

static void dev_release(struct device *d)
{
	(void)d;
}

static unsigned int rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

static void fill(int n)
{
	for (int i = 0; i < n; i++)
		live[i] = dma_map_single(&dev, bufs[i], 8, DMA_TO_DEVICE);
}

static void drain(int n)
{
	for (int i = 0; i < n; i++)
		dma_unmap_single(&dev, live[i], 8, DMA_TO_DEVICE);
}

/* ns per pair: with @n live, replace a random one OPS times. */
static double run_maps(int n)
{
	static unsigned char buf[64];
	double t0, t;

	fill(n);
	t0 = now_ns();
	if (!n) {
		for (int i = 0; i < OPS; i++) {
			dma_addr_t h =
				dma_map_single(&dev, buf, 64, DMA_TO_DEVICE);

			dma_unmap_single(&dev, h, 64, DMA_TO_DEVICE);
		}
	} else {
		for (int i = 0; i < OPS; i++) {
			unsigned int k = rnd() % (unsigned int)n;

			dma_unmap_single(&dev, live[k], 8, DMA_TO_DEVICE);
			live[k] =
				dma_map_single(&dev, bufs[k], 8, DMA_TO_DEVICE);
		}
	}
	t = (now_ns() - t0) / OPS;
	drain(n);
	return t;
}

static double run_malloc(void)
{
	static void *volatile sink;
	double t0 = now_ns();

	for (int i = 0; i < OPS; i++) {
		sink = malloc(64);
		free(sink);
	}
	return (now_ns() - t0) / OPS;
}

static double run_coherent(void)
{
	double t0 = now_ns();

	for (int i = 0; i < COHERENT_OPS; i++) {
		dma_addr_t h;
		void *p = dma_alloc_coherent(&dev, 4096, &h, GFP_KERNEL);

		dma_free_coherent(&dev, 4096, p, h);
	}
	return (now_ns() - t0) / COHERENT_OPS;
}

static double run_dmam(void)
{
	double t0 = now_ns();

	for (int i = 0; i < COHERENT_OPS; i++) {
		dma_addr_t h;
		void *p = dmam_alloc_coherent(&dev, 4096, &h, GFP_KERNEL);

		dmam_free_coherent(&dev, 4096, p, h);
	}
	return (now_ns() - t0) / COHERENT_OPS;
}

static double run_coherent_live(void)
{
	dma_addr_t h;
	void *p = dmam_alloc_coherent(&dev, 4096, &h, GFP_KERNEL);
	double t = run_coherent();

	dmam_free_coherent(&dev, 4096, p, h);
	return t;
}

static double run(int c)
{
	switch (c) {
	case C_MALLOC:
		return run_malloc();
	case C_EMPTY:
		return run_maps(0);
	case C_1000:
		return run_maps(1000);
	case C_BIG:
		return run_maps(BIG);
	case C_DMAM:
		return run_dmam();
	case C_COHERENT_LIVE:
		return run_coherent_live();
	default:
		return run_coherent();
	}
}

int main(int argc, char **argv)
{
	static double v[C_NR][MAX_ROUNDS];
	int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "rounds: 1..%d\n", MAX_ROUNDS);
		return 2;
	}
	dev.release = dev_release;
	device_initialize(&dev);
	dev_set_name(&dev, "bench-dma");
	if (dma_set_mask_and_coherent(&dev, DMA_BIT_MASK(64)))
		return 1;
	for (int r = -2; r < rounds; r++)
		for (int k = 0; k < C_NR; k++) {
			int c = (k + (r < 0 ? 0 : r)) % C_NR;
			double t = run(c);

			if (r >= 0)
				v[c][r] = t;
		}
	printf("ns per pair, median of %d interleaved rounds [min - max]\n",
	       rounds);
	for (int c = 0; c < C_NR; c++) {
		qsort(v[c], (size_t)rounds, sizeof(double), cmp_double);
		printf("  %-32s %9.1f   [%.1f - %.1f]\n", names[c],
		       v[c][rounds / 2], v[c][0], v[c][rounds - 1]);
	}
	devres_release_all(&dev);
	put_device(&dev);
	return 0;
}
