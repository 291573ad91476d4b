// SPDX-License-Identifier: MIT
/*
 * ioctl(), as the library defines it, so that a program's VFIO request on
 * one of the library's VFIO descriptors (a group, its container, a
 * device: base/own-fd.c records each) is refused at that call instead of
 * changing, behind the library's back, what the library keeps of it: an
 * IOVA unmapped with VFIO_IOMMU_UNMAP_DMA stays in the group's list and
 * its buffer's DMA then reaches nothing (the IOMMU faults it); vectors
 * changed with VFIO_DEVICE_SET_IRQS leave the driver's handlers without
 * interrupts; a container unset or a second device fd taken leaves the
 * library's fds on a group it no longer holds alone.
 *
 * The requests that only ask (the API version, an extension, the group's
 * status, the IOMMU's, the device's, a region's and an interrupt index's
 * information, the hot reset information) go through: they change
 * nothing. Every other VFIO request on such a descriptor fails with EPERM
 * and one WARN naming the descriptor, its device or group, the request
 * and the calls that do it. A child of fork() holds copies of its
 * parent's descriptors: the devices are the parent's, so the child's
 * requests on them are refused too (the kernel lets a child's
 * VFIO_DEVICE_SET_IRQS through, and would turn off the parent's vectors).
 *
 * Not bracketed against the library's opens as close() is (posix/
 * interpose-fd.c): an ioctl may block for as long as its device likes,
 * and an open of the library's waiting for it would wait as long. A
 * program's ioctl on a number it does not hold, racing the library's open
 * of that number, is the program's own race.
 *
 * Each call first loads the count of the library's descriptors, then
 * the number's record (two loads): for any other descriptor, or any
 * request not VFIO's, that is all. The library's own requests go through
 * vfio__ioctl(), to the next definition directly.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "vfio.h"

/* Exported: libc's name, interposed. */
#define INTERPOSE __attribute__((visibility("default")))

typedef int ioctl_fn(int, unsigned long, ...);

static int sys_ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	return (int)syscall(SYS_ioctl, fd, request, arg);
}

DEVRES__NEXT(ioctl_fn, ioctl, sys_ioctl)

int vfio__ioctl(int fd, unsigned long request, void *arg)
{
	return next_ioctl()(fd, request, arg);
}

/*
 * Whether @request on a descriptor of @kind only asks. The numbers are
 * per kind (VFIO_IOMMU_MAP_DMA on a container is VFIO_DEVICE_PCI_HOT_RESET
 * on a device), so each kind has its own list.
 */
static bool asks(unsigned char kind, unsigned long request)
{
	switch (kind) {
	case DEVRES_OWN_VFIO_CONTAINER:
		return request == VFIO_GET_API_VERSION ||
		       request == VFIO_CHECK_EXTENSION ||
		       request == VFIO_IOMMU_GET_INFO;
	case DEVRES_OWN_VFIO_GROUP:
		return request == VFIO_GROUP_GET_STATUS;
	default:
		return request == VFIO_DEVICE_GET_INFO ||
		       request == VFIO_DEVICE_GET_REGION_INFO ||
		       request == VFIO_DEVICE_GET_IRQ_INFO ||
		       request == VFIO_DEVICE_GET_PCI_HOT_RESET_INFO;
	}
}

/* What the WARN calls @request on @kind, and the calls that do it. */
static const char *request_name(unsigned char kind, unsigned long request,
				const char **ret_use)
{
	*ret_use = "the library makes the VFIO requests of its devices";
	if (kind == DEVRES_OWN_VFIO_CONTAINER) {
		*ret_use = "the DMA API maps and unmaps (dma_map_single(), "
			   "dma_unmap_single(), dmam_alloc_coherent() ...)";
		if (request == VFIO_IOMMU_MAP_DMA)
			return "VFIO_IOMMU_MAP_DMA";
		if (request == VFIO_IOMMU_UNMAP_DMA)
			return "VFIO_IOMMU_UNMAP_DMA";
		*ret_use = "the container is the group's until its last "
			   "device's last pci_dev_put()";
		if (request == VFIO_SET_IOMMU)
			return "VFIO_SET_IOMMU";
	} else if (kind == DEVRES_OWN_VFIO_GROUP) {
		*ret_use = "the group is its devices' until their last "
			   "pci_dev_put()";
		if (request == VFIO_GROUP_SET_CONTAINER)
			return "VFIO_GROUP_SET_CONTAINER";
		if (request == VFIO_GROUP_UNSET_CONTAINER)
			return "VFIO_GROUP_UNSET_CONTAINER";
		if (request == VFIO_GROUP_GET_DEVICE_FD)
			return "VFIO_GROUP_GET_DEVICE_FD";
	} else {
		if (request == VFIO_DEVICE_SET_IRQS) {
			*ret_use = "pci_alloc_irq_vectors() and "
				   "pci_free_irq_vectors() set the vectors";
			return "VFIO_DEVICE_SET_IRQS";
		}
		*ret_use = "the device's release resets it";
		if (request == VFIO_DEVICE_RESET)
			return "VFIO_DEVICE_RESET";
		if (request == VFIO_DEVICE_PCI_HOT_RESET)
			return "VFIO_DEVICE_PCI_HOT_RESET";
		*ret_use = "the library makes the VFIO requests of its devices";
	}
	return "a VFIO request";
}

/* Whether @fd is one of the library's VFIO descriptors: WARNed then. */
static bool refused(int fd, unsigned long request)
{
	char name[40];
	const char *use, *what;
	bool inherited = false;
	unsigned char kind;

	if (_IOC_TYPE(request) != VFIO_TYPE || !devres__own_fd_maybe(fd))
		return false;
	kind = devres__own_fd_kind(fd, name, sizeof(name), &inherited);
	if ((kind != DEVRES_OWN_VFIO_GROUP &&
	     kind != DEVRES_OWN_VFIO_CONTAINER &&
	     kind != DEVRES_OWN_VFIO_DEVICE) ||
	    asks(kind, request))
		return false;
	what = request_name(kind, request, &use);
	devres__warn(NULL, "ioctl",
		     "fd %d is %s of %s, %s: %s (%#lx) refused, nothing "
		     "changed: %s",
		     fd, devres__own_kind_name((enum devres__own_kind)kind),
		     name,
		     inherited ? "the parent process's, inherited"
			       : "the library's own",
		     what, request, use);
	return true;
}

INTERPOSE int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (unlikely(__atomic_load_n(&devres__own_fds_nr, __ATOMIC_RELAXED)) &&
	    refused(fd, request)) {
		errno = EPERM;
		return -1;
	}
	return next_ioctl()(fd, request, arg);
}
