// SPDX-License-Identifier: MIT
/*
 * What the library's munmap() costs a program: mmap() then munmap() of one
 * anonymous page nothing manages, with no managed mapping live and with 64
 * (devm_mmap() of a page each) live; and a devm_mmap() then devm_munmap()
 * pair of one page. Each of 31 rounds times 2 000 pairs of each case, the
 * cases interleaved in the round; thread CPU time, median per pair,
 * pinned to one CPU. Built against two builds of the library and run
 * alternately, it compares them: it prints one line of the three medians.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "bench.h"

#define ROUNDS 31
#define PAIRS 2000
#define LIVE 64

static struct device dev;

static double plain_pairs(void)
{
	double t0 = now_ns();

	for (int i = 0; i < PAIRS; i++) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || munmap(p, 4096)) {
			perror("mmap/munmap");
			exit(1);
		}
	}
	return (now_ns() - t0) / PAIRS;
}

static void *devm_page(void)
{
	void *p = devm_mmap(&dev, NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (IS_ERR(p)) {
		fprintf(stderr, "devm_mmap failed\n");
		exit(1);
	}
	return p;
}

static double managed_pairs(void)
{
	double t0 = now_ns();

	for (int i = 0; i < PAIRS; i++)
		devm_munmap(&dev, devm_page(), 4096);
	return (now_ns() - t0) / PAIRS;
}

int main(void)
{
	double none[ROUNDS], live[ROUNDS], managed[ROUNDS];
	struct spread a, b, c;

	device_initialize(&dev);
	dev.init_name = "bench";
	pin_to_one_cpu();
	for (int r = 0; r < ROUNDS; r++) {
		none[r] = plain_pairs();
		for (int i = 0; i < LIVE; i++)
			(void)devm_page();
		live[r] = plain_pairs();
		devres_release_all(&dev);
		managed[r] = managed_pairs();
	}
	a = spread_of(none, ROUNDS);
	b = spread_of(live, ROUNDS);
	c = spread_of(managed, ROUNDS);
	printf("mmap+munmap, 0 managed live: %.0f ns (q1 %.0f, q3 %.0f); "
	       "64 live: %.0f ns (q1 %.0f, q3 %.0f); "
	       "devm_mmap+devm_munmap: %.0f ns (q1 %.0f, q3 %.0f)\n",
	       a.med, a.q1, a.q3, b.med, b.q1, b.q3, c.med, c.q1, c.q3);
	return 0;
}
