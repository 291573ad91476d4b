/* SPDX-License-Identifier: MIT */
/* The driver of skeleton.c, for main.c (a kernel module would register it). */
#ifndef PCI_SKELETON_H
#define PCI_SKELETON_H

#include <devres/pci.h>

/* QEMU's "edu" teaching device: what skeleton.c drives. */
#define EDU_VENDOR 0x1234
#define EDU_DEVICE 0x11e8
#define EDU_IDENT 0x010000edu

#define EDU_REG_IDENT 0x00
#define EDU_REG_IRQ_STATUS 0x24
#define EDU_REG_IRQ_ACK 0x64
#define EDU_REG_DMA_SRC 0x80
#define EDU_REG_DMA_SRC_HI 0x84

extern struct pci_driver edu_driver;

/* Interrupts the driver handled, for main.c to wait on. */
int edu_interrupts(void);

#endif /* PCI_SKELETON_H */
