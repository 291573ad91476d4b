// SPDX-License-Identifier: MIT
/*
 * The pages of devm_get_free_pages(): page-aligned heap blocks, and a small
 * process-wide cache of released ones per order, as the kernel keeps
 * per-CPU lists of freed pages. A page released and taken again costs a
 * pop from a stack instead of an aligned allocation, which for glibc splits
 * a chunk twice the size and for AddressSanitizer takes a chunk of twice
 * the size and fills it, from memory that its quarantine keeps from being
 * used again for a long time: each page allocated under ASan faulted in two
 * or three fresh pages (158 000 faults in 200 000 rounds of test-lock's
 * reaper-vs-allocator pattern, more than half of its time).
 *
 * The cache is shared by all threads: a page is often released by another
 * thread than the one that took it (devres_release_all() from a reaper).
 *
 * Under ASan a cached page is poisoned, so that a use after
 * devm_free_pages() or devres_release_all() is still reported (as a use
 * after poison), and it is taken again only once QUARANTINE newer ones have
 * been released, oldest first: a page is not reused under a stale pointer
 * right away. Elsewhere the newest is taken first, its lines the most
 * likely to be in the cache.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "node.h"

#define ORDERS 4 /* cached: blocks of 1, 2, 4 and 8 pages */
#ifdef DR_ASAN
/*
 * Kept: up to 16 MiB of 4 KiB pages an order (KEEP >> order blocks), 2 MiB
 * of them in quarantine. The room beyond the quarantine absorbs a thread
 * that takes pages while the one that releases them is not running (on a
 * loaded machine, hundreds of blocks in one time slice): with room for
 * only as many again, each such swing allocated that many fresh blocks
 * and later freed as many (2 045 fresh in 50 000 rounds of test-lock's
 * reaper-vs-allocator pattern at load 7), each a fresh ASan chunk filled
 * and faulted in.
 */
#define KEEP 4096
#define QUARANTINE 512
#define KEEP_OF(order) (KEEP >> (order))
#define QUARANTINE_OF(order) (QUARANTINE >> (order))
#else
#define KEEP 64 /* per order: at most 3.75 MiB of 4 KiB pages in all */
#define QUARANTINE 0
#define KEEP_OF(order) KEEP
#define QUARANTINE_OF(order) 0
#endif

struct ring {
	void *slot[KEEP];
	unsigned int head, count; /* the oldest, and how many */
	unsigned int keep, quarantine;
};

static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring rings[ORDERS] = {
	{ .keep = KEEP_OF(0), .quarantine = QUARANTINE_OF(0) },
	{ .keep = KEEP_OF(1), .quarantine = QUARANTINE_OF(1) },
	{ .keep = KEEP_OF(2), .quarantine = QUARANTINE_OF(2) },
	{ .keep = KEEP_OF(3), .quarantine = QUARANTINE_OF(3) },
};

__attribute__((constructor)) static void pages_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_PAGES, &pages_lock);
}

size_t devres__page_bytes;

size_t devres__page_size_read(void)
{
	long v = sysconf(_SC_PAGESIZE);
	size_t s = v > 0 ? (size_t)v : 4096;

	__atomic_store_n(&devres__page_bytes, s, __ATOMIC_RELAXED);
	return s;
}

static void *ring_take(struct ring *r)
{
	void *p;

	if (r->count <= r->quarantine)
		return NULL;
	r->count--;
	if (QUARANTINE) {
		p = r->slot[r->head];
		r->head = (r->head + 1) % KEEP;
	} else {
		p = r->slot[(r->head + r->count) % KEEP];
	}
	return p;
}

static bool ring_put(struct ring *r, void *p)
{
	if (r->count == r->keep)
		return false;
	r->slot[(r->head + r->count) % KEEP] = p;
	r->count++;
	return true;
}

void *devres__pages_get(unsigned int order, bool zero)
{
	size_t len = devres__page_size() << order;
	void *p = NULL;

	if (order < ORDERS) {
		pthread_mutex_lock(&pages_lock);
		p = ring_take(&rings[order]);
		pthread_mutex_unlock(&pages_lock);
	}
	if (p)
		dr_unpoison(p, len);
	else if (posix_memalign(&p, devres__page_size(), len))
		return NULL;
	if (zero)
		memset(p, 0, len);
	return p;
}

void devres__pages_put(void *p, unsigned int order)
{
	size_t len = devres__page_size() << order;
	bool kept = false;

	if (order < ORDERS) {
		/* Poisoned before it is visible to another thread's take. */
		dr_poison(p, len);
		pthread_mutex_lock(&pages_lock);
		kept = ring_put(&rings[order], p);
		pthread_mutex_unlock(&pages_lock);
	}
	if (kept)
		return;
	dr_unpoison(p, len);
	free(p);
}
