// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile white-box tsan timeout=120 */
/*
 * The fixed limits of the library's process-wide tables and per-thread
 * records that were silent at their bound, one cell each in the shape of
 * test-hostile-limits-all.c: driven to the limit (no WARN), one past it
 * (one WARN and a documented error, or no limit any more), then used
 * correctly again.
 *
 * Every fixed-size table, every *_MAX and every narrow count in per-thread
 * or per-object state of src/ and include/devres/, what happens at its
 * bound, and the cell that shows it (the arrays among them are checked by
 * tests/check-limits.sh, ctest limits-whole):
 *
 * - plain-unmap.c, MAX_UNMAPPERS (4) subsystems whose mappings a plain
 *   iounmap() or pci_iounmap() asks about (two today): a fifth was dropped
 *   with nothing said, its managed mappings unfound by a plain unmap; now
 *   -ENOSPC and one WARN ("plain-unmap.c: unmappers" here).
 * - ledger.c, POOL (256) per-thread tallies: a thread that ended with no
 *   destructor run (a raw SYS_exit) kept its tally for good, and past 256
 *   such ends every thread counted in the shared fallback; now a full
 *   pool takes back the tally of a thread that is gone ("ledger.c:
 *   tallies of threads ended unseen" here).
 * - nodecache.c, the per-thread cache of node chunks: a thread that ended
 *   with no destructor run kept its cached chunks for good (its lists were
 *   in its own storage, gone with its stack). Its lists are now a slot of
 *   a pool of NC_SLOTS (256), taken over with its chunks by the threads
 *   that enrol after it ("nodecache.c: caches of threads ended unseen"
 *   here); past 256 live caching threads, a thread caches nothing, a
 *   performance limit with no WARN ("nodecache.c: caches of live
 *   threads" here).
 * - tslots.c, the owner of a slot of those two pools, by thread id: a
 *   thread id the kernel gave to a later thread (after pid_max more) made
 *   the slot of a thread ended unseen look alive for good; a full pool
 *   now also takes over a slot whose thread id names a thread started
 *   after the claim ("tslots.c: a slot whose thread id a later thread
 *   has" here).
 * - drv-pin.c, DRV_PINS_MAX (8) driver pins a thread records: a ninth,
 *   nested (a probe that registers a driver whose attach probes ...), was
 *   counted and not recorded, and driver_unregister() waiting for such a
 *   probe that waited for it hung; now pins past the eighth go to
 *   overflow pages, with no limit (test-hostile-pins-deep).
 * - waits.h, DEVRES_WAIT_TARGETS (8) threads or sets one wait names: the
 *   others are left out with one WARN ("waits.h: threads or sets a wait
 *   names" here).
 * - pci/probe.c, PCI_BACKENDS_MAX (4): -ENOSPC, unreachable (UIO and VFIO,
 *   each added once; a second add of one is a no-op).
 * - irq/internal.h, IRQ_LINES_MAX (1024): -ENOSPC from irq_line_create()
 *   (test-irq-line); irq/manage.c, IRQ_DEPTH_MAX (2^20 disables): WARN
 *   (test-hostile-counters).
 * - base/kind.c, 65 536 release functions: WARN and NULL (row 56,
 *   test-kind-limit).
 * - base/maps.c, MAX_HITS (16) managed mappings in one munmap(2): the rest
 *   in one line (test-hostile-limits); base/log.c, HELD_MAX (16) log lines
 *   held under a lock: the rest counted and said ("log lines dropped").
 * - base/site.c, SITE_DEPTH_MAX; base/waits.c, WAIT_DEPTH_MAX; base/hold.c,
 *   HOLD_MAX; base/base.h, DEV_REF_MAX; pci/driver.c, PCI_ENABLE_MAX;
 *   revocable.c, MAX_DEPTH and REVOCABLE_REFS_MAX: WARN and refused
 *   (docs/misuse.md, Fixed limits; test-hostile-counts,
 *   test-hostile-counters, test-hostile-limits, test-revocable).
 * - vfio.h, VFIO_MAX_RANGES (16): the highest kept, an info line (K8,
 *   test-vfio-caps); pci/pci.h, PCI_NAME_MAX: names longer are refused at
 *   the scan (docs/misuse.md, Fixed limits).
 * - Counts narrower than 64 bits in per-thread and per-object state, each
 *   bounded before it could wrap: a device's references, a line's
 *   disables, a PCI device's enables, a revocable's references, nested
 *   call sites and waits, a thread's preemption disables (checked at a
 *   limit with a WARN, above); a line's handlers and references, a bus's
 *   and a VFIO group's references, a pool chunk's busy blocks, a
 *   handle's readers (each one a live allocation, a thread or a nested
 *   access: memory or the thread limit comes first); own-fd.c's record
 *   generation of a descriptor slot (it tells a close from an open made
 *   in the instant between the close and its clearing: 2^32 opens of one
 *   number there are out of reach); handle.c's slot generation (retired
 *   at 2^31 lives, test-hostile-limits-inner).
 * - Caches, not limits (past them memory is freed, nothing refused):
 *   slab.h CACHE_MAX and LAZY_MAX, nodecache.h NC_MAX and NC_CAP, index.c
 *   KEEP_CAP, pages.c KEEP, blocks.c BK_PER; batches (irq/dispatch.c's 16
 *   epoll events, interpose-fd.c's SEEN_MAX WARNs of close_range(2), said
 *   in rounds); posix/stdio.c MODE_MAX (a longer mode is copied to the
 *   heap).
 *
 * Under ThreadSanitizer the raw SYS_exit cells are skipped: TSan never
 * sees such a thread end; ASan builds cache no chunks per thread.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "testlib.h"
#include "hostile/limit-cells.h"
#include "base/subsys.h"
#include "base/nodecache.h"
#include "base/waits.h"

static int no_mapping(void *addr, const char *call)
{
	(void)addr;
	(void)call;
	return -ENOENT;
}

/*
 * io and PCI registered theirs as the library loaded: the table is filled
 * to its four, then one more is refused with its WARN. A plain unmap of
 * what none made still asks every one and finds nothing.
 */
static void unmappers(void)
{
	int ret = 0, n = 0;

	while (!ret) {
		ret = devres__unmapper_register(no_mapping);
		n += !ret;
		assert_in_range(n, 0, 4);
		if (!ret)
			assert_int_equal(warns(), 0);
	}
	assert_int_equal(ret, -ENOSPC);
	assert_int_equal(warns(), 1);
	assert_int_equal(devres__unmap_plain(&n, "iounmap"), -ENOENT);
	assert_int_equal(warns(), 1);
}

#define RAW_THREADS 300 /* more than the ledger's 256 tallies */
#define RAW_STACK ((size_t)256 * 1024)

static void node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* One node made and freed: the thread's first count enrols it. */
static bool count_once(void)
{
	void *p = devres_alloc(node_release, 8, GFP_KERNEL);

	assert_non_null(p);
	devres_free(p);
	return __atomic_load_n(&devres__tally, __ATOMIC_RELAXED) != NULL;
}

static void *raw_end(void *arg)
{
	*(bool *)arg = count_once();
	syscall(SYS_exit, 0);
	return NULL;
}

static void *plain_end(void *arg)
{
	*(bool *)arg = count_once();
	return NULL;
}

/* A thread on a stack of its own, unmapped once it is gone. */
static void run_thread(void *(*fn)(void *), bool *had)
{
	pthread_attr_t attr;
	pthread_t t;
	void *stack;

	stack = mmap(NULL, RAW_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(stack != MAP_FAILED);
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstack(&attr, stack, RAW_STACK), 0);
	assert_int_equal(pthread_create(&t, &attr, fn, had), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&attr);
	assert_int_equal(munmap(stack, RAW_STACK), 0);
}

/*
 * More threads than there are tallies each count and end by a raw
 * SYS_exit, one after another: each finds a tally (a free one, or one a
 * gone thread left), and so does a thread after them all. The counts of
 * the gone threads stay in the sum: the ledger is at its baseline.
 * limit-cell: src/base/ledger.c:tallies
 */
static void raw_ends(void)
{
	struct devres_ledger before, after;
	int with = 0;
	bool had = false;

#if defined(__SANITIZE_THREAD__)
	skip();
#endif
	devres_ledger_snapshot(&before);
	for (int i = 0; i < RAW_THREADS; i++) {
		had = false;
		run_thread(raw_end, &had);
		with += had;
	}
	had = false;
	run_thread(plain_end, &had);
	print_message("%d of %d threads ended unseen had a tally\n", with,
		      RAW_THREADS);
	assert_true(had);
	assert_int_equal(with, RAW_THREADS);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	assert_int_equal(warns(), 0);
}

#define CACHED 256 /* nodes each thread frees into its cache */

/* Many nodes made and freed: their chunks stay in the thread's cache. */
static void *raw_cache_end(void *arg)
{
	void *p[CACHED];

	(void)arg;
	for (int i = 0; i < CACHED; i++) {
		p[i] = devres_alloc(node_release, 8, GFP_KERNEL);
		assert_non_null(p[i]);
	}
	for (int i = 0; i < CACHED; i++)
		devres_free(p[i]);
	syscall(SYS_exit, 0);
	return NULL;
}

/*
 * Threads that each cache CACHED node chunks (24 bytes, 32 of heap)
 * and end by a raw SYS_exit, one after another: their caches are taken
 * back by the threads that come after (each enrolment looks at a few
 * slots in turn). Before, each one's chunks stayed allocated for good:
 * 300 threads, 300 * 256 chunks. Now the heap in use grows by at most
 * a few threads' worth.
 */
static void raw_cache_ends(void)
{
	struct mallinfo2 before, after;
	size_t grown;
	bool had;

#if defined(__SANITIZE_THREAD__) || defined(T_ASAN)
	skip(); /* TSan sees no SYS_exit end; ASan builds cache nothing */
#endif
	before = mallinfo2();
	for (int i = 0; i < RAW_THREADS; i++)
		run_thread(raw_cache_end, &had);
	after = mallinfo2();
	grown = after.uordblks > before.uordblks
			? after.uordblks - before.uordblks
			: 0;
	print_message("heap in use grew by %zu bytes after %d threads "
		      "ended unseen with %d cached nodes each\n",
		      grown, RAW_THREADS, CACHED);
	assert_true(grown < (size_t)16 * CACHED * 32);
	assert_int_equal(warns(), 0);
}

/* A pool of the test's own, for the slots' ids (tslots.h). */
DEVRES_TSLOTS(reuse_pool, 64);

static unsigned long long b_id;
static int b_slot = -1, b_go;

/* Thread B: claims a slot of its own, then waits to be let go. */
static void *b_thread(void *arg)
{
	(void)arg;
	b_slot = devres__tslot_take_free(&reuse_pool);
	__atomic_store_n(&b_id, devres__tslot_self(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&b_go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/*
 * A slot whose thread ended unseen, its thread id then given to a later
 * thread B (the kernel does after pid_max more threads; here the slot is
 * made to name B, as the reuse would). tgkill() finds B alive, and
 * before, the slot stayed taken for good; a full pool's reclaim now takes
 * it over, as B started after the slot was claimed. B's own slot, and one
 * of a thread alive since before its claim, are never taken; B's is once
 * B is gone.
 */
static void reused_tid(void)
{
	struct timespec tick = { 0, 30000000L }; /* 30 ms: 3 clock ticks */
	pthread_t b;
	int gone;

	gone = devres__tslot_take_free(&reuse_pool);
	assert_int_equal(gone, 0);
	assert_int_equal(nanosleep(&tick, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, b_thread, NULL), 0);
	while (!__atomic_load_n(&b_id, __ATOMIC_ACQUIRE))
		usleep(1000);
	assert_int_equal(b_slot, 1);
	/* The slot of the thread gone names B now. */
	__atomic_store_n(&reuse_pool.owner[gone], b_id, __ATOMIC_RELEASE);
	assert_false(devres__tslot_take_over(&reuse_pool, (unsigned int)gone));
	assert_int_equal(devres__tslot_reclaim(&reuse_pool), gone);
	assert_true(reuse_pool.owner[gone] == devres__tslot_self());
	/* Nothing more to take: B's slot is B's, slot 0 this thread's. */
	reuse_pool.deep_next = 0;
	assert_int_equal(devres__tslot_reclaim(&reuse_pool), -1);
	__atomic_store_n(&b_go, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(b, NULL), 0);
	/*
	 * B gone, by the kernel's word: its slot (no destructor gave it).
	 * pthread_join() returns once the kernel cleared B's thread id, which
	 * it does on B's way out, before the thread is gone: tgkill() may
	 * still find it for a moment (1 join in 20000 on an idle machine,
	 * more under load), and the reclaim rightly keeps its slot then.
	 */
	for (int i = 0; i < 5000 && !devres__tslot_gone(b_id); i++)
		usleep(1000);
	assert_true(devres__tslot_gone(b_id));
	assert_int_equal(devres__tslot_reclaim(&reuse_pool), 1);
	devres__tslot_give(&reuse_pool, 0);
	devres__tslot_give(&reuse_pool, 1);
	assert_int_equal(warns(), 0);
}

/* A pool for the real reuse, in a PID namespace of its own. */
DEVRES_TSLOTS(ns_pool, 64);

static int a_slot = -1, a_tid, ns_b_tid, ns_b_go;

/* Thread A: claims a slot and ends unseen, by a raw SYS_exit. */
static void *ns_a_thread(void *arg)
{
	(void)arg;
	a_slot = devres__tslot_take_free(&ns_pool);
	a_tid = (int)syscall(SYS_gettid);
	syscall(SYS_exit, 0);
	return NULL;
}

/* Thread B: given A's thread id, lives until let go. */
static void *ns_b_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&ns_b_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&ns_b_go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/*
 * As process 1 of a new PID namespace, with its own /proc: A's id is
 * made the next one given (ns_last_pid, written in this namespace only)
 * and B gets it. 0 when A's slot is reclaimed; 77 when the namespace
 * cannot be set up here.
 */
static int in_pid_ns(void)
{
	struct timespec tick = { 0, 30000000L }; /* 30 ms: 3 clock ticks */
	pthread_t a, b;
	int fd, ret = 0;
	char num[16];

	if (getpid() != 1)
		return 3;
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL))
		return 77;
	if (pthread_create(&a, NULL, ns_a_thread, NULL) ||
	    pthread_join(a, NULL) || a_slot != 0)
		return 4;
	nanosleep(&tick, NULL);
	fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 77;
	(void)snprintf(num, sizeof(num), "%d", a_tid - 1);
	if (write(fd, num, strlen(num)) < 0) {
		close(fd);
		return 77;
	}
	close(fd);
	if (pthread_create(&b, NULL, ns_b_thread, NULL))
		return 5;
	while (!__atomic_load_n(&ns_b_tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (ns_b_tid != a_tid)
		ret = 77; /* another thread took the id first */
	else if (devres__tslot_take_over(&ns_pool, (unsigned int)a_slot))
		ret = 6; /* B is alive: the kernel's word alone keeps it */
	else if (devres__tslot_reclaim(&ns_pool) != a_slot)
		ret = 7;
	__atomic_store_n(&ns_b_go, 1, __ATOMIC_RELEASE);
	pthread_join(b, NULL);
	return ret;
}

/* In a child: a new PID and mount namespace, and its process 1. */
static int pid_ns_child(void)
{
	int st = 0;
	pid_t p;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 77;
	p = fork();
	if (p < 0)
		return 2;
	if (p == 0)
		_exit(in_pid_ns());
	/* Process 1 ignores an alarm: it is killed from here instead. */
	for (int i = 0; i < 1000 && waitpid(p, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(p, &st, WNOHANG) == 0) {
		kill(p, SIGKILL);
		waitpid(p, &st, 0);
		return 8;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 9;
}

/*
 * The reuse itself, where this process may make a PID namespace (root):
 * thread A claims a slot and ends by a raw SYS_exit; thread B is given
 * A's thread id. tgkill() finds B alive; a full pool's reclaim takes
 * A's slot over all the same. Skipped where no namespace can be made,
 * and under the sanitizers and valgrind, which never see a raw SYS_exit
 * end.
 */
static void reused_tid_ns(void)
{
	int st = 0;
	pid_t p;

#if defined(__SANITIZE_THREAD__) || defined(T_ASAN)
	skip(); /* and ASan takes the new thread B for A, which it saw start */
#endif
	if (under_valgrind())
		skip(); /* valgrind, too, takes B for the A it saw start */
	fflush(NULL);
	p = fork();
	assert_true(p >= 0);
	if (p == 0)
		_exit(pid_ns_child());
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(warns(), 0);
}

/*
 * The threads and sets one wait of the library names: DEVRES_WAIT_TARGETS
 * (8, a shared line's handlers) go in with no WARN, a target named twice
 * counts once, one more is left out with one WARN; the wait is recorded
 * with its 8 and ends. A wait for none is not recorded.
 * limit-cell: src/base/waits.h:devres__wait.target
 */
static void wait_targets(void)
{
	struct devres__wait w;
	uint64_t id[DEVRES_WAIT_TARGETS + 1];

	for (int i = 0; i <= DEVRES_WAIT_TARGETS; i++)
		id[i] = devres__wait_id_new();
	devres__wait_init(&w, "limits");
	for (int i = 0; i < DEVRES_WAIT_TARGETS; i++) {
		devres__wait_target(&w, id[i]);
		devres__wait_target(&w, id[i]);
	}
	assert_int_equal(w.nr, DEVRES_WAIT_TARGETS);
	assert_int_equal(warns(), 0);
	devres__wait_target_set(&w, (uint64_t)id[DEVRES_WAIT_TARGETS]);
	assert_int_equal(w.nr, DEVRES_WAIT_TARGETS);
	assert_int_equal(warns(), 1);
	assert_int_equal(devres__wait_begin(&w), 0);
	assert_int_equal(devres__wait_records(devres__wait_self()), 1);
	devres__wait_end(&w);
	assert_int_equal(devres__wait_records(devres__wait_self()), 0);
	devres__wait_init(&w, "limits");
	assert_int_equal(devres__wait_begin(&w), 0);
	assert_int_equal(devres__wait_records(devres__wait_self()), 0);
	assert_int_equal(warns(), 1);
}

#define LIVE_MAX 300 /* more than the 256 node caches */

struct live {
	pthread_t t;
	int go;
	int cached; /* 1: its thread has a cache, -1: refused one */
};

static struct live live[LIVE_MAX + 1];

/* Caches a node, says whether it could, and lives until let go. */
static void *live_thread(void *arg)
{
	struct live *l = arg;

	(void)count_once();
	__atomic_store_n(&l->cached, devres__nc.enrolled ? 1 : -1,
			 __ATOMIC_RELEASE);
	while (!__atomic_load_n(&l->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

static int live_start(struct live *l)
{
	pthread_attr_t attr;
	int c;

	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, RAW_STACK), 0);
	assert_int_equal(pthread_create(&l->t, &attr, live_thread, l), 0);
	pthread_attr_destroy(&attr);
	while (!(c = __atomic_load_n(&l->cached, __ATOMIC_ACQUIRE)))
		usleep(100);
	return c;
}

static void live_end(struct live *l)
{
	__atomic_store_n(&l->go, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(l->t, NULL), 0);
}

/*
 * The node caches of live threads: 256 (nodecache.c, NC_SLOTS), a
 * performance limit, not a misuse: threads that live at once take a
 * cache each, the main thread's too, until a thread finds none and
 * caches nothing (its chunks go to the heap), with no WARN. A thread's
 * end gives its cache back, and the next thread takes it.
 * limit-cell: src/base/nodecache.c:owners
 */
static void live_caches(void)
{
	int n = 0, c = 1;

#if defined(T_ASAN)
	skip(); /* ASan builds cache no chunks per thread */
#endif
	if (under_valgrind())
		skip(); /* 257 threads live at once: minutes under valgrind */
	memset(live, 0, sizeof(live));
	while (n < LIVE_MAX && (c = live_start(&live[n])) > 0)
		n++;
	print_message("%d live threads cached, the next one did not\n", n);
	assert_int_equal(c, -1);
	assert_in_range(n, 200, 256);
	assert_int_equal(warns(), 0);
	live_end(&live[0]);
	assert_int_equal(live_start(&live[LIVE_MAX]), 1);
	live_end(&live[LIVE_MAX]);
	for (int i = 1; i <= n; i++)
		live_end(&live[i]);
	assert_int_equal(warns(), 0);
}

static const struct cell cells[] = {
	{ "plain-unmap.c: unmappers, to the limit", unmappers },
	{ "ledger.c: tallies of threads ended unseen", raw_ends },
	{ "nodecache.c: caches of threads ended unseen", raw_cache_ends },
	{ "tslots.c: a slot whose thread id a later thread has", reused_tid },
	{ "tslots.c: a thread id reused in a PID namespace", reused_tid_ns },
	{ "waits.h: threads or sets a wait names", wait_targets },
	{ "nodecache.c: caches of live threads", live_caches },
};

LIMIT_CELLS_MAIN(cells)
