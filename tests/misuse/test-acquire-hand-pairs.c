// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * A managed acquisition on one thread, and on another the plain call that
 * gives back what it acquires (docs/misuse.md, SP7 to SP14), made at once
 * many rounds (DEVRES_PAIRS_ROUNDS): a descriptor (devm_eventfd() and
 * close(2) of the number it gets), a stream (devm_fopen() and close(2) of
 * its number), a busy region (devm_request_mem_region() and
 * release_mem_region() of the range), a coherent DMA buffer
 * (dmam_alloc_coherent() and dma_free_coherent() of the address and
 * handle it gets), a DMA pool (dmam_pool_create() and dma_pool_destroy()
 * of the handle it gets), a mapping of device memory (devm_ioremap() and
 * iounmap() of its address), a BAR of a fake PCI function (pcim_iomap()
 * and pci_iounmap() of its address) and a range of the
 * caller's in the resource tree (devm_request_resource() and
 * release_resource(), remove_resource() or remove_resource_unless_busy()
 * of it). The number, address or handle is the one a
 * managed acquisition given back just before got: the next gets the
 * same. Each pair must end as one of its two serial orders does
 * (tests/pairs.h): the plain call first finds nothing (its WARN, or
 * EBADF) and the resource stays managed; second, it gives the resource
 * back with its WARN and takes its node off the device. The subsystem's
 * record of the resource names its node before the node is on the
 * device: a plain call in between gave the resource back, found no node
 * to take off, and the node, added after, stayed on the device for a
 * resource already given back: a node and no resource, which neither
 * order leaves (for a BAR, its pcim_iomap_table() slot set apart from
 * its node, too; for remove_resource_unless_busy(), no owner looked for
 * at all). What is compared after: the device's nodes, the ledger's count
 * of the kind (a range: whether it is in the tree), what the release then
 * finds, the WARNs, and whether a BAR's slot is set with its node. The
 * window is a few instructions wide: hold_each holds it open for each
 * kind, 20 rounds (see there).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "pairs.h"
#include "rounds.h"
#include "gate.h"
#include "posix/hand-close.h"
#include "io/iotest.h"
#include "misuse/one-pci-fn.h"

#define BASE 0x7b000000ULL
#define SIZE 4096
/* The caller's range of devm_request_resource(), clear of the window. */
#define RES_BASE 0x7c000000ULL

#ifdef T_TSAN
#define ROUNDS 300
#else
#define ROUNDS 2000
#endif

/* The managed acquisition, the plain give-back, and the kind's count. */
struct kind {
	const char *name;
	int (*acquire)(void);
	int (*hand)(void);
	/* Acquires and gives back once: what the next acquisition gets. */
	void (*learn)(void);
	long (*live)(const struct devres_ledger *l);
	/* Gives back what the release leaves (@nodes: the device's before). */
	void (*rest)(int nodes);
	/* Made before the library records it (given_back_unrecorded()). */
	bool unrecorded;
	/* The device it is acquired on (NULL: tdev). */
	struct device *(*dev)(void);
	/*
	 * Optional: whether what else the acquisition records agrees with
	 * @nodes, the nodes it left on the device (a pcim_iomap_table()
	 * slot set with its node only).
	 */
	bool (*agrees)(int nodes);
};

static const struct kind *kind;
static long live0;

static const char *const state_name[] = { "being acquired" };
static const char *const call_name[] = { "managed acquisition", "plain "
								"give-back" };

static void reach(unsigned int s)
{
	struct devres_ledger l;

	(void)s;
	kind->learn();
	devres_ledger_snapshot(&l);
	live0 = kind->live(&l);
}

static int call(unsigned int c)
{
	return c ? kind->hand() : kind->acquire();
}

static struct device *kdev(void)
{
	return kind->dev ? kind->dev() : &tdev;
}

static int nodes(void)
{
	struct devres_stats st;

	devres_get_stats(kdev(), &st);
	return (int)st.allocs;
}

/*
 * The device's nodes and the kind's live count before the release, what
 * the release finds, the WARNs of it and of what it leaves, and whether
 * the kind's other records agreed with its nodes.
 */
static void undo(struct pairs_outcome *o)
{
	struct devres_ledger l;
	int w0 = devres_warn_count();

	o->after[0] = nodes();
	devres_ledger_snapshot(&l);
	o->after[1] = (int)(kind->live(&l) - live0);
	o->after[4] = !kind->agrees || kind->agrees(o->after[0]);
	o->after[2] = devres_release_all(kdev());
	kind->rest(o->after[0]);
	o->after[3] = devres_warn_count() - w0;
}

/*
 * The number the next descriptor gets, and its close by hand (a race of
 * the close's number with its making that ThreadSanitizer reports of the
 * hand close alone: hand-close.h).
 */
static int next_fd;

static int close_next(void)
{
	return hand_close(next_fd) ? -errno : 0;
}

/*
 * The third outcome of a descriptor, a stream and a coherent buffer
 * (docs/misuse.md, SP7, SP8, SP10): the plain call lands after the
 * resource is made and before the library has recorded it at all (the
 * kernel handed out the number; the buffer is in the DMA table, its
 * owner not yet known), as a plain call on what nobody handed out yet: it
 * gives it back unseen (no WARN) and the node stays, for a resource the
 * release then finds gone (what it says of that is its own). Not this
 * race: here the plain call WARNs, having found the owner, and leaves the
 * node on the device.
 */
static bool given_back_unrecorded(unsigned int s, unsigned int a,
				  unsigned int b,
				  const struct pairs_outcome *got,
				  const struct pairs_outcome *ser)
{
	(void)s;
	return kind->unrecorded && a != b && got->ret[0] == 0 &&
	       got->ret[1] == 0 && got->warns == 0 &&
	       got->after[0] == ser[1].after[0];
}

static void rest_none(int n)
{
	(void)n;
}

/* Descriptors: the number is the lowest free one, the same each time. */

static void fd_learn(void)
{
	next_fd = devm_eventfd(&tdev, 0, 0);
	assert_true(next_fd >= 0);
	devm_close(&tdev, next_fd);
	assert_int_equal(fcntl(next_fd, F_GETFD), -1);
}

static int fd_acquire(void)
{
	int fd = devm_eventfd(&tdev, 0, 0);

	return fd < 0 ? fd : 0;
}

static long fd_live(const struct devres_ledger *l)
{
	return l->fds;
}

static const struct kind fds = {
	.name = "descriptor",
	.acquire = fd_acquire,
	.hand = close_next,
	.learn = fd_learn,
	.live = fd_live,
	.rest = rest_none,
	.unrecorded = true,
};

/*
 * Streams: their number closed by hand drops the node and leaves the
 * FILE to the program (its fclose() a plain one).
 */
static FILE *files[2];
static int nr_files;

static void stream_learn(void)
{
	FILE *f = devm_fopen(&tdev, "/dev/null", "r");

	assert_non_null(f);
	next_fd = fileno(f);
	assert_int_equal(devm_fclose(&tdev, f), 0);
	nr_files = 0;
}

static int stream_acquire(void)
{
	FILE *f = devm_fopen(&tdev, "/dev/null", "r");

	if (!f)
		return -errno;
	files[__atomic_fetch_add(&nr_files, 1, __ATOMIC_ACQ_REL)] = f;
	return 0;
}

static void stream_rest(int n)
{
	/* One stream, its node dropped by the close: the FILE is ours. */
	if (nr_files == 1 && n == 0)
		fclose(files[0]);
}

static const struct kind streams = {
	.name = "stream",
	.acquire = stream_acquire,
	.hand = close_next,
	.learn = stream_learn,
	.live = fd_live,
	.rest = stream_rest,
	.unrecorded = true,
};

/* Busy regions: the range is known. */

static void region_learn(void)
{
}

static int region_acquire(void)
{
	return devm_request_mem_region(&tdev, BASE, SIZE, "pairs") ? 0 : -EBUSY;
}

static int region_hand(void)
{
	release_mem_region(BASE, SIZE);
	return 0;
}

static long region_live(const struct devres_ledger *l)
{
	return l->regions;
}

static const struct kind regions = {
	.name = "region",
	.acquire = region_acquire,
	.hand = region_hand,
	.learn = region_learn,
	.live = region_live,
	.rest = rest_none,
};

/* Coherent DMA buffers: the address and handle given back are reused. */

static void *next_cpu;
static dma_addr_t next_handle;

static void coherent_learn(void)
{
	next_cpu = dmam_alloc_coherent(&tdev, SIZE, &next_handle, GFP_KERNEL);
	assert_non_null(next_cpu);
	dmam_free_coherent(&tdev, SIZE, next_cpu, next_handle);
}

static int coherent_acquire(void)
{
	dma_addr_t h;

	return dmam_alloc_coherent(&tdev, SIZE, &h, GFP_KERNEL) ? 0 : -ENOMEM;
}

static int coherent_hand(void)
{
	dma_free_coherent(&tdev, SIZE, next_cpu, next_handle);
	return 0;
}

static long coherent_live(const struct devres_ledger *l)
{
	return l->dma_buffers;
}

static const struct kind coherent = {
	.name = "coherent buffer",
	.acquire = coherent_acquire,
	.hand = coherent_hand,
	.learn = coherent_learn,
	.live = coherent_live,
	.rest = rest_none,
	.unrecorded = true,
};

/*
 * DMA pools: a pool's handle is its slot's index and generation, and a
 * pool made after one destroyed takes the same slot, its generation moved
 * on by the same step each time: the next handle is the last one plus
 * the step between the last two. Live while a block can be taken from it.
 */
static struct dma_pool *next_pool;

static struct dma_pool *pool_make(void)
{
	return dmam_pool_create("pairs", &tdev, 64, 0, 0);
}

static void pool_learn(void)
{
	struct dma_pool *a, *b;

	a = pool_make();
	assert_non_null(a);
	dmam_pool_destroy(a);
	b = pool_make();
	assert_non_null(b);
	dmam_pool_destroy(b);
	next_pool = (struct dma_pool *)((uintptr_t)b +
					((uintptr_t)b - (uintptr_t)a));
}

static int pool_acquire(void)
{
	return pool_make() ? 0 : -ENOMEM;
}

static int pool_hand(void)
{
	dma_pool_destroy(next_pool);
	return 0;
}

/* A block taken and given back: the pool's WARN when it is not live. */
static long pool_live(const struct devres_ledger *l)
{
	dma_addr_t dma;
	void *p;

	(void)l;
	p = dma_pool_alloc(next_pool, GFP_KERNEL, &dma);
	if (!p)
		return 0;
	dma_pool_free(next_pool, p, dma);
	return 1;
}

static const struct kind pools = {
	.name = "DMA pool",
	.acquire = pool_acquire,
	.hand = pool_hand,
	.learn = pool_learn,
	.live = pool_live,
	.rest = rest_none,
};

/* Mappings of device memory: the address unmapped is mapped again. */

static void *next_addr;

static void map_learn(void)
{
	next_addr = devm_ioremap(&tdev, BASE, SIZE);
	assert_non_null(next_addr);
	devm_iounmap(&tdev, next_addr);
}

static int map_acquire(void)
{
	return devm_ioremap(&tdev, BASE, SIZE) ? 0 : -errno;
}

static int map_hand(void)
{
	iounmap(next_addr);
	return 0;
}

static long map_live(const struct devres_ledger *l)
{
	return l->maps;
}

static const struct kind maps = {
	.name = "mapping",
	.acquire = map_acquire,
	.hand = map_hand,
	.learn = map_learn,
	.live = map_live,
	.rest = rest_none,
};

/*
 * BAR 0 of the fake function, mapped with pcim_iomap(): the address
 * unmapped is mapped again. Given back by hand with pci_iounmap(), which
 * clears its pcim_iomap_table() slot. Not with munmap(2), which takes the
 * node in the same hold (base/maps.c, then the BAR mappings' lock): of an
 * address foreseen, not yet mapped again, it would unmap whatever took
 * the address meanwhile (a sanitizer's allocator does).
 */
static struct device *pci_fn(void)
{
	return &pdev->dev;
}

static void bar_learn(void)
{
	next_addr = pcim_iomap(pdev, 0, 0);
	assert_non_null(next_addr);
	pcim_iounmap(pdev, next_addr);
	assert_null(pcim_iomap_table(pdev)[0]);
}

static int bar_acquire(void)
{
	return pcim_iomap(pdev, 0, 0) ? 0 : -errno;
}

static int bar_iounmap(void)
{
	pci_iounmap(pdev, next_addr);
	return 0;
}

/* The BAR's slot holds a mapping while its node is on the device. */
static bool bar_slot_agrees(int n)
{
	return (pcim_iomap_table(pdev)[0] != NULL) == (n > 0);
}

static const struct kind bars = {
	.name = "BAR mapping, pci_iounmap()",
	.acquire = bar_acquire,
	.hand = bar_iounmap,
	.learn = bar_learn,
	.live = map_live,
	.rest = rest_none,
	.dev = pci_fn,
	.agrees = bar_slot_agrees,
};

/*
 * A range of the caller's, put in the tree with devm_request_resource():
 * live while it is in the tree. Given back by hand with
 * release_resource(), remove_resource() or remove_resource_unless_busy().
 */
static struct resource range;

static void range_learn(void)
{
	range = (struct resource){ .start = RES_BASE,
				   .end = RES_BASE + SIZE - 1,
				   .name = "pairs range",
				   .flags = IORESOURCE_MEM };
}

static int range_acquire(void)
{
	return devm_request_resource(&tdev, &iomem_resource, &range);
}

static int range_release(void)
{
	return release_resource(&range);
}

static int range_remove(void)
{
	return remove_resource(&range);
}

static int range_remove_unless_busy(void)
{
	return remove_resource_unless_busy(&range);
}

static long range_live(const struct devres_ledger *l)
{
	(void)l;
	return range.parent != NULL;
}

/* A range the release left in the tree (no node): out, for the next. */
static void range_rest(int n)
{
	(void)n;
	if (range.parent)
		(void)release_resource(&range);
}

#define RANGE_KIND(what, fn)                                                   \
	{                                                                      \
		.name = "range, " what, .acquire = range_acquire,              \
		.hand = (fn), .learn = range_learn, .live = range_live,        \
		.rest = range_rest,                                            \
	}

static const struct kind ranges =
	RANGE_KIND("release_resource()", range_release);
static const struct kind ranges_remove =
	RANGE_KIND("remove_resource()", range_remove);
static const struct kind ranges_unless_busy =
	RANGE_KIND("remove_resource_unless_busy()", range_remove_unless_busy);

/* use_<k>(): the setup of a table of kind <k>. */
#define USE(k)                                                                 \
	static void use_##k(void)                                              \
	{                                                                      \
		kind = &(k);                                                   \
	}

USE(fds)
USE(streams)
USE(regions)
USE(coherent)
USE(maps)
USE(pools)
USE(bars)
USE(ranges)
USE(ranges_remove)
USE(ranges_unless_busy)

#define KIND(use)                                                              \
	PAIRS_NAMES(state_name, call_name),                                    \
		.reach = reach, .call = call, .undo = undo,                    \
		.also = given_back_unrecorded, .setup = (use)

PAIRS_TEST(fd_against_close, ROUNDS, KIND(use_fds))
PAIRS_TEST(stream_against_close, ROUNDS, KIND(use_streams))
PAIRS_TEST(region_against_release, ROUNDS, KIND(use_regions))
PAIRS_TEST(coherent_against_free, ROUNDS, KIND(use_coherent))
PAIRS_TEST(mapping_against_iounmap, ROUNDS, KIND(use_maps))
PAIRS_TEST(pool_against_destroy, ROUNDS, KIND(use_pools))
PAIRS_TEST(bar_against_pci_iounmap, ROUNDS, KIND(use_bars))
PAIRS_TEST(range_against_release, ROUNDS, KIND(use_ranges))
PAIRS_TEST(range_against_remove, ROUNDS, KIND(use_ranges_remove))
PAIRS_TEST(range_against_remove_unless_busy, ROUNDS,
	   KIND(use_ranges_unless_busy))

/*
 * The same window held open: a thread holds the device's devres lock
 * (devres_for_each_res() with a callback that waits at a gate), the
 * acquisition runs until it sleeps on that lock, then the gate opens and
 * the holder, as soon as it lets the lock go, makes the plain call (the
 * lock is not handed to the thread it wakes: the holder, on its CPU, is
 * first). Before, the acquisition slept there with its record published
 * and the subsystem's lock let go: the plain call found the owner, took
 * the devres lock first, found no node to take off and gave the resource
 * back; the node, added after, stayed. Now the acquisition sleeps holding
 * the subsystem's lock, which the plain call waits for: it finds the node
 * on the device. Each round: nodes on the device only with the resource
 * live.
 */
#define HOLD_ROUNDS 20

static void *hold_then_hand(void *arg)
{
	gate_hold_devres(kdev());
	*(int *)arg = kind->hand();
	return NULL;
}

/* Whether the round left nodes only with the resource live. */
static bool hold_round(void)
{
	struct asleep_call a = { .fn = kind->acquire };
	struct devres_ledger l;
	pthread_t holder;
	void *sentinel;
	int n0, n, hand_ret;
	bool agrees;
	long live;

	kind->learn();
	/* The plain call's WARN, either way: counted, not printed. */
	devres_set_log_sink(pairs_sink, NULL);
	sentinel = devres_alloc(gate_held, 1, GFP_KERNEL);
	assert_non_null(sentinel);
	devres_add(kdev(), sentinel);
	/* The sentinel, and what learning left (a DMA state). */
	n0 = nodes();
	devres_ledger_snapshot(&l);
	live0 = kind->live(&l);
	gate_reset();
	assert_int_equal(
		pthread_create(&holder, NULL, hold_then_hand, &hand_ret), 0);
	gate_until_reached();
	start_until_asleep(&a);
	gate_release();
	pthread_join(holder, NULL);
	pthread_join(a.t, NULL);
	assert_int_equal(a.ret, 0);
	n = nodes() - n0;
	devres_ledger_snapshot(&l);
	live = kind->live(&l) - live0;
	agrees = !kind->agrees || kind->agrees(n);
	(void)devres_release_all(kdev());
	kind->rest(n);
	devres_set_log_sink(NULL, NULL);
	if ((n == 0) == (live == 0) && agrees)
		return true;
	print_message("%s: a round left %d node(s) and %ld live%s\n",
		      kind->name, n, live,
		      agrees ? "" : ", its table slot not with its node");
	return false;
}

static void hold_each(void **state)
{
	int bad = 0;

	(void)state;
	for (const struct kind *const *k =
		     (const struct kind *const[]){
			     &fds, &streams, &regions, &coherent, &pools, &maps,
			     &bars, &ranges, &ranges_remove,
			     &ranges_unless_busy, NULL };
	     *k; k++) {
		kind = *k;
		for (int r = 0; r < HOLD_ROUNDS; r++)
			bad += !hold_round();
	}
	assert_int_equal(bad, 0);
}

static struct io_window win;

static int window_setup(void **state)
{
	return io_window_setup(state, &win, BASE, SIZE, "pairs");
}

static int window_teardown(void **state)
{
	return io_window_teardown(state, &win, BASE, SIZE);
}

/* The window and the fake PCI function, for the tables that use both. */
static int pci_setup(void **state)
{
	if (window_setup(state))
		return -1;
	return one_pci_fn_setup(SIZE);
}

static int pci_teardown(void **state)
{
	one_pci_fn_teardown();
	return window_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fd_against_close, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(stream_against_close, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(region_against_release,
						window_setup, window_teardown),
		cmocka_unit_test_setup_teardown(coherent_against_free,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(mapping_against_iounmap,
						window_setup, window_teardown),
		cmocka_unit_test_setup_teardown(pool_against_destroy, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(bar_against_pci_iounmap,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(range_against_release,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(range_against_remove, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(range_against_remove_unless_busy,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(hold_each, pci_setup,
						pci_teardown),
	};

	return pairs_group("acquire-hand-pairs", tests,
			   sizeof(tests) / sizeof(tests[0]));
}
