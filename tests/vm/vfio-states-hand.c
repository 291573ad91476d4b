// SPDX-License-Identifier: MIT
/* vfio-states, class 2: the library's VFIO resources given back by hand. */
#define _GNU_SOURCE /* close_range() */
#include <errno.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <devres/driver.h>
#include <devres/vfio.h>
#include "vfio-states.h"

/* ---- class 2: by hand ---- */

/*
 * Each cell: a fresh scan and bind of A, the hand's call, then what the
 * library and the kernel show, unbind, and what is left.
 */
bool hand_begin(struct hand *h, const char *name)
{
	h->fds0 = count_fds(NULL);
	h->pdev = scan(name_a);
	if (!h->pdev || !bind(h->pdev)) {
		cell(name, false, "no bound device");
		pci_dev_put(h->pdev);
		pci_bus_remove_all();
		return false;
	}
	h->edu = pci_get_drvdata(h->pdev);
	h->w0 = devres_warn_count();
	return true;
}

/*
 * Unbinds and removes; true when the process's fds are those it had
 * before the scan, no BAR is mapped and the group opens again.
 */
bool hand_end(struct hand *h, int *ret_warns)
{
	int w = devres_warn_count();

	device_release_driver(&h->pdev->dev);
	*ret_warns = devres_warn_count() - w;
	pci_dev_put(h->pdev);
	pci_bus_remove_all();
	if (count_fds(NULL) != h->fds0 || count_maps("vfio-device"))
		printf("vfio-states: %d fds (had %d), %d BAR mappings\n",
		       count_fds(NULL), h->fds0, count_maps("vfio-device"));
	return count_fds(NULL) == h->fds0 && !count_maps("vfio-device") &&
	       second_open(name_a) == 0;
}

static void hand_close(const char *cellname, const char *target)
{
	struct hand h;
	int fd, ret, err, warns, after;
	bool left;

	if (!hand_begin(&h, cellname))
		return;
	fd = fd_of(target);
	errno = 0;
	ret = close(fd);
	err = errno;
	warns = devres_warn_count() - h.w0;
	cell(cellname,
	     fd >= 0 && ret == -1 && err == EPERM && warns == 1 &&
		     fd_of(target) == fd && works(h.pdev),
	     "close(%d) of %s: %d, %s, %d WARNs; want -1, EPERM, 1; "
	     "still open and the device working",
	     fd, target, ret, strerror(err), warns);
	left = hand_end(&h, &after);
	cell("2.close/then-unbind", left && after == 0,
	     "after the refused close: unbind %d WARNs, fds %s", after,
	     left ? "gone" : "LEFT");
}

static void hand_close_range(void)
{
	struct hand h;
	int before, ret, warns, after;
	bool left;

	if (!hand_begin(&h, "2.close_range"))
		return;
	before = count_fds(NULL);
	ret = close_range(3, ~0U, 0);
	warns = devres_warn_count() - h.w0;
	/* Every number above stderr is the library's own here. */
	cell("2.close_range",
	     ret == 0 && warns == before - 3 && count_fds(NULL) == before &&
		     works(h.pdev),
	     "close_range(3, ~0U, 0) with %d fds open: %d, %d WARNs (want "
	     "%d), %d fds left, device %s",
	     before, ret, warns, before - 3, count_fds(NULL),
	     works(h.pdev) ? "working" : "BROKEN");
	left = hand_end(&h, &after);
	cell("2.close_range/then-unbind", left && after == 0,
	     "unbind %d WARNs, fds %s", after, left ? "gone" : "LEFT");
}

static void hand_munmap_bar(void)
{
	struct hand h;
	int maps0, ret, warns, after;
	size_t len;
	bool left;

	if (!hand_begin(&h, "2.munmap-bar"))
		return;
	maps0 = count_maps("vfio-device");
	len = (size_t)pci_resource_len(h.pdev, 0);
	ret = munmap(h.edu->regs, len);
	warns = devres_warn_count() - h.w0;
	cell("2.munmap-bar",
	     ret == 0 && warns == 1 && count_maps("vfio-device") == maps0 - 1,
	     "munmap of BAR 0 (%zu bytes): %d, %d WARNs (want 0, 1); "
	     "device mappings %d -> %d",
	     len, ret, warns, maps0, count_maps("vfio-device"));
	left = hand_end(&h, &after);
	cell("2.munmap-bar/then-unbind", left && after == 0,
	     "unbind %d WARNs (nothing unmapped twice), fds %s", after,
	     left ? "gone" : "LEFT");
}

static void hand_munmap_buf(void)
{
	struct hand h;
	int n0, ret, warns, after;
	bool left;

	if (!hand_begin(&h, "2.munmap-dma"))
		return;
	n0 = mappings(h.pdev);
	ret = munmap(h.edu->buf, h.edu->buf_size);
	warns = devres_warn_count() - h.w0;
	cell("2.munmap-dma",
	     ret == 0 && warns == 1 && mappings(h.pdev) == n0 - 1,
	     "munmap of the dmam buffer: %d, %d WARNs (want 0, 1); IOMMU "
	     "mappings %d -> %d (its IOVA given back at the call)",
	     ret, warns, n0, mappings(h.pdev));
	h.edu->buf = NULL;
	left = hand_end(&h, &after);
	cell("2.munmap-dma/then-unbind", left && after == 0,
	     "unbind %d WARNs, fds %s", after, left ? "gone" : "LEFT");
}

static int unmap_dma(int fd, dma_addr_t iova, size_t size, bool raw,
		     uint64_t *ret_size)
{
	struct vfio_iommu_type1_dma_unmap u = {
		.argsz = sizeof(u),
		.iova = iova,
		.size = size,
	};
	int ret = raw ? (int)syscall(SYS_ioctl, fd, VFIO_IOMMU_UNMAP_DMA, &u)
		      : ioctl(fd, VFIO_IOMMU_UNMAP_DMA, &u);

	*ret_size = ret ? 0 : u.size;
	return ret;
}

/* VFIO_IOMMU_UNMAP_DMA of the driver's buffer, through ioctl(). */
static void hand_unmap_dma(void)
{
	struct hand h;
	int ret, err, warns, after;
	uint64_t done = 0;
	bool left, ok;

	if (!hand_begin(&h, "2.ioctl-unmap-dma"))
		return;
	errno = 0;
	ret = unmap_dma(fd_of(CONTAINER), h.edu->buf_dma, h.edu->buf_size,
			false, &done);
	err = errno;
	warns = devres_warn_count() - h.w0;
	ok = works(h.pdev);
	cell("2.ioctl-unmap-dma", ret == -1 && err == EPERM && warns == 1 && ok,
	     "ioctl(container, VFIO_IOMMU_UNMAP_DMA) of the dmam buffer: "
	     "%d, %s, %d WARNs, %llu bytes unmapped (want -1, EPERM, 1, 0); "
	     "DMA %s",
	     ret, strerror(err), warns, (unsigned long long)done,
	     ok ? "still reaches the buffer" : "BROKEN");
	left = hand_end(&h, &after);
	cell("2.ioctl-unmap-dma/then-unbind", left && after == 0,
	     "unbind %d WARNs, fds %s", after, left ? "gone" : "LEFT");
}

/*
 * The same through a raw system call, which no interposer sees: the
 * release finds the range gone (the kernel unmaps nothing) and says so.
 */
static void hand_unmap_dma_raw(void)
{
	struct hand h;
	int ret, warns, after;
	uint64_t done = 0;
	bool left;

	if (!hand_begin(&h, "2.raw-unmap-dma"))
		return;
	ret = unmap_dma(fd_of(CONTAINER), h.edu->buf_dma, h.edu->buf_size, true,
			&done);
	warns = devres_warn_count() - h.w0;
	cell("2.raw-unmap-dma",
	     ret == 0 && done == h.edu->buf_size && warns == 0,
	     "syscall(SYS_ioctl, VFIO_IOMMU_UNMAP_DMA): %d, %llu bytes "
	     "unmapped, %d WARNs (want 0, %zu, 0: unseen)",
	     ret, (unsigned long long)done, warns, h.edu->buf_size);
	left = hand_end(&h, &after);
	cell("2.raw-unmap-dma/then-unbind", left && after == 1,
	     "unbind %d WARNs (want 1: the release finds it unmapped), fds "
	     "%s",
	     after, left ? "gone" : "LEFT");
}

/* VFIO_DEVICE_SET_IRQS by hand: MSI turned off under the driver. */
static void hand_set_irqs(void)
{
	struct vfio_irq_set set = {
		.argsz = sizeof(set),
		.flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
		.index = VFIO_PCI_MSI_IRQ_INDEX,
	};
	struct hand h;
	int ret, err, warns, after;
	bool left, ok;

	if (!hand_begin(&h, "2.ioctl-set-irqs"))
		return;
	errno = 0;
	ret = ioctl(fd_of(VFIO_DEV_FD), VFIO_DEVICE_SET_IRQS, &set);
	err = errno;
	warns = devres_warn_count() - h.w0;
	ok = works(h.pdev);
	cell("2.ioctl-set-irqs", ret == -1 && err == EPERM && warns == 1 && ok,
	     "ioctl(device, VFIO_DEVICE_SET_IRQS) disabling MSI: %d, %s, %d "
	     "WARNs (want -1, EPERM, 1); interrupts %s",
	     ret, strerror(err), warns, ok ? "still come" : "GONE");
	left = hand_end(&h, &after);
	cell("2.ioctl-set-irqs/then-unbind", left && after == 0,
	     "unbind %d WARNs, fds %s", after, left ? "gone" : "LEFT");
}

/* What a program may ask of the library's fds: queries go through. */
static void hand_queries(void)
{
	struct vfio_device_info di = { .argsz = sizeof(di) };
	struct vfio_iommu_type1_info ii = { .argsz = sizeof(ii) };
	struct vfio_group_status gs = { .argsz = sizeof(gs) };
	struct hand h;
	int r1, r2, r3, warns, after;
	bool left;

	if (!hand_begin(&h, "2.ioctl-queries"))
		return;
	r1 = ioctl(fd_of(VFIO_DEV_FD), VFIO_DEVICE_GET_INFO, &di);
	r2 = ioctl(fd_of(CONTAINER), VFIO_IOMMU_GET_INFO, &ii);
	r3 = ioctl(fd_of(group_path(name_a)), VFIO_GROUP_GET_STATUS, &gs);
	warns = devres_warn_count() - h.w0;
	cell("2.ioctl-queries",
	     !r1 && !r2 && !r3 && warns == 0 &&
		     (gs.flags & VFIO_GROUP_FLAGS_VIABLE) &&
		     di.num_regions > VFIO_PCI_CONFIG_REGION_INDEX,
	     "GET_INFO, IOMMU GET_INFO, GROUP_GET_STATUS: %d %d %d, %d "
	     "WARNs (want 0 0 0, 0)",
	     r1, r2, r3, warns);
	left = hand_end(&h, &after);
	cell("2.ioctl-queries/then-unbind", left && after == 0,
	     "unbind %d WARNs, fds %s", after, left ? "gone" : "LEFT");
}

void class2_hand(void)
{
	hand_close("2.close-container", CONTAINER);
	hand_close("2.close-group", group_path(name_a));
	hand_close("2.close-device", VFIO_DEV_FD);
	hand_close_range();
	hand_munmap_bar();
	hand_munmap_buf();
	hand_unmap_dma();
	hand_unmap_dma_raw();
	hand_set_irqs();
	hand_queries();
}
