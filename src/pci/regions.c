// SPDX-License-Identifier: MIT
/*
 * The unmanaged BAR claims, pci_request_region() and its kin: as
 * pcim_request_region() (devres.c), a claim is made only inside a BAR the
 * scan placed in the resource tree, so that it lands in the BAR and never
 * in whatever else the tree holds at the BAR's numbers (another device's
 * BAR, for a BAR a hostile `resource` gave its range). A release of a BAR
 * that is not placed could only find another's claim there: refused too.
 */
#include <errno.h>
#include "pci.h"

/* A BAR with a range: 1; none (nothing to claim): 0; out of range: -1. */
static int bar_kind(struct pci_dev *pdev, int bar)
{
	if (bar < 0 || bar >= PCI_STD_NUM_BARS)
		return -1;
	if (!pci_resource_len(pdev, bar))
		return 0;
	return resource_type(&pdev->resource[bar]) == IORESOURCE_MEM ||
			       resource_type(&pdev->resource[bar]) ==
				       IORESOURCE_IO
		       ? 1
		       : 0;
}

static bool is_mem(const struct pci_dev *pdev, int bar)
{
	return resource_type(&pdev->resource[bar]) == IORESOURCE_MEM;
}

static int request_one(struct pci_dev *pdev, int bar, const char *name,
		       const char *func)
{
	resource_size_t start = pci_resource_start(pdev, bar);
	resource_size_t len = pci_resource_len(pdev, bar);
	struct resource *r;

	if (!pci__bar_placed(pdev, bar)) {
		dev_warn(&pdev->dev,
			 "%s: BAR %d is not in the resource tree (it "
			 "overlapped another resource at the scan, or the "
			 "device is removed): not claimed",
			 func, bar);
		return -EBUSY;
	}
	r = is_mem(pdev, bar) ? request_mem_region(start, len, name)
			      : request_region(start, len, name);
	return r ? 0 : -EBUSY;
}

static void release_one(struct pci_dev *pdev, int bar, const char *func)
{
	resource_size_t start = pci_resource_start(pdev, bar);
	resource_size_t len = pci_resource_len(pdev, bar);

	if (!pci__bar_placed(pdev, bar)) {
		devres__warn(&pdev->dev, func,
			     "BAR %d is not in the resource tree: it was "
			     "never claimed",
			     bar);
		return;
	}
	/* Its WARNs name the caller's call, not the io layer's. */
	devres__release_region_as(&pdev->dev, is_mem(pdev, bar), start, len,
				  func);
}

int pci_request_region(struct pci_dev *pdev, int bar, const char *name)
{
	int kind;

	if (!pci__dev_ok(pdev, __func__) ||
	    devres__opt_bad(&pdev->dev, name, __func__, "name"))
		return -EINVAL;
	kind = bar_kind(pdev, bar);
	if (kind < 0)
		return -EINVAL;
	/* No range, nothing to claim: the kernel's says 0 too. */
	if (!kind)
		return 0;
	return request_one(pdev, bar, name, __func__);
}

void pci_release_region(struct pci_dev *pdev, int bar)
{
	int kind;

	if (!pci__dev_ok(pdev, __func__))
		return;
	kind = bar_kind(pdev, bar);
	if (kind < 0)
		devres__warn(&pdev->dev, __func__, "no such BAR %d", bar);
	if (kind > 0)
		release_one(pdev, bar, __func__);
}

int pci_request_regions(struct pci_dev *pdev, const char *name)
{
	int bar, ret = 0;

	if (!pci__dev_ok(pdev, __func__) ||
	    devres__opt_bad(&pdev->dev, name, __func__, "name"))
		return -EINVAL;
	for (bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
		if (bar_kind(pdev, bar) <= 0)
			continue;
		ret = request_one(pdev, bar, name, __func__);
		if (ret)
			break;
	}
	if (!ret)
		return 0;
	/* All or nothing: the BARs claimed here go back. */
	while (bar-- > 0)
		if (bar_kind(pdev, bar) > 0)
			release_one(pdev, bar, __func__);
	return ret;
}

void pci_release_regions(struct pci_dev *pdev)
{
	if (!pci__dev_ok(pdev, __func__))
		return;
	for (int bar = 0; bar < PCI_STD_NUM_BARS; bar++)
		if (bar_kind(pdev, bar) > 0)
			release_one(pdev, bar, __func__);
}
