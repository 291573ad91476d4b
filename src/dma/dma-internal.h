/* SPDX-License-Identifier: MIT */
/*
 * What the files of src/dma share: a range tree (rtree.c), the IOVA
 * allocator (iova.c), a device's DMA state and its table of live mappings
 * (mapping.c), and the debug checks (debug.c). Nothing outside src/dma
 * includes it.
 */
#ifndef DEVRES_DMA_INTERNAL_H
#define DEVRES_DMA_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <devres/dma.h>
#include "base/subsys.h"

/*
 * A node of a treap of disjoint ranges [start, end), ordered by start and
 * augmented with the largest range of its subtree (for first-fit search).
 */
struct rnode {
	struct rnode *l, *r;
	uint64_t start, end;
	uint64_t max;
	uint32_t prio;
};

HIDDEN void devres__rt_insert(struct rnode **root, struct rnode *n);
HIDDEN void devres__rt_remove(struct rnode **root, uint64_t start);
/* Unlinks and returns the node starting at start, or NULL: one descent. */
HIDDEN struct rnode *devres__rt_take(struct rnode **root, uint64_t start);
/* After n's start or end changed without passing a neighbour. */
HIDDEN void devres__rt_update(struct rnode *root, uint64_t start);
/* The node with the greatest start <= key, or NULL. */
HIDDEN struct rnode *devres__rt_floor(struct rnode *root, uint64_t key);
/* The node with the least start >= key, or NULL. */
HIDDEN struct rnode *devres__rt_ceil(struct rnode *root, uint64_t key);
/*
 * The highest block of len units, aligned to align (a power of two), that
 * lies inside one node and ends at or below limit; its start in *ret.
 */
HIDDEN struct rnode *devres__rt_fit_top(struct rnode *root, uint64_t len,
					uint64_t align, uint64_t limit,
					uint64_t *ret);
HIDDEN uint32_t devres__rt_prio(uint32_t *seed);

/* Freed blocks of 1..IOVA_CACHED units are kept for reuse, IOVA_MAG each. */
#define IOVA_CACHED 8
#define IOVA_MAG 64

/* A range allocator over [base, end) in units (pages). Not locked. */
struct iova_space {
	struct rnode *free;
	struct rnode *spare;
	unsigned long nfree, nspare, nlive; /* nlive counts cached blocks */
	uint32_t seed;
	struct {
		unsigned int n;
		uint64_t start[IOVA_MAG];
	} cache[IOVA_CACHED];
};

HIDDEN int devres__iova_init(struct iova_space *s, uint64_t base, uint64_t end);
HIDDEN int devres__iova_alloc(struct iova_space *s, uint64_t n, uint64_t align,
			      uint64_t limit, uint64_t *ret);
HIDDEN void devres__iova_free(struct iova_space *s, uint64_t start, uint64_t n);
HIDDEN void devres__iova_destroy(struct iova_space *s);

enum dma_kind {
	DK_COHERENT,
	DK_SINGLE,
	DK_PAGE,
	DK_POOL, /* a coherent buffer a pool carves blocks from */
};

extern HIDDEN const char *const devres__dma_kind_name[];

static inline bool dma_streaming(unsigned int kind)
{
	return kind == DK_SINGLE || kind == DK_PAGE;
}

/* One live mapping, keyed by its bus range. */
struct dma_map {
	struct rnode node; /* [handle, handle + size) */
	void *cpu;
	size_t size;
	dma_addr_t base; /* what ops->map returned, for ops->unmap */
	size_t span;	 /* the page-aligned range given to ops->map */
	const struct devres_dma_ops *ops;
	unsigned char kind, dir, bound, debug;
	unsigned char checked; /* given to dma_mapping_error() (debug) */
	unsigned long epoch;
	struct devres__owner owner; /* a dmam_ buffer's node */
	struct dma_rec *rec;	    /* and its record in base/maps.c */
};

/* A device's DMA state: dev->dma_state. */
struct dma_dev {
	pthread_mutex_t lock;
	struct device *dev;
	struct rnode *maps;
	unsigned long nmaps;
	unsigned int pins; /* mappings being made: keep the state */
	uint32_t seed;
	bool orphan;	  /* its node was released with mappings live */
	bool iova_ready;  /* iova is initialized */
	bool sentinel[2]; /* a debug sentinel exists, unbound/bound */
	unsigned long epoch[2];
	struct iova_space iova;
};

extern HIDDEN bool devres__dma_debug;

/*
 * Looking a device's state up and releasing it: every user holds the read
 * side from lookup to its last use of the state; freeing takes the write
 * side.
 */
HIDDEN void devres__dma_read_lock(void);
HIDDEN void devres__dma_read_unlock(void);
/*
 * The state of dev, made on first use; the read lock held. Its node is
 * refused (one WARN naming @func, -EDEADLK) from a match or for-each
 * callback of @dev, before anything is made.
 */
HIDDEN struct dma_dev *devres__dma_state(struct device *dev, const char *func,
					 int *ret_err, bool *ret_pinned);
/* The state if it exists; the read lock held. */
static inline struct dma_dev *dma_dev_peek(struct device *dev)
{
	return __atomic_load_n((struct dma_dev **)&dev->dma_state,
			       __ATOMIC_ACQUIRE);
}

/*
 * Maps [cpu, cpu + size) with the device's ops and records it, with
 * @claim if any (a coherent buffer's); returns the handle or
 * DMA_MAPPING_ERROR and sets *ret_err. @func is the call a WARN names.
 */
struct dma_claim;
HIDDEN dma_addr_t devres__dma_map(struct device *dev, void *cpu, size_t size,
				  size_t align, uint64_t mask,
				  enum dma_kind kind,
				  enum dma_data_direction dir,
				  const struct dma_claim *claim,
				  const char *func, int *ret_err);
/* The record whose bus range contains [h, h + len), state locked. */
HIDDEN struct dma_map *devres__dma_lookup(struct dma_dev *s, dma_addr_t h,
					  size_t len);
/*
 * The record starting exactly at h, unlinked (put it back with
 * devres__dma_keep() if it must stay), or NULL; state locked.
 */
HIDDEN struct dma_map *devres__dma_take(struct dma_dev *s, dma_addr_t h);
HIDDEN void devres__dma_keep(struct dma_dev *s, struct dma_map *m);
/* Unmaps a taken record and frees it, state locked. */
HIDDEN void devres__dma_forget(struct dma_dev *s, struct dma_map *m);
/*
 * What an unmapping call still owes once the state's lock is dropped
 * (ledger counts, a buffer's memory, its WARNs).
 */
typedef void (*dma_owed_t)(void *arg);
/*
 * As devres__dma_forget(); if the ops end the thread, @owed(@arg) runs as
 * it unwinds, once the locks are released, so that what the caller would
 * have done after is done all the same.
 */
HIDDEN void devres__dma_forget_owed(struct dma_dev *s, struct dma_map *m,
				    dma_owed_t owed, void *arg);
/*
 * dma_unmap_single() or dma_unmap_page() (@kind) in @func's name, for
 * orphan.c; @dev must pass devres__dev_ok().
 */
HIDDEN void devres__dma_unmap_streaming(struct device *dev, dma_addr_t addr,
					size_t size,
					enum dma_data_direction dir,
					enum dma_kind kind, const char *func);
/*
 * orphan.c: arms the device's release to give back what a state left
 * (unmanaged buffers and mappings), with one WARN, and free it.
 */
HIDDEN void devres__dma_orphan_arm(void);
/* After the state's lock is dropped: frees an orphan left empty. */
HIDDEN void devres__dma_put_orphan(struct device *dev, struct dma_dev *s);

/*
 * debug.c: the sentinel that checks a binding's mappings at its release;
 * refused as the state's node is (devres__dma_state()): -EDEADLK, its
 * WARN held until the caller's devres__log_release(), once unlocked.
 */
HIDDEN int devres__dma_debug_arm(struct device *dev, struct dma_dev *s,
				 bool bound, const char *func);
/*
 * debug.c: whether a streaming mapping of @cpu the device may write
 * (@dir not DMA_TO_DEVICE) begins in the cacheline another such mapping
 * of the device begins in; @s locked.
 */
HIDDEN bool devres__dma_debug_overlap(const struct dma_dev *s, const void *cpu,
				      unsigned int dir);

/* A dmam_alloc_coherent() buffer's node (devres.c). */
struct dma_devres {
	size_t size;
	void *vaddr;
	dma_addr_t dma_handle;
};

/*
 * What a dmam_ buffer is given as it enters the device's table, in the
 * same hold of the device's DMA lock: its node, filled and added to its
 * device (a dma_free_coherent() by hand takes it off under that lock),
 * and its record in the table of managed mappings (hand.c), put there
 * before the buffer is mapped. So no call on another thread ever finds
 * the buffer without its owner, and nothing of it is left behind.
 */
struct dma_claim {
	struct devres__owner owner; /* .node is @dr */
	struct dma_devres *dr;
	struct dma_rec *rec;
};

/*
 * coherent.c: coherent buffers of a kind (DK_COHERENT or DK_POOL), a
 * managed one with its @claim (else NULL).
 */
HIDDEN void *devres__dma_alloc(struct device *dev, size_t size,
			       dma_addr_t *dma_handle, enum dma_kind kind,
			       const struct dma_claim *claim, const char *func);
/*
 * Frees a buffer: any (@node NULL; a managed one loses its node, @func
 * WARNs), or only the one @node owns (silently nothing otherwise).
 */
HIDDEN void devres__dma_free(struct device *dev, size_t size, void *cpu,
			     dma_addr_t dma_handle, enum dma_kind kind,
			     const void *node, const char *func);
/* Links the buffer at @dma_handle with @rec (a pool's chunk). */
HIDDEN void devres__dma_link(struct device *dev, dma_addr_t dma_handle,
			     struct dma_rec *rec);
/*
 * A pool's buffer left to the device: from now on a plain coherent one,
 * unlinked from its record.
 */
HIDDEN void devres__dma_disown(struct device *dev, dma_addr_t dma_handle);

/*
 * hand.c: a dmam_ buffer's record in the process's table of managed
 * mappings (base/maps.c), so that the application's munmap(), mremap()
 * or mmap(MAP_FIXED) over it takes it off the device at the call. The
 * record outlives the buffer's own record (struct dma_map) and its node:
 * those go under the state's lock, which nests inside the table's, so a
 * free cannot take the record out of the table there. It unlinks the two
 * (rec->m, m->rec) under the state's lock instead, and once unlocked
 * hands the record to devres__dma_rec_put(): whoever takes it out of the
 * table gives the mapping back.
 */
struct dma_rec {
	struct devres__map map;
	struct device *dev;
	struct dma_map *m; /* while linked; under the state's lock */
	bool kept;	   /* a pool chunk's, inside the chunk: not freed */
};

/* A record for a buffer of @dev, not yet in the table; NULL: -ENOMEM. */
HIDDEN struct dma_rec *devres__dma_rec_new(struct device *dev);
/* Puts @rec in the table over [cpu, cpu + len); -ENOMEM. */
HIDDEN int devres__dma_rec_add(struct dma_rec *rec, void *cpu, size_t len);
/*
 * After a free unlinked @rec: takes it out of the table and, if it was
 * still there, unmaps [cpu, cpu + len) before the table's lock is let go
 * (a plain call that took it first unmaps by itself); frees it unless
 * kept.
 */
HIDDEN void devres__dma_rec_put(struct dma_rec *rec, void *cpu, size_t len);

/* pool.c: a pool's device, NULL (WARN) for a bad pool. */
HIDDEN struct device *devres__dma_pool_dev(const struct dma_pool *pool);
/*
 * True, with a WARN, when this thread is inside a device's DMA ops: they
 * run under that device's DMA lock and the states' read lock, which a DMA
 * call would wait for (the same device) or upgrade past (any device).
 */
HIDDEN bool devres__dma_from_ops(struct device *dev, const char *func);
/*
 * True, with a WARN naming @func, when @size is 0 or over
 * DEVRES_DMA_SIZE_MAX, the one limit of the sizes the DMA API grants.
 */
HIDDEN bool devres__dma_size_bad(struct device *dev, size_t size,
				 const char *func);
/*
 * dma_pool_create() of a pool @owner's node releases: the node, a struct
 * dma_pool * the handle is written to, goes on @owner->dev in the hold
 * of the pools' lock that makes the pool live (a dma_pool_destroy() by
 * hand takes it off under that lock). On failure the node is still the
 * caller's.
 */
HIDDEN struct dma_pool *
devres__dma_pool_create_owned(const char *name, struct device *dev, size_t size,
			      size_t align, size_t boundary,
			      const struct devres__owner *owner);
/* Destroys @pool if @node still owns it; a release path. */
HIDDEN void devres__dma_pool_destroy_owned(struct dma_pool *pool,
					   const void *node);

static inline uint64_t dma_default_mask(uint64_t m)
{
	return m ? m : DMA_BIT_MASK(32);
}

/* The coherent mask, read whole: dma_set_coherent_mask() may race it. */
static inline uint64_t dma_coherent_mask(struct device *dev)
{
	return dma_default_mask(
		__atomic_load_n(&dev->coherent_dma_mask, __ATOMIC_RELAXED));
}

#endif /* DEVRES_DMA_INTERNAL_H */
