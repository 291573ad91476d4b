// SPDX-License-Identifier: MIT
/*
 * VFIO groups and their containers, and the DMA ops that map DMA memory
 * into a container's IOMMU domain.
 *
 * Each group gets a container of its own, so each group is its own IOVA
 * space and one group's devices never see another's memory. Devices of
 * one group share the space: IOVAs are allocated here, per group, top
 * down below the mask the device asked for (a device such as QEMU's edu
 * masks addresses above its mask instead of refusing them), never at 0,
 * and only inside the ranges the IOMMU reports usable.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <devres/vfio.h>
#include "vfio.h"

static pthread_mutex_t groups_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfio_group *groups;

/*
 * fork(): the lock is held across it. The child forgets the parent's
 * groups: their locks may be held by threads it does not have, and a
 * group is open in one process at a time (the child's own open of one of
 * them gets the kernel's -EBUSY).
 */
static void groups_take(void)
{
	pthread_mutex_lock(&groups_lock);
}

static void groups_give(void)
{
	pthread_mutex_unlock(&groups_lock);
}

static void groups_child(void)
{
	groups = NULL;
	pthread_mutex_unlock(&groups_lock);
}

__attribute__((constructor)) static void groups_atfork(void)
{
	devres__atfork(DEVRES_FORK_VFIO, groups_take, groups_give,
		       groups_child);
}

static void close_fd(int fd)
{
	devres__own_fd_close(fd);
	devres__ledger_add(DL_FDS, -1);
}

/* The library's own, @kind of IOMMU group @number. */
static int open_fd(const char *path, enum devres__own_kind kind, int number)
{
	char what[32];
	int fd;

	if (devres__should_fail_fd())
		return -EMFILE;
	snprintf(what, sizeof(what), "IOMMU group %d", number);
	devres__own_fd_opening();
	fd = open(path, O_RDWR | O_CLOEXEC);
	devres__own_fd_opened(fd, kind, what);
	if (fd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	return fd;
}

/*
 * A group is viable when every device in it is bound to vfio-pci (or to
 * nothing). When it is not, name the device that is not, read from
 * kernel/iommu_groups/N/devices under the sysfs root.
 */
static void name_offender(int number, const char *dev_name)
{
	char path[64], link[256];
	struct dirent *de;
	DIR *dir;
	int fd;

	snprintf(path, sizeof(path), "kernel/iommu_groups/%d/devices", number);
	fd = pci__open_dir(path);
	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		devres__own_fd_close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		char sub[300];
		ssize_t n;
		const char *drv;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/driver", de->d_name);
		n = readlinkat(dirfd(dir), sub, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		drv = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		if (strcmp(drv, "vfio-pci") != 0)
			devres__print(DEVRES_LOG_INFO,
				      "vfio %s: IOMMU group %d is not viable: "
				      "%s is bound to %s, not vfio-pci",
				      dev_name, number, de->d_name, drv);
	}
	devres__own_dir_close(dir);
}

/*
 * Which IOVAs the container may map: on x86 the MSI window at 0xfee00000
 * is reserved, and the IOMMU's address width ends the space well below
 * 2^64; mapping outside fails. Asked once for the reply's size, then
 * with room for its capability chain.
 */
static int iommu_info(struct vfio_group *g)
{
	struct vfio_iommu_type1_info head = { .argsz = sizeof(head) }, *info;
	unsigned int total = 0;
	size_t len;
	int ret = 0;

	if (vfio__ioctl(g->container, VFIO_IOMMU_GET_INFO, &head))
		return -errno;
	len = head.argsz > sizeof(head) ? head.argsz : sizeof(head);
	info = devres__should_fail() ? NULL : calloc(1, len);
	if (!info)
		return -ENOMEM;
	info->argsz = (uint32_t)len;
	if (vfio__ioctl(g->container, VFIO_IOMMU_GET_INFO, info))
		ret = -errno;
	else
		g->nr_ranges = vfio__iommu_ranges(info, len, g->ranges,
						  VFIO_MAX_RANGES, &g->pgsize,
						  &total);
	free(info);
	/* Not the program's doing: said, not WARNed. */
	if (!ret && total > g->nr_ranges)
		devres__print(DEVRES_LOG_INFO,
			      "vfio group %d: the IOMMU reports %u usable IOVA "
			      "ranges: the %u highest are used",
			      g->number, total, g->nr_ranges);
	return ret;
}

/* Opens group @number, checks it, gives it a type1 container. */
static int group_open(struct vfio_group *g, const char *dev_name)
{
	struct vfio_group_status status = { .argsz = sizeof(status) };
	char path[32];
	int ret;

	snprintf(path, sizeof(path), "/dev/vfio/%d", g->number);
	g->fd = open_fd(path, DEVRES_OWN_VFIO_GROUP, g->number);
	if (g->fd < 0)
		return g->fd;
	g->container = -1;
	if (vfio__ioctl(g->fd, VFIO_GROUP_GET_STATUS, &status)) {
		ret = -errno;
		goto fail;
	}
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		name_offender(g->number, dev_name);
		ret = -EBUSY;
		goto fail;
	}
	g->container =
		open_fd("/dev/vfio/vfio", DEVRES_OWN_VFIO_CONTAINER, g->number);
	if (g->container < 0) {
		ret = g->container;
		goto fail;
	}
	if (vfio__ioctl(g->container, VFIO_GET_API_VERSION, NULL) !=
		    VFIO_API_VERSION ||
	    vfio__ioctl(g->container, VFIO_CHECK_EXTENSION,
			VFIO_ARG(VFIO_TYPE1_IOMMU)) <= 0) {
		ret = -EOPNOTSUPP;
		goto fail;
	}
	if (vfio__ioctl(g->fd, VFIO_GROUP_SET_CONTAINER, &g->container)) {
		ret = -errno;
		goto fail;
	}
	/* Without interrupt remapping type1 refuses here with EPERM. */
	if (vfio__ioctl(g->container, VFIO_SET_IOMMU,
			VFIO_ARG(vfio__ioctl(g->container, VFIO_CHECK_EXTENSION,
					     VFIO_ARG(VFIO_TYPE1v2_IOMMU)) > 0
					 ? VFIO_TYPE1v2_IOMMU
					 : VFIO_TYPE1_IOMMU))) {
		ret = -errno;
		if (ret == -EPERM)
			devres__print(DEVRES_LOG_INFO,
				      "vfio %s: VFIO_SET_IOMMU: EPERM: no "
				      "interrupt remapping (or "
				      "allow_unsafe_interrupts)",
				      dev_name);
		goto fail;
	}
	ret = iommu_info(g);
	if (ret)
		goto fail;
	return 0;

fail:
	if (g->container >= 0)
		close_fd(g->container);
	close_fd(g->fd);
	return ret;
}

int vfio__group_get(int number, const char *dev_name,
		    struct vfio_group **ret_group)
{
	struct vfio_group *g;
	int ret = 0;

	pthread_mutex_lock(&groups_lock);
	for (g = groups; g; g = g->next)
		if (g->number == number)
			break;
	if (g) {
		g->refs++;
		goto out;
	}
	if (devres__should_fail() || !(g = calloc(1, sizeof(*g)))) {
		ret = -ENOMEM;
		goto out;
	}
	g->number = number;
	ret = group_open(g, dev_name);
	if (ret) {
		free(g);
		goto out;
	}
	pthread_mutex_init(&g->lock, NULL);
	g->refs = 1;
	g->next = groups;
	groups = g;
out:
	pthread_mutex_unlock(&groups_lock);
	if (!ret)
		*ret_group = g;
	return ret;
}

void vfio__group_put(struct vfio_group *g)
{
	struct vfio_group **pp;

	pthread_mutex_lock(&groups_lock);
	if (--g->refs) {
		pthread_mutex_unlock(&groups_lock);
		return;
	}
	for (pp = &groups; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	pthread_mutex_unlock(&groups_lock);
	/* Closing the container drops whatever is still mapped. */
	while (g->maps) {
		struct vfio_map *m = g->maps;

		g->maps = m->next;
		free(m);
	}
	close_fd(g->fd);
	close_fd(g->container);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static struct vfio_dev *to_vd(struct device *dev)
{
	return container_of(dev->dma_ops, struct vfio_dev, ops);
}

/* Pinning beyond RLIMIT_MEMLOCK fails with ENOMEM: say which limit. */
static void memlock_hint(struct vfio_dev *vd, uint64_t size)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	devres__print(DEVRES_LOG_INFO,
		      "vfio %s: pinning %llu more bytes failed: "
		      "RLIMIT_MEMLOCK is %llu bytes (ulimit -l, or "
		      "CAP_IPC_LOCK)",
		      pci_name(vd->pdev), (unsigned long long)size,
		      (unsigned long long)rl.rlim_cur);
}

static int vfio_map(struct device *dev, void *cpu, size_t size, size_t align,
		    uint64_t mask, dma_addr_t *ret_handle)
{
	struct vfio_dev *vd = to_vd(dev);
	struct vfio_group *g = vd->group;
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)cpu,
		.size = size,
	};
	struct vfio_map **pos, *m;
	uint64_t iova = 0;
	int ret;

	if (align < g->pgsize)
		align = g->pgsize;
	/* The IOMMU maps whole pages of its own size, from aligned memory. */
	if (!size || ((uintptr_t)cpu | size) & (g->pgsize - 1))
		return -EINVAL;
	if (devres__should_fail() || !(m = malloc(sizeof(*m))))
		return -ENOMEM;
	pthread_mutex_lock(&g->lock);
	ret = vfio__iova_find(&g->maps, g->ranges, g->nr_ranges, size, align,
			      mask, &iova, &pos);
	map.iova = iova;
	if (!ret && vfio__ioctl(g->container, VFIO_IOMMU_MAP_DMA, &map)) {
		ret = errno == ENOMEM ? -ENOMEM : -EIO;
		if (ret == -ENOMEM)
			memlock_hint(vd, size);
	}
	if (!ret) {
		m->iova = map.iova;
		m->size = size;
		m->next = *pos;
		*pos = m;
		g->nr_maps++;
		g->map_bytes += size;
		*ret_handle = map.iova;
		m = NULL;
	}
	pthread_mutex_unlock(&g->lock);
	free(m);
	return ret;
}

static void vfio_unmap(struct device *dev, dma_addr_t handle, void *cpu,
		       size_t size)
{
	struct vfio_dev *vd = to_vd(dev);
	struct vfio_group *g = vd->group;
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap),
		.iova = handle,
		.size = size,
	};
	struct vfio_map **pp, *m = NULL;
	int saved = errno, err = 0;
	bool gone = false;

	(void)cpu;
	pthread_mutex_lock(&g->lock);
	for (pp = &g->maps; *pp; pp = &(*pp)->next) {
		if ((*pp)->iova == handle && (*pp)->size == size) {
			m = *pp;
			*pp = m->next;
			g->nr_maps--;
			g->map_bytes -= size;
			break;
		}
	}
	/* The device may still reach the range until this returns. */
	if (m && vfio__ioctl(g->container, VFIO_IOMMU_UNMAP_DMA, &unmap))
		err = errno;
	/*
	 * The kernel says how much it unmapped: less than the mapping when
	 * a system call made past the library's ioctl() (vfio/interpose.c)
	 * unmapped it, and the device's DMA to it has reached nothing since.
	 */
	else if (m && unmap.size != size)
		gone = true;
	pthread_mutex_unlock(&g->lock);
	/* WARNed unlocked: a log sink may call back into the group. */
	if (err)
		devres__warn(dev, "vfio_unmap", "VFIO_IOMMU_UNMAP_DMA: %s",
			     strerror(err));
	if (gone)
		devres__warn(dev, "vfio_unmap",
			     "IOVA %#llx (%zu bytes) was unmapped behind the "
			     "library's back: the kernel unmapped %llu bytes "
			     "of it now",
			     (unsigned long long)handle, size,
			     (unsigned long long)unmap.size);
	if (!m)
		devres__warn(dev, "vfio_unmap", "IOVA %#llx is not mapped",
			     (unsigned long long)handle);
	free(m);
	errno = saved;
}

/* Below 64 KiB there is no room for a page above the first. */
static int vfio_dma_supported(struct device *dev, uint64_t mask)
{
	(void)dev;
	return mask >= 0xffff;
}

const struct devres_dma_ops vfio__dma_ops = {
	.name = "vfio",
	.dma_supported = vfio_dma_supported,
	.map = vfio_map,
	.unmap = vfio_unmap,
};

int pci_vfio_dma_mappings(struct pci_dev *pdev, uint64_t *ret_bytes)
{
	struct vfio_dev *vd;
	unsigned long n;

	if (devres__arg_bad(NULL, pdev, __func__, "device") ||
	    devres__opt_bad(NULL, ret_bytes, __func__, "ret_bytes"))
		return -EINVAL;
	/*
	 * Before anything of it is read: a device never initialized or
	 * released (-EINVAL), or the parent's in a child of fork(), whose
	 * group's lock may be held by a thread of the parent (-ECHILD).
	 */
	if (!devres__dev_ok(&pdev->dev, __func__))
		return devres__dev_err(&pdev->dev);
	if (!pci_dev_is_vfio(pdev))
		return -ENODEV;
	vd = to_vd(&pdev->dev);
	pthread_mutex_lock(&vd->group->lock);
	n = vd->group->nr_maps;
	if (ret_bytes)
		*ret_bytes = vd->group->map_bytes;
	pthread_mutex_unlock(&vd->group->lock);
	return (int)n;
}
