// SPDX-License-Identifier: MIT
/*
 * DMA ops for a device without an IOMMU: the bus address is the physical
 * address, read from /proc/self/pagemap (bits 0-54 of each page's entry
 * are its frame number; the kernel shows 0 there to a process without
 * CAP_SYS_ADMIN). Nothing is programmed, so unmap has nothing to undo. A
 * real driver also needs the memory pinned: locked pages are not swapped,
 * and coherent buffers are locked when the process may lock memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include "dma-internal.h"

#define PM_PRESENT (1ULL << 63)
#define PM_PFN_MASK ((1ULL << 55) - 1)

static int read_pfns(int fd, void *cpu, size_t size, uint64_t *ret_pfn)
{
	size_t pages = size / devres__page_size();
	uint64_t vpn = (uintptr_t)cpu / devres__page_size(), e, first = 0;

	for (size_t i = 0; i < pages; i++) {
		if (pread(fd, &e, sizeof(e), (off_t)((vpn + i) * sizeof(e))) !=
		    (ssize_t)sizeof(e))
			return -EIO;
		if (!(e & PM_PRESENT))
			return -EFAULT;
		if (!(e & PM_PFN_MASK))
			return -EPERM;
		if (i == 0)
			first = e & PM_PFN_MASK;
		else if ((e & PM_PFN_MASK) != first + i)
			return -EIO; /* not physically contiguous */
	}
	*ret_pfn = first;
	return 0;
}

static int pm_map(struct device *dev, void *cpu, size_t size, size_t align,
		  uint64_t mask, dma_addr_t *ret_handle)
{
	uint64_t pfn = 0, phys;
	int fd, ret;

	(void)dev;
	/* Fault the pages in, writable, so that they have frames. */
	(void)madvise(cpu, size, MADV_POPULATE_WRITE);
	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	/* The calling thread's: the main thread's has none once it ended. */
	fd = open("/proc/thread-self/pagemap", O_RDONLY | O_CLOEXEC);
	devres__own_fd_opened(fd, DEVRES_OWN_PAGEMAP, "the DMA layer");
	if (fd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	ret = read_pfns(fd, cpu, size, &pfn);
	devres__own_fd_close(fd);
	devres__ledger_add(DL_FDS, -1);
	if (ret)
		return ret;
	phys = pfn * devres__page_size();
	if ((phys & (align - 1)) || phys + size - 1 > mask)
		return -EIO;
	*ret_handle = phys;
	return 0;
}

static void pm_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		     size_t size)
{
	(void)dev;
	(void)handle;
	(void)cpu;
	(void)size;
}

static const struct devres_dma_ops pagemap_ops = {
	.name = "pagemap",
	.map = pm_map,
	.unmap = pm_unmap,
};

const struct devres_dma_ops *devres_dma_pagemap_ops(void)
{
	return &pagemap_ops;
}
