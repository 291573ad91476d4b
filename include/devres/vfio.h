/* SPDX-License-Identifier: MIT */
/*
 * Real PCI devices through VFIO: a device the host bound to vfio-pci is
 * bound by an ordinary struct pci_driver, its config space, BARs,
 * interrupt vectors and DMA going through the VFIO device fd and the
 * IOMMU (docs/vfio.md).
 */
#ifndef DEVRES_VFIO_H
#define DEVRES_VFIO_H

#include <stdbool.h>
#include <stdint.h>
#include <devres/pci.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * pci_vfio_enable() - reach devices bound to vfio-pci through VFIO
 *
 * From now on the PCI scan (pci_bus_scan(), pci_bus_scan_device()) takes
 * each device whose sysfs `driver` link names vfio-pci through VFIO: it
 * opens the device's IOMMU group (/dev/vfio/N, which must be viable:
 * every device of the group bound to vfio-pci or to nothing; the one that
 * is not is named in an info line), gives the group a container of its
 * own with the type1 IOMMU, and gets the device's fd. Config space is the
 * VFIO config region; pcim_iomap() and pci_iomap() map each BAR that VFIO
 * can mmap whole from the device fd (a BAR it cannot is refused:
 * pcim_iomap() of it fails); pci_alloc_irq_vectors() sets up
 * MSI-X, MSI or INTx vectors as eventfd interrupt lines; the device's DMA
 * ops map every DMA buffer into the group's IOMMU domain below the
 * device's mask. Devices scanned earlier, and devices bound to another
 * driver, are not affected. The device fd, the group and the container
 * belong to the registered device and are closed when it is removed.
 *
 * Context: any thread, before the scan that should take the devices.
 * Return: 0.
 */
DEVRES_API int pci_vfio_enable(void);

/**
 * pci_dev_is_vfio() - whether a device is reached through VFIO
 * @pdev: a PCI device, or NULL
 *
 * Tells whether pci_bus_scan() took @pdev through the VFIO backend (its
 * config space, BARs, interrupts and DMA go through the device's VFIO fd
 * and its group's container) rather than through sysfs files.
 *
 * Context: any thread.
 * Return: true when the scan took @pdev through VFIO; false otherwise, and
 * for NULL; false with a WARN for a device never initialized or released,
 * or, in a child of fork(), a device of its parent.
 */
DEVRES_API bool pci_dev_is_vfio(struct pci_dev *pdev);

/**
 * pci_vfio_dma_mappings() - what the IOMMU maps for a device's group
 * @pdev: a device reached through VFIO
 * @ret_bytes: where to store the bytes mapped, or NULL
 *
 * Counts the mappings the library made in the container of @pdev's IOMMU
 * group (shared by the devices of the group): each coherent buffer, pool
 * block and streaming mapping is one until it is freed or unmapped.
 *
 * Context: any thread.
 * Return: the number of mappings; -ENODEV when @pdev is not reached
 * through VFIO; -EINVAL for NULL, a device never initialized or released,
 * or a bad @ret_bytes (WARNed); -ECHILD in a child of fork() for a device
 * of its parent (WARNed).
 */
DEVRES_API int pci_vfio_dma_mappings(struct pci_dev *pdev, uint64_t *ret_bytes);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_VFIO_H */
