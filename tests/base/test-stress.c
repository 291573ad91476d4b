// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=300 */
/*
 * Threads on one device.
 *
 * The stress test runs four workers of mixed devres operations and one
 * thread of groups and devres_release_all() on one device, then checks that
 * every resource created was released exactly once (or, when the operation
 * says so, freed without its release), that the ledger is back where it
 * started and that nothing was WARNed.
 *
 * The deterministic tests pin down what a release callback sees: nodes of
 * the pass it runs in are already gone, and what it (or another thread)
 * adds meanwhile is left for the next pass.
 *
 * Every preset runs the full count, ThreadSanitizer included: there the
 * stress test takes 2 to 7 s on two shared cores, so nothing is scaled down.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>

#define NR_WORKERS 4
#define OPS_PER_WORKER 100000L
#define MAX_OWNED 32	      /* resources a worker keeps track of at once */
#define NR_CHILDREN 4096      /* resources added from release callbacks */
#define MAX_GROUPS 12	      /* live groups of the group thread */
#define RELEASE_ALL_EVERY 512 /* group-thread operations per release_all */
#define NR_GET_KEYS 4	      /* keys devres_get() is called with */

static void dev_release(struct device *dev)
{
	(void)dev;
}

/* Failures seen in threads other than cmocka's, reported after the join. */
static int failures;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void report(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) >= 10)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define check(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			report(__VA_ARGS__);                                   \
	} while (0)

/*
 * Every resource the stress test creates has an index. released[] counts
 * the runs of its release (atomically: any thread may run it); disposed[]
 * marks one that was legitimately freed without its release (destroyed,
 * removed and freed, action removed, devres_get() found another), written
 * by the owner and read after the join. kinds[] says which it was.
 */
enum {
	K_NONE,
	K_RES,
	K_KMALLOC,
	K_ACTION,
	K_GET,
	K_CHILD
};

static struct device sdev = { .release = dev_release, .init_name = "stress" };
static int *released;
static unsigned char *disposed;
static unsigned char *kinds;
static unsigned int next_child;

/*
 * devres_release_all() and devres_release_group() run with this held for
 * writing, and bump the epoch before they let go. The misuse-checked calls
 * (devm_kfree, devm_remove_action, devm_release_action) run with it held
 * for reading, and only on a resource whose epoch is still current: then
 * no release pass can have taken it, so they never WARN. Every other
 * operation runs unserialized against the release passes.
 */
static pthread_rwlock_t pass_lock;
static unsigned int epoch;
static int workers_left;

struct item {
	uint32_t idx;
	uint32_t tag;
};

static int match_idx(struct device *dev, void *res, void *data)
{
	(void)dev;
	return ((struct item *)res)->idx == *(uint32_t *)data;
}

static int match_tag(struct device *dev, void *res, void *data)
{
	(void)dev;
	return ((struct item *)res)->tag == *(uint32_t *)data;
}

static void count(uint32_t idx)
{
	__atomic_add_fetch(&released[idx], 1, __ATOMIC_RELAXED);
}

static void child_release(struct device *dev, void *res)
{
	(void)dev;
	count(((struct item *)res)->idx);
}

/*
 * A release callback may use devres on its device: some look things up,
 * some record a new resource, which must outlive the pass that runs them.
 */
static void res_release(struct device *dev, void *res)
{
	uint32_t idx = ((struct item *)res)->idx;

	count(idx);
	if (idx % 61 == 0) {
		check(devres_find(dev, res_release, match_idx, &idx) == NULL,
		      "release of %u found its own node", idx);
	} else if (idx % 67 == 0) {
		unsigned int c =
			__atomic_fetch_add(&next_child, 1, __ATOMIC_RELAXED);
		struct item *it;

		if (c >= NR_CHILDREN)
			return;
		it = devres_alloc(child_release, sizeof(*it), GFP_KERNEL);
		if (!it) {
			report("child allocation failed");
			return;
		}
		it->idx = (uint32_t)(NR_WORKERS * OPS_PER_WORKER) + c;
		kinds[it->idx] = K_CHILD;
		devres_add(dev, it);
	}
}

static void get_release(struct device *dev, void *res)
{
	(void)dev;
	count(((struct item *)res)->idx);
}

static void count_action(void *data)
{
	__atomic_add_fetch((int *)data, 1, __ATOMIC_RELAXED);
}

/* A worker's view of what it owns. */
struct owned {
	uint32_t idx;
	unsigned char kind;
	unsigned char zeroed; /* K_KMALLOC: devm_kzalloc'ed, never written */
	uint16_t len;	      /* K_KMALLOC: its size */
	unsigned int epoch;   /* K_KMALLOC, K_ACTION: epoch before acquiring */
	void *ptr;
};

struct worker {
	pthread_t thread;
	uint32_t id;
	uint32_t next_idx, end_idx;
	uint64_t rnd;
	int nr_owned;
	struct owned owned[MAX_OWNED];
	long ops[12];
};

static uint32_t rnd(uint64_t *s)
{
	/* xorshift64*: fast, and each thread has its own. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t)((*s * 0x2545f4914f6cdd1dull) >> 32);
}

static unsigned int cur_epoch(void)
{
	return __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
}

static uint32_t new_idx(struct worker *w, unsigned char kind)
{
	uint32_t idx = w->next_idx++;

	kinds[idx] = kind;
	return idx;
}

static void own(struct worker *w, struct owned o)
{
	w->owned[w->nr_owned++] = o;
}

static void drop(struct worker *w, int i)
{
	w->owned[i] = w->owned[--w->nr_owned];
}

/* An owned entry of @kind, chosen at random, or -1. */
static int pick(struct worker *w, unsigned char kind)
{
	int start, i;

	if (!w->nr_owned)
		return -1;
	start = (int)(rnd(&w->rnd) % (uint32_t)w->nr_owned);
	for (i = 0; i < w->nr_owned; i++) {
		int j = (start + i) % w->nr_owned;

		if (w->owned[j].kind == kind)
			return j;
	}
	return -1;
}

static void add_res(struct worker *w)
{
	struct item *it = devres_alloc(res_release, sizeof(*it), GFP_KERNEL);

	if (!it) {
		report("devres_alloc failed");
		return;
	}
	it->idx = new_idx(w, K_RES);
	it->tag = w->id;
	/* Recorded first: once added, a release pass may free it. */
	own(w, (struct owned){ .idx = it->idx, .kind = K_RES, .ptr = it });
	devres_add(&sdev, it);
}

static void fill(unsigned char *p, size_t len, uint32_t idx)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(idx + i);
}

static bool filled(const unsigned char *p, size_t len, uint32_t idx)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)(idx + i))
			return false;
	return true;
}

static bool zeroed(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * Memory written after devm_kmalloc() returns is written under the read
 * lock: a concurrent release pass could free it otherwise. Zeroed memory
 * is never written, so it is allocated with no lock at all.
 */
static void add_kmalloc(struct worker *w)
{
	struct owned o = { .kind = K_KMALLOC };

	o.idx = new_idx(w, K_KMALLOC);
	o.len = (uint16_t)(8 + rnd(&w->rnd) % 120);
	o.zeroed = o.idx & 1;
	if (o.zeroed) {
		o.epoch = cur_epoch();
		o.ptr = devm_kzalloc(&sdev, o.len, GFP_KERNEL);
	} else {
		pthread_rwlock_rdlock(&pass_lock);
		o.epoch = cur_epoch();
		o.ptr = devm_kmalloc(&sdev, o.len, GFP_KERNEL);
		if (o.ptr)
			fill(o.ptr, o.len, o.idx);
		pthread_rwlock_unlock(&pass_lock);
	}
	if (!o.ptr) {
		report("devm_kmalloc failed");
		return;
	}
	own(w, o);
}

static void add_action(struct worker *w)
{
	struct owned o = { .kind = K_ACTION };
	int ret;

	o.idx = new_idx(w, K_ACTION);
	o.epoch = cur_epoch();
	o.ptr = &released[o.idx];
	ret = devm_add_action(&sdev, count_action, o.ptr);
	if (ret) {
		report("devm_add_action: %d", ret);
		disposed[o.idx] = 1;
		return;
	}
	own(w, o);
}

/*
 * All workers share NR_GET_KEYS keys; devres_get() being atomic, there is
 * never more than one node per key on the device.
 */
static void get_res(struct worker *w)
{
	struct item *it = devres_alloc(get_release, sizeof(*it), GFP_KERNEL);
	uint32_t key = rnd(&w->rnd) % NR_GET_KEYS, idx;
	void *got;

	if (!it) {
		report("devres_alloc failed");
		return;
	}
	idx = new_idx(w, K_GET);
	it->idx = idx;
	it->tag = key;
	got = devres_get(&sdev, it, match_tag, &key);
	check(got != NULL, "devres_get returned NULL");
	/* The new node was freed unreleased when another was found. */
	if (got != it)
		disposed[idx] = 1;
}

static void count_key(struct device *dev, void *res, void *data)
{
	(void)dev;
	((int *)data)[((struct item *)res)->tag % NR_GET_KEYS]++;
}

/* Counted in one locked walk, so this holds at every instant. */
static void check_get_keys(void)
{
	int n[NR_GET_KEYS] = { 0 };

	devres_for_each_res(&sdev, get_release, NULL, NULL, count_key, n);
	for (int k = 0; k < NR_GET_KEYS; k++)
		check(n[k] <= 1, "%d devres_get nodes for key %d", n[k], k);
}

static void find_res(struct worker *w, int i)
{
	struct owned *o = &w->owned[i];
	void *p = devres_find(&sdev, res_release, match_idx, &o->idx);

	check(!p || p == o->ptr, "devres_find %u: %p, not %p", o->idx, p,
	      o->ptr);
	/* Gone: a group release or devres_release_all() took it. */
	if (!p)
		drop(w, i);
}

static void remove_res(struct worker *w, int i)
{
	struct owned *o = &w->owned[i];
	void *p = devres_remove(&sdev, res_release, match_idx, &o->idx);

	if (!p) {
		drop(w, i);
		return;
	}
	check(p == o->ptr, "devres_remove %u: %p, not %p", o->idx, p, o->ptr);
	/* Ours alone now: put it back, or free it unreleased. */
	if (o->idx & 1) {
		devres_add(&sdev, p);
	} else {
		devres_free(p);
		disposed[o->idx] = 1;
		drop(w, i);
	}
}

static void release_res(struct worker *w, int i)
{
	int ret =
		devres_release(&sdev, res_release, match_idx, &w->owned[i].idx);

	check(ret == 0 || ret == -ENOENT, "devres_release: %d", ret);
	drop(w, i);
}

static void destroy_res(struct worker *w, int i)
{
	uint32_t idx = w->owned[i].idx;
	int ret = devres_destroy(&sdev, res_release, match_idx, &idx);

	check(ret == 0 || ret == -ENOENT, "devres_destroy: %d", ret);
	if (ret == 0)
		disposed[idx] = 1;
	drop(w, i);
}

static void kfree_res(struct worker *w, int i)
{
	struct owned *o = &w->owned[i];

	pthread_rwlock_rdlock(&pass_lock);
	if (cur_epoch() == o->epoch) {
		if (o->zeroed)
			check(zeroed(o->ptr, o->len), "kzalloc %u not zero",
			      o->idx);
		else
			check(filled(o->ptr, o->len, o->idx),
			      "kmalloc %u overwritten", o->idx);
		devm_kfree(&sdev, o->ptr);
	}
	pthread_rwlock_unlock(&pass_lock);
	drop(w, i);
}

static void end_action(struct worker *w, int i, bool run)
{
	struct owned *o = &w->owned[i];

	pthread_rwlock_rdlock(&pass_lock);
	if (cur_epoch() == o->epoch) {
		check(devm_is_action_added(&sdev, count_action, o->ptr),
		      "action %u lost", o->idx);
		if (run) {
			devm_release_action(&sdev, count_action, o->ptr);
		} else {
			devm_remove_action(&sdev, count_action, o->ptr);
			disposed[o->idx] = 1;
		}
	}
	pthread_rwlock_unlock(&pass_lock);
	drop(w, i);
}

/* The entries of owned[] each operation works on, by operation. */
static const unsigned char op_kind[12] = {
	[4] = K_RES,	 [5] = K_RES,	  [6] = K_RES,	   [7] = K_RES,
	[8] = K_KMALLOC, [9] = K_KMALLOC, [10] = K_ACTION, [11] = K_ACTION,
};

static void worker_op(struct worker *w)
{
	uint32_t r = rnd(&w->rnd) % 12;
	int i = -1;

	/*
	 * Acquiring two times in three keeps a worker near MAX_OWNED, so
	 * that the release passes always find plenty to take; a full worker
	 * lets go before it acquires.
	 */
	if (r >= 4 && rnd(&w->rnd) % 2)
		r %= 4;
	if (r < 4 && w->nr_owned == MAX_OWNED)
		r = 4 + rnd(&w->rnd) % 8;
	if (op_kind[r]) {
		i = pick(w, op_kind[r]);
		if (i < 0)
			return;
	}
	switch (r) {
	case 0:
		add_res(w);
		break;
	case 1:
		add_kmalloc(w);
		break;
	case 2:
		add_action(w);
		break;
	case 3:
		get_res(w);
		break;
	case 4:
		find_res(w, i);
		break;
	case 5:
		remove_res(w, i);
		break;
	case 6:
		release_res(w, i);
		break;
	case 7:
		destroy_res(w, i);
		break;
	case 8:
	case 9:
		kfree_res(w, i);
		break;
	default:
		end_action(w, i, r == 10);
	}
	w->ops[r]++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (long n = 0; n < OPS_PER_WORKER; n++)
		worker_op(w);
	__atomic_sub_fetch(&workers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * The group thread opens groups with ids it owns, closes only its newest
 * open group (so its groups nest properly), removes and releases them, and
 * now and then releases everything. It knows exactly which of its groups
 * are alive, so none of its calls may WARN. Releasing a group also ends
 * every group opened inside its range, which is what mark_released()
 * mirrors.
 */
struct group_state {
	bool live;
	uint64_t opened, closed; /* sequence numbers; closed 0 while open */
};

struct group_thread {
	pthread_t thread;
	uint64_t rnd, seq;
	char ids[MAX_GROUPS];
	struct group_state g[MAX_GROUPS];
	long opens, closes, removes, releases, release_alls, passes_released;
};

static int live_group(struct group_thread *gt)
{
	int start = (int)(rnd(&gt->rnd) % MAX_GROUPS);

	for (int i = 0; i < MAX_GROUPS; i++) {
		int k = (start + i) % MAX_GROUPS;

		if (gt->g[k].live)
			return k;
	}
	return -1;
}

static void open_group(struct group_thread *gt)
{
	for (int k = 0; k < MAX_GROUPS; k++) {
		void *id;

		if (gt->g[k].live)
			continue;
		id = devres_open_group(&sdev, &gt->ids[k], GFP_KERNEL);
		check(id == &gt->ids[k], "devres_open_group: %p", id);
		if (id != &gt->ids[k])
			return;
		gt->g[k] = (struct group_state){ .live = true,
						 .opened = ++gt->seq };
		gt->opens++;
		return;
	}
}

static void close_group(struct group_thread *gt)
{
	int newest = -1;

	for (int k = 0; k < MAX_GROUPS; k++)
		if (gt->g[k].live && !gt->g[k].closed &&
		    (newest < 0 || gt->g[k].opened > gt->g[newest].opened))
			newest = k;
	if (newest < 0)
		return;
	devres_close_group(&sdev, &gt->ids[newest]);
	gt->g[newest].closed = ++gt->seq;
	gt->closes++;
}

static void mark_released(struct group_thread *gt, int k)
{
	uint64_t from = gt->g[k].opened;
	uint64_t to = gt->g[k].closed ? gt->g[k].closed : UINT64_MAX;

	for (int j = 0; j < MAX_GROUPS; j++)
		if (gt->g[j].live && gt->g[j].opened >= from &&
		    gt->g[j].opened < to)
			gt->g[j].live = false;
}

static void end_pass(void)
{
	__atomic_add_fetch(&epoch, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&pass_lock);
}

static void group_op(struct group_thread *gt, long n)
{
	uint32_t r = rnd(&gt->rnd) % 8;
	int k, ret;

	if (n % 64 == 0)
		check_get_keys();
	if (n % RELEASE_ALL_EVERY == RELEASE_ALL_EVERY - 1) {
		pthread_rwlock_wrlock(&pass_lock);
		ret = devres_release_all(&sdev);
		end_pass();
		check(ret >= 0, "devres_release_all: %d", ret);
		memset(gt->g, 0, sizeof(gt->g));
		gt->release_alls++;
		gt->passes_released += ret;
		return;
	}
	if (r < 3) {
		open_group(gt);
	} else if (r < 5) {
		close_group(gt);
	} else if (r < 6) {
		k = live_group(gt);
		if (k < 0)
			return;
		devres_remove_group(&sdev, &gt->ids[k]);
		gt->g[k].live = false;
		gt->removes++;
	} else {
		k = live_group(gt);
		if (k < 0)
			return;
		pthread_rwlock_wrlock(&pass_lock);
		ret = devres_release_group(&sdev, &gt->ids[k]);
		end_pass();
		check(ret >= 0, "devres_release_group: %d", ret);
		mark_released(gt, k);
		gt->releases++;
		gt->passes_released += ret;
	}
}

static void *group_main(void *arg)
{
	struct group_thread *gt = arg;
	long n = 0;

	while (__atomic_load_n(&workers_left, __ATOMIC_ACQUIRE) > 0)
		group_op(gt, n++);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each counted resource ran its release once, or was disposed of. */
static long check_counts(long nr_idx)
{
	long bad = 0;

	for (long idx = 0; idx < nr_idx; idx++) {
		int want;

		if (kinds[idx] == K_NONE || kinds[idx] == K_KMALLOC)
			continue;
		want = disposed[idx] ? 0 : 1;
		if (released[idx] == want)
			continue;
		if (bad++ < 10)
			fprintf(stderr,
				"resource %ld (kind %d): released %d times, "
				"disposed %d\n",
				idx, kinds[idx], released[idx], disposed[idx]);
	}
	return bad;
}

static void stress_one_device(void **state)
{
	static struct worker w[NR_WORKERS];
	static struct group_thread gt;
	struct devres_ledger before, after;
	pthread_rwlockattr_t attr;
	int warns = devres_warn_count();
	long nr_idx, total_released = 0, bad;
	struct devres_stats st;
	double t0;

	(void)state;
	nr_idx = NR_WORKERS * OPS_PER_WORKER + NR_CHILDREN;
	released = calloc((size_t)nr_idx, sizeof(*released));
	disposed = calloc((size_t)nr_idx, 1);
	kinds = calloc((size_t)nr_idx, 1);
	assert_non_null(released);
	assert_non_null(disposed);
	assert_non_null(kinds);

	/* Writers first: the workers would starve the group thread. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(
		&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	assert_int_equal(pthread_rwlock_init(&pass_lock, &attr), 0);
	pthread_rwlockattr_destroy(&attr);

	device_initialize(&sdev);
	/* Registers the kinds before the baseline. */
	devres_free(devres_alloc(res_release, 8, GFP_KERNEL));
	devres_free(devres_alloc(get_release, 8, GFP_KERNEL));
	devres_free(devres_alloc(child_release, 8, GFP_KERNEL));
	devres_ledger_snapshot(&before);

	t0 = now_s();
	workers_left = NR_WORKERS;
	for (int i = 0; i < NR_WORKERS; i++) {
		w[i] = (struct worker){
			.id = (uint32_t)i + 1,
			.next_idx = (uint32_t)(i * OPS_PER_WORKER),
			.end_idx = (uint32_t)((i + 1) * OPS_PER_WORKER),
			.rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1),
		};
		assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main,
						&w[i]),
				 0);
	}
	gt = (struct group_thread){ .rnd = 0xdeadbeefcafef00dull };
	assert_int_equal(pthread_create(&gt.thread, NULL, group_main, &gt), 0);
	for (int i = 0; i < NR_WORKERS; i++)
		assert_int_equal(pthread_join(w[i].thread, NULL), 0);
	assert_int_equal(pthread_join(gt.thread, NULL), 0);
	check_get_keys();

	/* Whatever is left goes now, children of this very pass included. */
	assert_true(devres_release_all(&sdev) >= 0);
	assert_true(devres_release_all(&sdev) >= 0);
	devres_get_stats(&sdev, &st);
	assert_int_equal(st.allocs, 0);

	for (int i = 0; i < NR_WORKERS; i++)
		assert_true(w[i].next_idx <= w[i].end_idx);
	for (long idx = 0; idx < nr_idx; idx++)
		total_released += released[idx];
	printf("stress: %d workers x %ld ops, %.2f s; groups: %ld opened, "
	       "%ld closed, %ld removed, %ld released, %ld release_all "
	       "(%ld resources released by these passes); %ld releases "
	       "counted, %u children\n",
	       NR_WORKERS, OPS_PER_WORKER, now_s() - t0, gt.opens, gt.closes,
	       gt.removes, gt.releases, gt.release_alls, gt.passes_released,
	       total_released,
	       next_child < NR_CHILDREN ? next_child : NR_CHILDREN);

	bad = check_counts(nr_idx);
	assert_int_equal(bad, 0);
	assert_int_equal(failures, 0);
	/* Every operation did its work, and so did the group thread. */
	for (int r = 0; r < 12; r++)
		assert_true(w[0].ops[r] > 0);
	assert_true(gt.release_alls > 0);
	assert_true(gt.releases > 0);
	assert_true(gt.removes > 0);

	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(devres_warn_count(), warns);

	put_device(&sdev);
	pthread_rwlock_destroy(&pass_lock);
	free(released);
	free(disposed);
	free(kinds);
}

/*
 * Deterministic checks of one release pass. A sibling is a node with the
 * same release function. Its callback looks up another sibling and
 * records, in a side table (the node is freed after its release), what it
 * could see and in which order the callbacks ran.
 */
struct sibling {
	char tag;
	char look_for; /* the sibling this one's release looks up, or 0 */
};

static struct seen {
	bool ran, found, removed;
	int released;
} seen[4];
static char order[8];
static int order_len;

static int match_sib(struct device *dev, void *res, void *data)
{
	(void)dev;
	return ((struct sibling *)res)->tag == *(char *)data;
}

static void sib_release(struct device *dev, void *res)
{
	struct sibling *s = res;
	struct seen *rec = &seen[s->tag - 'A'];

	rec->ran = true;
	order[order_len++] = s->tag;
	if (!s->look_for)
		return;
	rec->found = devres_find(dev, sib_release, match_sib, &s->look_for);
	if (rec->found) {
		/* Not in this pass: releasing it from here is allowed. */
		rec->released = devres_release(dev, sib_release, match_sib,
					       &s->look_for);
	} else {
		rec->removed = devres_remove(dev, sib_release, match_sib,
					     &s->look_for) != NULL;
		rec->released = devres_release(dev, sib_release, match_sib,
					       &s->look_for);
	}
}

static void add_sib(struct device *dev, char tag, char look_for)
{
	struct sibling *s = devres_alloc(sib_release, sizeof(*s), GFP_KERNEL);

	assert_non_null(s);
	s->tag = tag;
	s->look_for = look_for;
	devres_add(dev, s);
}

static void reset_seen(void)
{
	memset(seen, 0, sizeof(seen));
	order_len = 0;
}

static void assert_unseen(char tag)
{
	struct seen *rec = &seen[tag - 'A'];

	assert_true(rec->ran);
	assert_false(rec->found);
	assert_false(rec->removed);
	assert_int_equal(rec->released, -ENOENT);
}

/*
 * A pass detaches its nodes before the first callback: A's and B's
 * callbacks find neither, take neither and release neither a second time,
 * whichever runs first.
 */
static void release_all_sees_no_sibling(void **state)
{
	struct device dev = { .release = dev_release };
	struct devres_ledger before, after;
	int warns = devres_warn_count();

	(void)state;
	device_initialize(&dev);
	devres_ledger_snapshot(&before);
	reset_seen();
	add_sib(&dev, 'A', 'B'); /* older: runs second, when B is freed */
	add_sib(&dev, 'B', 'A'); /* newer: runs first, A only detached */
	assert_int_equal(devres_release_all(&dev), 2);
	assert_int_equal(order_len, 2);
	assert_memory_equal(order, "BA", 2);
	assert_unseen('A');
	assert_unseen('B');

	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(devres_warn_count(), warns);
	put_device(&dev);
}

/*
 * The same in a group pass, where C, older than the group, is not in the
 * pass: D's callback finds it and releases it, nested in its own.
 */
static void release_group_sees_no_sibling(void **state)
{
	struct device dev = { .release = dev_release };
	struct devres_ledger before, after;
	int warns = devres_warn_count();
	struct seen *d = &seen['D' - 'A'];
	void *id;

	(void)state;
	device_initialize(&dev);
	devres_ledger_snapshot(&before);
	reset_seen();
	add_sib(&dev, 'C', 0);
	id = devres_open_group(&dev, NULL, GFP_KERNEL);
	assert_non_null(id);
	add_sib(&dev, 'A', 'B');
	add_sib(&dev, 'B', 'A');
	add_sib(&dev, 'D', 'C');
	devres_close_group(&dev, id);

	/* A, B and D; C went through devres_release() from D's callback. */
	assert_int_equal(devres_release_group(&dev, id), 3);
	assert_int_equal(order_len, 4);
	assert_memory_equal(order, "DCBA", 4);
	assert_true(d->found);
	assert_int_equal(d->released, 0);
	assert_true(seen['C' - 'A'].ran);
	assert_unseen('A');
	assert_unseen('B');
	assert_int_equal(devres_release_all(&dev), 0);

	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(devres_warn_count(), warns);
	put_device(&dev);
}

/* A release callback that records new resources on its own device. */
static int late_released;

static void late_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	late_released++;
}

static void adder_release(struct device *dev, void *res)
{
	(void)res;
	devres_add(dev, devres_alloc(late_release, 16, GFP_KERNEL));
	assert_non_null(devm_kmalloc(dev, 32, GFP_KERNEL));
}

static void added_during_release_all_survives(void **state)
{
	struct device dev = { .release = dev_release };
	struct devres_ledger before, after;
	int warns = devres_warn_count();
	struct devres_stats st;

	(void)state;
	device_initialize(&dev);
	devres_ledger_snapshot(&before);
	late_released = 0;
	devres_add(&dev, devres_alloc(adder_release, 8, GFP_KERNEL));
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));

	/* Two released; the two added meanwhile wait for the next pass. */
	assert_int_equal(devres_release_all(&dev), 2);
	assert_int_equal(late_released, 0);
	devres_get_stats(&dev, &st);
	assert_int_equal(st.allocs, 2);
	assert_non_null(devres_find(&dev, late_release, NULL, NULL));

	assert_int_equal(devres_release_all(&dev), 2);
	assert_int_equal(late_released, 1);
	devres_get_stats(&dev, &st);
	assert_int_equal(st.allocs, 0);

	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(devres_warn_count(), warns);
	put_device(&dev);
}

/*
 * Another thread adds while a pass is between two callbacks: the callback
 * of the newer node waits until the other thread's node is on the device.
 */
struct handoff {
	struct device *dev;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state; /* 1: pass running, 2: other thread added */
};

static struct handoff ho;

static void *other_adder(void *arg)
{
	struct handoff *h = arg;

	pthread_mutex_lock(&h->lock);
	while (h->state < 1)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);

	devres_add(h->dev, devres_alloc(late_release, 16, GFP_KERNEL));

	pthread_mutex_lock(&h->lock);
	h->state = 2;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void waiting_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	pthread_mutex_lock(&ho.lock);
	ho.state = 1;
	pthread_cond_broadcast(&ho.cond);
	while (ho.state < 2)
		pthread_cond_wait(&ho.cond, &ho.lock);
	pthread_mutex_unlock(&ho.lock);
}

static void other_thread_add_survives(void **state)
{
	struct device dev = { .release = dev_release };
	int warns = devres_warn_count();
	pthread_t t;

	(void)state;
	device_initialize(&dev);
	late_released = 0;
	ho = (struct handoff){ .dev = &dev,
			       .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
	assert_non_null(devm_kmalloc(&dev, 8, GFP_KERNEL));
	devres_add(&dev, devres_alloc(waiting_release, 8, GFP_KERNEL));
	assert_int_equal(pthread_create(&t, NULL, other_adder, &ho), 0);

	assert_int_equal(devres_release_all(&dev), 2);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ho.state, 2);
	assert_int_equal(late_released, 0);
	assert_non_null(devres_find(&dev, late_release, NULL, NULL));

	assert_int_equal(devres_release_all(&dev), 1);
	assert_int_equal(late_released, 1);
	assert_int_equal(devres_warn_count(), warns);
	put_device(&dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(release_all_sees_no_sibling),
		cmocka_unit_test(release_group_sees_no_sibling),
		cmocka_unit_test(added_during_release_all_survives),
		cmocka_unit_test(other_thread_add_survives),
		cmocka_unit_test(stress_one_device),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
