// SPDX-License-Identifier: MIT
/*
 * A device's BARs in the process: each enters the resource tree (memory
 * BARs iomem_resource, I/O BARs ioport_resource), and a memory BAR with a
 * resourceN file becomes a register window, so that pcim_iomap() and
 * devm_ioremap() reach it.
 *
 * The window goes in first: inserting the BAR's equal range afterwards
 * puts the window below it, and remove_resource() at the end leaves the
 * window in place for iomem_window_remove(). A BAR that does not fit the
 * tree (a hostile tree's overlaps, a real tree's disabled ROM) or whose
 * window cannot be made is left out of it; the device is still usable
 * through config space.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <devres/io.h>
#include "pci.h"

/* Set on a BAR the kernel has not placed: there is nothing to insert. */
#define IORESOURCE_DISABLED 0x10000000ul

/* A backend's BAR: its fd (the backend keeps it) at the region's offset. */
static void add_backend_window(struct pci_dev *pdev, int bar)
{
	struct resource *r = &pdev->resource[bar];
	uint64_t size;
	off_t off;
	int fd;

	if (pdev->p->backend->bar_window(pdev, pdev->p->backend_data, bar, &fd,
					 &off, &size))
		return;
	if (size >= resource_size(r) &&
	    !iomem_window_add(r->start, resource_size(r), fd, off,
			      pdev->p->name))
		pdev->p->window[bar] = true;
}

static void add_window(struct pci_dev *pdev, int bar)
{
	struct resource *r = &pdev->resource[bar];
	char file[16];
	struct stat st;
	int fd;

	if (pdev->p->backend) {
		add_backend_window(pdev, bar);
		return;
	}
	snprintf(file, sizeof(file), "resource%d", bar);
	fd = pci__open(pdev, file, O_RDWR);
	if (fd < 0)
		return;
	/* A short file would fault past its end: io refuses it too. */
	if (!fstat(fd, &st) && (uint64_t)st.st_size >= resource_size(r) &&
	    !iomem_window_add(r->start, resource_size(r), fd, 0, pdev->p->name))
		pdev->p->window[bar] = true;
	pci__close(fd);
}

int pci__bars_claim(struct pci_dev *pdev)
{
	for (int i = 0; i < PCI_NUM_RESOURCES; i++) {
		struct resource *r = &pdev->resource[i];
		struct resource *root;

		if (!r->flags || !r->end ||
		    (r->flags & (IORESOURCE_UNSET | IORESOURCE_DISABLED)))
			continue;
		r->name = pdev->p->name;
		if (resource_type(r) == IORESOURCE_MEM)
			root = &iomem_resource;
		else if (resource_type(r) == IORESOURCE_IO)
			root = &ioport_resource;
		else
			continue;
		if (i < PCI_STD_NUM_BARS && root == &iomem_resource &&
		    !pci__readonly())
			add_window(pdev, i);
		pdev->p->inserted[i] = insert_resource(root, r) == 0;
	}
	return 0;
}

void pci__bars_release(struct pci_dev *pdev)
{
	for (int i = 0; i < PCI_NUM_RESOURCES; i++) {
		if (pdev->p->inserted[i])
			(void)remove_resource(&pdev->resource[i]);
		pdev->p->inserted[i] = false;
		if (i < PCI_STD_NUM_BARS && pdev->p->window[i])
			(void)iomem_window_remove(pdev->resource[i].start);
		if (i < PCI_STD_NUM_BARS)
			pdev->p->window[i] = false;
	}
}
