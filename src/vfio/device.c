// SPDX-License-Identifier: MIT
/*
 * The VFIO backend of the PCI bus: a device the host bound to vfio-pci
 * is taken at its scan; its config space, BARs, interrupts and DMA go
 * through the VFIO device fd and its group's container. A driver binds it
 * as any pci_driver, with no change.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <devres/vfio.h>
#include "vfio.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * The number an iommu_group link ends in, as the kernel names groups:
 * decimal digits only (no sign, no space, no leading 0), at most
 * 0xffffff; -1 for anything else, which would otherwise open another
 * group's node (an empty name read as group 0).
 */
static long group_number(const char *name)
{
	long v = 0;

	if (!*name || (name[0] == '0' && name[1]))
		return -1;
	for (const char *s = name; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > 0xffffff)
			return -1;
	}
	return v;
}

/*
 * Whether the BAR maps whole: asked once for the size of the reply, then
 * again with room for the capability chain when there is one.
 */
static int region_info(struct vfio_dev *vd, unsigned int index,
		       uint64_t *ret_off, uint64_t *ret_size,
		       uint32_t *ret_flags, bool *ret_sparse)
{
	struct vfio_region_info info = { .argsz = sizeof(info),
					 .index = index };
	struct vfio_region_info *full = &info;
	size_t len = sizeof(info);

	if (vfio__ioctl(vd->fd, VFIO_DEVICE_GET_REGION_INFO, &info))
		return -errno;
	if ((info.flags & VFIO_REGION_INFO_FLAG_CAPS) &&
	    info.argsz > sizeof(info)) {
		len = info.argsz;
		full = devres__should_fail() ? NULL : calloc(1, len);
		if (!full)
			return -ENOMEM;
		full->argsz = (uint32_t)len;
		full->index = index;
		if (vfio__ioctl(vd->fd, VFIO_DEVICE_GET_REGION_INFO, full)) {
			int ret = -errno;

			free(full);
			return ret;
		}
	}
	*ret_off = full->offset;
	*ret_size = full->size;
	*ret_flags = full->flags;
	*ret_sparse = !vfio__region_mappable(full, len);
	if (full != &info)
		free(full);
	return 0;
}

static int device_open(struct vfio_dev *vd, const char *name)
{
	struct vfio_device_info info = { .argsz = sizeof(info) };
	uint32_t flags;
	bool sparse;
	int ret;

	if (devres__should_fail_fd())
		return -EMFILE;
	devres__own_fd_opening();
	vd->fd = vfio__ioctl(vd->group->fd, VFIO_GROUP_GET_DEVICE_FD,
			     (void *)name);
	devres__own_fd_opened(vd->fd, DEVRES_OWN_VFIO_DEVICE, name);
	if (vd->fd < 0)
		return -errno;
	devres__ledger_add(DL_FDS, 1);
	if (vfio__ioctl(vd->fd, VFIO_DEVICE_GET_INFO, &info))
		return -errno;
	if (!(info.flags & VFIO_DEVICE_FLAGS_PCI) ||
	    info.num_regions <= VFIO_PCI_CONFIG_REGION_INDEX)
		return -ENODEV;
	vd->flags = info.flags;
	vd->num_irqs = info.num_irqs;
	ret = region_info(vd, VFIO_PCI_CONFIG_REGION_INDEX, &vd->cfg_off,
			  &vd->cfg_size, &flags, &sparse);
	if (ret)
		return ret;
	for (int i = 0; i < PCI_STD_NUM_BARS; i++)
		if (region_info(vd, VFIO_PCI_BAR0_REGION_INDEX + (unsigned)i,
				&vd->bar[i].off, &vd->bar[i].size,
				&vd->bar[i].flags, &vd->bar[i].sparse))
			vd->bar[i].size = 0;
	return 0;
}

static void vd_free(struct vfio_dev *vd)
{
	if (vd->fd >= 0) {
		devres__own_fd_close(vd->fd);
		devres__ledger_add(DL_FDS, -1);
	}
	if (vd->group)
		vfio__group_put(vd->group);
	pthread_mutex_destroy(&vd->irq_lock);
	free(vd);
}

static int vfio_attach(struct pci_dev *pdev, void **ret_data)
{
	char link[256];
	struct vfio_dev *vd;
	long group;
	int ret;

	ret = pci__readlink(pdev, "driver", link, sizeof(link));
	/* Out of fds is not "another driver's": the scan says so. */
	if (pci__out_of_resources(ret))
		return ret;
	if (ret || strcmp(base_name(link), "vfio-pci") != 0)
		return -ENODEV;
	ret = pci__readlink(pdev, "iommu_group", link, sizeof(link));
	if (ret)
		return ret;
	group = group_number(base_name(link));
	if (group < 0)
		return -EINVAL;
	if (devres__should_fail() || !(vd = calloc(1, sizeof(*vd))))
		return -ENOMEM;
	vd->fd = -1;
	vd->pdev = pdev;
	vd->irq_index = -1;
	pthread_mutex_init(&vd->irq_lock, NULL);
	vd->ops = vfio__dma_ops;
	ret = vfio__group_get((int)group, pci_name(pdev), &vd->group);
	if (!ret)
		ret = device_open(vd, pci_name(pdev));
	if (ret) {
		vd_free(vd);
		return ret;
	}
	set_dma_ops(&pdev->dev, &vd->ops);
	*ret_data = vd;
	return 0;
}

/* The device is being freed: its ops pointer goes with it. */
static void vfio_detach(struct pci_dev *pdev, void *data)
{
	(void)pdev;
	vd_free(data);
}

static int vfio_bar_window(struct pci_dev *pdev, void *data, int bar,
			   int *ret_fd, off_t *ret_off, uint64_t *ret_size)
{
	struct vfio_dev *vd = data;

	(void)pdev;
	/*
	 * Only a BAR that maps whole: reads and writes of a BAR mapping are plain
	 * loads and stores, with no hook to turn them into pread/pwrite.
	 */
	if (!vd->bar[bar].size ||
	    !(vd->bar[bar].flags & VFIO_REGION_INFO_FLAG_MMAP) ||
	    vd->bar[bar].sparse)
		return -EOPNOTSUPP;
	*ret_fd = vd->fd;
	*ret_off = (off_t)vd->bar[bar].off;
	*ret_size = vd->bar[bar].size;
	return 0;
}

static int vfio_cfg_read(const struct pci_dev *pdev, void *data, int where,
			 int size, uint32_t *val)
{
	struct vfio_dev *vd = data;
	uint8_t b[4];

	(void)pdev;
	if ((uint64_t)where + (uint64_t)size > vd->cfg_size ||
	    pread(vd->fd, b, (size_t)size,
		  (off_t)(vd->cfg_off + (uint64_t)where)) != size)
		return PCIBIOS_DEVICE_NOT_FOUND;
	*val = 0;
	for (int i = size - 1; i >= 0; i--)
		*val = *val << 8 | b[i];
	return PCIBIOS_SUCCESSFUL;
}

static int vfio_cfg_write(const struct pci_dev *pdev, void *data, int where,
			  int size, uint32_t val)
{
	struct vfio_dev *vd = data;
	uint8_t b[4];

	(void)pdev;
	for (int i = 0; i < size; i++)
		b[i] = (uint8_t)(val >> (8 * i));
	if ((uint64_t)where + (uint64_t)size > vd->cfg_size ||
	    pwrite(vd->fd, b, (size_t)size,
		   (off_t)(vd->cfg_off + (uint64_t)where)) != size)
		return PCIBIOS_SET_FAILED;
	return PCIBIOS_SUCCESSFUL;
}

/*
 * The kernel saves the device's config space, resets it and restores
 * the space (its pci_try_reset_function()), vectors included. Two resets
 * of one device at once wait for each other in the kernel (VFIO's memory
 * lock, taken for writing).
 */
static int vfio_reset(struct pci_dev *pdev, void *data)
{
	struct vfio_dev *vd = data;

	(void)pdev;
	if (!(vd->flags & VFIO_DEVICE_FLAGS_RESET))
		return -ENOTTY;
	return vfio__ioctl(vd->fd, VFIO_DEVICE_RESET, NULL) ? -errno : 0;
}

/*
 * vfio-pci enabled the device when its fd was opened. Disabling resets it
 * where it can be reset, so that the next driver finds it as new.
 */
static int vfio_enable(struct pci_dev *pdev, void *data, bool on)
{
	int saved = errno;

	if (!on)
		(void)vfio_reset(pdev, data);
	errno = saved;
	return 0;
}

/* Before the binding's DMA memory is unmapped: no mastering, no vectors. */
static void vfio_quiesce(struct pci_dev *pdev, void *data)
{
	pci_clear_master(pdev);
	vfio__irq_disable(data);
}

static const struct pci__backend vfio_backend = {
	.name = "vfio",
	.attach = vfio_attach,
	.detach = vfio_detach,
	.bar_window = vfio_bar_window,
	.cfg_read = vfio_cfg_read,
	.cfg_write = vfio_cfg_write,
	.enable = vfio_enable,
	.alloc_irq_vectors = vfio__alloc_irq_vectors,
	.free_irq_vectors = vfio__free_irq_vectors,
	.reset = vfio_reset,
	.quiesce = vfio_quiesce,
};

int pci_vfio_enable(void)
{
	return pci__backend_add(&vfio_backend);
}

bool pci_dev_is_vfio(struct pci_dev *pdev)
{
	/*
	 * A device as every PCI call takes it: one never initialized, one
	 * released, or the parent's in a child of fork() gets its WARN.
	 */
	if (!pdev || devres__arg_bad(NULL, pdev, __func__, "device") ||
	    !devres__dev_ok(&pdev->dev, __func__))
		return false;
	return pdev->dev.dma_ops &&
	       pdev->dev.dma_ops->name == vfio__dma_ops.name;
}
