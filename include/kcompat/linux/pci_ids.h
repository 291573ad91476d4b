/* SPDX-License-Identifier: MIT */
/*
 * Vendor and device numbers drivers name: the vendors of the PCI ID
 * registry most often met, and the device numbers the drivers tried
 * with these headers use. A driver needing another defines it or adds
 * it here.
 */
#ifndef KCOMPAT_LINUX_PCI_IDS_H
#define KCOMPAT_LINUX_PCI_IDS_H

#define PCI_VENDOR_ID_INTEL 0x8086
#define PCI_VENDOR_ID_AMD 0x1022
#define PCI_VENDOR_ID_REDHAT 0x1b36
#define PCI_VENDOR_ID_REDHAT_QUMRANET 0x1af4
#define PCI_VENDOR_ID_CAVIUM 0x177d
#define PCI_VENDOR_ID_NVIDIA 0x10de
#define PCI_VENDOR_ID_BROADCOM 0x14e4
#define PCI_VENDOR_ID_XILINX 0x10ee
#define PCI_VENDOR_ID_SYNOPSYS 0x16c3
#define PCI_VENDOR_ID_MELLANOX 0x15b3
#define PCI_VENDOR_ID_QCOM 0x17cb
#define PCI_VENDOR_ID_SAMSUNG 0x144d
#define PCI_VENDOR_ID_ATI 0x1002
#define PCI_VENDOR_ID_VIA 0x1106
#define PCI_VENDOR_ID_ALI 0x10b9

#define PCI_DEVICE_ID_INTEL_ESB_9 0x25ab
#define PCI_DEVICE_ID_AMD_LX_AES 0x2082

#define PCI_CLASS_SYSTEM_OTHER 0x0880
#define PCI_CLASS_SERIAL_USB 0x0c03

#endif /* KCOMPAT_LINUX_PCI_IDS_H */
