// SPDX-License-Identifier: MIT
/*
 * The managed DMA interfaces: coherent buffers and pools released with the
 * device's resources. Each node is filled before devres_add() publishes
 * it, and touched no more after.
 */
#include <errno.h>
#include <stdlib.h>
#include "dma-internal.h"

static void dmam_release(struct device *dev, void *res)
{
	struct dma_devres *this = res;

	devres__dma_free(dev, this->size, this->vaddr, this->dma_handle,
			 DK_COHERENT, this, "dmam_release");
}

static int dmam_match(struct device *dev, void *res, void *match_data)
{
	struct dma_devres *this = res, *match = match_data;

	(void)dev;
	return this->vaddr == match->vaddr && this->size == match->size &&
	       this->dma_handle == match->dma_handle;
}

static int dmam_match_vaddr(struct device *dev, void *res, void *match_data)
{
	(void)dev;
	return ((struct dma_devres *)res)->vaddr == match_data;
}

/* What dmam_alloc_coherent() made before the buffer, for alloc_ended(). */
struct alloc_owed {
	struct dma_devres *dr;
	struct dma_rec *rec;
};

static void alloc_ended(void *arg)
{
	struct alloc_owed *a = arg;

	free(a->rec);
	devres_free(a->dr);
}

void *dmam_alloc_coherent(struct device *dev, size_t size,
			  dma_addr_t *dma_handle, gfp_t gfp)
{
	struct dma_claim claim;
	struct alloc_owed a;
	struct dma_devres *dr;
	struct dma_rec *rec;
	void *vaddr;

	if (!devres__dev_ok_to_acquire(dev, __func__) ||
	    devres__arg_bad(dev, dma_handle, __func__, "dma_handle") ||
	    devres__dma_size_bad(dev, size, __func__) ||
	    devres__dma_from_ops(dev, __func__))
		return NULL;
	dr = devres_alloc(dmam_release, sizeof(*dr), gfp);
	if (!dr)
		return NULL;
	rec = devres__dma_rec_new(dev);
	if (!rec) {
		devres_free(dr);
		return NULL;
	}
	/*
	 * The buffer enters the device's table with its owner, its node
	 * then on @dev: a plain call on another thread finds it owned or
	 * not at all (coherent.c, mapping.c).
	 */
	claim = (struct dma_claim){ .owner = { .dev = dev,
					       .node = dr,
					       .release = dmam_release,
					       .call = __func__,
					       .fix = "dmam_free_coherent()" },
				    .dr = dr,
				    .rec = rec };
	a = (struct alloc_owed){ dr, rec };
	/* DMA ops that end the thread: the buffer is undone, then these. */
	pthread_cleanup_push(alloc_ended, &a);
	vaddr = devres__dma_alloc(dev, size, dma_handle, DK_COHERENT, &claim,
				  __func__);
	pthread_cleanup_pop(!vaddr);
	return vaddr;
}

void dmam_free_coherent(struct device *dev, size_t size, void *vaddr,
			dma_addr_t dma_handle)
{
	struct dma_devres match = { size, vaddr, dma_handle }, *dr;
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__) ||
	    devres__dma_from_ops(dev, __func__))
		return;
	/*
	 * Unrecord first, then free: freed first, the buffer could be
	 * handed out again before the node is gone, and a release of the
	 * device's resources in between would free it twice (the kernel's
	 * CVE-2024-43856).
	 */
	dr = devres_remove(dev, dmam_release, dmam_match, &match);
	if (!dr) {
		if (devres_find(dev, dmam_release, dmam_match_vaddr, vaddr))
			devres__warn(dev, __func__,
				     "%p freed with another size or handle",
				     vaddr);
		else
			devres__warn_foreign(
				dev, __func__,
				devres__maps_owner(vaddr, &h) ? &h : NULL,
				"%p is not a managed coherent buffer", vaddr);
		return;
	}
	/* DMA ops that end the thread: the node goes once the buffer has. */
	pthread_cleanup_push(devres_free, dr);
	devres__dma_free(dev, size, vaddr, dma_handle, DK_COHERENT, dr,
			 __func__);
	pthread_cleanup_pop(1);
}

/* The handle is written to its first word (devres__dma_pool_create_owned()). */
struct dmam_pool {
	struct dma_pool *pool;
};

static void dmam_pool_release(struct device *dev, void *res)
{
	(void)dev;
	devres__dma_pool_destroy_owned(((struct dmam_pool *)res)->pool, res);
}

static int dmam_pool_match(struct device *dev, void *res, void *match_data)
{
	(void)dev;
	return ((struct dmam_pool *)res)->pool == match_data;
}

struct dma_pool *dmam_pool_create(const char *name, struct device *dev,
				  size_t size, size_t align, size_t allocation)
{
	struct devres__owner owner;
	struct dmam_pool *ptr;
	struct dma_pool *pool;

	if (!devres__dev_ok_to_acquire(dev, __func__) ||
	    devres__arg_bad(dev, name, __func__, "name") ||
	    devres__dma_from_ops(dev, __func__))
		return NULL;
	ptr = devres_alloc(dmam_pool_release, sizeof(*ptr), GFP_KERNEL);
	if (!ptr)
		return NULL;
	owner = (struct devres__owner){ .dev = dev,
					.node = ptr,
					.release = dmam_pool_release,
					.call = __func__,
					.fix = "dmam_pool_destroy()" };
	/* Live, owned and on @dev in one hold of the pools' lock. */
	pool = devres__dma_pool_create_owned(name, dev, size, align, allocation,
					     &owner);
	if (!pool)
		devres_free(ptr);
	return pool;
}

void dmam_pool_destroy(struct dma_pool *pool)
{
	struct device *dev = devres__dma_pool_dev(pool);

	if (!dev || !devres__dev_ok(dev, __func__) ||
	    devres__dma_from_ops(dev, __func__))
		return;
	if (devres_release(dev, dmam_pool_release, dmam_pool_match, pool))
		devres__warn(dev, __func__, "pool %p is not a managed pool",
			     (void *)pool);
}
