/* SPDX-License-Identifier: MIT */
/* What the files of the vfio-states VM test share (vfio-states.c). */
#ifndef VFIO_STATES_H
#define VFIO_STATES_H

#include <stdbool.h>
#include <devres/dma.h>
#include <devres/pci.h>
#include "edu.h"

#define EDU_REG_IRQ_RAISE 0x60
#define VFIO_DEV_FD "anon_inode:[vfio-device]"
#define CONTAINER "/dev/vfio/vfio"

/* The first two edu devices bound to vfio-pci, by name. */
extern char name_a[32], name_b[32];

/* One line per cell: "cell <name>: ok (...)" or "... FAILED: ...". */
void cell(const char *name, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The lowest fd whose /proc/self/fd target is @target, or -1. */
int fd_of(const char *target);
/* The open files whose target is @target (NULL: every fd number). */
int count_fds(const char *target);
/* Lines of /proc/self/maps that contain @what. */
int count_maps(const char *what);
int group_of(const char *name);
const char *group_path(const char *name);
/* The MSI enable bit as the host kernel set it (sysfs), or -1. */
int msi_on(struct pci_dev *pdev);
/* 0 when the group of @name opens, else -errno (-EBUSY: held). */
int second_open(const char *name);
/* Scans @name through VFIO; the device with a reference, or NULL. */
struct pci_dev *scan(const char *name);
/* A factorial completed by an interrupt and a DMA round trip. */
bool works(struct pci_dev *pdev);
int mappings(struct pci_dev *pdev);
bool bind(struct pci_dev *pdev);

/* A fresh scan and bind of A, and what the process held before it. */
struct hand {
	struct pci_dev *pdev;
	struct edu *edu;
	int w0, fds0;
};

bool hand_begin(struct hand *h, const char *name);
bool hand_end(struct hand *h, int *ret_warns);

/* vfio-states-nvme.c: QEMU's NVMe controller raising its vectors. */
#define NVME_VENDOR 0x1b36
#define NVME_DEVICE 0x0010
#define MINI_QUEUES 8 /* the admin queue and 7 I/O queues: vectors 0-7 */

struct nvme_mini_queue {
	uint16_t tail, head;
	uint8_t phase;
	bool created;
};

struct nvme_mini {
	struct pci_dev *pdev;
	void __iomem *bar;
	unsigned int dstrd;
	void *mem; /* each queue's submission page, then its completion page */
	dma_addr_t mem_dma;
	struct nvme_mini_queue q[MINI_QUEUES];
};

extern struct pci_driver nvme_mini_driver;
/* CC.EN 0 then 1, the admin queue afresh, no I/O queue; 0 or -errno. */
int mini_enable(struct nvme_mini *m);
/* A command whose completion interrupts on @vector; 0 or -errno. */
int mini_complete(struct nvme_mini *m, unsigned int vector);
/* Identify commands filling the admin queue, not waited for. */
void mini_burst(struct nvme_mini *m);

/* The classes: vfio-states-calls.c, -hand.c, -fork.c, -reset.c. */
void class1_states(void);
void class1_pairs(void);
void class1_group(void);
void class2_hand(void);
void class3_fork(void);
void class4_threads(void);
/*
 * vfio-states-calls.c: a deletion during each call, a sysfs removal, a
 * group made non-viable.
 */
void class7_deleted_during(void);
void class7_sysfs_remove(void);
void class7_group_non_viable(void);
void on_alarm(int sig);
/* Reset and MSI-X on the NVMe controller @name; how many cells failed. */
void class5_reset(const char *name);
void class6_msix(const char *name);

#endif /* VFIO_STATES_H */
