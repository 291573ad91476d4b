// SPDX-License-Identifier: MIT
/*
 * bench-peers: libdevres next to the allocators that free by owner, one
 * question at a time, in one process pinned to one CPU, with interleaved
 * rounds (the order of the contenders rotates every round) and medians of
 * at least 11 rounds with their interquartile range.
 *
 *   bench-peers bulk [rounds]   allocate N objects then release them all:
 *                               N = 1k, 100k, 1M; 32, 64 and 128 bytes
 *   bench-peers frees [rounds]  free n objects one by one, newest first,
 *                               oldest first and at random; n = 10..100k
 *   bench-peers bytes           heap bytes per object (mallinfo2)
 *
 * Output: a markdown table on stdout, and a data file for gnuplot when a
 * second argument names it (bench-peers bulk 11 out.dat).
 *
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), per object.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <apr_general.h>
#include <apr_pools.h>
#include <talloc.h>
#include "bench.h"
#include <devres/device.h>

#define MAX_N 1000000
#define MAX_ROUNDS 101

static void *ptrs[MAX_N];
static unsigned int perm[MAX_N];
static struct device dev;
static apr_pool_t *apr_root;

static void dev_release(struct device *d)
{
	(void)d;
}

static int nop_destructor(void *p)
{
	(void)p;
	return 0;
}

static apr_status_t nop_cleanup(void *p)
{
	(void)p;
	return APR_SUCCESS;
}

/* The kernel's node layout (see bench-core.c): 40 bytes, doubly linked. */
struct knode {
	struct knode *next, *prev;
	void (*release)(void *, void *);
	const char *name;
	size_t size;
	unsigned char data[];
};

static struct knode khead = { &khead, &khead, NULL, NULL, 0 };
static int klock;

static __attribute__((noinline)) void krelease(void *d, void *res)
{
	(void)d;
	(void)res;
}

static __attribute__((noinline)) void *kdevm_kmalloc(size_t size)
{
	struct knode *n = malloc(sizeof(*n) + size);

	if (!n)
		return NULL;
	n->release = krelease;
	n->name = "kmalloc";
	n->size = size;
	while (__atomic_exchange_n(&klock, 1, __ATOMIC_ACQUIRE))
		;
	n->prev = khead.prev;
	n->next = &khead;
	khead.prev->next = n;
	khead.prev = n;
	__atomic_store_n(&klock, 0, __ATOMIC_RELEASE);
	return n->data;
}

static __attribute__((noinline)) void krelease_all(void)
{
	struct knode *n, *prev;

	while (__atomic_exchange_n(&klock, 1, __ATOMIC_ACQUIRE))
		;
	n = khead.prev;
	khead.next = khead.prev = &khead;
	__atomic_store_n(&klock, 0, __ATOMIC_RELEASE);
	for (; n != &khead; n = prev) {
		prev = n->prev;
		n->release(NULL, n->data);
		free(n);
	}
}

enum contender {
	C_MALLOC,
	C_DEVRES,
	C_TALLOC,
	C_TALLOC_DTOR,
	C_TALLOC_POOL,
	C_APR,
	C_APR_CLEANUP,
	C_KERNEL,
	C_NR
};

static const char *const cname[C_NR] = {
	"malloc/free", "libdevres", "talloc",	   "talloc+destructor",
	"talloc_pool", "APR pool",  "APR+cleanup", "kernel layout",
};

/* One round: @n objects of @size bytes, then all of them released. */
static double bulk(enum contender c, int n, size_t size)
{
	double t0 = now_ns();
	void *ctx;
	apr_pool_t *pool;

	switch (c) {
	case C_MALLOC:
		for (int i = 0; i < n; i++)
			ptrs[i] = malloc(size);
		for (int i = n - 1; i >= 0; i--)
			free(ptrs[i]);
		break;
	case C_DEVRES:
		for (int i = 0; i < n; i++)
			devm_kmalloc(&dev, size, GFP_KERNEL);
		devres_release_all(&dev);
		break;
	case C_TALLOC:
	case C_TALLOC_DTOR:
		ctx = talloc_new(NULL);
		for (int i = 0; i < n; i++) {
			void *p = talloc_size(ctx, size);

			if (c == C_TALLOC_DTOR)
				talloc_set_destructor(p, nop_destructor);
		}
		talloc_free(ctx);
		break;
	case C_TALLOC_POOL:
		ctx = talloc_pool(NULL, (size_t)n * (size + 112));
		for (int i = 0; i < n; i++)
			talloc_size(ctx, size);
		talloc_free(ctx);
		break;
	case C_APR:
	case C_APR_CLEANUP:
		apr_pool_create(&pool, apr_root);
		for (int i = 0; i < n; i++) {
			void *p = apr_palloc(pool, size);

			if (c == C_APR_CLEANUP)
				apr_pool_cleanup_register(
					pool, p, nop_cleanup,
					apr_pool_cleanup_null);
		}
		apr_pool_destroy(pool);
		break;
	case C_KERNEL:
		for (int i = 0; i < n; i++)
			kdevm_kmalloc(size);
		krelease_all();
		break;
	case C_NR:
		break;
	}
	return (now_ns() - t0) / n;
}

static double t[C_NR][MAX_ROUNDS];

static void run_bulk(int rounds, FILE *dat)
{
	static const int ns[] = { 1000, 100000, 1000000 };
	static const size_t sizes[] = { 32, 64, 128 };

	printf("| N | size | contender | ns/object, median (IQR) | "
	       "ratio to malloc+free, median (IQR) |\n|---|---|---|---|---|\n");
	for (size_t a = 0; a < 3; a++)
		for (size_t b = 0; b < 3; b++) {
			int n = ns[a], r = rounds;
			double ratio[MAX_ROUNDS];

			for (int c = 0; c < C_NR; c++)
				bulk(c, n, sizes[b]); /* warm-up */
			for (int i = 0; i < r; i++)
				for (int j = 0; j < C_NR; j++) {
					int c = (i + j) % C_NR;

					t[c][i] = bulk(c, n, sizes[b]);
				}
			for (int c = 0; c < C_NR; c++) {
				struct spread s, q;

				for (int i = 0; i < r; i++)
					ratio[i] = t[c][i] / t[C_MALLOC][i];
				q = spread_of(ratio, r);
				s = spread_of(t[c], r);
				printf("| %d | %zu | %s | %.1f (%.1f-%.1f) | "
				       "%.2fx (%.2f-%.2f)%s |\n",
				       n, sizes[b], cname[c], s.med, s.q1, s.q3,
				       q.med, q.q1, q.q3,
				       c != C_MALLOC && q.med > 1.0 ? " slower"
								    : "");
				if (dat)
					fprintf(dat, "%d %zu %d %.2f %.3f\n", n,
						sizes[b], c, s.med, q.med);
			}
			fflush(stdout);
		}
}

/* Individual frees of n objects of 64 B in an order; ns per free. */
enum order {
	O_LIFO,
	O_FIFO,
	O_RANDOM,
	O_NR
};
static const char *const oname[O_NR] = { "newest first", "oldest first",
					 "random" };
enum fcont {
	F_MALLOC,
	F_DEVRES,
	F_TALLOC,
	F_NR
};
static const char *const fname[F_NR] = { "free", "devm_kfree", "talloc_free" };

static double frees(enum fcont c, enum order o, int n)
{
	void *ctx = c == F_TALLOC ? talloc_new(NULL) : NULL;
	double t0;

	for (int i = 0; i < n; i++)
		ptrs[i] = c == F_MALLOC	  ? malloc(64)
			  : c == F_DEVRES ? devm_kmalloc(&dev, 64, GFP_KERNEL)
					  : talloc_size(ctx, 64);
	for (int i = 0; i < n; i++)
		perm[i] = (unsigned int)(o == O_LIFO ? n - 1 - i : i);
	if (o == O_RANDOM)
		for (int i = n - 1; i > 0; i--) {
			int j = rand() % (i + 1);
			unsigned int x = perm[i];

			perm[i] = perm[j];
			perm[j] = x;
		}
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		void *p = ptrs[perm[i]];

		if (c == F_MALLOC)
			free(p);
		else if (c == F_DEVRES)
			devm_kfree(&dev, p);
		else
			talloc_free(p);
	}
	t0 = now_ns() - t0;
	if (c == F_TALLOC)
		talloc_free(ctx);
	if (c == F_DEVRES)
		devres_release_all(&dev);
	return t0 / n;
}

static void run_frees(int rounds, FILE *dat)
{
	static const int ns[] = { 10, 100, 1000, 10000, 100000 };

	printf("| n | order | %s | %s | %s | devm_kfree / its newest-first "
	       "|\n|---|---|---|---|---|---|\n",
	       fname[F_MALLOC], fname[F_DEVRES], fname[F_TALLOC]);
	for (size_t a = 0; a < 5; a++) {
		double m[F_NR][O_NR];

		for (int o = 0; o < O_NR; o++) {
			for (int i = 0; i < rounds; i++)
				for (int j = 0; j < F_NR; j++) {
					int c = (i + j) % F_NR;

					t[c][i] = frees(c, o, ns[a]);
				}
			for (int c = 0; c < F_NR; c++)
				m[c][o] = spread_of(t[c], rounds).med;
		}
		for (int o = 0; o < O_NR; o++) {
			printf("| %d | %s | %.1f | %.1f | %.1f | %.2fx |\n",
			       ns[a], oname[o], m[F_MALLOC][o], m[F_DEVRES][o],
			       m[F_TALLOC][o], m[F_DEVRES][o] / m[F_DEVRES][0]);
			if (dat)
				fprintf(dat, "%d %d %.2f %.2f %.2f\n", ns[a], o,
					m[F_MALLOC][o], m[F_DEVRES][o],
					m[F_TALLOC][o]);
		}
		fflush(stdout);
	}
}

/* In-use heap bytes, mmapped chunks included (large or aligned ones). */
static long heap(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (long)(mi.uordblks + mi.hblkhd);
}

static long rss(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * 4096;
}

static void run_bytes(void)
{
	enum {
		N = 100000
	};

	printf("| contender | heap bytes per object | resident bytes per "
	       "object |\n|---|---|---|\n");
	fflush(stdout);
	for (int c = 0; c < C_NR; c++) {
		long before, after, rss0, rss1;
		pid_t pid = fork();

		/* Each in a child of its own: a fresh heap, nothing reused. */
		if (pid > 0) {
			int st = 0;

			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				printf("| %s | failed | failed |\n", cname[c]);
			fflush(stdout);
			continue;
		}
		/*
		 * The child's device is its own: one inherited from the
		 * parent is not the child's to use (fork policy).
		 */
		struct device cdev = { .release = dev_release,
				       .init_name = "peers-child" };

		device_initialize(&cdev);
		before = heap();
		rss0 = rss();
		void *ctx = NULL;
		apr_pool_t *pool = NULL;

		if (c == C_TALLOC || c == C_TALLOC_DTOR)
			ctx = talloc_new(NULL);
		if (c == C_TALLOC_POOL)
			ctx = talloc_pool(NULL, (size_t)N * (64 + 112));
		if (c == C_APR || c == C_APR_CLEANUP)
			apr_pool_create(&pool, apr_root);
		for (int i = 0; i < N; i++) {
			void *p = NULL;

			switch (c) {
			case C_MALLOC:
				p = ptrs[i] = malloc(64);
				break;
			case C_DEVRES:
				p = devm_kmalloc(&cdev, 64, GFP_KERNEL);
				break;
			case C_KERNEL:
				p = kdevm_kmalloc(64);
				break;
			case C_APR:
			case C_APR_CLEANUP:
				p = apr_palloc(pool, 64);
				if (c == C_APR_CLEANUP)
					apr_pool_cleanup_register(
						pool, p, nop_cleanup,
						apr_pool_cleanup_null);
				break;
			default:
				p = talloc_size(ctx, 64);
				if (c == C_TALLOC_DTOR)
					talloc_set_destructor(p,
							      nop_destructor);
			}
			if (!p) {
				fprintf(stderr, "%s: allocation %d failed\n",
					cname[c], i);
				_exit(1);
			}
			/* Written, as a program would: resident. */
			memset(p, 1, 64);
		}
		after = heap();
		rss1 = rss();
		/* Ours are mapped blocks, not heap: their resident bytes show. */
		printf("| %s | %.1f | %.1f |\n", cname[c],
		       (double)(after - before) / N, (double)(rss1 - rss0) / N);
		if (c == C_MALLOC)
			for (int i = N - 1; i >= 0; i--)
				free(ptrs[i]);
		if (c == C_DEVRES)
			devres_release_all(&cdev);
		if (c == C_KERNEL)
			krelease_all();
		if (ctx)
			talloc_free(ctx);
		if (pool)
			apr_pool_destroy(pool);
		put_device(&cdev);
		fflush(stdout);
		_exit(0);
	}
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "bulk";
	int rounds = argc > 2 ? atoi(argv[2]) : 11;
	FILE *dat = NULL;

	if (rounds < 3 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "rounds: 3..%d\n", MAX_ROUNDS);
		return 2;
	}
	if (argc > 3 && !(dat = fopen(argv[3], "w"))) {
		perror(argv[3]);
		return 1;
	}
	pin_to_one_cpu();
	apr_initialize();
	apr_pool_create(&apr_root, NULL);
	dev = (struct device){ .release = dev_release, .init_name = "peers" };
	device_initialize(&dev);
	if (!strcmp(what, "bulk"))
		run_bulk(rounds, dat);
	else if (!strcmp(what, "frees"))
		run_frees(rounds, dat);
	else
		run_bytes();
	if (dat)
		fclose(dat);
	put_device(&dev);
	apr_pool_destroy(apr_root);
	apr_terminate();
	return 0;
}
