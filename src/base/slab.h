/* SPDX-License-Identifier: MIT */
/*
 * The per-device blocks of small managed memory (slab.c), and the inline
 * fast path of devm_kmalloc() that carves from them (kmalloc.c).
 */
#ifndef DEVRES_SLAB_H
#define DEVRES_SLAB_H

#include <string.h>
#include "node.h"

#define BLOCK_SIZE ((size_t)64 << 10)
#define GRANULE 16
#define NR_GRANULES (BLOCK_SIZE / GRANULE)
#define HEAD_SIZE 1024 /* the block's header, in front of its slots */
#define NR_CLASSES (DR_SLAB_MAX / GRANULE + 2)
#define CACHE_MAX 1024 /* blocks kept warm for the next device: 64 MiB */
#define LAZY_MAX 16384 /* beyond: waiting, and lazily freed: 1 GiB each */

struct block {
	struct block *next;
	long since; /* when it was given back beyond the cache, in ms */
	uint64_t live[NR_GRANULES / 64];
};

_Static_assert(sizeof(struct block) <= HEAD_SIZE, "block header too big");

struct devres__slab {
	struct block *blocks; /* every block, the current one first */
	char *bump, *end;     /* the current block's free tail */
	void *free[NR_CLASSES];
	size_t nr_blocks;
	unsigned long listed; /* slab nodes on the list, dead ones too */
	unsigned long live;   /* and of them alive, with their bytes */
	unsigned long live_bytes;
	size_t set_cap; /* the set of blocks, open addressing, power of 2 */
	struct block **set;
	int refs; /* the device, and each detached chain with slab nodes */
	struct devres__shards *shards; /* once shared: slab-shared.c */
	struct block *set0[16];	       /* the set while it is small */
};

/*
 * The slab itself lives in its first block's header, behind the bitmap:
 * no heap allocation (and no heap free) for small managed memory at all.
 */
_Static_assert(sizeof(struct block) + sizeof(struct devres__slab) <= HEAD_SIZE,
	       "slab does not fit in a block header");

static inline size_t class_of(size_t size)
{
	return (size + GRANULE - 1) / GRANULE + 1;
}

static inline struct block *block_of(const void *p)
{
	return (struct block *)((uintptr_t)p & ~(uintptr_t)(BLOCK_SIZE - 1));
}

static inline size_t granule_of(const struct devres__node *n)
{
	return ((uintptr_t)n & (BLOCK_SIZE - 1)) / GRANULE;
}

static inline void mark(struct devres__node *n, bool live)
{
	struct block *b = block_of(n);
	size_t g = granule_of(n);

	if (live)
		b->live[g / 64] |= 1ull << (g % 64);
	else
		b->live[g / 64] &= ~(1ull << (g % 64));
}

/*
 * The same for a shared device's slot, which keeps its bit while it waits
 * on its thread's list (slab_drop_newest()): written only when it is not
 * set, since a word of the bitmap covers the slots of several threads.
 */
static inline void mark_once(struct devres__node *n)
{
	struct block *b = block_of(n);
	size_t g = granule_of(n);

	if (!(b->live[g / 64] & (1ull << (g % 64))))
		b->live[g / 64] |= 1ull << (g % 64);
}

/*
 * Makes slot @n a live node of @size bytes (the caller counts it in the
 * ledger, once the lock is dropped). @maker: DR_MAKER() of the call, a
 * constant where this is inlined, so that naming the call costs nothing
 * here.
 */
static inline struct devres__node *slot_fill(struct devres__slab *s,
					     struct devres__node *n,
					     size_t size, bool zero,
					     uint32_t maker)
{
	n->next = NULL;
	kind_set(n, DR_KIND_KMALLOC | DR_SLAB | maker);
	n->size = (uint32_t)size;
	if (zero)
		memset(node_data(n), 0, size);
	mark(n, true);
	s->listed++;
	s->live++;
	s->live_bytes += size;
	return n;
}

/*
 * A shared device's slots (slab-shared.c): each thread frees to, and
 * takes from, a shard of its own, which also keeps its own counts of
 * the slab's nodes: the critical sections of a thread that allocates and
 * frees write no line the other threads write, but the device's.
 */
#define NR_SHARDS 8 /* a power of 2 */
#define LINE 64

struct shard {
	void *free[NR_CLASSES];
	/* Added to the slab's own counts (devres__slab_only()). */
	long listed, live, live_bytes;
} __attribute__((aligned(LINE)));

struct devres__shards {
	/*
	 * The threads the shards belong to, by thread pointer, claimed in
	 * turn: a line read by all and written NR_SHARDS times at most,
	 * cheaper than a thread-local variable (a call through a TLS
	 * descriptor in a shared library: 7 % of the time of a shared
	 * device's allocate + free). Beyond, threads share by hash.
	 */
	void *owner[NR_SHARDS];
	struct shard shard[NR_SHARDS];
};

/*
 * The calling thread's shard. The search starts where the thread
 * pointer hashes to, and a thread claims the first free one from there:
 * the threads of a process have their thread pointers a stack apart,
 * so each usually finds its own at the first look, where a search from
 * the first shard took up to eight, twice an operation, under the lock.
 */
static inline struct shard *my_shard(struct devres__shards *sh)
{
	void *me = devres__me();
	unsigned int h = (unsigned int)((uintptr_t)me >> 12);

	for (unsigned int i = 0; i < NR_SHARDS; i++) {
		unsigned int k = (h + i) & (NR_SHARDS - 1);

		if (sh->owner[k] == me)
			return &sh->shard[k];
		if (!sh->owner[k]) {
			sh->owner[k] = me;
			return &sh->shard[k];
		}
	}
	return &sh->shard[h & (NR_SHARDS - 1)];
}

/*
 * A shared device's allocation, with the lock held: the slot its thread
 * freed last of the class, filled and counted in its shard. NULL when
 * the shard has none (devres__slab_alloc() carves then).
 */
static inline struct devres__node *slab_alloc_shared(struct devres__slab *s,
						     size_t size, bool zero,
						     uint32_t maker)
{
	struct devres__shards *sh = s->shards;
	size_t cls = class_of(size);
	struct devres__node *n;
	struct shard *me;

	if (unlikely(!sh))
		return NULL;
	me = my_shard(sh);
	n = me->free[cls];
	if (unlikely(!n))
		return NULL;
	me->free[cls] = *(void **)n;
	kind_set(n, DR_KIND_KMALLOC | DR_SLAB | maker);
	n->size = (uint32_t)size;
	if (zero)
		memset(node_data(n), 0, size);
	mark_once(n);
	me->listed++;
	me->live++;
	me->live_bytes += (long)size;
	return n;
}

/*
 * A slot from the free list of its class or the current block's tail, with
 * the lock held; NULL when neither has one (devres__slab_alloc() then maps
 * what is needed).
 */
static inline struct devres__node *
slab_alloc_fast(struct device *dev, size_t size, bool zero, uint32_t maker)
{
	struct devres__slab *s = dev->devres_slab;
	size_t cls = class_of(size), len = cls * GRANULE;
	struct devres__node *n;

	if (unlikely(!s))
		return NULL;
	if (unlikely(dev_shared(dev)))
		return slab_alloc_shared(s, size, zero, maker);
	n = s->free[cls];
	if (n) {
		s->free[cls] = *(void **)n;
	} else if (likely(s->bump && (size_t)(s->end - s->bump) >= len)) {
		n = (struct devres__node *)s->bump;
		s->bump += len;
		/* The next slots are written soon: ask for their lines now. */
		__builtin_prefetch(s->bump + 16 * len, 1);
	} else {
		return NULL;
	}
	return slot_fill(s, n, size, zero, maker);
}

/*
 * devm_kfree(@p) on a shared device, with the lock held, when @p is the
 * data of one of the two newest nodes (what a thread that frees what it
 * just took finds) and that node a live slot: unlinks it and keeps the
 * slot for the calling thread, counted in its shard, without a lookup in
 * the slab's set or bitmap, whose bit for the slot stays set (the slot is
 * not listed: devres__slab_find() refuses it). Returns the node's size,
 * and its log line's facts in @ret_log; 0 when it did nothing (the caller
 * looks @p up as on any device).
 */
static inline size_t slab_drop_newest(struct device *dev, const void *p,
				      struct dr_log *ret_log)
{
	struct devres__slab *s = dev->devres_slab;
	struct devres__node *n = list_head(dev), *prev = NULL;
	struct shard *me;
	size_t size;

	if (unlikely(!n) || unlikely(!s) || unlikely(!s->shards))
		return 0;
	if (node_data(n) != p) {
		prev = n;
		n = n->next;
		if (!n || node_data(n) != p)
			return 0;
	}
	if ((kind_load(n) & (DR_SLAB | DR_DEAD)) != DR_SLAB ||
	    DR_KIND(n) != DR_KIND_KMALLOC)
		return 0;
	*ret_log = dr_log_of_res(n);
	size = n->size;
	unlink_after(dev, prev, n);
	me = my_shard(s->shards);
	me->listed--;
	me->live--;
	me->live_bytes -= (long)size;
	*(void **)n = me->free[class_of(size)];
	me->free[class_of(size)] = n;
	return size;
}

/* How long a block beyond the cache waits before it goes lazy (slab.c). */
extern HIDDEN long devres__slab_decay_ms;
HIDDEN bool devres__slab_grow(struct devres__slab *s);
HIDDEN void *devres__slab_carve_shared(struct devres__slab *s, size_t cls);

#endif /* DEVRES_SLAB_H */
