// SPDX-License-Identifier: MIT
/*
 * The IOVA allocator and the default DMA ops built on it: each device has
 * its own bus address space, as behind an IOMMU, from which blocks are
 * allocated top-down below the device's mask (as the kernel's IOVA
 * allocator does), first fit, aligned; freed blocks merge with their free
 * neighbours and are reused.
 *
 * Free ranges live in a treap (rtree.c). Freeing must not fail, yet may
 * need a node, so nodes are reserved when allocating: free ranges are
 * separated by allocated blocks, hence never more than live blocks + 1,
 * and keeping nodes (free + spare) >= live + 2 before an allocation leaves
 * one node for its possible split and every later free.
 *
 * As the kernel's IOVA "rcache", small freed blocks are first kept in a
 * stack per size and handed out again from there, without touching the
 * tree: most streaming mappings are one or two pages, freed and made again
 * at a high rate. The tree counts cached blocks as live; an allocation the
 * tree cannot serve gives them back to it and tries again.
 */
#include <errno.h>
#include <stdlib.h>
#include "dma-internal.h"

/* Handles start at 64 KiB: no bus address looks like NULL or a small int. */
#define IOVA_BASE 0x10000u

static struct rnode *take_spare(struct iova_space *s)
{
	struct rnode *n = s->spare;

	s->spare = n->l;
	s->nspare--;
	return n;
}

static void put_spare(struct iova_space *s, struct rnode *n)
{
	n->l = s->spare;
	s->spare = n;
	s->nspare++;
}

/*
 * No fault point here: how many nodes an allocation must add depends on
 * the space's history (its free ranges, its spares, its cache), and a
 * sweep must meet the same points for the same call whatever came
 * before. iova_map() has the one point of every mapping.
 */
static int reserve(struct iova_space *s, unsigned long want)
{
	while (s->nfree + s->nspare < want) {
		struct rnode *n;

		n = calloc(1, sizeof(*n));
		if (!n)
			return -ENOMEM;
		put_spare(s, n);
	}
	return 0;
}

static void add_free(struct iova_space *s, uint64_t start, uint64_t end)
{
	struct rnode *n = take_spare(s);

	n->start = start;
	n->end = end;
	n->prio = devres__rt_prio(&s->seed);
	devres__rt_insert(&s->free, n);
	s->nfree++;
}

static void drop_free(struct iova_space *s, struct rnode *n)
{
	devres__rt_remove(&s->free, n->start);
	s->nfree--;
	put_spare(s, n);
}

int devres__iova_init(struct iova_space *s, uint64_t base, uint64_t end)
{
	int ret;

	*s = (struct iova_space){ .seed = 0x2545f491u };
	ret = reserve(s, 2);
	if (ret) {
		devres__iova_destroy(s);
		return ret;
	}
	add_free(s, base, end);
	return 0;
}

static void tree_free(struct iova_space *s, uint64_t start, uint64_t n);

/* Every cached block back to the tree. */
static void flush(struct iova_space *s)
{
	for (uint64_t n = 1; n <= IOVA_CACHED; n++)
		while (s->cache[n - 1].n)
			tree_free(s, s->cache[n - 1].start[--s->cache[n - 1].n],
				  n);
}

int devres__iova_alloc(struct iova_space *s, uint64_t n, uint64_t align,
		       uint64_t limit, uint64_t *ret)
{
	struct rnode *t;
	uint64_t b, end;
	int err;

	if (n && n <= IOVA_CACHED && s->cache[n - 1].n) {
		b = s->cache[n - 1].start[s->cache[n - 1].n - 1];
		if (!(b & (align - 1)) && b + n <= limit) {
			s->cache[n - 1].n--;
			*ret = b;
			return 0;
		}
	}
	err = reserve(s, s->nlive + 2);
	if (err)
		return err;
	t = devres__rt_fit_top(s->free, n, align, limit, &b);
	if (!t) {
		flush(s);
		t = devres__rt_fit_top(s->free, n, align, limit, &b);
	}
	if (!t)
		return -ENOMEM;
	end = t->end;
	if (b == t->start && b + n == end) {
		drop_free(s, t);
	} else if (b == t->start) {
		t->start = b + n;
		devres__rt_update(s->free, t->start);
	} else {
		t->end = b;
		devres__rt_update(s->free, t->start);
		if (b + n < end)
			add_free(s, b + n, end);
	}
	s->nlive++;
	*ret = b;
	return 0;
}

void devres__iova_free(struct iova_space *s, uint64_t start, uint64_t n)
{
	if (n && n <= IOVA_CACHED && s->cache[n - 1].n < IOVA_MAG) {
		s->cache[n - 1].start[s->cache[n - 1].n++] = start;
		return;
	}
	tree_free(s, start, n);
}

static void tree_free(struct iova_space *s, uint64_t start, uint64_t n)
{
	struct rnode *pred = devres__rt_floor(s->free, start);
	struct rnode *succ = devres__rt_ceil(s->free, start + n);

	if (pred && pred->end != start)
		pred = NULL;
	if (succ && succ->start != start + n)
		succ = NULL;
	if (pred && succ) {
		pred->end = succ->end;
		drop_free(s, succ);
		devres__rt_update(s->free, pred->start);
	} else if (pred) {
		pred->end = start + n;
		devres__rt_update(s->free, pred->start);
	} else if (succ) {
		succ->start = start;
		devres__rt_update(s->free, start);
	} else {
		add_free(s, start, start + n);
	}
	s->nlive--;
	/* Keep the reserve and some slack, give back what is beyond it. */
	if (s->nfree + s->nspare > 2 * (s->nlive + 2) + 32)
		while (s->nspare && s->nfree + s->nspare > s->nlive + 34)
			free(take_spare(s));
}

static void free_tree(struct rnode *t)
{
	while (t) {
		struct rnode *r = t->r;

		free_tree(t->l);
		free(t);
		t = r;
	}
}

void devres__iova_destroy(struct iova_space *s)
{
	free_tree(s->free);
	while (s->spare)
		free(take_spare(s));
	*s = (struct iova_space){ 0 };
}

static unsigned int page_shift(void)
{
	return (unsigned int)__builtin_ctzl(devres__page_size());
}

static int iova_supported(struct device *dev, uint64_t mask)
{
	(void)dev;
	return mask >= IOVA_BASE + devres__page_size() - 1;
}

static int iova_map(struct device *dev, void *cpu, size_t size, size_t align,
		    uint64_t mask, dma_addr_t *ret_handle)
{
	struct dma_dev *s = dma_dev_peek(dev);
	unsigned int shift = page_shift();
	uint64_t top = (UINT64_MAX >> shift) - 1;
	uint64_t limit =
		(mask >> shift) + ((~mask & (devres__page_size() - 1)) == 0);
	uint64_t pfn, other;
	int ret;

	if (devres__should_fail())
		return -ENOMEM;
	if (!s->iova_ready) {
		ret = devres__iova_init(&s->iova, IOVA_BASE >> shift, top);
		if (ret)
			return ret;
		s->iova_ready = true;
	}
	if (limit > top)
		limit = top;
	ret = devres__iova_alloc(&s->iova, size >> shift, align >> shift, limit,
				 &pfn);
	if (ret)
		return ret;
	if ((pfn << shift) == (uintptr_t)cpu) {
		/* A bus address never equals the CPU's: take the next one. */
		ret = devres__iova_alloc(&s->iova, size >> shift,
					 align >> shift, limit, &other);
		devres__iova_free(&s->iova, pfn, size >> shift);
		if (ret)
			return ret;
		pfn = other;
	}
	*ret_handle = pfn << shift;
	return 0;
}

static void iova_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		       size_t size)
{
	struct dma_dev *s = dma_dev_peek(dev);
	unsigned int shift = page_shift();

	(void)cpu;
	devres__iova_free(&s->iova, handle >> shift, size >> shift);
}

static const struct devres_dma_ops iova_ops = {
	.name = "iova",
	.dma_supported = iova_supported,
	.map = iova_map,
	.unmap = iova_unmap,
};

const struct devres_dma_ops *devres_dma_iova_ops(void)
{
	return &iova_ops;
}
