/* SPDX-License-Identifier: MIT */
/*
 * The PCI bus's one narrow door for a backend that reaches devices
 * through something other than their sysfs files (VFIO, UIO): the scan
 * offers it each device, and config space, BAR windows, enabling and
 * interrupt vectors of a device it took go through it; an operation a
 * backend leaves NULL goes to the device's sysfs files as without one.
 * src/vfio and src/uio include this and nothing else of src/pci;
 * tests/check-layers.sh allows exactly that.
 */
#ifndef DEVRES_PCI_BACKEND_H
#define DEVRES_PCI_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <devres/pci.h>
#include "base/subsys.h"

/*
 * struct pci__backend - how a backend drives the devices it takes
 * @attach: called by the scan for each new device before its BARs are
 *          claimed; 0 when the backend takes it (*@ret_data is then
 *          handed to every other call), -ENODEV when the device is not
 *          its own (the sysfs path takes it), another -errno to skip it
 * @detach: the last reference to the device, removed, is going; its BARs
 *          were released at its removal
 * @bar_window: the fd, its offset and the size that back BAR @bar, or
 *              -errno when it cannot be mapped; the fd stays the backend's
 * @cfg_read, @cfg_write: config space; PCIBIOS_* codes
 * @enable: the device's enable count went from 0 to 1 (@on) or 1 to 0
 * @alloc_irq_vectors: set up interrupt vectors, register their lines with
 *                     pci_dev_set_irq_lines() and return how many, or
 *                     -errno; *@ret_type says which kind they are
 *                     (PCI_IRQ_INTX, PCI_IRQ_MSI or PCI_IRQ_MSIX)
 * @free_irq_vectors: pci_free_irq_vectors() was called (the vectors are
 *                    already counted as freed): turn them off in the
 *                    device, as the kernel's does; may be NULL
 * @reset: pci_reset_function(): reset the function with its config space
 *         saved and restored; -ENOTTY when it has no reset; may be NULL
 *         (the sysfs `reset` file is written)
 * @quiesce: the binding is going (after the driver's remove, or a failed
 *           probe) and managed resources are about to be released: stop
 *           the device from mastering and interrupting before its DMA
 *           memory goes
 */
struct pci__backend {
	const char *name;
	int (*attach)(struct pci_dev *pdev, void **ret_data);
	void (*detach)(struct pci_dev *pdev, void *data);
	int (*bar_window)(struct pci_dev *pdev, void *data, int bar,
			  int *ret_fd, off_t *ret_off, uint64_t *ret_size);
	int (*cfg_read)(const struct pci_dev *pdev, void *data, int where,
			int size, uint32_t *val);
	int (*cfg_write)(const struct pci_dev *pdev, void *data, int where,
			 int size, uint32_t val);
	int (*enable)(struct pci_dev *pdev, void *data, bool on);
	int (*alloc_irq_vectors)(struct pci_dev *pdev, void *data,
				 unsigned int min_vecs, unsigned int max_vecs,
				 unsigned int flags, unsigned int *ret_type);
	void (*free_irq_vectors)(struct pci_dev *pdev, void *data);
	int (*reset)(struct pci_dev *pdev, void *data);
	void (*quiesce)(struct pci_dev *pdev, void *data);
};

/*
 * Devices scanned from now on are offered to @b, after the backends added
 * before it; adding one twice changes nothing. -ENOSPC when all the slots
 * are taken.
 */
HIDDEN int pci__backend_add(const struct pci__backend *b);
/* The backend that took @pdev at its scan, or NULL. */
HIDDEN const struct pci__backend *pci__backend_of(const struct pci_dev *pdev);
/*
 * The target of link @link (driver, iommu_group) of the device's sysfs
 * directory, read in the directory the scan read (-ENODEV when it is
 * another now), with no symlink followed; -ENAMETOOLONG when it does not
 * fit @len with its NUL.
 */
HIDDEN int pci__readlink(const struct pci_dev *pdev, const char *link,
			 char *buf, size_t len);
/*
 * @path ("uio", "uio/uio0/dev") below the device's sysfs directory, which
 * must be the one the scan read (-ENODEV): opened name by name, never
 * through a symlink (-ELOOP), nor by "." or "..", and without blocking;
 * a directory when @flags has O_DIRECTORY, else a regular file (-EINVAL).
 * Closed with pci__close(), or, made a DIR, with devres__own_dir_close()
 * and one fd less in the ledger.
 */
HIDDEN int pci__open_sub(const struct pci_dev *pdev, const char *path,
			 int flags);
HIDDEN void pci__close(int fd);
/* Whether @err (-errno) says the process is short of fds or memory. */
HIDDEN bool pci__out_of_resources(int err);
/*
 * irq.c: pci_free_irq_vectors() for the vectors' release, which is never
 * refused: a handler left on a vector then stays on its line, and the
 * line's destruction says so.
 */
HIDDEN void pci__free_irq_vectors(struct pci_dev *pdev);
/* A directory beneath the sysfs root, during a scan; closed with close(). */
HIDDEN int pci__open_dir(const char *path);

#endif /* DEVRES_PCI_BACKEND_H */
