/* SPDX-License-Identifier: MIT */
/*
 * DMA-able memory: coherent buffers, streaming mappings, pools, DMA masks,
 * a device's address space (its DMA ops) and the managed (dmam_*) forms.
 * See docs/dma.md.
 */
#ifndef DEVRES_DMA_H
#define DEVRES_DMA_H

#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;
struct dma_pool;

/*
 * A page of memory. Userspace has no page structures: a struct page pointer
 * is the CPU address of the page, cast; dma_map_page() adds its offset.
 */
struct page;

/* Which way the data moves, as the kernel numbers them. */
enum dma_data_direction {
	DMA_BIDIRECTIONAL = 0,
	DMA_TO_DEVICE = 1,
	DMA_FROM_DEVICE = 2,
	DMA_NONE = 3,
};

/* The mask of an @n-bit DMA address, 0 < n <= 64. */
#define DMA_BIT_MASK(n) ((n) >= 64 ? ~0ULL : ((1ULL << (n)) - 1))

/* What a failed streaming mapping returns; test with dma_mapping_error(). */
#define DMA_MAPPING_ERROR (~(dma_addr_t)0)

/*
 * The one limit of every size the DMA API grants memory or bus space for
 * (a coherent buffer's, a mapping's, a pool's block, alignment and
 * boundary): 1 GiB. A larger one, or a size of 0, is a misuse: WARN, and
 * the call fails.
 */
#define DEVRES_DMA_SIZE_MAX ((size_t)1 << 30)

/**
 * struct devres_dma_ops - how a device's DMA addresses are made
 * @name: for messages
 * @dma_supported: optional; non-zero when the device can use @mask
 * @map: make the CPU range [@cpu, @cpu + @size) reachable by the device at
 *       a bus address, returned in *@ret_handle, that is a multiple of
 *       @align and whose last byte is at most @mask; @cpu and @size are
 *       page-aligned, @align is a power of two of at least a page. Returns
 *       0 or a negative errno (-ENOMEM when no address fits, -EIO when the
 *       memory cannot be reached below @mask)
 * @unmap: undo one successful @map, given its handle, CPU address and size;
 *         cannot fail
 *
 * The default (a NULL @dev->dma_ops) is devres_dma_iova_ops(): a private
 * IOVA space per device, as behind an IOMMU. Both callbacks run with the
 * device's DMA lock held: they must not call the DMA API on the same
 * device. An implementation that needs state embeds this structure in its
 * own and gets back to it with container_of() on @dev->dma_ops.
 */
struct devres_dma_ops {
	const char *name;
	int (*dma_supported)(struct device *dev, uint64_t mask);
	int (*map)(struct device *dev, void *cpu, size_t size, size_t align,
		   uint64_t mask, dma_addr_t *ret_handle);
	void (*unmap)(struct device *dev, dma_addr_t handle, void *cpu,
		      size_t size);
};

/**
 * devres_dma_iova_ops() - the default DMA ops: a per-device IOVA space
 *
 * Handles are allocated top-down below the device's mask from a range
 * allocator private to the device (freed ranges are reused), aligned as
 * asked, and never equal to the CPU address. Another implementation may
 * call these ops to allocate its bus addresses (a VFIO backend does, then
 * programs the IOMMU; see docs/dma.md).
 *
 * Context: any thread.
 * Return: the ops; never NULL.
 */
DEVRES_API const struct devres_dma_ops *devres_dma_iova_ops(void);

/**
 * devres_dma_pagemap_ops() - DMA ops for physical addresses
 *
 * A handle is the physical address of the memory, read from
 * /proc/self/pagemap: what a device without an IOMMU needs. Reading page
 * frame numbers needs CAP_SYS_ADMIN; without it a map fails with -EPERM. A
 * range must be physically contiguous (one page always is) and below the
 * mask, else the map fails with -EIO. The memory must stay locked while
 * mapped: coherent buffers are (when the process may lock memory), for a
 * streaming buffer the caller locks it (mlock()).
 *
 * Context: any thread.
 * Return: the ops; never NULL.
 */
DEVRES_API const struct devres_dma_ops *devres_dma_pagemap_ops(void);

/**
 * set_dma_ops() - choose how a device's DMA addresses are made
 * @dev: the device
 * @ops: the ops, or NULL for the default (devres_dma_iova_ops())
 *
 * Changing the ops while the device has live mappings or coherent buffers
 * is a misuse: WARN, no effect. The ops run with the device's DMA lock
 * held: a DMA call made from them (on any device) is refused with a WARN
 * and its error; they may call other ops directly.
 *
 * Context: any thread.
 */
DEVRES_API void set_dma_ops(struct device *dev,
			    const struct devres_dma_ops *ops);

/**
 * get_dma_ops() - the DMA ops a device uses
 * @dev: the device
 *
 * The operations that map and allocate @dev's DMA memory: those set with
 * set_dma_ops(), else the default IOVA space of the device.
 *
 * Context: any thread.
 * Return: @dev's ops, the default ones when none were set; NULL for a bad
 * @dev (WARN).
 */
DEVRES_API const struct devres_dma_ops *get_dma_ops(struct device *dev);

/**
 * dma_set_mask() - set the mask of a device's streaming DMA addresses
 * @dev: the device
 * @mask: the highest address the device can reach, e.g. DMA_BIT_MASK(32)
 *
 * A device whose @dev->dma_mask is NULL has no storage of its own for the
 * streaming mask: @dev->dma_mask is then pointed at @dev->coherent_dma_mask,
 * as the kernel's platform code does, so the two masks are one. A bus that
 * wants them apart points @dev->dma_mask at its own storage.
 *
 * Context: any thread, also while another maps for @dev: each mapping
 * honours the old mask or the new one, whole.
 * Return: 0; -EIO when the device's DMA ops cannot serve @mask (a mask
 * below the lowest address the ops can give); -EINVAL for a bad @dev
 * (WARN).
 */
DEVRES_API int dma_set_mask(struct device *dev, uint64_t mask);

/**
 * dma_set_coherent_mask() - set the mask of a device's coherent buffers
 * @dev: the device
 * @mask: the highest address the device can reach
 *
 * Sets the highest bus address the coherent buffers of @dev
 * (dma_alloc_coherent(), dmam_alloc_coherent()) may be given, as the kernel's
 * dma_set_coherent_mask() does; the streaming mask is left alone.
 *
 * Context: any thread, also while another allocates for @dev: each
 * buffer honours the old mask or the new one, whole.
 * Return: 0; -EIO when the device's DMA ops cannot serve @mask; -EINVAL
 * for a bad @dev (WARN).
 */
DEVRES_API int dma_set_coherent_mask(struct device *dev, uint64_t mask);

/**
 * dma_set_mask_and_coherent() - set both DMA masks of a device
 * @dev: the device
 * @mask: the highest address the device can reach
 *
 * Sets the streaming mask with dma_set_mask() and, when that succeeds, the
 * coherent mask with dma_set_coherent_mask(), to the same @mask.
 *
 * Context: as dma_set_mask().
 * Return: as dma_set_mask(); the coherent mask is set only when the
 * streaming one was.
 */
DEVRES_API int dma_set_mask_and_coherent(struct device *dev, uint64_t mask);

/**
 * dma_get_mask() - the mask of a device's streaming DMA addresses
 * @dev: the device
 *
 * A mask never set (a zero member of a zero-initialized device) is the
 * kernel's default, DMA_BIT_MASK(32).
 *
 * Context: any thread.
 * Return: the mask; 0 for a bad @dev (WARN).
 */
DEVRES_API uint64_t dma_get_mask(struct device *dev);

/**
 * dma_alloc_coherent() - allocate memory that a device and the CPU share
 * @dev: the device
 * @size: bytes, more than 0 and at most DEVRES_DMA_SIZE_MAX
 * @dma_handle: where the bus address is returned
 * @gfp: allocation flags (the memory is always zeroed)
 *
 * The memory is mmap()ed, zeroed, populated and locked in RAM when the
 * process may lock it (best effort: with DEVRES_LOG=1 a debug line says
 * when it could not). The CPU address and the bus address are both aligned
 * to the smallest power of two of pages that holds @size, and the bus
 * address does not exceed the coherent mask. The bus address comes from
 * the device's DMA ops and, with the default ops, differs from the CPU
 * address. Free it with dma_free_coherent().
 *
 * Context: any thread. From a match or for-each callback of @dev, the
 * first DMA call of the device (which makes its DMA state, a node of
 * @dev), or the first one in debug mode, is refused with a WARN: no
 * node can be added to @dev there.
 * Return: the CPU address, or NULL (no memory, no bus address below the
 * mask, a bad @dev, a NULL @dma_handle or a @size of 0 or over
 * DEVRES_DMA_SIZE_MAX: the last three WARN).
 */
DEVRES_API void *dma_alloc_coherent(struct device *dev, size_t size,
				    dma_addr_t *dma_handle, gfp_t gfp);

/**
 * dma_free_coherent() - free memory from dma_alloc_coherent()
 * @dev: the device it was allocated for
 * @size: the size it was allocated with
 * @cpu_addr: the CPU address returned
 * @dma_handle: the bus address returned
 *
 * A handle that is not a live coherent buffer of @dev, or whose CPU
 * address is not @cpu_addr, is a misuse: WARN, nothing is freed. A @size
 * that differs from the allocation's is reported (WARN) in debug mode; the
 * buffer is freed whole either way.
 *
 * Context: any thread.
 */
DEVRES_API void dma_free_coherent(struct device *dev, size_t size,
				  void *cpu_addr, dma_addr_t dma_handle);

/**
 * dma_map_single() - map a CPU buffer for streaming DMA
 * @dev: the device
 * @ptr: the buffer, any byte alignment, in user space
 * @size: its bytes, more than 0 and at most DEVRES_DMA_SIZE_MAX
 * @dir: the direction of the transfer (not DMA_NONE)
 *
 * Gives the device a bus address for [@ptr, @ptr + @size) below its
 * streaming mask. The buffer belongs to the device until
 * dma_unmap_single() or dma_sync_single_for_cpu(). Counted in the ledger
 * (dma_maps).
 *
 * Context: any thread. From a match or for-each callback of @dev, the
 * first DMA call of the device (which makes its DMA state, a node of
 * @dev), or the first one in debug mode, is refused with a WARN: no
 * node can be added to @dev there.
 * Return: the bus address, or DMA_MAPPING_ERROR (test it with
 * dma_mapping_error()): no address below the mask, no memory, a bad @dev,
 * a NULL @ptr, a buffer that is not all in user space (on x86-64: a
 * non-canonical or a kernel address), a @size of 0 or over
 * DEVRES_DMA_SIZE_MAX, or an invalid @dir (these five WARN).
 */
DEVRES_API dma_addr_t dma_map_single(struct device *dev, void *ptr, size_t size,
				     enum dma_data_direction dir);

/**
 * dma_unmap_single() - end a streaming mapping
 * @dev: the device
 * @addr: the bus address dma_map_single() returned
 * @size: the size it was mapped with
 * @dir: the direction it was mapped with
 *
 * A handle that is not the start of a live streaming mapping of @dev is a
 * misuse: WARN, no effect. A @dir that is no direction (not
 * DMA_BIDIRECTIONAL, DMA_TO_DEVICE or DMA_FROM_DEVICE) is reported (WARN)
 * and the mapping still removed whole; so, in debug mode, is a @size or
 * @dir that differs from the mapping's, a mapping made with
 * dma_map_page(), or one made in debug mode whose handle
 * dma_mapping_error() never checked.
 *
 * Context: any thread.
 */
DEVRES_API void dma_unmap_single(struct device *dev, dma_addr_t addr,
				 size_t size, enum dma_data_direction dir);

/**
 * dma_map_page() - map part of a page range for streaming DMA
 * @dev: the device
 * @page: the page's CPU address, cast (see struct page)
 * @offset: where the buffer starts from @page
 * @size: its bytes, more than 0 and at most DEVRES_DMA_SIZE_MAX
 * @dir: the direction of the transfer
 *
 * dma_map_single() of @page + @offset, recorded as a page mapping. An
 * @offset that takes the buffer's start past the end of the address space
 * is a misuse: WARN.
 *
 * Context: any thread. From a match or for-each callback of @dev, the
 * first DMA call of the device (which makes its DMA state, a node of
 * @dev), or the first one in debug mode, is refused with a WARN: no
 * node can be added to @dev there.
 * Return: as dma_map_single(); DMA_MAPPING_ERROR also for an @offset that
 * wraps the address space.
 */
DEVRES_API dma_addr_t dma_map_page(struct device *dev, struct page *page,
				   size_t offset, size_t size,
				   enum dma_data_direction dir);

/**
 * dma_unmap_page() - end a mapping made with dma_map_page()
 * @dev: the device
 * @addr: the bus address dma_map_page() returned
 * @size: the size it was mapped with
 * @dir: the direction it was mapped with
 *
 * As dma_unmap_single(); in debug mode a mapping made with
 * dma_map_single() is reported.
 *
 * Context: any thread.
 */
DEVRES_API void dma_unmap_page(struct device *dev, dma_addr_t addr, size_t size,
			       enum dma_data_direction dir);

/**
 * dma_mapping_error() - did a streaming mapping fail?
 * @dev: the device
 * @dma_addr: what dma_map_single() or dma_map_page() returned
 *
 * The check every dma_map_single() and dma_map_page() result needs before the
 * device is given the address, as in the kernel. In debug mode it marks the
 * mapping that starts at @dma_addr as checked: the unmap of a mapping never
 * checked is reported (WARN), as the kernel's CONFIG_DMA_API_DEBUG does.
 *
 * Context: any thread.
 * Return: -ENOMEM when @dma_addr is DMA_MAPPING_ERROR, else 0.
 */
DEVRES_API int dma_mapping_error(struct device *dev, dma_addr_t dma_addr);

/**
 * dma_sync_single_for_cpu() - give a streaming buffer back to the CPU
 * @dev: the device
 * @addr: a bus address inside a live streaming mapping
 * @size: bytes from @addr
 * @dir: the mapping's direction
 *
 * Orders the device's writes before the CPU's following reads (a full
 * memory barrier: memory is cache-coherent here). A @dir that is no
 * direction is a misuse: WARN, in any mode. In debug mode a range outside
 * a live streaming mapping, or a direction other than the mapping's, is
 * reported (WARN).
 *
 * Context: any thread.
 */
DEVRES_API void dma_sync_single_for_cpu(struct device *dev, dma_addr_t addr,
					size_t size,
					enum dma_data_direction dir);

/**
 * dma_sync_single_for_device() - give a streaming buffer to the device
 * @dev: the device
 * @addr: a bus address inside a live streaming mapping
 * @size: bytes from @addr
 * @dir: the mapping's direction
 *
 * Orders the CPU's writes before the device's following reads. Checked as
 * dma_sync_single_for_cpu().
 *
 * Context: any thread.
 */
DEVRES_API void dma_sync_single_for_device(struct device *dev, dma_addr_t addr,
					   size_t size,
					   enum dma_data_direction dir);

/**
 * dma_iova_to_virt() - reach a device's DMA memory through its bus address
 * @dev: the device
 * @handle: a bus address of @dev
 * @len: bytes from @handle, more than 0
 *
 * What a device model (or an IOMMU) uses to read and write the memory a
 * driver gave the device: a coherent buffer or a streaming mapping. The
 * whole range [@handle, @handle + @len) must lie inside one live mapping.
 * The pointer stays valid until that mapping ends.
 *
 * Context: any thread.
 * Return: the CPU address of @handle, or NULL when @dev does not own the
 * whole range (no WARN: a device model asks on behalf of a device, which
 * may be buggy or hostile).
 */
DEVRES_API void *dma_iova_to_virt(struct device *dev, dma_addr_t handle,
				  size_t len);

/**
 * devres_set_dma_debug() - switch the DMA API checks on or off
 * @on: true to check
 *
 * Like the kernel's CONFIG_DMA_API_DEBUG: reports (WARN) unmaps and syncs
 * whose size, direction or kind differ from the mapping's, unmaps of
 * mappings dma_mapping_error() never checked, and mappings still live
 * when the binding (or the device) they were made in is released. Also switched on by DEVRES_DMA_DEBUG=1 in the environment. A
 * handle that was never mapped is reported whether or not this is on.
 *
 * Context: any thread; mappings made while it was off are not checked at
 * unbind.
 */
DEVRES_API void devres_set_dma_debug(bool on);

/**
 * dma_pool_create() - a pool of small coherent blocks
 * @name: for messages; copied
 * @dev: the device the blocks are for
 * @size: bytes per block, more than 0 and at most DEVRES_DMA_SIZE_MAX
 * @align: alignment of each block (CPU and bus address), a power of two
 *         up to DEVRES_DMA_SIZE_MAX, or 0 for none
 * @boundary: a power of two no block crosses (in bus addresses), up to
 *            DEVRES_DMA_SIZE_MAX, or 0
 *
 * Blocks are carved from coherent buffers of at least a page.
 *
 * Context: any thread.
 * Return: the pool, or NULL (no memory; a bad @size, @align or @boundary,
 * or a bad @dev: these WARN).
 */
DEVRES_API struct dma_pool *dma_pool_create(const char *name,
					    struct device *dev, size_t size,
					    size_t align, size_t boundary);

/**
 * dma_pool_destroy() - free a pool and its memory
 * @pool: the pool, or NULL
 *
 * Blocks still allocated are a misuse: one WARN, and their memory is
 * leaked on purpose (the device may still use it), as the kernel does.
 *
 * Context: any thread; not concurrently with other calls on @pool.
 */
DEVRES_API void dma_pool_destroy(struct dma_pool *pool);

/**
 * dma_pool_alloc() - allocate a block from a pool
 * @pool: the pool
 * @gfp: allocation flags; __GFP_ZERO zeroes the block
 * @handle: where the block's bus address is returned
 *
 * Takes a block of the pool's size and alignment, not crossing the pool's
 * boundary, and gives its CPU address and (in @handle) the bus address the
 * device uses. The block goes back with dma_pool_free(), or with the pool.
 *
 * Context: any thread; pools are thread-safe. From a match or for-each
 * callback of the pool's device, a block that needs the device's first
 * DMA state (or debug mode's first node) is refused with a WARN, as
 * dma_alloc_coherent().
 * Return: the block's CPU address, or NULL.
 */
DEVRES_API void *dma_pool_alloc(struct dma_pool *pool, gfp_t gfp,
				dma_addr_t *handle);

/**
 * dma_pool_zalloc() - allocate a zeroed block from a pool
 * @pool: the pool
 * @gfp: allocation flags
 * @handle: where the block's bus address is returned
 *
 * dma_pool_alloc() with __GFP_ZERO: the block is zeroed.
 *
 * Context: any thread.
 * Return: as dma_pool_alloc().
 */
DEVRES_API void *dma_pool_zalloc(struct dma_pool *pool, gfp_t gfp,
				 dma_addr_t *handle);

/**
 * dma_pool_free() - give a block back to its pool
 * @pool: the pool it came from
 * @vaddr: its CPU address
 * @dma: its bus address
 *
 * A block that is not a busy block of @pool (another pool's, freed twice,
 * not a block start, a bus address that does not match) is a misuse: WARN,
 * no effect.
 *
 * Context: any thread.
 */
DEVRES_API void dma_pool_free(struct dma_pool *pool, void *vaddr,
			      dma_addr_t dma);

/**
 * dmam_alloc_coherent() - managed dma_alloc_coherent()
 * @dev: the device
 * @size: bytes, more than 0 and at most DEVRES_DMA_SIZE_MAX
 * @dma_handle: where the bus address is returned
 * @gfp: allocation flags
 *
 * Freed when @dev's resources are released (unbind, probe failure), or
 * by dmam_free_coherent(). dma_free_coherent() of it, or munmap(),
 * mremap() or mmap() with MAP_FIXED over any part of it, is a misuse
 * caught at that call: WARN, the buffer leaves @dev there (its bus range
 * first, then its node, unreleased), and the call goes on.
 *
 * Context: any thread.
 * Return: the CPU address, or NULL (as dma_alloc_coherent(); its WARNs
 * name dmam_alloc_coherent()); NULL with errno ENODEV (WARNed, nothing
 * kept) when @dev was released meanwhile by a last put_device() on
 * another thread.
 */
DEVRES_API void *dmam_alloc_coherent(struct device *dev, size_t size,
				     dma_addr_t *dma_handle, gfp_t gfp);

/**
 * dmam_free_coherent() - free a managed coherent buffer now
 * @dev: the device
 * @size: its size
 * @vaddr: its CPU address
 * @dma_handle: its bus address
 *
 * Unrecords the buffer first, then frees it, so that the release of @dev's
 * resources cannot free it a second time. A buffer that is not a managed
 * buffer of @dev with this size and handle is a misuse: WARN, no effect.
 *
 * Context: any thread.
 */
DEVRES_API void dmam_free_coherent(struct device *dev, size_t size, void *vaddr,
				   dma_addr_t dma_handle);

/**
 * dmam_pool_create() - managed dma_pool_create()
 * @name: for messages
 * @dev: the device
 * @size: bytes per block, as dma_pool_create()
 * @align: block alignment, or 0, as dma_pool_create()
 * @allocation: a power of two no block crosses, or 0, as dma_pool_create()
 *
 * The pool is destroyed when @dev's resources are released. Until then
 * munmap(), mremap() or mmap() with MAP_FIXED over any part of the memory
 * its blocks are carved from is refused: WARN, nothing changed, the call
 * fails with EPERM.
 *
 * Context: any thread.
 * Return: the pool, or NULL (also, WARNed, when @dev was released
 * meanwhile by a last put_device() on another thread: nothing kept).
 */
DEVRES_API struct dma_pool *dmam_pool_create(const char *name,
					     struct device *dev, size_t size,
					     size_t align, size_t allocation);

/**
 * dmam_pool_destroy() - destroy a managed pool now
 * @pool: a pool from dmam_pool_create()
 *
 * A pool that is not a managed pool of its device is a misuse: WARN, no
 * effect.
 *
 * Context: any thread.
 */
DEVRES_API void dmam_pool_destroy(struct dma_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_DMA_H */
