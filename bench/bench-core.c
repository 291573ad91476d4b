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
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/device.h>
/* The private layout, only for the sizes of a node header and a group. */
#include "../src/base/internal.h"

#define NOINLINE __attribute__((noinline))

#define HEAP_N 4096	  /* nodes per size when counting heap bytes */
#define HEAP_MIN 8	  /* smallest data size counted */
#define HEAP_MAX 128	  /* largest data size counted */
#define SPEED_N 100000	  /* objects per timed round */
#define SPEED_SIZE 64	  /* their size */
#define DEFAULT_ROUNDS 15 /* timed rounds of each contender */
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

struct kaction {
	void *data;
	void (*action)(void *);
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

static NOINLINE void kaction_release(void *kd, void *res)
{
	struct kaction *a = res;

	(void)kd;
	a->action(a->data);
}

static NOINLINE int kdevm_add_action(struct kdev *kd, void (*action)(void *),
				     void *data)
{
	struct kaction *a = kdevres_alloc(kaction_release, sizeof(*a),
					  "kaction_release", true);

	if (!a)
		return -1;
	a->data = data;
	a->action = action;
	kdevres_add(kd, a);
	return 0;
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
static double heap_per_alloc(enum contender c, size_t size)
{
	long before = heap_used(), after;

	for (int i = 0; i < HEAP_N; i++)
		ptrs[i] = alloc_one(c, size);
	after = heap_used();
	for (int i = HEAP_N - 1; i >= 0; i--)
		free_one(c, ptrs[i]);
	return (double)(after - before) / HEAP_N;
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
	for (size_t s = HEAP_MIN; s <= HEAP_MAX; s++, sizes++)
		for (int c = 0; c < C_HEAP_NR; c++)
			r->per_node[c] += heap_per_alloc(c, s);
	for (int c = 0; c < C_HEAP_NR; c++) {
		r->per_node[c] /= sizes;
		r->overhead[c] = r->per_node[c] - r->per_node[C_MALLOC];
	}
	r->group[C_DEVRES] = heap_per_group(C_DEVRES, dev, kd);
	r->group[C_KERNEL] = heap_per_group(C_KERNEL, dev, kd);
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
		 "GLIBC_TUNABLES=glibc.malloc.tcache_count=0 %s=1 '%s'",
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

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round: SPEED_N objects of SPEED_SIZE bytes, then all freed, LIFO. */
static double round_kmalloc(enum contender c, struct device *dev,
			    struct kdev *kd)
{
	double t0 = now_ns();

	switch (c) {
	case C_MALLOC:
		for (int i = 0; i < SPEED_N; i++)
			ptrs[i] = malloc(SPEED_SIZE);
		for (int i = SPEED_N - 1; i >= 0; i--)
			free(ptrs[i]);
		break;
	case C_MALLOC_HDR:
		for (int i = 0; i < SPEED_N; i++)
			ptrs[i] = malloc(SPEED_SIZE +
					 sizeof(struct devres__node));
		for (int i = SPEED_N - 1; i >= 0; i--)
			free(ptrs[i]);
		break;
	case C_DEVRES:
		for (int i = 0; i < SPEED_N; i++)
			devm_kmalloc(dev, SPEED_SIZE, GFP_KERNEL);
		devres_release_all(dev);
		break;
	case C_KERNEL:
		for (int i = 0; i < SPEED_N; i++)
			kdevm_kmalloc(kd, SPEED_SIZE);
		krelease_all(kd);
		break;
	case C_NR:
		break;
	}
	return now_ns() - t0;
}

/* Acquisition and release of named resources and of actions, separately. */
enum op {
	OP_NAMED,
	OP_ACTION,
	OP_NR
};

static const char *const op_name[OP_NR] = {
	"devres_alloc+devres_add (named release)",
	"devm_add_action",
};

static void round_op(enum op op, enum contender c, struct device *dev,
		     struct kdev *kd, double *acquire, double *release)
{
	double t0 = now_ns(), t1;

	for (int i = 0; i < SPEED_N; i++) {
		if (c == C_DEVRES && op == OP_NAMED) {
			void *p = devres_alloc(bench_release, 32, GFP_KERNEL);

			devres_add(dev, p);
		} else if (c == C_DEVRES) {
			devm_add_action(dev, bench_action, &ptrs[i]);
		} else if (op == OP_NAMED) {
			void *p = kdevres_alloc(kbench_release, 32,
						"kbench_release", true);

			kdevres_add(kd, p);
		} else {
			kdevm_add_action(kd, bench_action, &ptrs[i]);
		}
	}
	t1 = now_ns();
	if (c == C_DEVRES)
		devres_release_all(dev);
	else
		krelease_all(kd);
	*acquire = (t1 - t0) / SPEED_N;
	*release = (now_ns() - t1) / SPEED_N;
}

/* Per-operation rounds compare libdevres with the kernel layout only. */
#define OP_CONTENDERS 2

static enum contender op_contender(int i)
{
	return i ? C_KERNEL : C_DEVRES;
}

struct speed_result {
	double kmalloc_ns[C_NR];  /* median per object, alloc + free */
	double ratio[C_NR];	  /* median round / median malloc round */
	double round_ratio[C_NR]; /* median of the per-round ratios */
	double acquire_ns[OP_NR][OP_CONTENDERS]; /* median per acquisition */
	double release_ns[OP_NR][OP_CONTENDERS]; /* median per release */
};

static double km[C_NR][MAX_ROUNDS];
static double acq[OP_NR][OP_CONTENDERS][MAX_ROUNDS];
static double rel[OP_NR][OP_CONTENDERS][MAX_ROUNDS];

static void measure_speed(struct speed_result *r, int rounds,
			  struct device *dev, struct kdev *kd)
{
	/* Two rounds of warm-up fault the heap in and fill the kind table. */
	for (int w = 0; w < 2; w++)
		for (int c = 0; c < C_NR; c++)
			round_kmalloc(c, dev, kd);

	/* Rotate the order each round so that none always runs first. */
	for (int i = 0; i < rounds; i++) {
		for (int j = 0; j < C_NR; j++) {
			int c = (i + j) % C_NR;

			km[c][i] = round_kmalloc(c, dev, kd);
		}
		for (int op = 0; op < OP_NR; op++)
			for (int j = 0; j < OP_CONTENDERS; j++) {
				int k = (i + j) % OP_CONTENDERS;

				round_op(op, op_contender(k), dev, kd,
					 &acq[op][k][i], &rel[op][k][i]);
			}
	}

	/* A cross-check less sensitive to drift: ratios within each round. */
	for (int c = 0; c < C_NR; c++) {
		double v[MAX_ROUNDS];

		for (int i = 0; i < rounds; i++)
			v[i] = km[c][i] / km[C_MALLOC][i];
		r->round_ratio[c] = median(v, rounds);
	}
	for (int c = 0; c < C_NR; c++)
		r->kmalloc_ns[c] = median(km[c], rounds) / SPEED_N;
	for (int c = 0; c < C_NR; c++)
		r->ratio[c] = r->kmalloc_ns[c] / r->kmalloc_ns[C_MALLOC];
	for (int op = 0; op < OP_NR; op++)
		for (int k = 0; k < OP_CONTENDERS; k++) {
			r->acquire_ns[op][k] = median(acq[op][k], rounds);
			r->release_ns[op][k] = median(rel[op][k], rounds);
		}
}

/* Output. */

static void print_machine(void)
{
	char line[256], model[256] = "unknown";
	FILE *f = fopen("/proc/cpuinfo", "r");

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
	printf("machine: %ld CPUs online, %s\n", sysconf(_SC_NPROCESSORS_ONLN),
	       model);
}

static const char *verdict(bool pass)
{
	return pass ? "PASS" : "FAIL";
}

static void print_results(const struct heap_result *h,
			  const struct speed_result *s, int rounds)
{
	bool node_ok = h->overhead[C_DEVRES] <= 16.0;
	bool group_ok = h->group[C_DEVRES] <= 48.0 &&
			sizeof(struct devres__group) <= 48;
	bool speed_ok = s->ratio[C_DEVRES] <= 1.2;

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

	printf("\n%d x %d-byte objects, allocated then all freed newest first; "
	       "median of %d interleaved rounds\n",
	       SPEED_N, SPEED_SIZE, rounds);
	printf("  %-16s %12s %10s %12s\n", "", "ns/object", "vs malloc",
	       "per round");
	for (int c = 0; c < C_NR; c++)
		printf("  %-16s %12.2f %9.2fx %11.2fx\n", contender_name[c],
		       s->kmalloc_ns[c], s->ratio[c], s->round_ratio[c]);

	printf("\nper-operation cost, ns (median of %d rounds of %d)\n", rounds,
	       SPEED_N);
	printf("  %-42s %-14s %9s %9s\n", "", "", "acquire", "release");
	for (int op = 0; op < OP_NR; op++)
		for (int k = 0; k < OP_CONTENDERS; k++)
			printf("  %-42s %-14s %9.2f %9.2f\n",
			       k ? "" : op_name[op],
			       contender_name[op_contender(k)],
			       s->acquire_ns[op][k], s->release_ns[op][k]);

	printf("\ntargets\n");
	printf("  node bookkeeping <= 16 B:     %6.2f B  %s (kernel layout "
	       "%.2f B)\n",
	       h->overhead[C_DEVRES], verdict(node_ok), h->overhead[C_KERNEL]);
	printf("  group <= 48 B:                %6.2f B  %s (sizeof %zu; "
	       "kernel layout %.2f B)\n",
	       h->group[C_DEVRES], verdict(group_ok),
	       sizeof(struct devres__group), h->group[C_KERNEL]);
	printf("  devm_kmalloc+release_all <= 1.2x malloc+free: %.2fx  %s "
	       "(kernel layout %.2fx)\n",
	       s->ratio[C_DEVRES], verdict(speed_ok), s->ratio[C_KERNEL]);
}

int main(int argc, char **argv)
{
	struct device dev = { .release = dev_release, .init_name = "bench" };
	int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;
	struct heap_result heap;
	struct speed_result speed;
	struct kdev kd;

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
	print_machine();
	measure_heap_in_child(&heap);
	measure_speed(&speed, rounds, &dev, &kd);
	print_results(&heap, &speed, rounds);
	put_device(&dev);
	return 0;
}
