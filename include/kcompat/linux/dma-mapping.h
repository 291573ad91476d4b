/* SPDX-License-Identifier: MIT */
/* DMA masks, coherent buffers and streaming maps of libdevres. */
#ifndef KCOMPAT_LINUX_DMA_MAPPING_H
#define KCOMPAT_LINUX_DMA_MAPPING_H

#include <linux/kcompat_site.h>
#include <devres/dma.h>
#include <linux/device.h>

/* Each call names its line for the sweep (<linux/kcompat_site.h>). */
#define dma_alloc_coherent(dev, size, handle, gfp)                             \
	KCOMPAT_AT(dma_alloc_coherent,                                         \
		   dma_alloc_coherent(dev, size, handle, gfp))
#define dmam_alloc_coherent(dev, size, handle, gfp)                            \
	KCOMPAT_AT(dmam_alloc_coherent,                                        \
		   dmam_alloc_coherent(dev, size, handle, gfp))
#define dma_pool_create(name, dev, size, align, boundary)                      \
	KCOMPAT_AT(dma_pool_create,                                            \
		   dma_pool_create(name, dev, size, align, boundary))
#define dmam_pool_create(name, dev, size, align, boundary)                     \
	KCOMPAT_AT(dmam_pool_create,                                           \
		   dmam_pool_create(name, dev, size, align, boundary))
#define dma_pool_alloc(pool, gfp, handle)                                      \
	KCOMPAT_AT(dma_pool_alloc, dma_pool_alloc(pool, gfp, handle))
#define dma_pool_zalloc(pool, gfp, handle)                                     \
	KCOMPAT_AT(dma_pool_zalloc, dma_pool_zalloc(pool, gfp, handle))

#endif /* KCOMPAT_LINUX_DMA_MAPPING_H */
