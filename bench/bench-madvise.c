// SPDX-License-Identifier: MIT
/*
 * What the library's madvise() and mprotect() cost a program over memory
 * nothing manages: madvise(MADV_DONTNEED) of one anonymous page (advice
 * the library looks up) with no managed mapping live and with 64
 * (devm_mmap() of a page each) live, madvise(MADV_WILLNEED) with 64 live
 * (advice it passes without a look), and mprotect() of the page to read
 * and write with 64 live. Each of 31 rounds times 5 000 calls of each
 * case, the cases interleaved in the round; thread CPU time, median per
 * call, pinned to one CPU. Built against two builds of the library and
 * run alternately, it compares them: it prints one line of the medians.
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
#define CALLS 5000
#define LIVE 64

static struct device dev;
static char *page;

static double advise(int advice)
{
	double t0 = now_ns();

	for (int i = 0; i < CALLS; i++) {
		if (madvise(page, 4096, advice)) {
			perror("madvise");
			exit(1);
		}
	}
	return (now_ns() - t0) / CALLS;
}

static double protect(void)
{
	double t0 = now_ns();

	for (int i = 0; i < CALLS; i++) {
		if (mprotect(page, 4096, PROT_READ | PROT_WRITE)) {
			perror("mprotect");
			exit(1);
		}
	}
	return (now_ns() - t0) / CALLS;
}

static void devm_page(void)
{
	void *p = devm_mmap(&dev, NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (IS_ERR(p)) {
		fprintf(stderr, "devm_mmap failed\n");
		exit(1);
	}
}

int main(void)
{
	double none[ROUNDS], live[ROUNDS], pass[ROUNDS], prot[ROUNDS];
	struct spread a, b, c, d;

	device_initialize(&dev);
	dev.init_name = "bench";
	pin_to_one_cpu();
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		none[r] = advise(MADV_DONTNEED);
		for (int i = 0; i < LIVE; i++)
			devm_page();
		live[r] = advise(MADV_DONTNEED);
		pass[r] = advise(MADV_WILLNEED);
		prot[r] = protect();
		devres_release_all(&dev);
	}
	a = spread_of(none, ROUNDS);
	b = spread_of(live, ROUNDS);
	c = spread_of(pass, ROUNDS);
	d = spread_of(prot, ROUNDS);
	printf("MADV_DONTNEED, 0 managed live: %.0f ns (q1 %.0f, q3 %.0f); "
	       "64 live: %.0f ns (q1 %.0f, q3 %.0f); "
	       "MADV_WILLNEED, 64 live: %.0f ns (q1 %.0f, q3 %.0f); "
	       "mprotect, 64 live: %.0f ns (q1 %.0f, q3 %.0f)\n",
	       a.med, a.q1, a.q3, b.med, b.q1, b.q3, c.med, c.q1, c.q3, d.med,
	       d.q1, d.q3);
	munmap(page, 4096);
	return 0;
}
