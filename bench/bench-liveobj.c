// SPDX-License-Identifier: MIT
/*
 * bench-liveobj: what the frees of managed memory pay for the check for
 * live objects (<devres/liveobj.h>): with no object live anywhere (one
 * relaxed load per free); with one live object outside the heap (each
 * free also compares its block with the live objects' lowest and highest
 * address, and devres_release_all() walks every node); with two, one
 * below the heap and one above it, so that every block lies between them
 * and each free asks the record under its lock.
 *
 *   cmake --preset release -DDEVRES_BUILD_BENCH=ON
 *   cmake --build --preset release --target bench-liveobj
 *   ./build/release/bench/bench-liveobj [rounds]
 *
 * Each round times, in an order that turns with the round, malloc + free
 * and the two cases of the library, so that a slow moment of a shared
 * machine hits all alike; the ratios are taken within each round. The
 * cost with no object live against the library before the check is
 * bench-core's to tell, run alternately with a build of that library.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/liveobj.h>
#include "bench.h"

#define N_BULK 100000
#define N_FREES 10000
#define DEFAULT_ROUNDS 21
#define MAX_ROUNDS 201

enum {
	C_MALLOC,
	C_NONE,
	C_LIVE,
	C_AMID,
	C_NR
};
enum {
	Q_BULK,
	Q_FREES,
	Q_NR
};

static const char *const contender[C_NR] = {
	"malloc + free",
	"libdevres, no object live",
	"libdevres, one object live elsewhere",
	"libdevres, live objects around the heap",
};
static const char *const question[Q_NR] = {
	"devm_kmalloc(64) x 100000, then devres_release_all(), ns per object",
	"devm_kfree() of each of 10000 devm_kmalloc(64), ns per free",
};

static double t[Q_NR][C_NR][MAX_ROUNDS];
static void *ptrs[N_BULK];

static enum devres_liveobj_state idle(void *obj)
{
	(void)obj;
	return DEVRES_LIVEOBJ_IDLE;
}

static void no_fixup(void *obj, enum devres_liveobj_state st)
{
	(void)obj;
	(void)st;
}

static const struct devres_liveobj_descr descr = { "bench object", "nothing",
						   idle, no_fixup };

/* Not managed memory: no free meets them, every free asks for them. */
static char elsewhere[64];
static char *above; /* on main()'s stack, above the heap */

static double bulk(struct device *dev, int c)
{
	double t0 = now_ns();

	if (c == C_MALLOC) {
		for (int i = 0; i < N_BULK; i++)
			ptrs[i] = malloc(64);
		for (int i = N_BULK - 1; i >= 0; i--)
			free(ptrs[i]);
		return now_ns() - t0;
	}
	for (int i = 0; i < N_BULK; i++)
		if (!devm_kmalloc(dev, 64, GFP_KERNEL))
			exit(1);
	devres_release_all(dev);
	return now_ns() - t0;
}

static double frees(struct device *dev, int c)
{
	double t0;

	for (int i = 0; i < N_FREES; i++) {
		ptrs[i] = c == C_MALLOC ? malloc(64)
					: devm_kmalloc(dev, 64, GFP_KERNEL);
		if (!ptrs[i])
			exit(1);
	}
	t0 = now_ns();
	for (int i = N_FREES - 1; i >= 0; i--) {
		if (c == C_MALLOC)
			free(ptrs[i]);
		else
			devm_kfree(dev, ptrs[i]);
	}
	t0 = now_ns() - t0;
	devres_release_all(dev);
	return t0;
}

static double measure(struct device *dev, int q, int c)
{
	double ns;

	if ((c == C_LIVE || c == C_AMID) &&
	    devres_liveobj_activate(elsewhere, &descr)) {
		fprintf(stderr, "devres_liveobj_activate failed\n");
		exit(1);
	}
	if (c == C_AMID && devres_liveobj_activate(above, &descr)) {
		fprintf(stderr, "devres_liveobj_activate failed\n");
		exit(1);
	}
	ns = q == Q_BULK ? bulk(dev, c) : frees(dev, c);
	devres_liveobj_deactivate(elsewhere);
	devres_liveobj_deactivate(above);
	return ns / (q == Q_BULK ? N_BULK : N_FREES);
}

static void dev_release(struct device *dev)
{
	(void)dev;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;
	static struct device dev;
	double r[MAX_ROUNDS];
	char top[64];

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "rounds: 1..%d\n", MAX_ROUNDS);
		return 2;
	}
	above = top;
	pin_to_one_cpu();
	dev.init_name = "bench-liveobj";
	dev.release = dev_release;
	device_initialize(&dev);
	/* Two untimed rounds: every contender's memory warm. */
	for (int i = -2; i < rounds; i++)
		for (int q = 0; q < Q_NR; q++)
			for (int j = 0; j < C_NR; j++) {
				int c = (i + 2 + j) % C_NR;
				double ns = measure(&dev, q, c);

				if (i >= 0)
					t[q][c][i] = ns;
			}
	printf("median (IQR) of %d interleaved rounds; ratios within each "
	       "round\n",
	       rounds);
	for (int q = 0; q < Q_NR; q++) {
		struct spread s;

		printf(" %s\n", question[q]);
		for (int c = 0; c < C_NR; c++) {
			s = spread_of(t[q][c], rounds);
			printf("  %-40s %8.2f (%6.2f-%6.2f)", contender[c],
			       s.med, s.q1, s.q3);
			if (c != C_MALLOC) {
				for (int i = 0; i < rounds; i++)
					r[i] = t[q][c][i] / t[q][C_MALLOC][i];
				s = spread_of(r, rounds);
				printf("  %5.2fx malloc (%4.2f-%4.2f)", s.med,
				       s.q1, s.q3);
			}
			printf("\n");
		}
		for (int c = C_LIVE; c < C_NR; c++) {
			for (int i = 0; i < rounds; i++)
				r[i] = t[q][c][i] / t[q][C_NONE][i];
			s = spread_of(r, rounds);
			printf("  %s / none live: %.2fx (%.2f-%.2f)\n",
			       c == C_LIVE ? "one elsewhere" : "around", s.med,
			       s.q1, s.q3);
		}
	}
	put_device(&dev);
	return 0;
}
