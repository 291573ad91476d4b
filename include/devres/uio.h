/* SPDX-License-Identifier: MIT */
/*
 * Real PCI devices through UIO: a device the host bound to
 * uio_pci_generic is bound by an ordinary struct pci_driver, its BARs
 * mapped from sysfs, its INTx line read from /dev/uioN, and its DMA
 * refused unless the program accepts physical addresses (docs/uio.md).
 */
#ifndef DEVRES_UIO_H
#define DEVRES_UIO_H

#include <stdbool.h>
#include <devres/pci.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The program accepts that a device reached through UIO is given physical
 * addresses for DMA: no IOMMU confines it.
 */
#define PCI_UIO_DMA_PHYS 0x1u

/**
 * pci_uio_enable() - reach devices bound to uio_pci_generic through UIO
 * @dev_dir: the directory of the uioN device nodes, or NULL for "/dev"
 * @flags: 0, or PCI_UIO_DMA_PHYS to allow DMA by physical address
 *
 * From now on the PCI scan (pci_bus_scan(), pci_bus_scan_device()) takes
 * each device whose sysfs `driver` link names uio_pci_generic through UIO:
 * it finds the device's uioN in its sysfs `uio` directory, opens
 * @dev_dir/uioN (a character device must have the number sysfs gives it)
 * and keeps that fd while the device is registered. Config space and BARs
 * are the device's sysfs files, as without the backend; enabling writes
 * nothing (uio_pci_generic enabled the device when it bound it).
 * pci_alloc_irq_vectors() gives one INTx vector, a line read from the uio
 * fd: at each interrupt uio_pci_generic masks INTx (the command register's
 * INTx disable bit), and the line clears that bit through config space
 * once the handlers have run, as the kernel's level-triggered flow unmasks
 * (uio_pci_generic takes no unmask write on the fd). MSI and MSI-X cannot
 * be had through UIO.
 * When the binding goes, bus mastering is switched off and INTx masked
 * before the managed resources are released.
 *
 * Without PCI_UIO_DMA_PHYS the device's DMA is refused: dma_set_mask()
 * fails with -EIO and every mapping with -EPERM. With it, the device's DMA
 * ops are devres_dma_pagemap_ops(): handles are physical addresses, which
 * needs CAP_SYS_ADMIN and memory that stays put, and gives the device the
 * run of all memory unless the host's IOMMU confines it (docs/uio.md).
 * Devices scanned earlier, and devices bound to another driver, are not
 * affected. When both this and pci_vfio_enable() were called, a device is
 * offered to the one called first, then to the other.
 *
 * Called again, it changes @dev_dir and @flags for the scans that follow,
 * as long as no device is held through UIO (all were removed and put).
 *
 * Context: any thread, before the scan that should take the devices.
 * Return: 0; -EINVAL for an unknown flag or an empty @dev_dir; -EBUSY when
 * devices are held through UIO and @dev_dir or @flags differ from theirs;
 * -ENOSPC when the PCI bus has no room for another backend; -ENOMEM.
 */
DEVRES_API int pci_uio_enable(const char *dev_dir, unsigned int flags);

/**
 * pci_dev_is_uio() - whether a device is reached through UIO
 * @pdev: a PCI device, or NULL
 *
 * Tells whether pci_bus_scan() took @pdev through the UIO backend (its
 * interrupt comes from its /dev/uioN, its DMA is refused or physical)
 * rather than through sysfs files alone or VFIO.
 *
 * Context: any thread.
 * Return: true when the scan took @pdev through UIO; false otherwise, and
 * for NULL; false with a WARN for a device never initialized or released,
 * or, in a child of fork(), a device of its parent.
 */
DEVRES_API bool pci_dev_is_uio(struct pci_dev *pdev);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_UIO_H */
