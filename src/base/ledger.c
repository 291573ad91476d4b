// SPDX-License-Identifier: MIT
/*
 * The ledger of live resources. Each thread counts in its own tally, written
 * only by that thread with relaxed atomics (plain moves on x86), so counting
 * costs no locked instruction on the allocation path. A snapshot sums every
 * tally and the shared fallback.
 *
 * A thread's first count may come from a signal handler (one that closes a
 * managed descriptor, frees a managed allocation or releases a node), which
 * may have interrupted its thread inside malloc() or inside this file: so
 * nothing here allocates or takes a lock. Tallies are slots of a static
 * pool, claimed and given back with a compare-and-swap on a bitmap; a
 * thread that finds none free counts in the shared fallback, atomically,
 * and tries again at its next count. A tally given back keeps its counts,
 * and its next thread adds to them: a count, once made, stays where it is,
 * so a snapshot that runs while a thread exits sees it once, neither
 * twice (folded and still in its tally) nor not at all. The pool's key,
 * whose destructor gives a tally back as its thread exits, is made as the
 * library loads: among the process's first keys, whose
 * pthread_setspecific() writes the thread's own block and allocates
 * nothing (glibc).
 *
 * A thread that ends with no destructor run (a raw SYS_exit, or a count
 * made after its destructors' last round) never gives its tally back.
 * Each tally names its thread (process and thread id) and when it was
 * claimed; when the pool is full, a tally whose thread is gone (or whose
 * thread id is now a later thread's) is taken back, its counts kept,
 * before the claimer falls back: the pool is never lost to such ends.
 */
#include <pthread.h>
#include <stdbool.h>
#include <devres/fault.h>
#include "internal.h"

/* Tallies in the pool; past them, threads count in the fallback. */
#define POOL 256

/* A cache line of its own (two): threads never write each other's lines. */
struct tally {
	long v[DL_NR];
} __attribute__((aligned(64)));

TLS_FAST long *devres__tally;
static struct tally pool[POOL];
/* Whose each tally is (tslots.h); its used is what sum() reads. */
DEVRES_TSLOTS(tallies, POOL);
static long fallback[DL_NR];
static pthread_key_t exit_key;
static bool have_key;

/*
 * The pool is full: a tally whose thread ended unseen is taken back, for
 * the caller. Its counts stay, as a tally given back keeps them.
 */
static struct tally *reclaim(void)
{
	int i = devres__tslot_reclaim(&tallies);

	return i < 0 ? NULL : &pool[i];
}

/* A free tally, claimed (the lowest); NULL when every one is taken. */
static struct tally *take(void)
{
	int i = devres__tslot_take_free(&tallies);

	return i < 0 ? NULL : &pool[i];
}

/*
 * A thread without a tally tries again at each count: the search for a
 * gone thread's, a system call a tally, is made at its first try, then
 * after 1, 3, 7 ... counts more (at most 4096 apart), so that threads
 * past the pool (all alive) do not pay it on every count.
 */
static TLS_FAST unsigned int reclaim_skip, reclaim_gap;

static struct tally *reclaim_due(void)
{
	if (reclaim_skip) {
		reclaim_skip--;
		return NULL;
	}
	if (reclaim_gap < 4096)
		reclaim_gap = reclaim_gap * 2 + 1;
	reclaim_skip = reclaim_gap;
	return reclaim();
}

/* Gives @v's tally back with its counts, which stay in the sum. */
static void give(long *v)
{
	devres__tslot_give(&tallies,
			   (unsigned int)((struct tally *)(void *)v - pool));
}

/*
 * The thread exits. A handler that counts after the exchange claims a
 * tally again, and sets the key again: its destructor runs once more.
 */
static void exited(void *arg)
{
	long *v = __atomic_exchange_n(&devres__tally, NULL, __ATOMIC_RELAXED);

	(void)arg;
	if (v)
		give(v);
}

/*
 * fork() in a threaded program: the child has only the forking thread,
 * and the others' tallies would stay taken for good. Given back, with
 * their counts, as their threads' ends would have.
 */
static void ledger_child(void)
{
	long *v = devres__tally;

	for (unsigned int w = 0; w < POOL / DEVRES_TSLOT_WORD; w++)
		__atomic_store_n(&tallies.claimed[w], 0, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < POOL; i++)
		__atomic_store_n(&tallies.owner[i], 0, __ATOMIC_RELAXED);
	if (v) {
		size_t i = (size_t)((struct tally *)(void *)v - pool);

		__atomic_store_n(&tallies.claimed[i / DEVRES_TSLOT_WORD],
				 1ull << (i % DEVRES_TSLOT_WORD),
				 __ATOMIC_RELAXED);
		/* The child's thread has ids of its own. */
		devres__tslot_own(&tallies, (unsigned int)i);
	}
}

__attribute__((constructor)) static void ledger_init(void)
{
	have_key = !pthread_key_create(&exit_key, exited);
	devres__atfork(DEVRES_FORK_LEDGER, NULL, NULL, ledger_child);
}

/*
 * Claims a tally for this thread; NULL when the pool is empty (or there
 * is no key to give it back at the thread's end). A signal handler may
 * run anywhere in here and enrol its thread first: its tally wins, and
 * ours goes back untouched. The key's value is the same for every
 * thread, so a handler's pthread_setspecific() inside ours leaves it
 * right whichever ends last.
 */
static long *enrol(void)
{
	struct tally *t;
	long *v = NULL;

	if (!have_key)
		return NULL;
	t = take();
	if (!t)
		t = reclaim_due();
	if (!t)
		return NULL;
	if (pthread_setspecific(exit_key, &exit_key)) {
		give(t->v);
		return NULL;
	}
	if (!__atomic_compare_exchange_n(&devres__tally, &v, t->v, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		give(t->v);
		return v;
	}
	return t->v;
}

/*
 * A thread's first count enrols it; the next ones are inline. A thread
 * without a tally counts in the fallback, and tries again next time.
 */
void devres__ledger_add_first(enum devres__ledger_kind kind, long delta)
{
	long *v = __atomic_load_n(&devres__tally, __ATOMIC_RELAXED);

	if (!v)
		v = enrol();
	__atomic_add_fetch(v ? &v[kind] : &fallback[kind], delta,
			   __ATOMIC_RELEASE);
}

/*
 * Loads only: a handler may read the ledger wherever its thread is. Each
 * acquires: a count seen brings what its thread did before it.
 */
static void sum(long out[DL_NR])
{
	unsigned int n = __atomic_load_n(&tallies.used, __ATOMIC_ACQUIRE);

	for (int k = 0; k < DL_NR; k++)
		out[k] = __atomic_load_n(&fallback[k], __ATOMIC_ACQUIRE);
	for (unsigned int i = 0; i < n; i++)
		for (int k = 0; k < DL_NR; k++)
			out[k] += __atomic_load_n(&pool[i].v[k],
						  __ATOMIC_ACQUIRE);
}

void devres_ledger_snapshot(struct devres_ledger *ret_ledger)
{
	long v[DL_NR];

	if (devres__arg_bad(NULL, ret_ledger, __func__, "ledger"))
		return;
	sum(v);
	*ret_ledger = (struct devres_ledger){
		.nodes = v[DL_NODES],
		.node_bytes = v[DL_NODE_BYTES],
		.groups = v[DL_GROUPS],
		.fds = v[DL_FDS],
		.maps = v[DL_MAPS],
		.map_bytes = v[DL_MAP_BYTES],
		.irq_handlers = v[DL_IRQ_HANDLERS],
		.dma_buffers = v[DL_DMA_BUFFERS],
		.dma_bytes = v[DL_DMA_BYTES],
		.threads = v[DL_THREADS],
		.devices = v[DL_DEVICES],
		.regions = v[DL_REGIONS],
		.dma_maps = v[DL_DMA_MAPS],
		.revocables = v[DL_REVOCABLES],
	};
}

int devres_ledger_diff(const struct devres_ledger *before,
		       const struct devres_ledger *after, FILE *f)
{
	static const struct {
		const char *name;
		size_t off;
	} kinds[] = {
#define K(m) { #m, offsetof(struct devres_ledger, m) }
		K(nodes),     K(node_bytes), K(groups),	      K(fds),
		K(maps),      K(map_bytes),  K(irq_handlers), K(dma_buffers),
		K(dma_bytes), K(threads),    K(devices),      K(regions),
		K(dma_maps),  K(revocables),
#undef K
	};
	int differ = 0;

	if (devres__arg_bad(NULL, before, __func__, "ledger") ||
	    devres__arg_bad(NULL, after, __func__, "ledger") ||
	    devres__opt_bad(NULL, f, __func__, "FILE"))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		long b = *(const long *)(((const char *)before) + kinds[i].off);
		long a = *(const long *)(((const char *)after) + kinds[i].off);

		if (a == b)
			continue;
		differ++;
		if (f)
			fprintf(f, "  %s: %ld -> %ld (%+ld)\n", kinds[i].name,
				b, a, a - b);
	}
	return differ;
}
