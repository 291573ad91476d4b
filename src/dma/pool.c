// SPDX-License-Identifier: MIT
/*
 * DMA pools: small blocks carved from coherent buffers ("chunks") of at
 * least a page, as the kernel's dmapool. Every chunk has the same layout,
 * computed once: blocks of the pool's size at multiples of its alignment,
 * pushed to the next boundary where one would cross it. A chunk's CPU and
 * bus addresses are aligned to a power of two at least its size
 * (coherent.c), so a block crosses a boundary on the bus exactly when its
 * offset does in the chunk.
 *
 * Which blocks are busy is kept outside the blocks, in a bitmap per chunk,
 * so that a device writing a freed block cannot corrupt the pool, and a
 * free of the wrong block is caught. Chunks are sorted by CPU address to
 * find a block's chunk by binary search. One mutex per pool.
 *
 * A pool's handle is a generation-checked one (base/handle.h): a driver
 * may keep it past the pool's end (a dmam_ pool destroyed by the device's
 * release, then used by a thread the driver left running), and it is
 * refused then, even once a new pool lives in the same memory. The header
 * is never given back to malloc, and its lock is kept from one pool to the
 * next: a call that took it as the pool was destroyed may still be waiting
 * for it, and finds the generation moved on once it has it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include "dma-internal.h"

/* The largest block, alignment, boundary and chunk a pool makes. */
#define POOL_MAX_BLOCK DEVRES_DMA_SIZE_MAX

struct chunk {
	void *cpu;
	dma_addr_t dma;
	unsigned int nbusy;
	struct chunk *next_leaked;
	/*
	 * A dmam_ pool's chunk is in the table of managed mappings
	 * (base/maps.c) as not to be taken by hand: the pool hands out its
	 * blocks until the pool is destroyed, so a munmap() of it by hand is
	 * refused rather than leave the pool giving out unmapped memory.
	 */
	struct dma_rec rec;
	bool recorded;
	char what[56];
	uint64_t busy[];
};

struct dma_pool {
	bool live; /* not yet taken for its destroy; under pools_lock */
	/* The live pools, for their device's release; under pools_lock. */
	struct dma_pool *live_next, **live_pprev;
	bool dead; /* destroyed; under lock */
	void *handle;
	char name[32];
	struct device *dev;
	size_t size, allocation;
	size_t *offs; /* block offsets in a chunk, ascending */
	unsigned int nblocks;
	pthread_mutex_t lock;
	struct chunk **chunks; /* by CPU address */
	size_t nchunks, cap, hint;
	size_t navail;		    /* chunks with a free block */
	struct devres__owner owner; /* a dmam_ pool's node; under pools_lock */
	bool guarded;		    /* chunks recorded (a dmam_ pool); lock */
	int pid;		    /* the process that made it; atomic */
};

static struct devres__handles pool_handles = {
	.tag = 1,
	.size = sizeof(struct dma_pool),
};
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dma_pool *live_pools; /* under pools_lock; loaded atomic */

/* Chunks left busy by a destroyed pool: kept reachable, never reused. */
static struct chunk *leaked;
static pthread_mutex_t leaked_lock = PTHREAD_MUTEX_INITIALIZER;

/* Held across fork(): the child finds it free (docs/fork.md). */
__attribute__((constructor)) static void leaked_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_DMA_POOLS, &pools_lock);
	devres__atfork_mutex(DEVRES_FORK_DMA_POOL, &leaked_lock);
}

static void pools_gone(struct device *dev);

/* Takes @pool off the live list, for its destroy; pools_lock held. */
static void live_unlink(struct dma_pool *pool)
{
	pool->live = false;
	/* May be live_pools, which pools_gone() loads without the lock. */
	__atomic_store_n(pool->live_pprev, pool->live_next, __ATOMIC_RELAXED);
	if (pool->live_next)
		pool->live_next->live_pprev = pool->live_pprev;
	pool->live_next = NULL;
	pool->live_pprev = NULL;
}

static bool pow2(size_t x)
{
	return x && !(x & (x - 1));
}

static int layout(struct dma_pool *pool, size_t boundary)
{
	size_t off = 0, n = 0;

	for (int pass = 0; pass < 2; pass++) {
		off = 0;
		n = 0;
		while (off + pool->size <= pool->allocation) {
			if (off % boundary + pool->size > boundary) {
				off += boundary - off % boundary;
				continue;
			}
			if (pass)
				pool->offs[n] = off;
			n++;
			off += pool->size;
		}
		if (!pass) {
			if (!n)
				return -EINVAL;
			if (devres__should_fail())
				return -ENOMEM;
			pool->offs = calloc(n, sizeof(*pool->offs));
			if (!pool->offs)
				return -ENOMEM;
		}
	}
	pool->nblocks = (unsigned int)n;
	return 0;
}

static void destroy(struct dma_pool *pool);

/*
 * The pool, live from the hold of pools_lock that gives it its owner and
 * puts @owner's node (when there is one) on its device: a
 * dma_pool_destroy() by hand, which takes a pool under that lock, then
 * finds it unmade, or made, owned and its node on the device. Before, the
 * pool went live without an owner and had one, then its node, each in a
 * hold of its own: a destroy in between took the pool and left the node.
 */
static struct dma_pool *pool_create(const char *name, struct device *dev,
				    size_t size, size_t align, size_t boundary,
				    const struct devres__owner *owner,
				    const char *func)
{
	const size_t page = devres__page_size();
	struct dma_pool *pool;
	void *h = NULL;
	bool used, refused = false;

	if (!devres__dev_ok(dev, func) ||
	    devres__arg_bad(dev, name, func, "name") ||
	    devres__dma_from_ops(dev, func))
		return NULL;
	if (!align)
		align = 1;
	/* Each refusal says why: a NULL alone tells the caller nothing. */
	if (!size || size > POOL_MAX_BLOCK) {
		devres__warn(dev, func,
			     "pool %s: block size %zu not in "
			     "[1, %zu]",
			     name, size, (size_t)POOL_MAX_BLOCK);
		return NULL;
	}
	if (!pow2(align) || align > POOL_MAX_BLOCK) {
		devres__warn(dev, func,
			     "pool %s: alignment %zu is not a "
			     "power of two up to %zu",
			     name, align, (size_t)POOL_MAX_BLOCK);
		return NULL;
	}
	size = (size + align - 1) & ~(align - 1);
	if (size > POOL_MAX_BLOCK) {
		devres__warn(dev, func,
			     "pool %s: aligned block size %zu "
			     "is over %zu",
			     name, size, (size_t)POOL_MAX_BLOCK);
		return NULL;
	}
	if (boundary &&
	    (!pow2(boundary) || boundary < size || boundary > POOL_MAX_BLOCK)) {
		devres__warn(dev, func,
			     "pool %s: boundary %zu is not a "
			     "power of two of at least the block size %zu "
			     "up to %zu",
			     name, boundary, size, (size_t)POOL_MAX_BLOCK);
		return NULL;
	}
	if (!devres__should_fail())
		h = devres__handle_new(&pool_handles, (void **)&pool, &used);
	if (!h)
		return NULL;
	/* What the pool may outlive, the device's release destroys. */
	devres__dev_hook_arm(DEVRES_DEV_HOOK_DMA_POOLS, pools_gone);
	if (!used)
		pthread_mutex_init(&pool->lock, NULL);
	/*
	 * Made under its lock: a call that waits for it with a handle of the
	 * slot's last pool finds it either still dead or of a newer
	 * generation than its handle.
	 */
	pthread_mutex_lock(&pool->lock);
	pool->dead = false;
	pool->handle = h;
	__atomic_store_n(&pool->pid, devres__pid_now(), __ATOMIC_RELAXED);
	snprintf(pool->name, sizeof(pool->name), "%s", name);
	pool->dev = dev;
	pool->size = size;
	pool->allocation = (size + page - 1) & ~(page - 1);
	pool->nchunks = pool->cap = pool->hint = pool->navail = 0;
	/* A managed pool's chunks are recorded from the first. */
	pool->guarded = owner != NULL;
	if (!boundary || boundary > pool->allocation)
		boundary = pool->allocation;
	if (layout(pool, boundary)) {
		pool->dead = true;
		pthread_mutex_unlock(&pool->lock);
		devres__handle_del(&pool_handles, pool);
		return NULL;
	}
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_lock(&pools_lock);
	pool->owner = owner ? *owner : (struct devres__owner){ 0 };
	pool->live = true;
	pool->live_next = live_pools;
	if (live_pools)
		live_pools->live_pprev = &pool->live_next;
	pool->live_pprev = &live_pools;
	__atomic_store_n(&live_pools, pool, __ATOMIC_RELAXED);
	if (owner) {
		*(struct dma_pool **)owner->node = h;
		refused = !devres__owner_add(owner);
	}
	/* Refused by its device: an unowned pool, destroyed below. */
	if (refused) {
		live_unlink(pool);
		pool->owner = (struct devres__owner){ 0 };
	}
	pthread_mutex_unlock(&pools_lock);
	if (owner)
		devres__log_release();
	if (refused) {
		destroy(pool);
		return NULL;
	}
	return h;
}

struct dma_pool *dma_pool_create(const char *name, struct device *dev,
				 size_t size, size_t align, size_t boundary)
{
	return pool_create(name, dev, size, align, boundary, NULL, __func__);
}

struct dma_pool *
devres__dma_pool_create_owned(const char *name, struct device *dev, size_t size,
			      size_t align, size_t boundary,
			      const struct devres__owner *owner)
{
	return pool_create(name, dev, size, align, boundary, owner,
			   owner->call);
}

/* The pool of @h, a live handle of this process, or NULL with a WARN. */
static struct dma_pool *pool_get(const struct dma_pool *h, const char *func)
{
	struct dma_pool *pool;
	bool stale;
	int pid;

	if (devres__arg_bad(NULL, h, func, "pool"))
		return NULL;
	pool = devres__handle_obj(&pool_handles, h, &stale);
	if (likely(pool)) {
		pid = __atomic_load_n(&pool->pid, __ATOMIC_RELAXED);
		if (likely(pid == devres__pid_now()))
			return pool;
		devres__warn(NULL, func, "pool %p belongs to process %d",
			     (const void *)h, pid);
	} else if (stale) {
		devres__warn(NULL, func, "pool %p was destroyed",
			     (const void *)h);
	} else {
		devres__warn(NULL, func, "bad pool %p", (const void *)h);
	}
	return NULL;
}

/*
 * Under @pool's lock, after pool_get(): whether it is still @h's. A pool
 * destroyed while the call waited for its lock (by the device's release,
 * on another thread), or destroyed and made again in the same slot, is
 * refused here, its lock dropped, never used.
 */
static bool still_live(struct dma_pool *pool, const struct dma_pool *h,
		       const char *func)
{
	if (likely(!pool->dead &&
		   devres__handle_obj(&pool_handles, h, NULL) == pool))
		return true;
	pthread_mutex_unlock(&pool->lock);
	devres__warn(NULL, func, "pool %p was destroyed", (const void *)h);
	return false;
}

static size_t words(const struct dma_pool *pool)
{
	return (pool->nblocks + 63) / 64;
}

/*
 * Records a dmam_ pool's chunk in the table of managed mappings; the pool
 * locked (its lock is outer to the table's: a chunk is unmapped with it
 * held). The device labels the refusal's WARN: it is alive while its
 * pool is. The chunk's free (devres__dma_free()) takes the record out and
 * unmaps under the table's lock, so that no plain call over the chunk
 * slips in between.
 */
static int guard(struct dma_pool *pool, struct chunk *c)
{
	snprintf(c->what, sizeof(c->what), "a chunk of DMA pool %s",
		 pool->name);
	c->rec = (struct dma_rec){
		.map = { .start = (uintptr_t)c->cpu,
			 .end = (uintptr_t)c->cpu + pool->allocation,
			 .owner = { .dev = pool->dev,
				    .call = "dmam_pool_create",
				    .fix = "dmam_pool_destroy()" },
			 .refuse = c->what },
		.dev = pool->dev,
		.kept = true,
	};
	if (devres__map_add(&c->rec.map))
		return -ENOMEM;
	/* Its free takes the record out of the table (coherent.c). */
	devres__dma_link(pool->dev, c->dma, &c->rec);
	c->recorded = true;
	return 0;
}

/* A chunk being added, for chunk_ended(). */
struct adding {
	struct dma_pool *pool;
	struct chunk *c;
};

/*
 * DMA ops that end the thread inside the chunk's map (or its unmap, when
 * its record could not be added): its buffer was undone as the thread
 * unwound (coherent.c); the chunk goes, and the pool's lock, which the
 * dma_pool_alloc() that added it holds, is let go. Left held, every later
 * call on the pool waited for ever.
 */
static void chunk_ended(void *arg)
{
	struct adding *a = arg;

	free(a->c);
	pthread_mutex_unlock(&a->pool->lock);
}

/*
 * A new empty chunk, inserted in order; the pool locked. One fault point
 * for the chunk, none for the growth of the pool's array of chunks: a
 * pool's points must not depend on how many chunks it made before.
 */
static struct chunk *add_chunk(struct dma_pool *pool)
{
	struct chunk *c, **v;
	struct adding a;
	size_t i;

	if (devres__should_fail())
		return NULL;
	if (pool->nchunks == pool->cap) {
		size_t cap = pool->cap ? pool->cap * 2 : 8;

		/* An array of pointers, indeed. */
		/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
		v = realloc(pool->chunks, cap * sizeof(*v));
		if (!v)
			return NULL;
		pool->chunks = v;
		pool->cap = cap;
	}
	c = calloc(1, sizeof(*c) + words(pool) * sizeof(uint64_t));
	if (!c)
		return NULL;
	a = (struct adding){ pool, c };
	pthread_cleanup_push(chunk_ended, &a);
	c->cpu = devres__dma_alloc(pool->dev, pool->allocation, &c->dma,
				   DK_POOL, NULL, "dma_pool_alloc");
	if (c->cpu && pool->guarded && guard(pool, c)) {
		devres__dma_free(pool->dev, pool->allocation, c->cpu, c->dma,
				 DK_POOL, NULL, "dma_pool_alloc");
		c->cpu = NULL;
	}
	pthread_cleanup_pop(0);
	if (!c->cpu) {
		free(c);
		return NULL;
	}
	for (i = pool->nchunks; i > 0 && pool->chunks[i - 1]->cpu > c->cpu; i--)
		pool->chunks[i] = pool->chunks[i - 1];
	pool->chunks[i] = c;
	pool->nchunks++;
	pool->navail++;
	pool->hint = i;
	return c;
}

static struct chunk *chunk_with_room(struct dma_pool *pool)
{
	for (size_t k = 0; pool->navail && k < pool->nchunks; k++) {
		size_t i = (pool->hint + k) % pool->nchunks;

		if (pool->chunks[i]->nbusy < pool->nblocks) {
			pool->hint = i;
			return pool->chunks[i];
		}
	}
	return add_chunk(pool);
}

void *dma_pool_alloc(struct dma_pool *h, gfp_t gfp, dma_addr_t *handle)
{
	struct dma_pool *pool = pool_get(h, __func__);
	struct chunk *c;
	size_t idx = 0;
	void *p;

	if (!pool)
		return NULL;
	if (devres__arg_bad(pool->dev, handle, __func__, "handle") ||
	    devres__dma_from_ops(pool->dev, __func__))
		return NULL;
	pthread_mutex_lock(&pool->lock);
	if (unlikely(!still_live(pool, h, __func__)))
		return NULL;
	c = chunk_with_room(pool);
	if (!c) {
		pthread_mutex_unlock(&pool->lock);
		return NULL;
	}
	for (size_t w = 0; w < words(pool); w++) {
		if (~c->busy[w]) {
			idx = w * 64 + (size_t)__builtin_ctzll(~c->busy[w]);
			break;
		}
	}
	c->busy[idx / 64] |= 1ULL << (idx % 64);
	if (++c->nbusy == pool->nblocks)
		pool->navail--;
	p = (char *)c->cpu + pool->offs[idx];
	*handle = c->dma + pool->offs[idx];
	pthread_mutex_unlock(&pool->lock);
	if (gfp & __GFP_ZERO)
		memset(p, 0, pool->size);
	return p;
}

void *dma_pool_zalloc(struct dma_pool *pool, gfp_t gfp, dma_addr_t *handle)
{
	return dma_pool_alloc(pool, gfp | __GFP_ZERO, handle);
}

static struct chunk *find_chunk(struct dma_pool *pool, const char *p)
{
	size_t lo = 0, hi = pool->nchunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *cpu = pool->chunks[mid]->cpu;

		if (p < cpu)
			hi = mid;
		else if (p >= cpu + pool->allocation)
			lo = mid + 1;
		else
			return pool->chunks[mid];
	}
	return NULL;
}

static long block_index(const struct dma_pool *pool, size_t off)
{
	size_t lo = 0, hi = pool->nblocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pool->offs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pool->nblocks && pool->offs[lo] == off ? (long)lo : -1;
}

void dma_pool_free(struct dma_pool *h, void *vaddr, dma_addr_t dma)
{
	struct dma_pool *pool = pool_get(h, __func__);
	char why[160] = "";
	struct chunk *c;
	size_t off;
	long idx;

	if (!pool || devres__dma_from_ops(pool->dev, __func__))
		return;
	pthread_mutex_lock(&pool->lock);
	if (unlikely(!still_live(pool, h, __func__)))
		return;
	c = find_chunk(pool, vaddr);
	if (!c) {
		snprintf(why, sizeof(why), "%p is not a block of pool %s",
			 vaddr, pool->name);
		goto out;
	}
	off = (size_t)((char *)vaddr - (char *)c->cpu);
	idx = block_index(pool, off);
	if (idx < 0)
		snprintf(why, sizeof(why), "%p is not a block start in pool %s",
			 vaddr, pool->name);
	else if (dma != c->dma + off)
		snprintf(why, sizeof(why),
			 "%p is at %#llx on the bus, not %#llx (pool %s)",
			 vaddr, (unsigned long long)c->dma + off,
			 (unsigned long long)dma, pool->name);
	else if (!(c->busy[idx / 64] & (1ULL << (idx % 64))))
		snprintf(why, sizeof(why), "%p freed twice (pool %s)", vaddr,
			 pool->name);
	else {
		c->busy[idx / 64] &= ~(1ULL << (idx % 64));
		if (c->nbusy-- == pool->nblocks)
			pool->navail++;
	}
out:
	pthread_mutex_unlock(&pool->lock);
	if (why[0])
		devres__warn(pool->dev, __func__, "%s", why);
}

/*
 * Takes the pool of @h for its destroy: any (@node NULL; a dmam_ pool
 * loses its node there), or only if @node owns it. NULL if it is not live
 * (or not @node's).
 */
static struct dma_pool *pool_take(const struct dma_pool *h, const void *node,
				  struct devres__hand *hand, bool *ret_owned)
{
	struct dma_pool *pool;

	pthread_mutex_lock(&pools_lock);
	pool = devres__handle_obj(&pool_handles, h, NULL);
	if (pool &&
	    (!pool->live || (node && !devres__owned_by(&pool->owner, node))))
		pool = NULL;
	if (pool) {
		live_unlink(pool);
		*ret_owned = !node && pool->owner.dev;
		if (*ret_owned)
			devres__disown(&pool->owner, hand);
	}
	pthread_mutex_unlock(&pools_lock);
	return pool;
}

/* A destroy in progress, for destroy_ended(). */
struct destroying {
	struct dma_pool *pool;
	size_t i; /* the chunk in hand */
	unsigned long busy;
	bool dev_gone; /* the device's release: busy chunks freed, no WARN */
};

static void destroy_ended(void *arg);

/* Gives back the chunks from the one in hand on; the pool locked. */
static void destroy_chunks(struct destroying *d)
{
	struct dma_pool *pool = d->pool;

	pthread_cleanup_push(destroy_ended, d);
	for (; d->i < pool->nchunks; d->i++) {
		struct chunk *c = pool->chunks[d->i];

		d->busy += c->nbusy;
		if (c->nbusy && !d->dev_gone) {
			/* The device may still use it: leak it, reachable. */
			devres__dma_disown(pool->dev, c->dma);
			/* Unlinked: out of the table, left mapped. */
			if (c->recorded)
				devres__map_remove(&c->rec.map);
			pthread_mutex_lock(&leaked_lock);
			c->next_leaked = leaked;
			leaked = c;
			pthread_mutex_unlock(&leaked_lock);
			continue;
		}
		devres__dma_free(pool->dev, pool->allocation, c->cpu, c->dma,
				 DK_POOL, NULL, "dma_pool_destroy");
		free(c);
	}
	pthread_cleanup_pop(0);
}

static void destroy_finish(struct destroying *d)
{
	struct dma_pool *pool = d->pool;

	free(pool->chunks);
	free(pool->offs);
	pool->chunks = NULL;
	pool->offs = NULL;
	pthread_mutex_unlock(&pool->lock);
	/* Unlocked: a sink may call the pool (it is dead by now). */
	if (d->busy && !d->dev_gone)
		devres__warn(pool->dev, "dma_pool_destroy",
			     "pool %s destroyed with %lu busy block(s), leaked",
			     pool->name, d->busy);
	devres__handle_del(&pool_handles, pool);
}

/*
 * DMA ops that ended the thread inside a chunk's unmap: that chunk was
 * given back as the thread unwound (coherent.c), and the destroy is
 * finished here, as if they had returned: the other chunks given back,
 * the pool's lock let go, the pool freed. Before, they stayed mapped and
 * counted, and the lock held. Another chunk's ops may end the thread
 * again: that unwind starts here and skips the rest of this handler, so
 * destroy_chunks() registers it again, and each end gives back one more
 * chunk until none is left.
 */
static void destroy_ended(void *arg)
{
	struct destroying *d = arg;

	free(d->pool->chunks[d->i++]);
	destroy_chunks(d);
	destroy_finish(d);
}

static unsigned long destroy_as(struct dma_pool *pool, bool dev_gone)
{
	struct destroying d = { .pool = pool, .dev_gone = dev_gone };

	/* Calls that got past pool_get() find it dead once they lock. */
	pthread_mutex_lock(&pool->lock);
	pool->dead = true;
	destroy_chunks(&d);
	destroy_finish(&d);
	return d.busy;
}

static void destroy(struct dma_pool *pool)
{
	(void)destroy_as(pool, false);
}

/*
 * The device's final release: its pools never destroyed go now, their
 * chunks freed, busy blocks too (the device is gone: nothing may use
 * them), with one WARN. A handle kept is refused from then on.
 */
static void pools_gone(struct device *dev)
{
	unsigned long n = 0, busy = 0;
	char first[sizeof(((struct dma_pool *)0)->name)] = "";
	struct dma_pool *pool;

	if (likely(!__atomic_load_n(&live_pools, __ATOMIC_RELAXED)))
		return;
	for (;;) {
		pthread_mutex_lock(&pools_lock);
		/* A parent's pool, in a child of fork(), is the parent's. */
		for (pool = live_pools;
		     pool && (pool->dev != dev ||
			      __atomic_load_n(&pool->pid, __ATOMIC_RELAXED) !=
				      devres__pid_now());
		     pool = pool->live_next)
			;
		if (pool)
			live_unlink(pool);
		pthread_mutex_unlock(&pools_lock);
		if (!pool)
			break;
		if (!n++)
			snprintf(first, sizeof(first), "%s", pool->name);
		busy += destroy_as(pool, true);
	}
	if (n)
		devres__warn(dev, "put_device",
			     "device released with %lu DMA pool(s) never "
			     "destroyed (first: %s), %lu block(s) busy: "
			     "destroyed",
			     n, first, busy);
}

void dma_pool_destroy(struct dma_pool *h)
{
	struct devres__hand hand;
	struct dma_pool *pool;
	bool owned = false, stale;
	int pid;

	if (!h || devres__dma_from_ops(NULL, __func__))
		return;
	pool = devres__handle_obj(&pool_handles, h, &stale);
	pid = pool ? __atomic_load_n(&pool->pid, __ATOMIC_RELAXED) : 0;
	if (pool && pid != devres__pid_now()) {
		devres__warn(NULL, __func__, "pool %p belongs to process %d",
			     (void *)h, pid);
		return;
	}
	if (!(pool = pool_take(h, NULL, &hand, &owned))) {
		devres__warn(NULL, __func__, "%s pool %p",
			     stale || pid ? "destroyed" : "bad", (void *)h);
		return;
	}
	if (owned)
		devres__warn_hand(&hand, __func__, "a pool");
	destroy(pool);
}

void devres__dma_pool_destroy_owned(struct dma_pool *h, const void *node)
{
	struct dma_pool *pool;
	bool owned;

	pool = pool_take(h, node, NULL, &owned);
	if (pool)
		destroy(pool);
}

struct device *devres__dma_pool_dev(const struct dma_pool *h)
{
	struct device *dev = NULL;
	struct dma_pool *pool = NULL;
	bool stale = false;

	pthread_mutex_lock(&pools_lock);
	if (h)
		pool = devres__handle_obj(&pool_handles, h, &stale);
	if (pool && pool->live)
		dev = pool->dev;
	pthread_mutex_unlock(&pools_lock);
	if (!dev)
		devres__warn(NULL, "dmam_pool_destroy", "%s pool %p",
			     !h		     ? "NULL"
			     : stale || pool ? "destroyed"
					     : "bad",
			     (const void *)h);
	return dev;
}
