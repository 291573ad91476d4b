// SPDX-License-Identifier: MIT
/*
 * pci_reset_function(): a backend's reset (VFIO_DEVICE_RESET), or a write
 * to the device's sysfs `reset` file. Either way the kernel saves the
 * config space before the reset and restores it after, so the library's
 * record of the device (enabled, mastering, its vectors) stays true.
 */
#include <errno.h>
#include <fcntl.h>
#include "pci.h"

static int sysfs_reset(struct pci_dev *dev)
{
	int fd = pci__open(dev, "reset", O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int ret = 0;

	if (fd == -ENOENT)
		return -ENOTTY;
	if (fd < 0)
		return fd;
	n = pci__pwrite(fd, "1", 1, 0);
	if (n < 0)
		ret = -errno;
	else if (n != 1)
		ret = -EIO;
	pci__close(fd);
	return ret;
}

int pci_reset_function(struct pci_dev *dev)
{
	if (!pci__dev_ok(dev, __func__))
		return -EINVAL;
	if (!pci__bk(dev, reset))
		return pci__readonly() ? -EROFS : sysfs_reset(dev);
	/* A reset is a write to the device, whichever way it goes. */
	return pci__bk_reset(dev);
}
