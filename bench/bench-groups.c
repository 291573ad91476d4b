// SPDX-License-Identifier: MIT
/*
 * bench-groups: what a devres group costs against its size and its depth,
 * in one process pinned to one CPU, with interleaved rounds (the order of
 * the cases rotates every round) and medians of at least 11 rounds with
 * their interquartile range, as bench-peers.
 *
 *   bench-groups size [rounds] [data file]
 *       open + close, release and remove of groups holding k = 0 .. 10 000
 *       resources, with none or 100 000 resources older and newer around
 *   bench-groups depth [rounds] [data file]
 *       nests of d = 1 .. 64 groups, one resource in each: release of the
 *       outermost, release of each from the innermost, release of an open
 *       nest, closes and removes in both orders
 *
 * Output: a markdown table on stdout, and a data file for gnuplot when a
 * third argument names it. Every resource is a devm_kmalloc() of 64 B.
 *
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which costs
 * about a microsecond a reading here: every figure is a batch of calls of
 * at least a few hundred microseconds, divided by its count.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"
#include <devres/device.h>

#define MAX_ROUNDS 101
#define MAX_SAMPLES 1024 /* a spread of several cases' rounds together */
#define RES_SIZE 64

static struct device dev, plain;

/*
 * What a pair of clock readings costs by itself (about 1 us here, a system
 * call): taken off every batch, which matters for the shortest ones (10
 * removes at k >= 1000).
 */
static double clock_cost;

static double elapsed(double t0)
{
	return now_ns() - t0 - clock_cost;
}

static void dev_release(struct device *d)
{
	(void)d;
}

static void nop_action(void *data)
{
	(void)data;
}

static __attribute__((noreturn)) void die(const char *what, long got, long want)
{
	fprintf(stderr, "bench-groups: %s: %ld, expected %ld\n", what, got,
		want);
	exit(1);
}

static void add_resources(struct device *d, long n)
{
	for (long i = 0; i < n; i++)
		if (!devm_kmalloc(d, RES_SIZE, GFP_KERNEL))
			die("devm_kmalloc failed at", i, n);
}

/*
 * The index (groups by id, memory by address) is built by the first
 * lookup by key after devres_release_all(), in one walk of the list. It
 * is built here, and timed, before the timed phases, which then see its
 * steady state.
 */
static double build_index(struct device *d)
{
	double t0 = now_ns();

	if (devm_is_action_added(d, nop_action, NULL))
		die("unexpected action", 1, 0);
	return elapsed(t0);
}

/* Size: groups of k resources among others. */

#define NR_K 6
#define NR_AROUND 2
#define MAX_GROUPS 10000
static const long size_k[NR_K] = { 0, 1, 10, 100, 1000, 10000 };
static const long around_n[NR_AROUND] = { 0, 100000 };
#define LEVELS 4096 /* groups per depth batch, whatever the depth */
static void *ids[LEVELS > MAX_GROUPS ? LEVELS : MAX_GROUPS];

/* Groups per batch: about 10 000 resources inside, and at least 10. */
static int groups_for(long k)
{
	if (k == 0)
		return MAX_GROUPS;
	return k >= 1000 ? 10 : (int)(MAX_GROUPS / k);
}

enum size_fig {
	S_BUILD,   /* open + k adds + close, per group */
	S_PLAIN,   /* the same k adds on a device without groups */
	S_OPENCL,  /* S_BUILD - S_PLAIN: open + close */
	S_RELEASE, /* devres_release_group of a closed group */
	S_REMOVE,  /* devres_remove_group of a closed group */
	S_INDEX,   /* the first lookup by key: the index built, whole */
	S_NR
};

static double st[NR_K][NR_AROUND][S_NR][MAX_ROUNDS];

static void open_groups(int ng, long k)
{
	for (int g = 0; g < ng; g++) {
		ids[g] = devres_open_group(&dev, NULL, GFP_KERNEL);
		if (!ids[g])
			die("devres_open_group failed at", g, ng);
		add_resources(&dev, k);
		devres_close_group(&dev, ids[g]);
	}
}

/*
 * One round of one case: @around older resources, groups of @k, @around
 * newer; the groups released, oldest first; then the same again with
 * the groups removed instead. Figures per group.
 */
static void size_round(int ki, int ai, int r)
{
	long k = size_k[ki], around = around_n[ai];
	int ng = groups_for(k);
	double t0, *f[S_NR];

	for (int s = 0; s < S_NR; s++)
		f[s] = &st[ki][ai][s][r];
	add_resources(&dev, around);
	*f[S_INDEX] = build_index(&dev);
	build_index(&plain);

	t0 = now_ns();
	open_groups(ng, k);
	*f[S_BUILD] = elapsed(t0) / ng;
	t0 = now_ns();
	for (int g = 0; g < ng; g++)
		add_resources(&plain, k);
	*f[S_PLAIN] = elapsed(t0) / ng;
	*f[S_OPENCL] = *f[S_BUILD] - *f[S_PLAIN];
	devres_release_all(&plain);

	add_resources(&dev, around);
	t0 = now_ns();
	for (int g = 0; g < ng; g++) {
		int cnt = devres_release_group(&dev, ids[g]);

		if (cnt != k)
			die("devres_release_group released", cnt, k);
	}
	*f[S_RELEASE] = elapsed(t0) / ng;

	open_groups(ng, k);
	add_resources(&dev, around);
	t0 = now_ns();
	for (int g = 0; g < ng; g++)
		devres_remove_group(&dev, ids[g]);
	*f[S_REMOVE] = elapsed(t0) / ng;

	if (devres_release_all(&dev) != 3 * around + ng * k)
		die("devres_release_all", 0, 3 * around + ng * k);
}

static void print_fig(const double *v, int rounds)
{
	struct spread s = spread_of(v, rounds);

	printf(" %.0f (%.0f-%.0f) |", s.med, s.q1, s.q3);
}

/* A difference of two batches: marked when its IQR reaches below zero. */
static void print_opencl(const double *v, int rounds)
{
	struct spread s = spread_of(v, rounds);

	printf(" %.0f (%.0f-%.0f)%s |", s.med, s.q1, s.q3,
	       s.q1 < 0 ? " noise" : "");
}

static void run_size(int rounds, FILE *dat)
{
	const int nc = NR_K * NR_AROUND;

	for (int w = 0; w < 2; w++) /* warm-up, two rounds untimed */
		for (int c = 0; c < nc; c++)
			size_round(c / NR_AROUND, c % NR_AROUND, 0);
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < nc; j++) {
			int c = (r + j) % nc;

			size_round(c / NR_AROUND, c % NR_AROUND, r);
		}

	printf("| k | older + newer | open + k adds + close | k adds alone "
	       "| open + close (difference) | release | release per "
	       "resource | remove |\n|---|---|---|---|---|---|---|---|\n");
	for (int ki = 0; ki < NR_K; ki++)
		for (int ai = 0; ai < NR_AROUND; ai++) {
			double(*v)[MAX_ROUNDS] = st[ki][ai];
			double per[MAX_ROUNDS];
			long k = size_k[ki];
			struct spread rel = spread_of(v[S_RELEASE], rounds);

			printf("| %ld | %ld + %ld |", k, around_n[ai],
			       around_n[ai]);
			print_fig(v[S_BUILD], rounds);
			if (k)
				print_fig(v[S_PLAIN], rounds);
			else
				printf(" – |");
			print_opencl(v[S_OPENCL], rounds);
			print_fig(v[S_RELEASE], rounds);
			if (k) {
				struct spread s;

				for (int r = 0; r < rounds; r++)
					per[r] = v[S_RELEASE][r] / (double)k;
				s = spread_of(per, rounds);
				printf(" %.1f (%.1f-%.1f) |", s.med, s.q1,
				       s.q3);
			} else {
				printf(" – |");
			}
			print_fig(v[S_REMOVE], rounds);
			printf("\n");
			if (dat)
				fprintf(dat, "%ld %ld %.2f %.2f %.2f %.2f\n", k,
					around_n[ai], rel.med, rel.q1, rel.q3,
					spread_of(v[S_REMOVE], rounds).med);
		}
	for (int ai = 0; ai < NR_AROUND; ai++) {
		double all[NR_K * MAX_ROUNDS];
		struct spread s;
		int n = 0;

		if (!around_n[ai])
			continue;
		for (int ki = 0; ki < NR_K; ki++)
			for (int r = 0; r < rounds; r++)
				all[n++] = st[ki][ai][S_INDEX][r];
		s = spread_of(all, n);
		printf("\nThe first lookup by key on a device holding %ld "
		       "resources (it builds the index, once until the next "
		       "devres_release_all): %.2f ms (%.2f-%.2f), %.1f ns "
		       "per resource.\n",
		       around_n[ai], s.med / 1e6, s.q1 / 1e6, s.q3 / 1e6,
		       s.med / (double)around_n[ai]);
	}
	printf("\nA pair of clock readings costs %.0f ns here; it is taken "
	       "off every batch.\n",
	       clock_cost);
}

/* Depth: nests of d groups, one resource in each. */

#define NR_D 7
static const int depth_d[NR_D] = { 1, 2, 4, 8, 16, 32, 64 };

enum depth_case {
	D_BUILD,	/* open + add, d times, then close innermost first */
	D_REL_OUTER,	/* release the outermost of a closed nest */
	D_REL_EACH,	/* release each, innermost first, closed */
	D_REL_OPEN,	/* release the outermost of an open nest */
	D_CLOSE_INNER,	/* close each of an open nest, innermost first */
	D_CLOSE_OUTER,	/* close each of an open nest, outermost first */
	D_REMOVE_INNER, /* remove each of an open nest, innermost first */
	D_REMOVE_OUTER, /* remove each of an open nest, outermost first */
	D_NR
};

static const char *const dname[D_NR] = {
	"open + add + close (innermost first)",
	"release the outermost (closed)",
	"release each, innermost first (closed)",
	"release the outermost (open)",
	"close each, innermost first",
	"close each, outermost first",
	"remove each (open), innermost first",
	"remove each (open), outermost first",
};

static double dt[D_NR][NR_D][MAX_ROUNDS];

/*
 * @nests nests of @d groups, one resource in each; closed innermost first
 * when @close, else left open. ids[(size_t)n * d + l] is nest n's group at level l
 * (0 the outermost).
 */
static void build_nests(int nests, int d, bool close)
{
	for (int n = 0; n < nests; n++) {
		for (int l = 0; l < d; l++) {
			ids[(size_t)n * d + l] =
				devres_open_group(&dev, NULL, GFP_KERNEL);
			if (!ids[(size_t)n * d + l])
				die("devres_open_group failed at", l, d);
			add_resources(&dev, 1);
		}
		if (close)
			for (int l = d - 1; l >= 0; l--)
				devres_close_group(&dev,
						   ids[(size_t)n * d + l]);
	}
}

/*
 * One batch of LEVELS groups in nests of depth d. Open nests are taken
 * newest nest first, so that a walk of the stack of open groups meets only
 * the nest at hand. Returns the time of the case's operation alone.
 */
static double depth_batch(enum depth_case c, int d)
{
	int nests = LEVELS / d, cnt = 0;
	bool closed = c == D_BUILD || c == D_REL_OUTER || c == D_REL_EACH;
	double t0 = now_ns(), t;

	build_nests(nests, d, closed);
	t = elapsed(t0);
	build_index(&dev);
	t0 = now_ns();
	switch (c) {
	case D_BUILD:
		break;
	case D_REL_OUTER:
		for (int n = 0; n < nests; n++)
			cnt += devres_release_group(&dev, ids[(size_t)n * d]);
		break;
	case D_REL_EACH:
		for (int n = 0; n < nests; n++)
			for (int l = d - 1; l >= 0; l--)
				cnt += devres_release_group(
					&dev, ids[(size_t)n * d + l]);
		break;
	case D_REL_OPEN:
		for (int n = nests - 1; n >= 0; n--)
			cnt += devres_release_group(&dev, ids[(size_t)n * d]);
		break;
	case D_CLOSE_INNER:
	case D_CLOSE_OUTER:
	case D_REMOVE_INNER:
	case D_REMOVE_OUTER:
		for (int n = nests - 1; n >= 0; n--)
			for (int i = 0; i < d; i++) {
				bool outer = c == D_CLOSE_OUTER ||
					     c == D_REMOVE_OUTER;
				void *id = ids[(size_t)n * d +
					       (outer ? i : d - 1 - i)];

				if (c == D_CLOSE_INNER || c == D_CLOSE_OUTER)
					devres_close_group(&dev, id);
				else
					devres_remove_group(&dev, id);
			}
		break;
	case D_NR:
		break;
	}
	if (c != D_BUILD) /* the build is D_BUILD's figure */
		t = elapsed(t0);
	if (c == D_REL_OUTER || c == D_REL_EACH || c == D_REL_OPEN) {
		if (cnt != LEVELS)
			die("released in a batch", cnt, LEVELS);
		cnt = devres_release_all(&dev);
		if (cnt != 0)
			die("left after the releases", cnt, 0);
	} else if ((cnt = devres_release_all(&dev)) != LEVELS) {
		die("devres_release_all", cnt, LEVELS);
	}
	return t;
}

/* One cell: ns per nest (@ratio false) or the ratio to depth 1. */
static void depth_cell(int c, int di, int rounds, bool ratio, FILE *dat)
{
	int d = depth_d[di], nests = LEVELS / d;
	double nest[MAX_ROUNDS], rat[MAX_ROUNDS];
	struct spread s, q;

	for (int r = 0; r < rounds; r++) {
		nest[r] = dt[c][di][r] / nests;
		rat[r] = dt[c][di][r] / dt[c][0][r];
	}
	s = spread_of(nest, rounds);
	q = spread_of(rat, rounds);
	if (!ratio)
		printf(" %.0f (%.0f-%.0f) |", s.med, s.q1, s.q3);
	else
		printf(" %s%.2f (%.2f-%.2f)%s |",
		       d == 64 && q.med > 2.0 ? "**" : "", q.med, q.q1, q.q3,
		       d == 64 && q.med > 2.0 ? "**" : "");
	if (dat)
		fprintf(dat, "%d %d %.2f %.2f %.2f %.3f\n", c, d, s.med, s.q1,
			s.q3, q.med);
}

static void run_depth(int rounds, FILE *dat)
{
	const int nc = D_NR * NR_D;

	for (int w = 0; w < 2; w++)
		for (int c = 0; c < nc; c++)
			depth_batch(c / NR_D, depth_d[c % NR_D]);
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < nc; j++) {
			int c = (r + j) % nc, di = c % NR_D;

			dt[c / NR_D][di][r] =
				depth_batch(c / NR_D, depth_d[di]);
		}

	/*
	 * Every batch holds LEVELS groups: a nest of depth d costs the batch
	 * time / (LEVELS / d), and (batch at d) / (batch at 1) is the cost
	 * of a nest of depth d over d nests of depth 1: 1 when linear.
	 */
	for (int t = 0; t < 2; t++) {
		printf("%s| %s |", t ? "\n" : "",
		       t ? "nest / (d × depth 1), median (IQR)"
			 : "ns per nest of depth d, median (IQR)");
		for (int di = 0; di < NR_D; di++)
			printf(" d = %d |", depth_d[di]);
		printf("\n|---|");
		for (int di = 0; di < NR_D; di++)
			printf("---|");
		printf("\n");
		for (int c = 0; c < D_NR; c++) {
			printf("| %s |", dname[c]);
			for (int di = 0; di < NR_D; di++)
				depth_cell(c, di, rounds, t, t ? NULL : dat);
			printf("\n");
		}
	}
}

static double measure_clock(void)
{
	double v[MAX_ROUNDS];

	for (int i = 0; i < MAX_ROUNDS; i++) {
		double t0 = now_ns();

		v[i] = now_ns() - t0;
	}
	return spread_of(v, MAX_ROUNDS).med;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "size";
	int rounds = argc > 2 ? atoi(argv[2]) : 11;
	FILE *dat = NULL;

	if ((strcmp(what, "size") != 0 && strcmp(what, "depth") != 0) ||
	    rounds < 3 || rounds > MAX_ROUNDS) {
		fprintf(stderr,
			"usage: %s size|depth [rounds (3..%d)] [data file]\n",
			argv[0], MAX_ROUNDS);
		return 2;
	}
	if (argc > 3 && !(dat = fopen(argv[3], "w"))) {
		perror(argv[3]);
		return 1;
	}
#ifndef NDEBUG
	fprintf(stderr, "note: not a release build; figures are not "
			"representative\n");
#endif
	pin_to_one_cpu();
	clock_cost = measure_clock();
	dev = (struct device){ .release = dev_release, .init_name = "groups" };
	plain = (struct device){ .release = dev_release, .init_name = "plain" };
	device_initialize(&dev);
	device_initialize(&plain);
	/* Registers nop_action's kind: a lookup of an unknown kind is free. */
	if (devm_add_action(&dev, nop_action, NULL) ||
	    devres_release_all(&dev) != 1)
		die("devm_add_action", 0, 1);
	if (!strcmp(what, "size"))
		run_size(rounds, dat);
	else
		run_depth(rounds, dat);
	if (dat)
		fclose(dat);
	put_device(&plain);
	put_device(&dev);
	return 0;
}
