/* SPDX-License-Identifier: MIT */
/*
 * What the files of src/vfio share: a group with its container (one
 * IOMMU domain per group), and a device taken from vfio-pci.
 */
#ifndef DEVRES_VFIO_INTERNAL_H
#define DEVRES_VFIO_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <devres/dma.h>
#include <devres/pci.h>
#include "pci/backend.h"

/* One IOMMU mapping of the container, kept sorted by IOVA, highest first. */
struct vfio_map {
	uint64_t iova;
	uint64_t size;
	struct vfio_map *next;
};

/* IOVAs the IOMMU lets the container map, inclusive. */
struct vfio_range {
	uint64_t start, end;
};

#define VFIO_MAX_RANGES 16

struct vfio_group {
	int number;
	int fd;	       /* /dev/vfio/N */
	int container; /* /dev/vfio/vfio, type1 set */
	int refs;      /* devices of the group in use; under groups_lock */
	struct vfio_group *next;
	pthread_mutex_t lock; /* the mappings */
	struct vfio_map *maps;
	unsigned long nr_maps;
	uint64_t map_bytes;
	/* From VFIO_IOMMU_GET_INFO: usable IOVAs, highest first; page size. */
	struct vfio_range ranges[VFIO_MAX_RANGES];
	unsigned int nr_ranges;
	uint64_t pgsize;
};

struct vfio_dev {
	struct devres_dma_ops ops; /* first: container_of from dev->dma_ops */
	struct pci_dev *pdev;
	struct vfio_group *group;
	int fd; /* the device fd: config, BARs, interrupts */
	uint32_t flags, num_irqs;
	uint64_t cfg_off, cfg_size;
	struct {
		uint64_t off, size;
		uint32_t flags;
		bool sparse;
	} bar[PCI_STD_NUM_BARS];
	/*
	 * The interrupt index in use (VFIO_PCI_*_IRQ_INDEX), -1 when none,
	 * and the kernel's vectors set to match, under irq_lock: the unbind's
	 * quiesce turns them off while another thread holding the device may
	 * allocate or free them.
	 */
	pthread_mutex_t irq_lock;
	int irq_index;
};

/*
 * interpose.c: the library's own VFIO ioctls, past the interposed
 * ioctl() that refuses a program's on the library's fds. An integer
 * argument is passed as VFIO_ARG(n).
 */
HIDDEN int vfio__ioctl(int fd, unsigned long request, void *arg);
#define VFIO_ARG(n) ((void *)(uintptr_t)(n))

/* container.c */
HIDDEN int vfio__group_get(int number, const char *dev_name,
			   struct vfio_group **ret_group);
HIDDEN void vfio__group_put(struct vfio_group *g);
HIDDEN extern const struct devres_dma_ops vfio__dma_ops;

/* caps.c */
struct vfio_region_info;
struct vfio_iommu_type1_info;
HIDDEN bool vfio__region_mappable(const struct vfio_region_info *info,
				  size_t len);
/* The @max highest usable ranges; *@ret_total counts all the reply has. */
HIDDEN unsigned int vfio__iommu_ranges(const struct vfio_iommu_type1_info *info,
				       size_t len, struct vfio_range *out,
				       unsigned int max, uint64_t *ret_pgsize,
				       unsigned int *ret_total);
HIDDEN int vfio__iova_find(struct vfio_map **head,
			   const struct vfio_range *ranges, unsigned int n,
			   uint64_t size, uint64_t align, uint64_t mask,
			   uint64_t *ret_iova, struct vfio_map ***ret_pos);

/* irq.c */
HIDDEN int vfio__alloc_irq_vectors(struct pci_dev *pdev, void *data,
				   unsigned int min_vecs, unsigned int max_vecs,
				   unsigned int flags, unsigned int *ret_type);
HIDDEN void vfio__irq_disable(struct vfio_dev *vd);
HIDDEN void vfio__free_irq_vectors(struct pci_dev *pdev, void *data);

#endif /* DEVRES_VFIO_INTERNAL_H */
