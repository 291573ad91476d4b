/* SPDX-License-Identifier: MIT */
/*
 * What the files of src/pci share: the private part of a pci_dev, the
 * sysfs access helpers (probe.c), the parsers (parse.c) and the BAR
 * bookkeeping (bars.c). Only src/pci and the parsers' fuzzer include it.
 */
#ifndef DEVRES_PCI_INTERNAL_H
#define DEVRES_PCI_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <devres/pci.h>
#include "base/subsys.h"
#include "backend.h"

/* "bus/pci/devices/" plus the longest address we accept, "ffffffff:ff:1f.7" */
#define PCI_NAME_MAX 16
#define PCI_DEVICES_DIR "bus/pci/devices"

struct pci_dev_private {
	struct pci_dev *pdev;
	char name[PCI_NAME_MAX + 1];
	pthread_mutex_t lock;
	/* Under lock. */
	int enable_cnt;
	int *irqs;
	unsigned int nirqs;
	unsigned int nvec;
	/* Under the list lock of probe.c. */
	struct pci_dev_private *next;
	bool registered;
	bool seen;
	/* Owned by the scan that registers or removes the device. */
	bool inserted[PCI_NUM_RESOURCES];
	bool window[PCI_STD_NUM_BARS];
	/* The backend that took the device at its scan, and its data. */
	const struct pci__backend *backend;
	void *backend_data;
};

/* The backend's operation @op for @pdev, NULL when it has none. */
#define pci__bk(pdev, op) ((pdev)->p->backend ? (pdev)->p->backend->op : NULL)

extern HIDDEN const struct bus_type pci__bus_type;

/* parse.c: pure functions on untrusted bytes (the fuzzer's targets). */
HIDDEN int pci__parse_name(const char *name, unsigned int *ret_domain,
			   unsigned int *ret_bus, unsigned int *ret_devfn);
HIDDEN int pci__parse_resource(const char *buf, size_t len,
			       struct resource *res, unsigned int nres);
HIDDEN int pci__parse_uint(const char *buf, size_t len, unsigned long max,
			   unsigned long *ret);
HIDDEN int pci__parse_header(struct pci_dev *pdev, const uint8_t *cfg,
			     size_t len);

/* probe.c: files of a device, opened beneath the sysfs root. */
HIDDEN int pci__open(const struct pci_dev *pdev, const char *file, int flags);
HIDDEN void pci__close(int fd);
HIDDEN bool pci__readonly(void);
HIDDEN int pci__bus_ready(void);

/* bars.c: BARs into the resource tree, register windows. */
HIDDEN int pci__bars_claim(struct pci_dev *pdev);
HIDDEN void pci__bars_release(struct pci_dev *pdev);

/* irq.c */
HIDDEN void pci__irq_reset(struct pci_dev *pdev);

#endif /* DEVRES_PCI_INTERNAL_H */
