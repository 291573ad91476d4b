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
 * 2 MiB of 4 KiB pages an order (QUARANTINE >> order blocks) are held back,
 * poisoned, before a released block is taken again. Nothing is given back:
 * a block of a kept order comes from a batch (below), which free() would
 * not take, so the ring grows to what was ever released at once and keeps
 * it. That is no more than the peak a program held, and ASan's allocator
 * does not give its memory back either.
 */
#define QUARANTINE 512
#define QUARANTINE_OF(order) (QUARANTINE >> (order))

struct ring {
	void **slot;
	unsigned int cap, head, count; /* the oldest, and how many */
	unsigned int quarantine;
};

static struct ring rings[ORDERS] = {
	{ .quarantine = QUARANTINE_OF(0) },
	{ .quarantine = QUARANTINE_OF(1) },
	{ .quarantine = QUARANTINE_OF(2) },
	{ .quarantine = QUARANTINE_OF(3) },
};
#define CAP(r) ((r)->cap)
#else
#define KEEP 64 /* per order: at most 3.75 MiB of 4 KiB pages in all */
#define QUARANTINE 0

struct ring {
	void *slot[KEEP];
	unsigned int head, count; /* the oldest, and how many */
	unsigned int quarantine;
};

static struct ring rings[ORDERS];
#define CAP(r) KEEP
#endif

static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;

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
		r->head = (r->head + 1) % CAP(r);
	} else {
		p = r->slot[(r->head + r->count) % CAP(r)];
	}
	return p;
}

#ifdef DR_ASAN
/*
 * A fresh block under ASan was a posix_memalign() of its own: ASan serves
 * a page aligned to a page with a chunk of twice the size, fills it, takes
 * a stack trace, and each of its pages and of their shadow is faulted in
 * on first touch, 2.3 faults a page. On the virtual machines these figures
 * come from a fault costs 12 to 30 us, and a thread that allocates while
 * the one that releases waits for a CPU takes a few thousand fresh pages
 * (2 000 to 3 700 in 200 000 rounds of test-lock's reaper-vs-allocator
 * pattern at load 11 to 15, 80 to 120 ms of the allocating thread's CPU).
 * Fresh blocks are carved from batches of BATCH_PAGES pages instead, one
 * ASan chunk each (LeakSanitizer scans it: what a caller keeps in a page
 * is seen), 1.5 faults a page. Each block is followed by a page that stays
 * poisoned and is never touched, so that a write past the end of a block
 * is still reported, as its own chunk's redzone reported it.
 */
#define BATCH_PAGES 256

static char *batch;
static size_t batch_left;

/* Called with pages_lock held. */
static void *carve(size_t len)
{
	size_t page = devres__page_size(), need = len + page;
	void *p;

	if (batch_left < need) {
		size_t size = BATCH_PAGES * page;

		if (posix_memalign(&p, page, size))
			return NULL;
		dr_poison(p, size);
		/* The rest of the last batch, less than a block, stays so. */
		batch = p;
		batch_left = size;
	}
	p = batch;
	batch += need;
	batch_left -= need;
	return p;
}

/* Called with pages_lock held. False: no memory for a larger ring. */
static bool ring_put(struct ring *r, void *p)
{
	if (r->count == r->cap) {
		unsigned int cap = r->cap ? r->cap * 2 : 64;
		void **slot = malloc(cap * sizeof(*slot));

		if (!slot)
			return false;
		for (unsigned int i = 0; i < r->count; i++)
			slot[i] = r->slot[(r->head + i) % r->cap];
		free(r->slot);
		r->slot = slot;
		r->cap = cap;
		r->head = 0;
	}
	r->slot[(r->head + r->count) % r->cap] = p;
	r->count++;
	return true;
}

/*
 * A kept block is zeroed when it is released, as the kernel's init_on_free
 * does, so that one taken again needs no zeroing. The quarantine makes the
 * difference: a block is taken again only after QUARANTINE newer ones, its
 * lines long gone from the cache, so zeroing it there cost the allocating
 * thread a cache miss a line (16 % of its time in test-lock's
 * reaper-vs-allocator pattern), while the releasing thread finds lines of
 * a block just in use. A write to a released block is reported by ASan
 * (it is poisoned) before it could leave a byte that is not zero.
 */
void *devres__pages_get(unsigned int order, bool zero)
{
	size_t len = devres__page_size() << order;
	bool fresh = false;
	void *p;

	if (order >= ORDERS) {
		if (posix_memalign(&p, devres__page_size(), len))
			return NULL;
		if (zero)
			memset(p, 0, len);
		return p;
	}
	pthread_mutex_lock(&pages_lock);
	p = ring_take(&rings[order]);
	if (!p) {
		p = carve(len);
		fresh = true;
	}
	pthread_mutex_unlock(&pages_lock);
	if (!p)
		return NULL;
	dr_unpoison(p, len);
	/* ASan fills a new chunk: a fresh block is not zero. */
	if (fresh)
		memset(p, 0, len);
	return p;
}

void devres__pages_put(void *p, unsigned int order)
{
	size_t len = devres__page_size() << order;

	if (order >= ORDERS) {
		free(p);
		return;
	}
	/*
	 * Zeroed for its next holder, and poisoned before it is visible to
	 * another thread's take. Without memory for a larger ring the block
	 * stays poisoned and is not used again: it is part of a batch, which
	 * free() would not take.
	 */
	memset(p, 0, len);
	dr_poison(p, len);
	pthread_mutex_lock(&pages_lock);
	ring_put(&rings[order], p);
	pthread_mutex_unlock(&pages_lock);
}
#else
static bool ring_put(struct ring *r, void *p)
{
	if (r->count == KEEP)
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
	if (!p && posix_memalign(&p, devres__page_size(), len))
		return NULL;
	if (zero)
		memset(p, 0, len);
	return p;
}

void devres__pages_put(void *p, unsigned int order)
{
	bool kept = false;

	if (order < ORDERS) {
		pthread_mutex_lock(&pages_lock);
		kept = ring_put(&rings[order], p);
		pthread_mutex_unlock(&pages_lock);
	}
	if (!kept)
		free(p);
}
#endif
