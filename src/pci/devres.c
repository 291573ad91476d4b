// SPDX-License-Identifier: MIT
/*
 * The managed PCI interface: pcim_* calls record what they did against the
 * device and undo it when the binding goes. pci_* calls are never managed.
 */
#include <errno.h>
#include <devres/io.h>
#include "pci.h"

struct pcim_enable {
	struct pci_dev *pdev;
	bool pinned;
};

/*
 * @pinned is read and written under p->lock: pcim_pin_device() finds the
 * node and pins it in one hold of it, so a release that has taken the
 * node off the device either sees it pinned or is never found by the pin.
 */
static void pcim_enable_release(struct device *dev, void *res)
{
	struct pcim_enable *e = res;
	bool pinned;

	(void)dev;
	pthread_mutex_lock(&e->pdev->p->lock);
	pinned = e->pinned;
	pthread_mutex_unlock(&e->pdev->p->lock);
	if (!pinned)
		pci__disable(e->pdev, true);
}

static int unpinned(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)data;
	return !((struct pcim_enable *)res)->pinned;
}

/*
 * pci_disable_device() of an enable only pcim_enable_device() holds: the
 * enables are all alike, so any unpinned node is the one; the newest goes.
 */
void pci__drop_managed_enable(struct pci_dev *dev)
{
	devres_destroy(&dev->dev, pcim_enable_release, unpinned, NULL);
}

int pcim_enable_device(struct pci_dev *pdev)
{
	struct pcim_enable *e;
	int ret;

	if (!pci__dev_ok_to_acquire(pdev, __func__))
		return -EINVAL;
	e = devres_alloc(pcim_enable_release, sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->pdev = pdev;
	ret = pci__enable(pdev, e);
	if (ret)
		devres_free(e);
	return ret;
}

void pcim_pin_device(struct pci_dev *pdev)
{
	struct pcim_enable *e;

	if (!pci__dev_ok_to_change(pdev, __func__))
		return;
	/*
	 * Found and pinned in one hold of p->lock: a pci_disable_device()
	 * drops the node under it, and the release reads @pinned under it,
	 * so the node found is not freed before it is pinned.
	 */
	pthread_mutex_lock(&pdev->p->lock);
	e = devres_find(&pdev->dev, pcim_enable_release, NULL, NULL);
	/* Pinned, the enable is the driver's to keep: no longer managed. */
	if (e && !e->pinned && pdev->p->managed_enables)
		pdev->p->managed_enables--;
	if (e)
		e->pinned = true;
	pthread_mutex_unlock(&pdev->p->lock);
	if (!e)
		devres__warn(&pdev->dev, __func__,
			     "device not enabled by pcim_enable_device()");
}

/* BARs claimed busy: through the io subsystem's managed regions. */
static bool bar_ok(struct pci_dev *pdev, int bar)
{
	return pdev && bar >= 0 && bar < PCI_STD_NUM_BARS &&
	       pci_resource_len(pdev, bar) &&
	       (resource_type(&pdev->resource[bar]) == IORESOURCE_MEM ||
		resource_type(&pdev->resource[bar]) == IORESOURCE_IO);
}

static bool bar_mem(struct pci_dev *pdev, int bar)
{
	return resource_type(&pdev->resource[bar]) == IORESOURCE_MEM;
}

/* pcim_request_region() under the BARs' lock; its node in *@ret_node. */
static int claim(struct pci_dev *pdev, int bar, const char *name,
		 struct devres__region_id *ret_id)
{
	if (!bar_ok(pdev, bar))
		return -EINVAL;
	/*
	 * A claim is made inside whatever the tree holds at its numbers:
	 * for a BAR the scan could not place there (a hostile `resource`
	 * giving it another device's range), inside that device's BAR,
	 * which its own driver could then not claim.
	 */
	if (!pci__bar_placed(pdev, bar)) {
		dev_warn(&pdev->dev,
			 "BAR %d is not in the resource tree (it overlapped "
			 "another resource at the scan, or the device is "
			 "removed): not claimed",
			 bar);
		return -EBUSY;
	}
	return devres__request_region_node(&pdev->dev, bar_mem(pdev, bar),
					   pci_resource_start(pdev, bar),
					   pci_resource_len(pdev, bar), name,
					   "pcim_request_region",
					   "pcim_release_region()", ret_id)
		       ? 0
		       : -EBUSY;
}

int pcim_request_region(struct pci_dev *pdev, int bar, const char *name)
{
	struct devres__region_id id;
	int ret;

	if (!pci__dev_ok_to_acquire(pdev, __func__) ||
	    devres__opt_bad(&pdev->dev, name, __func__, "name"))
		return -EINVAL;
	pci__bars_lock(pdev);
	ret = claim(pdev, bar, name, &id);
	pci__bars_unlock(pdev);
	return ret;
}

void pcim_release_region(struct pci_dev *pdev, int bar)
{
	resource_size_t start, len;

	if (!pci__dev_ok_to_change(pdev, __func__))
		return;
	if (!bar_ok(pdev, bar)) {
		devres__warn(&pdev->dev, __func__, "no such BAR %d", bar);
		return;
	}
	start = pci_resource_start(pdev, bar);
	len = pci_resource_len(pdev, bar);
	pci__bars_lock(pdev);
	devres__devm_release_region_as(&pdev->dev, bar_mem(pdev, bar), start,
				       len, __func__);
	pci__bars_unlock(pdev);
}

/*
 * What a multi-BAR call made of each BAR, by identity: its claim's (node
 * and number), its mapping's node and address. Its undo gives back exactly those, so a
 * BAR given back and taken again by another call since (by hand, or from
 * a signal handler on the call's own thread) stays the other call's.
 */
struct bars_made {
	struct devres__region_id claim[PCI_STD_NUM_BARS];
	void **map[PCI_STD_NUM_BARS];
	void *addr[PCI_STD_NUM_BARS];
};

static int own_map_match(struct device *dev, void *res, void *data)
{
	const struct bars_made *made = data;

	(void)dev;
	for (int bar = 0; bar < PCI_STD_NUM_BARS; bar++)
		if (made->map[bar] == res && *(void **)res == made->addr[bar])
			return 1;
	return 0;
}

static void pcim_bar_release(struct device *dev, void *res);

static void undo_made(struct pci_dev *pdev, const struct bars_made *made)
{
	for (int bar = PCI_STD_NUM_BARS - 1; bar >= 0; bar--) {
		if (made->map[bar])
			(void)devres_release(&pdev->dev, pcim_bar_release,
					     own_map_match, (void *)made);
		if (made->claim[bar].node)
			(void)devres__region_node_release(&pdev->dev,
							  bar_mem(pdev, bar),
							  &made->claim[bar]);
	}
}

int pcim_request_all_regions(struct pci_dev *pdev, const char *name)
{
	struct bars_made made = { 0 };
	int bar, ret = 0;

	if (!pci__dev_ok_to_acquire(pdev, __func__) ||
	    devres__opt_bad(&pdev->dev, name, __func__, "name"))
		return -EINVAL;
	pci__bars_lock(pdev);
	for (bar = 0; bar < PCI_STD_NUM_BARS && !ret; bar++)
		if (bar_ok(pdev, bar))
			ret = claim(pdev, bar, name, &made.claim[bar]);
	if (ret)
		undo_made(pdev, &made);
	pci__bars_unlock(pdev);
	return ret;
}

/*
 * The table of pcim_iomap() is the device's (struct pci_dev_private), not a
 * node: the kernel makes it a devres node on first use, in whatever group
 * is open then, so a driver's group rolled back frees the table under the
 * mappings made outside the group, and their slots with it. Here only the
 * mappings are managed; each clears its own slot when it goes.
 */
void __iomem *const *pcim_iomap_table(struct pci_dev *pdev)
{
	if (!pci__dev_ok_to_acquire(pdev, __func__))
		return NULL;
	return pci__iomap_slots(pdev);
}

/* Clears @addr's slot in the table; whether it was there. */
bool pci__iomap_forget(struct pci_dev *pdev, void *addr)
{
	bool found = false;

	pthread_mutex_lock(&pdev->p->lock);
	for (int i = 0; i < PCI_STD_NUM_BARS; i++) {
		if (pci__iomap_slots(pdev)[i] == addr) {
			pci__iomap_slots(pdev)[i] = NULL;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&pdev->p->lock);
	return found;
}

/* A BAR mapped by pcim_iomap(): unmapped when the binding goes. */
static void pcim_bar_release(struct device *dev, void *res)
{
	struct devres__hand h;
	bool owned;

	/* Only the mapping this node still owns; its slot goes with it. */
	(void)dev;
	(void)pci__bar_unmap(*(void **)res, res, &h, &owned);
}

static int pcim_bar_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(void **)res == data;
}

/*
 * pcim_iomap() under the BARs' lock: the mapping, its node in *@ret_node;
 * NULL with errno set.
 */
static void *map(struct pci_dev *pdev, int bar, unsigned long maxlen,
		 void ***ret_node)
{
	void **node;
	void *addr;
	bool busy;
	int ret;

	if (!bar_ok(pdev, bar) || !bar_mem(pdev, bar)) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&pdev->p->lock);
	busy = pci__iomap_slots(pdev)[bar] != NULL;
	pthread_mutex_unlock(&pdev->p->lock);
	if (busy) {
		errno = EBUSY;
		return NULL;
	}
	node = devres_alloc(pcim_bar_release, sizeof(*node), GFP_KERNEL);
	if (!node) {
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * On success the node is on the device and the mapping in the
	 * BAR's slot, both in the hold that lists it; -EBUSY when another
	 * call took the slot since.
	 */
	ret = pci__bar_map(
		pdev, bar, maxlen,
		&(struct devres__owner){ &pdev->dev, node, pcim_bar_release,
					 "pcim_iomap", "pcim_iounmap()" },
		&addr);
	if (ret) {
		devres_free(node);
		errno = -ret;
		return NULL;
	}
	*ret_node = node;
	return addr;
}

void __iomem *pcim_iomap(struct pci_dev *pdev, int bar, unsigned long maxlen)
{
	void **node;
	void *addr;
	int err;

	if (!pci__dev_ok_to_acquire(pdev, __func__)) {
		errno = EINVAL;
		return NULL;
	}
	pci__bars_lock(pdev);
	addr = map(pdev, bar, maxlen, &node);
	err = errno;
	pci__bars_unlock(pdev);
	errno = err;
	return addr;
}

void pcim_iounmap(struct pci_dev *pdev, void __iomem *addr)
{
	bool found;

	if (!pci__dev_ok_to_change(pdev, __func__) ||
	    devres__arg_bad(&pdev->dev, addr, __func__, "address"))
		return;
	pci__bars_lock(pdev);
	found = pci__iomap_forget(pdev, addr);
	if (found)
		(void)devres_release(&pdev->dev, pcim_bar_release,
				     pcim_bar_match, addr);
	pci__bars_unlock(pdev);
	if (!found)
		devres__warn(&pdev->dev, __func__,
			     "%p is not a pcim_iomap() mapping", addr);
}

int pcim_iomap_regions(struct pci_dev *pdev, int mask, const char *name)
{
	struct bars_made made = { 0 };
	int bar, ret = 0;

	if (!pci__dev_ok_to_acquire(pdev, __func__) ||
	    devres__opt_bad(&pdev->dev, name, __func__, "name"))
		return -EINVAL;
	/*
	 * Claim and mapping of each BAR, and the undo, in one hold of the
	 * BARs' lock: no other managed BAR call comes in between.
	 */
	pci__bars_lock(pdev);
	for (bar = 0; bar < PCI_STD_NUM_BARS && !ret; bar++) {
		if (!(mask & (1 << bar)))
			continue;
		/*
		 * An empty BAR asked for: the kernel's pcim_iomap_region()
		 * maps nothing there and fails the call (since 6.11; before,
		 * it was skipped, and its table slot left NULL unnoticed).
		 */
		if (!pci_resource_len(pdev, bar)) {
			ret = -EINVAL;
			break;
		}
		ret = claim(pdev, bar, name, &made.claim[bar]);
		if (ret)
			break;
		made.addr[bar] = map(pdev, bar, 0, &made.map[bar]);
		if (!made.addr[bar])
			ret = -errno;
		/*
		 * The claim taken meanwhile (the device's resources
		 * released, or it given back by hand): the BAR is not
		 * mapped without it.
		 */
		else if (!devres__region_node_held(&pdev->dev,
						   bar_mem(pdev, bar),
						   &made.claim[bar]))
			ret = -EBUSY;
	}
	/* All or nothing: what this call claimed and mapped goes back. */
	if (ret)
		undo_made(pdev, &made);
	pci__bars_unlock(pdev);
	return ret;
}
