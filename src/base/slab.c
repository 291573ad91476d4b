// SPDX-License-Identifier: MIT
/*
 * Per-device blocks for small managed memory (devm_kmalloc and its zeroing
 * variants up to DR_SLAB_MAX bytes). A node is carved from the device's
 * current 64 KiB block by moving a pointer, and the whole set of blocks
 * goes back at once when devres_release_all() takes everything: no malloc
 * and no free per object. The node keeps its 16-byte header, so a slot
 * costs its header and the data rounded to 16 bytes, and no heap chunk
 * header: about what malloc spends on the same object.
 *
 * Ownership without reading the caller's pointer: blocks are aligned to
 * their size, the device keeps the set of its blocks, and each block a
 * bit per 16-byte granule marking where a live node starts. A slot freed
 * on its own (devm_kfree, a group's release) goes to a free list of its
 * size class, so memory stays bounded under churn.
 *
 * Everything here runs with the device's lock held, except the release of
 * a detached slab (devres__slab_put()), which no one else can reach.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "slab.h"

/*
 * Blocks cached between devices (and rounds): a process-wide stack of up to
 * CACHE_MAX, and beyond it a stack of up to LAZY_MAX whose pages the kernel
 * may take back whenever it needs memory (MADV_FREE): until it does, taking
 * one again costs no page fault, and the resident set of a process that
 * once had many small managed allocations stays the kernel's to reclaim.
 *
 * A block does not go lazy as soon as it is given back beyond CACHE_MAX:
 * the first write to each page of a lazily freed block costs about 5 us
 * on a VM (measured on ours, though the kernel counts no fault), 80 us a
 * block, so a program that releases a million objects and makes them
 * again would pay that for every block beyond the cache, every round.
 * Such blocks wait on a third stack, still resident, and go lazy only
 * once they stayed unused for devres__slab_decay_ms, as a decaying dirty page in
 * jemalloc, and for as long as its default. Two seconds were too short on
 * a loaded machine: the rounds of bench-peers bulk came more than 2 s
 * apart there, and at a million objects of 128 B every round paid the
 * lazy pages' first writes (8.9-9.2 x malloc + free; 0.79-0.95 x with
 * 10 s, load 12.6-14.8). The age is looked at when blocks are taken or
 * given back: a process that stops using managed memory altogether keeps
 * the waiting blocks until its next device releases or makes some.
 */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *cache, *lazy, *waiting;
static size_t nr_cached, nr_lazy, nr_waiting;
static long waiting_since; /* the oldest waiting block's time, in ms */

/* A child of fork() must find the cache's lock free. */
static void cache_lock_take(void)
{
	pthread_mutex_lock(&cache_lock);
}

static void cache_lock_drop(void)
{
	pthread_mutex_unlock(&cache_lock);
}

__attribute__((constructor)) static void cache_atfork(void)
{
	devres__atfork(DEVRES_FORK_SLAB, cache_lock_take, cache_lock_drop,
		       cache_lock_drop);
}

/*
 * Blocks come from the kernel BATCH at a time, aligned by trimming one
 * mapping (aligned_alloc() of 64 KiB at 64 KiB would map twice that per
 * block), and go back to the cache, lazily freed beyond CACHE_MAX, and to
 * the kernel beyond LAZY_MAX.
 */
#define BATCH 32

static struct block *map_batch(void)
{
	size_t len = (BATCH + 1) * BLOCK_SIZE, head, tail;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct block *first = NULL;

	if (p == MAP_FAILED)
		return NULL;
	head = (BLOCK_SIZE - ((uintptr_t)p & (BLOCK_SIZE - 1))) &
	       (BLOCK_SIZE - 1);
	tail = BLOCK_SIZE - head;
	if (head)
		devres__munmap(p, head);
	devres__munmap(p + head + BATCH * BLOCK_SIZE, tail);
	for (int i = BATCH - 1; i >= 0; i--) {
		struct block *b = (struct block *)(p + head + i * BLOCK_SIZE);

		b->next = first;
		first = b;
	}
	return first;
}

/* A variable only so that a white-box test need not wait 10 s. */
HIDDEN long devres__slab_decay_ms = 10000;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool lazy_put(struct block *b)
{
	bool kept = false;

	pthread_mutex_lock(&cache_lock);
	if (nr_lazy < LAZY_MAX) {
		b->next = lazy;
		lazy = b;
		nr_lazy++;
		kept = true;
	}
	pthread_mutex_unlock(&cache_lock);
	return kept;
}

/* Frees @list lazily, or unmaps what the lazy stack has no room for. */
static void hand_back(struct block *list)
{
	struct block *b = list, *next;

	while (b) {
		/* A run of adjacent blocks (a batch, in order) in one call. */
		char *lo = (char *)b, *hi = (char *)b + BLOCK_SIZE;
		struct block *run = b;

		for (next = b->next; next; next = next->next)
			if ((char *)next == hi)
				hi += BLOCK_SIZE;
			else if ((char *)next + BLOCK_SIZE == lo)
				lo -= BLOCK_SIZE;
			else
				break;
		bool lazy_ok =
			!devres__madvise(lo, (size_t)(hi - lo), MADV_FREE);

		/* Each block's header is written after: that page stays. */
		for (b = run; b != next; b = run) {
			run = b->next;
			if (!lazy_ok || !lazy_put(b))
				devres__munmap(b, BLOCK_SIZE);
		}
	}
}

/*
 * Takes the waiting blocks older than devres__slab_decay_ms off their stack, with the
 * cache's lock held, for hand_back() once it is dropped. The stack is
 * newest first and each block carries the time it came: the old ones are
 * its tail, found by one walk, done only when the oldest is due.
 */
static struct block *expired_locked(long now)
{
	struct block **pp = &waiting, *b, *old;

	if (!waiting || now - waiting_since < devres__slab_decay_ms)
		return NULL;
	while ((b = *pp) && now - b->since < devres__slab_decay_ms)
		pp = &b->next;
	old = *pp;
	*pp = NULL;
	for (b = old; b; b = b->next)
		nr_waiting--;
	/* The oldest left is the last one passed. */
	waiting_since = pp == &waiting
				? now
				: container_of(pp, struct block, next)->since;
	return old;
}

static struct block *block_get(void)
{
	struct block *b, *old;

	pthread_mutex_lock(&cache_lock);
	old = expired_locked(now_ms());
	if (!cache && !waiting && !lazy) {
		cache = map_batch();
		if (cache)
			nr_cached += BATCH;
	}
	b = cache;
	if (b) {
		cache = b->next;
		nr_cached--;
	} else if ((b = waiting)) {
		/* Still resident: the newest, most likely still cached. */
		waiting = b->next;
		nr_waiting--;
	} else if ((b = lazy)) {
		/* Written again, its pages are ours again (or fresh zeroes). */
		lazy = b->next;
		nr_lazy--;
	}
	pthread_mutex_unlock(&cache_lock);
	hand_back(old);
	if (b)
		memset(b, 0, sizeof(*b));
	return b;
}

static void blocks_put(struct block *list)
{
	struct block *b, *next, *old;
	long now = now_ms();

	pthread_mutex_lock(&cache_lock);
	for (b = list; b && nr_cached < CACHE_MAX; b = next) {
		next = b->next;
		b->next = cache;
		cache = b;
		nr_cached++;
	}
	old = expired_locked(now);
	if (b && !waiting)
		waiting_since = now;
	for (; b && nr_waiting < LAZY_MAX; b = next) {
		next = b->next;
		b->since = now;
		b->next = waiting;
		waiting = b;
		nr_waiting++;
	}
	pthread_mutex_unlock(&cache_lock);
	hand_back(old);
	/* Beyond what may wait: lazily freed now, or unmapped. */
	hand_back(b);
}

static size_t set_hash(const struct block *b, size_t cap)
{
	return (size_t)(((uintptr_t)b >> 16) * 0x9e3779b97f4a7c15ull) &
	       (cap - 1);
}

/*
 * The set's table: in the slab while it is small, then in a block of the
 * cache (up to 8192 entries, 512 MiB of blocks), else mapped; never from
 * the heap. A malloc() or free() can make glibc consolidate its fast bins
 * (a walk of every small chunk the program freed lately), which the slot
 * that grew the set would pay for: measured, 10 ns an object in a round of
 * 100 000 that followed as many malloc/free pairs of 32 B. A block rather
 * than a mapping of its own: a device of 100 000 objects of 128 B grew its
 * set five times a round, each a mapping, a page fault and an unmapping.
 */
static struct block **set_alloc(struct devres__slab *s, size_t cap)
{
	size_t len = cap * sizeof(struct block *);
	void *p;

	if (cap <= sizeof(s->set0) / sizeof(s->set0[0]))
		return s->set0;
	if (len <= BLOCK_SIZE) {
		p = block_get();
		if (p)
			memset(p, 0, len);
		return p;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void set_free(struct devres__slab *s, struct block **set, size_t cap)
{
	struct block *b = (struct block *)set;

	if (!set || set == s->set0)
		return;
	if (cap * sizeof(struct block *) <= BLOCK_SIZE) {
		b->next = NULL;
		blocks_put(b);
	} else {
		devres__munmap(set, cap * sizeof(struct block *));
	}
}

static int set_add(struct devres__slab *s, struct block *b)
{
	if ((s->nr_blocks + 1) * 2 > s->set_cap) {
		size_t cap = s->set_cap ? s->set_cap * 2 : 16;
		struct block **set = set_alloc(s, cap);

		if (!set)
			return -1;
		for (size_t i = 0; i < s->set_cap; i++) {
			size_t j;

			if (!s->set[i])
				continue;
			for (j = set_hash(s->set[i], cap); set[j];
			     j = (j + 1) & (cap - 1))
				;
			set[j] = s->set[i];
		}
		set_free(s, s->set, s->set_cap);
		s->set = set;
		s->set_cap = cap;
	}
	for (size_t j = set_hash(b, s->set_cap);;
	     j = (j + 1) & (s->set_cap - 1))
		if (!s->set[j]) {
			s->set[j] = b;
			return 0;
		}
}

static bool set_has(const struct devres__slab *s, const struct block *b)
{
	if (!s->set_cap)
		return false;
	for (size_t j = set_hash(b, s->set_cap); s->set[j];
	     j = (j + 1) & (s->set_cap - 1))
		if (s->set[j] == b)
			return true;
	return false;
}

/* The device's slab, made in the header of its first block. */
static struct devres__slab *slab_of(struct device *dev)
{
	struct devres__slab *s = dev->devres_slab;
	struct block *b;

	if (likely(s))
		return s;
	b = block_get();
	if (!b)
		return NULL;
	s = (struct devres__slab *)(b + 1);
	memset(s, 0, sizeof(*s));
	s->refs = 1;
	b->next = NULL;
	s->blocks = b;
	(void)set_add(s, b); /* the first block fits in set0 */
	s->nr_blocks = 1;
	s->bump = (char *)b + HEAD_SIZE;
	s->end = (char *)b + BLOCK_SIZE;
	/* Atomic: devres_release_all() looks at it without the lock. */
	__atomic_store_n(&dev->devres_slab, s, __ATOMIC_RELAXED);
	return s;
}

/* A slot of class @cls: from its free list, else the current block. */
static void *carve(struct devres__slab *s, size_t cls)
{
	size_t len = cls * GRANULE;
	void *p = s->free[cls];

	if (p) {
		s->free[cls] = *(void **)p;
		return p;
	}
	if (likely(s->bump && (size_t)(s->end - s->bump) >= len)) {
		p = s->bump;
		s->bump += len;
		/* The next slots are written soon: ask for their lines now. */
		__builtin_prefetch(s->bump + 16 * len, 1);
		return p;
	}
	if (!devres__slab_grow(s))
		return NULL;
	p = s->bump;
	s->bump += len;
	return p;
}

/* Makes a new block the current one, its whole tail free. */
bool devres__slab_grow(struct devres__slab *s)
{
	struct block *b = block_get();

	if (!b)
		return false;
	if (set_add(s, b)) {
		b->next = NULL;
		blocks_put(b);
		return false;
	}
	b->next = s->blocks;
	s->blocks = b;
	s->nr_blocks++;
	s->bump = (char *)b + HEAD_SIZE;
	s->end = (char *)b + BLOCK_SIZE;
	return true;
}

struct devres__node *devres__slab_alloc(struct device *dev, size_t size,
					bool zero, uint32_t maker)
{
	struct devres__slab *s;
	struct devres__node *n;

	assert_locked(dev, __func__);
	s = slab_of(dev);
	if (unlikely(!s))
		return NULL;
	if (dev_shared(dev))
		n = devres__slab_carve_shared(s, class_of(size));
	else
		n = carve(s, class_of(size));
	if (unlikely(!n))
		return NULL;
	return slot_fill(s, n, size, zero, maker);
}

struct devres__node *devres__slab_find(struct device *dev, const void *p)
{
	struct devres__slab *s = dev->devres_slab;
	struct devres__node *n;
	size_t g;

	assert_locked(dev, __func__);
	/* Not a block of ours, or not where a slot's data starts: not ours. */
	if (!s || ((uintptr_t)p & (GRANULE - 1)) || !set_has(s, block_of(p)))
		return NULL;
	n = to_node(p);
	if (block_of(n) != block_of(p))
		return NULL;
	g = granule_of(n);
	if (!(block_of(n)->live[g / 64] & (1ull << (g % 64))))
		return NULL;
	/*
	 * A slot freed on a shared device keeps its bit on its thread's
	 * list (slab_drop_newest()): the header, ours since the bit is
	 * set, says whether it is listed.
	 */
	if (!(kind_load(n) & DR_ADDED))
		return NULL;
	return n;
}

void devres__slab_forget(struct device *dev, struct devres__node *n)
{
	struct devres__slab *s = dev->devres_slab;

	assert_locked(dev, __func__);
	mark(n, false);
	s->live--;
	s->live_bytes -= n->size;
}

void devres__slab_resized(struct device *dev, size_t old, size_t size)
{
	struct devres__slab *s = dev->devres_slab;

	assert_locked(dev, __func__);
	s->live_bytes += size - old;
}

void devres__slab_unlisted(struct device *dev)
{
	struct devres__slab *s = dev->devres_slab;

	assert_locked(dev, __func__);
	s->listed--;
}

/*
 * When every listed node is a slab node, nothing on the list has a release
 * to run: devres_release_all() need not walk it (unless ADD/REM/REL lines
 * are wanted). Returns how many live ones it held, for the ledger.
 */
bool devres__slab_only(struct device *dev, unsigned long *ret_live,
		       unsigned long *ret_bytes)
{
	struct devres__slab *s = dev->devres_slab;

	unsigned long listed, live, bytes;

	assert_locked(dev, __func__);
	if (!s)
		return false;
	listed = s->listed;
	live = s->live;
	bytes = s->live_bytes;
	/* A shared device's threads count in their shards (slab.h). */
	for (unsigned int i = 0; s->shards && i < NR_SHARDS; i++) {
		listed += (unsigned long)s->shards->shard[i].listed;
		live += (unsigned long)s->shards->shard[i].live;
		bytes += (unsigned long)s->shards->shard[i].live_bytes;
	}
	if (listed != dev->devres_listed)
		return false;
	*ret_live = live;
	*ret_bytes = bytes;
	return true;
}

size_t devres__slab_room(const struct devres__node *n)
{
	return (class_of(n->size) - 1) * GRANULE;
}

void devres__slab_free(struct device *dev, struct devres__slab *s,
		       struct devres__node *n)
{
	size_t cls = class_of(n->size);

	(void)dev;
	*(void **)n = s->free[cls];
	s->free[cls] = n;
}

/*
 * release_all takes the device's slab with its list: the caller owns it
 * then, with one reference; a chain taken by a group's release holds
 * another while it runs.
 */
struct devres__slab *devres__slab_detach(struct device *dev)
{
	struct devres__slab *s = dev->devres_slab;

	assert_locked(dev, __func__);
	__atomic_store_n(&dev->devres_slab, NULL, __ATOMIC_RELAXED);
	return s;
}

struct devres__slab *devres__slab_get(struct device *dev)
{
	struct devres__slab *s = dev->devres_slab;

	assert_locked(dev, __func__);
	if (s)
		s->refs++;
	return s;
}

/* Drops a reference, under the lock when @dev still holds the slab. */
bool devres__slab_put_locked(struct devres__slab *s)
{
	return --s->refs == 0;
}

void devres__slab_destroy(struct devres__slab *s)
{
	if (!s)
		return;
	/* The slab goes with its first block: the set first. */
	free(s->shards);
	set_free(s, s->set, s->set_cap);
	blocks_put(s->blocks);
}
