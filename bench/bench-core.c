// SPDX-License-Identifier: MIT
/*
 * bench-core: what a devres node costs, in heap bytes and in time, next to
 * plain malloc/free and next to a node laid out as the kernel lays it out.
 *
 * Run it from a release build:
 *
 *   cmake --preset release -B build/release && cmake --build build/release
 *   ./build/release/bench/bench-core [rounds]
 *
 * Heap bytes come from glibc's mallinfo2(): many nodes of one size are
 * allocated and the growth of uordblks is divided by their number. Times are
 * the median of interleaved rounds, so that a slow moment of a shared
 * machine hits every contender alike.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"
#include <devres/device.h>
/* The private layout, only for the sizes of a node header and a group. */
#include "../src/base/internal.h"

#define NOINLINE __attribute__((noinline))

#define HEAP_N 4096	  /* nodes per size when counting heap bytes */
#define HEAP_MIN 8	  /* smallest data size counted */
#define HEAP_MAX 128	  /* largest data size counted */
#define SPEED_N 100000	  /* objects per timed round */
#define DEFAULT_ROUNDS 21 /* timed rounds of each contender */
#define MAX_ROUNDS 201

/*
 * The kernel's layout, in our own words: a doubly linked list entry, the
 * release function, its name and the data size in front of every data
 * area (40 bytes on x86-64), a list head and a lock per device, appending
 * at the tail and releasing from the tail.
 */
struct klist {
	struct klist *next, *prev;
};

struct knode {
	struct klist entry;
	void (*release)(void *kdev, void *res);
	const char *name;
	size_t size;
	unsigned char data[];
};

struct kgroup {
	struct knode node[2];
	void *id;
	int color;
};

struct kdev {
	struct klist res;
	int lock;
};

static void kdev_init(struct kdev *kd)
{
	kd->res.next = kd->res.prev = &kd->res;
	kd->lock = 0;
}

static void klock(struct kdev *kd)
{
	while (__atomic_exchange_n(&kd->lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void kunlock(struct kdev *kd)
{
	__atomic_store_n(&kd->lock, 0, __ATOMIC_RELEASE);
}

static void klist_add_tail(struct klist *e, struct klist *head)
{
	e->prev = head->prev;
	e->next = head;
	head->prev->next = e;
	head->prev = e;
}

/* Allocator and release functions stay out of line, as in a library. */
static NOINLINE void *kdevres_alloc(void (*release)(void *, void *),
				    size_t size, const char *name, bool zero)
{
	struct knode *n = zero ? calloc(1, sizeof(*n) + size)
			       : malloc(sizeof(*n) + size);

	if (!n)
		return NULL;
	n->entry.next = n->entry.prev = &n->entry;
	n->release = release;
	n->name = name;
	n->size = size;
	return n->data;
}

static NOINLINE void kdevres_add(struct kdev *kd, void *res)
{
	struct knode *n = container_of(res, struct knode, data);

	klock(kd);
	klist_add_tail(&n->entry, &kd->res);
	kunlock(kd);
}

static NOINLINE void kmalloc_release(void *kd, void *res)
{
	(void)kd;
	(void)res;
}

static NOINLINE void *kdevm_kmalloc(struct kdev *kd, size_t size)
{
	void *p =
		kdevres_alloc(kmalloc_release, size, "kmalloc_release", false);

	if (p)
		kdevres_add(kd, p);
	return p;
}

static NOINLINE void *kdevres_open_group(struct kdev *kd)
{
	struct kgroup *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->id = g;
	klock(kd);
	klist_add_tail(&g->node[0].entry, &kd->res);
	kunlock(kd);
	return g->id;
}

/* Takes the whole list off under the lock, then releases newest first. */
static NOINLINE int krelease_all(struct kdev *kd)
{
	struct klist todo, *e, *prev;
	int cnt = 0;

	klock(kd);
	if (kd->res.next == &kd->res) {
		kunlock(kd);
		return 0;
	}
	todo.next = kd->res.next;
	todo.prev = kd->res.prev;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	kd->res.next = kd->res.prev = &kd->res;
	kunlock(kd);

	for (e = todo.prev; e != &todo; e = prev) {
		struct knode *n = container_of(e, struct knode, entry);

		prev = e->prev;
		if (n->release) {
			n->release(kd, n->data);
			cnt++;
		}
		free(n);
	}
	return cnt;
}

static void bench_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void kbench_release(void *kd, void *res)
{
	(void)kd;
	(void)res;
}

static void bench_action(void *data)
{
	(void)data;
}

static void dev_release(struct device *dev)
{
	(void)dev;
}

/* Heap accounting. */

static void *ptrs[SPEED_N > HEAP_N ? SPEED_N : HEAP_N];

static long heap_used(void)
{
	return (long)mallinfo2().uordblks;
}

/*
 * C_MALLOC_HDR is malloc/free of the data plus our 16-byte header: the
 * floor of any design that keeps its bookkeeping in the data's heap chunk.
 * It only takes part in the timed rounds.
 */
enum contender {
	C_MALLOC,
	C_DEVRES,
	C_KERNEL,
	C_MALLOC_HDR,
	C_NR
};
#define C_HEAP_NR C_MALLOC_HDR

static const char *const contender_name[C_NR] = {
	"malloc/free",
	"libdevres",
	"kernel layout",
	"malloc/free+16",
};

static void *alloc_one(enum contender c, size_t size)
{
	switch (c) {
	case C_MALLOC:
		return malloc(size);
	case C_DEVRES:
		return devres_alloc(bench_release, size, GFP_KERNEL);
	default:
		return kdevres_alloc(kbench_release, size, "kbench_release",
				     true);
	}
}

static void free_one(enum contender c, void *p)
{
	switch (c) {
	case C_MALLOC:
		free(p);
		break;
	case C_DEVRES:
		devres_free(p);
		break;
	default:
		free(container_of(p, struct knode, data));
	}
}

/* Heap bytes per allocation of @size bytes by @c. */
static double heap_per_alloc_here(enum contender c, size_t size)
{
	long before = heap_used(), after;

	for (int i = 0; i < HEAP_N; i++)
		ptrs[i] = alloc_one(c, size);
	after = heap_used();
	for (int i = HEAP_N - 1; i >= 0; i--)
		free_one(c, ptrs[i]);
	return (double)(after - before) / HEAP_N;
}

struct heap_job {
	enum contender c;
	size_t size;
	double per_alloc;
};

static void *heap_thread(void *arg)
{
	struct heap_job *job = arg;

	/* The thread's first node sets up its ledger tally: not counted. */
	free_one(job->c, alloc_one(job->c, 1000));
	job->per_alloc = heap_per_alloc_here(job->c, job->size);
	return NULL;
}

/*
 * libdevres keeps the node chunks a thread frees for its next nodes (the
 * node cache), which would hide the next size's chunks from the count:
 * each size is counted in a thread of its own, whose cache starts empty
 * (the child runs with one malloc arena, so the thread's chunks are in
 * the one mallinfo2() counts).
 */
static double heap_per_alloc(enum contender c, size_t size)
{
	struct heap_job job = { c, size, 0 };
	pthread_t th;

	if (c != C_DEVRES)
		return heap_per_alloc_here(c, size);
	if (pthread_create(&th, NULL, heap_thread, &job) ||
	    pthread_join(th, NULL)) {
		fprintf(stderr, "heap measurement: no thread\n");
		exit(1);
	}
	return job.per_alloc;
}

struct heap_result {
	double per_node[C_HEAP_NR]; /* average heap bytes per allocation */
	double overhead[C_HEAP_NR]; /* the same minus malloc's */
	double group[C_HEAP_NR];    /* heap bytes per group (malloc: unused) */
};

static double heap_per_group(enum contender c, struct device *dev,
			     struct kdev *kd)
{
	long before = heap_used(), after;

	for (int i = 0; i < HEAP_N; i++)
		if (c == C_DEVRES)
			devres_open_group(dev, NULL, GFP_KERNEL);
		else
			kdevres_open_group(kd);
	after = heap_used();
	if (c == C_DEVRES) {
		devres_release_all(dev);
	} else {
		/* Kernel groups have no release; free their markers here. */
		struct klist *e = kd->res.next, *next;

		for (; e != &kd->res; e = next) {
			next = e->next;
			free(container_of(e, struct kgroup, node[0].entry));
		}
		kdev_init(kd);
	}
	return (double)(after - before) / HEAP_N;
}

static void measure_heap(struct heap_result *r, struct device *dev,
			 struct kdev *kd)
{
	int sizes = 0;

	memset(r, 0, sizeof(*r));
	/*
	 * Groups first: the per-size rounds below leave free chunks of every
	 * size in malloc's bins, and a group served from one of them is
	 * charged the whole chunk (a remainder too small to split stays with
	 * it), which is malloc's fragmentation, not the group's cost.
	 */
	r->group[C_DEVRES] = heap_per_group(C_DEVRES, dev, kd);
	r->group[C_KERNEL] = heap_per_group(C_KERNEL, dev, kd);
	for (size_t s = HEAP_MIN; s <= HEAP_MAX; s++, sizes++)
		for (int c = 0; c < C_HEAP_NR; c++)
			r->per_node[c] += heap_per_alloc(c, s);
	for (int c = 0; c < C_HEAP_NR; c++) {
		r->per_node[c] /= sizes;
		r->overhead[c] = r->per_node[c] - r->per_node[C_MALLOC];
	}
}

/*
 * glibc's tcache keeps freed chunks that mallinfo2() counts as used, and
 * refills itself from the fastbins in batches, so its bins blur a count of
 * a few thousand allocations. Heap bytes are therefore counted in a child
 * run with the tcache switched off, where every allocation shows exactly.
 */
#define HEAP_CHILD_ENV "BENCH_CORE_HEAP_CHILD"

static void heap_child(struct device *dev, struct kdev *kd)
{
	struct heap_result r;

	measure_heap(&r, dev, kd);
	for (int c = 0; c < C_HEAP_NR; c++)
		printf("%a %a %a\n", r.per_node[c], r.overhead[c], r.group[c]);
}

static void measure_heap_in_child(struct heap_result *r)
{
	char exe[4096], cmd[4300];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *p;
	int c = 0;

	if (len < 0) {
		perror("readlink /proc/self/exe");
		exit(1);
	}
	exe[len] = '\0';
	snprintf(cmd, sizeof(cmd),
		 "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:"
		 "glibc.malloc.arena_max=1 %s=1 '%s'",
		 HEAP_CHILD_ENV, exe);
	p = popen(cmd, "r");
	if (!p) {
		perror("popen");
		exit(1);
	}
	for (; c < C_HEAP_NR; c++)
		if (fscanf(p, "%la %la %la", &r->per_node[c], &r->overhead[c],
			   &r->group[c]) != 3)
			break;
	if (pclose(p) != 0 || c != C_HEAP_NR) {
		fprintf(stderr, "heap measurement failed\n");
		exit(1);
	}
}

/* Timing. */

/*
 * One round of @n objects of @size bytes: all allocated, then all freed
 * newest first (malloc: free() in reverse; libdevres and the kernel
 * layout: one release of everything).
 */
static double round_bulk(enum contender c, struct device *dev, struct kdev *kd,
			 int n, size_t size)
{
	double t0 = now_ns();

	switch (c) {
	case C_MALLOC:
		for (int i = 0; i < n; i++)
			ptrs[i] = malloc(size);
		for (int i = n - 1; i >= 0; i--)
			free(ptrs[i]);
		break;
	case C_MALLOC_HDR:
		for (int i = 0; i < n; i++)
			ptrs[i] = malloc(size + sizeof(struct devres__node));
		for (int i = n - 1; i >= 0; i--)
			free(ptrs[i]);
		break;
	case C_DEVRES:
		for (int i = 0; i < n; i++)
			devm_kmalloc(dev, size, GFP_KERNEL);
		devres_release_all(dev);
		break;
	case C_KERNEL:
		for (int i = 0; i < n; i++)
			kdevm_kmalloc(kd, size);
		krelease_all(kd);
		break;
	case C_NR:
		break;
	}
	return now_ns() - t0;
}

/* Named resources (a release function) and actions, with malloc of 32 B. */
enum op {
	OP_MALLOC,
	OP_NAMED,
	OP_ACTION,
	OP_KNAMED,
	OP_NR
};

static const char *const op_name[OP_NR] = {
	"malloc(32) + free, newest first",
	"devres_alloc(32)+devres_add, release_all",
	"devm_add_action, release_all",
	"kernel layout: alloc(32)+add, release_all",
};

static double round_op(enum op op, struct device *dev, struct kdev *kd)
{
	double t0 = now_ns();

	for (int i = 0; i < SPEED_N; i++) {
		void *p;

		switch (op) {
		case OP_MALLOC:
			ptrs[i] = malloc(32);
			break;
		case OP_NAMED:
			p = devres_alloc(bench_release, 32, GFP_KERNEL);
			devres_add(dev, p);
			break;
		case OP_ACTION:
			devm_add_action(dev, bench_action, &ptrs[i]);
			break;
		default:
			p = kdevres_alloc(kbench_release, 32, "kbench_release",
					  true);
			kdevres_add(kd, p);
		}
	}
	if (op == OP_MALLOC)
		for (int i = SPEED_N - 1; i >= 0; i--)
			free(ptrs[i]);
	else if (op == OP_KNAMED)
		krelease_all(kd);
	else
		devres_release_all(dev);
	return now_ns() - t0;
}

/*
 * Individual frees: @n objects of 64 B allocated, then each freed on its
 * own with devm_kfree(), newest first (LIFO) or oldest first (FIFO).
 */
static double round_frees(struct device *dev, int n, bool fifo)
{
	double t0;

	for (int i = 0; i < n; i++)
		ptrs[i] = devm_kmalloc(dev, 64, GFP_KERNEL);
	t0 = now_ns();
	for (int i = 0; i < n; i++)
		devm_kfree(dev, ptrs[fifo ? i : n - 1 - i]);
	t0 = now_ns() - t0;
	/* The next round starts from an empty device, as the others do. */
	devres_release_all(dev);
	return t0;
}

#define NR_SIZES 3
static const size_t bulk_size[NR_SIZES] = { 32, 64, 128 };
#define NR_FREE_NS 2
static const int free_n[NR_FREE_NS] = { 10000, SPEED_N };

struct speed_result {
	int rounds;
	/* per object, alloc + free: median round, and per-round ratios */
	struct spread ns[NR_SIZES][C_NR];
	struct spread ratio[NR_SIZES][C_NR];
	/* the same, sizes interleaved */
	struct spread mixed_ns[NR_SIZES][C_NR];
	struct spread mixed_ratio[NR_SIZES][C_NR];
	struct spread op_ns[OP_NR];
	struct spread op_ratio[OP_NR]; /* to OP_MALLOC, within a round */
	struct spread free_ns[NR_FREE_NS][2];
	struct spread fifo_lifo[NR_FREE_NS];
};

static double tb[NR_SIZES][C_NR][MAX_ROUNDS];
static double tm[NR_SIZES][C_NR][MAX_ROUNDS]; /* sizes interleaved */
static double top[OP_NR][MAX_ROUNDS];
static double tf[NR_FREE_NS][2][MAX_ROUNDS];

static struct spread ratio_of(const double *a, const double *b, int n)
{
	double v[MAX_ROUNDS];

	for (int i = 0; i < n; i++)
		v[i] = a[i] / b[i];
	return spread_of(v, n);
}

static struct spread per_object(const double *t, int rounds, int n)
{
	double v[MAX_ROUNDS];

	for (int i = 0; i < rounds; i++)
		v[i] = t[i] / n;
	return spread_of(v, rounds);
}

/* The contenders of one size, one after the other, rotated by @i. */
static void bulk_round(double t[C_NR][MAX_ROUNDS], int i, int s,
		       struct device *dev, struct kdev *kd)
{
	for (int j = 0; j < C_NR; j++) {
		int c = (i + j) % C_NR;

		t[c][i] = round_bulk(c, dev, kd, SPEED_N, bulk_size[s]);
	}
}

static void ops_round(int i, struct device *dev, struct kdev *kd)
{
	for (int j = 0; j < OP_NR; j++) {
		int op = (i + j) % OP_NR;

		top[op][i] = round_op(op, dev, kd);
	}
}

static void frees_round(int i, struct device *dev)
{
	for (int f = 0; f < NR_FREE_NS; f++)
		for (int j = 0; j < 2; j++) {
			int fifo = (i + j) % 2;

			tf[f][fifo][i] = round_frees(dev, free_n[f], fifo);
		}
}

/*
 * Each question is asked in a series of its own: the rounds of one size
 * (its four contenders interleaved, their order rotating), then the next
 * size, then the named resources, then the frees; each series starts with
 * two untimed rounds, so that every contender's memory is warm, as the
 * heap is for malloc. A last series interleaves the sizes as well (every
 * round: 32, 64 and 128 B): there the other sizes' rounds leave the
 * library's memory colder than glibc's bins, which serve every size, and
 * glibc's deferred work (fast-bin consolidation) falls on whoever calls
 * into it next: it is judged as well.
 */
static void measure_speed(struct speed_result *r, int rounds,
			  struct device *dev, struct kdev *kd)
{
	for (int s = 0; s < NR_SIZES; s++) {
		for (int w = 0; w < 2; w++)
			bulk_round(tb[s], 0, s, dev, kd);
		for (int i = 0; i < rounds; i++)
			bulk_round(tb[s], i, s, dev, kd);
	}
	for (int w = 0; w < 2; w++)
		ops_round(0, dev, kd);
	for (int i = 0; i < rounds; i++)
		ops_round(i, dev, kd);
	for (int w = 0; w < 2; w++)
		frees_round(0, dev);
	for (int i = 0; i < rounds; i++)
		frees_round(i, dev);
	for (int w = 0; w < 2; w++)
		for (int s = 0; s < NR_SIZES; s++)
			bulk_round(tm[s], 0, s, dev, kd);
	for (int i = 0; i < rounds; i++)
		for (int s = 0; s < NR_SIZES; s++)
			bulk_round(tm[s], i, s, dev, kd);

	r->rounds = rounds;
	for (int s = 0; s < NR_SIZES; s++)
		for (int c = 0; c < C_NR; c++) {
			r->ratio[s][c] =
				ratio_of(tb[s][c], tb[s][C_MALLOC], rounds);
			r->ns[s][c] = per_object(tb[s][c], rounds, SPEED_N);
			r->mixed_ratio[s][c] =
				ratio_of(tm[s][c], tm[s][C_MALLOC], rounds);
			r->mixed_ns[s][c] =
				per_object(tm[s][c], rounds, SPEED_N);
		}
	for (int op = 0; op < OP_NR; op++) {
		r->op_ratio[op] = ratio_of(top[op], top[OP_MALLOC], rounds);
		r->op_ns[op] = per_object(top[op], rounds, SPEED_N);
	}
	for (int f = 0; f < NR_FREE_NS; f++) {
		r->fifo_lifo[f] = ratio_of(tf[f][1], tf[f][0], rounds);
		for (int k = 0; k < 2; k++)
			r->free_ns[f][k] =
				per_object(tf[f][k], rounds, free_n[f]);
	}
}

/* Output. */

static void print_machine(int cpu)
{
	char line[256], model[256] = "unknown";
	FILE *f = fopen("/proc/cpuinfo", "r");
	double load[3] = { 0, 0, 0 };

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (strncmp(line, "model name", 10) || !colon)
				continue;
			snprintf(model, sizeof(model), "%s", colon + 2);
			model[strcspn(model, "\n")] = '\0';
			break;
		}
		fclose(f);
	}
	if (getloadavg(load, 3) < 0)
		load[0] = -1;
	printf("machine: %ld CPUs online, %s; pinned to CPU %d; load %.2f\n",
	       sysconf(_SC_NPROCESSORS_ONLN), model, cpu, load[0]);
}

/*
 * The rule: a time target is judged on the median of the per-round ratios
 * (both sides of a ratio ran in the same round, one after the other, so a
 * slow moment of the machine hits both). PASS when that median is at or
 * under the target. When the interquartile range of the ratios crosses the
 * target the verdict is marked "(within the spread)": such a line can
 * flip between runs, and only one clear of its spread is a result.
 */
static void verdict_line(const char *what, struct spread s, double target)
{
	bool pass = s.med <= target;
	bool clear = pass ? s.q3 <= target : s.q1 > target;

	printf("  %-46s %6.2fx (IQR %.2f-%.2f, range %.2f-%.2f) <= %.2fx: "
	       "%s%s\n",
	       what, s.med, s.q1, s.q3, s.min, s.max, target,
	       pass ? "PASS" : "FAIL", clear ? "" : " (within the spread)");
}

static void print_spread(const char *name, struct spread ns, struct spread r)
{
	printf("  %-44s %8.2f (%6.2f-%6.2f) %7.2fx (%4.2f-%4.2f)\n", name,
	       ns.med, ns.q1, ns.q3, r.med, r.q1, r.q3);
}

static void print_results(const struct heap_result *h,
			  const struct speed_result *s)
{
	char what[80];

	printf("\nheap bytes per allocation (mallinfo2 uordblks, sizes "
	       "%d..%d, %d each)\n",
	       HEAP_MIN, HEAP_MAX, HEAP_N);
	printf("  %-16s %12s %14s\n", "", "heap/alloc", "minus malloc");
	for (int c = 0; c < C_HEAP_NR; c++)
		printf("  %-16s %12.2f %14.2f\n", contender_name[c],
		       h->per_node[c], h->overhead[c]);
	printf("  header sizeof: libdevres %zu, kernel layout %zu\n",
	       sizeof(struct devres__node), sizeof(struct knode));
	printf("\ngroup (heap bytes per open group; sizeof)\n");
	printf("  %-16s %8.2f %6zu\n", "libdevres", h->group[C_DEVRES],
	       sizeof(struct devres__group));
	printf("  %-16s %8.2f %6zu\n", "kernel layout", h->group[C_KERNEL],
	       sizeof(struct kgroup));

	printf("\nns per object, median (IQR) of %d interleaved rounds, and "
	       "the ratio to malloc+free within each round, median (IQR); "
	       "a series per question\n",
	       s->rounds);
	for (int z = 0; z < NR_SIZES; z++) {
		printf(" %d objects of %zu B, all allocated then all freed "
		       "newest first\n",
		       SPEED_N, bulk_size[z]);
		for (int c = 0; c < C_NR; c++)
			print_spread(contender_name[c], s->ns[z][c],
				     s->ratio[z][c]);
		print_spread("libdevres, sizes interleaved",
			     s->mixed_ns[z][C_DEVRES],
			     s->mixed_ratio[z][C_DEVRES]);
	}
	printf(" %d resources of 32 B with a release function\n", SPEED_N);
	for (int op = 0; op < OP_NR; op++)
		print_spread(op_name[op], s->op_ns[op], s->op_ratio[op]);
	printf(" devm_kfree of each of n objects of 64 B, ns per free; "
	       "FIFO/LIFO ratio\n");
	for (int f = 0; f < NR_FREE_NS; f++) {
		snprintf(what, sizeof(what), "n = %d newest first (LIFO)",
			 free_n[f]);
		print_spread(what, s->free_ns[f][0], s->fifo_lifo[f]);
		snprintf(what, sizeof(what), "n = %d oldest first (FIFO)",
			 free_n[f]);
		print_spread(what, s->free_ns[f][1], s->fifo_lifo[f]);
	}

	/*
	 * Judged as printed, to the hundredth: a group counts 48.004 B, one
	 * 16-byte chunk over 4096 groups that the kernel layout's count
	 * shows as well, the allocator's, not a group's.
	 */
	printf("\ntargets\n");
	printf("  node bookkeeping <= 16 B: %.2f B %s (kernel layout %.2f B)\n",
	       h->overhead[C_DEVRES],
	       (long)(h->overhead[C_DEVRES] * 100 + 0.5) <= 1600 ? "PASS"
								 : "FAIL",
	       h->overhead[C_KERNEL]);
	printf("  group <= 48 B: %.2f B %s (sizeof %zu; kernel layout "
	       "%.2f B)\n",
	       h->group[C_DEVRES],
	       (long)(h->group[C_DEVRES] * 100 + 0.5) <= 4800 ? "PASS" : "FAIL",
	       sizeof(struct devres__group), h->group[C_KERNEL]);
	for (int z = 0; z < NR_SIZES; z++) {
		snprintf(what, sizeof(what),
			 "devm_kmalloc(%zu)+release_all / malloc+free",
			 bulk_size[z]);
		verdict_line(what, s->ratio[z][C_DEVRES], 0.75);
	}
	for (int z = 0; z < NR_SIZES; z++) {
		snprintf(what, sizeof(what),
			 "the same, %zu B, sizes interleaved", bulk_size[z]);
		verdict_line(what, s->mixed_ratio[z][C_DEVRES], 0.75);
	}
	verdict_line("devres_alloc+devres_add / malloc+free",
		     s->op_ratio[OP_NAMED], 1.0);
	for (int f = 0; f < NR_FREE_NS; f++) {
		snprintf(what, sizeof(what), "devm_kfree FIFO/LIFO, n = %d",
			 free_n[f]);
		verdict_line(what, s->fifo_lifo[f], 2.0);
	}
}

int main(int argc, char **argv)
{
	struct device dev = { .release = dev_release, .init_name = "bench" };
	int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;
	struct heap_result heap;
	struct speed_result speed;
	struct kdev kd;
	int cpu;

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: %s [rounds (1..%d)]\n", argv[0],
			MAX_ROUNDS);
		return 2;
	}
	device_initialize(&dev);
	kdev_init(&kd);

	/* Registers the kinds and the ledger's tally before anything counts. */
	devres_free(devres_alloc(bench_release, 8, GFP_KERNEL));
	devm_add_action(&dev, bench_action, NULL);
	devres_release_all(&dev);

	if (getenv(HEAP_CHILD_ENV)) {
		heap_child(&dev, &kd);
		put_device(&dev);
		return 0;
	}
#ifndef NDEBUG
	printf("note: not a release build; figures are not representative\n");
#endif
	cpu = pin_to_one_cpu();
	print_machine(cpu);
	measure_heap_in_child(&heap);
	measure_speed(&speed, rounds, &dev, &kd);
	print_results(&heap, &speed);
	put_device(&dev);
	return 0;
}
