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
 * Makes slot @n a live node of @size bytes, counted as the node allocator
 * does. @maker: DR_MAKER() of the call, a constant where this is inlined,
 * so that naming the call costs nothing here.
 */
static inline struct devres__node *slot_fill(struct devres__slab *s,
					     struct devres__node *n,
					     size_t size, bool zero,
					     uint32_t maker)
{
	n->next = NULL;
	n->kind = DR_KIND_KMALLOC | DR_SLAB | maker;
	n->size = (uint32_t)size;
	if (zero)
		memset(node_data(n), 0, size);
	mark(n, true);
	s->listed++;
	s->live++;
	s->live_bytes += size;
	devres__ledger_add(DL_NODES, 1);
	devres__ledger_add(DL_NODE_BYTES, (long)size);
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

	/* A shared device's slots are carved per thread: slab-shared.c. */
	if (unlikely(!s) || unlikely(dev_shared(dev)))
		return NULL;
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

HIDDEN bool devres__slab_grow(struct devres__slab *s);
HIDDEN void *devres__slab_carve_shared(struct devres__slab *s, size_t cls);

#endif /* DEVRES_SLAB_H */
