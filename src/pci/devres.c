// SPDX-License-Identifier: MIT
/*
 * The managed PCI interface: pcim_* calls record what they did against the
 * device and undo it when the binding goes. pci_* calls are never managed.
 */
#include <errno.h>
#include "pci.h"

struct pcim_enable {
	struct pci_dev *pdev;
	bool pinned;
};

static void pcim_enable_release(struct device *dev, void *res)
{
	struct pcim_enable *e = res;

	(void)dev;
	if (!e->pinned)
		pci_disable_device(e->pdev);
}

int pcim_enable_device(struct pci_dev *pdev)
{
	struct pcim_enable *e;
	int ret;

	if (!pdev) {
		devres__warn(NULL, __func__, "NULL device");
		return -EINVAL;
	}
	e = devres_alloc(pcim_enable_release, sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->pdev = pdev;
	ret = pci_enable_device(pdev);
	if (ret) {
		devres_free(e);
		return ret;
	}
	devres_add(&pdev->dev, e);
	return 0;
}

void pcim_pin_device(struct pci_dev *pdev)
{
	struct pcim_enable *e;

	if (!pdev) {
		devres__warn(NULL, __func__, "NULL device");
		return;
	}
	e = devres_find(&pdev->dev, pcim_enable_release, NULL, NULL);
	if (!e) {
		devres__warn(&pdev->dev, __func__,
			     "device not enabled by pcim_enable_device()");
		return;
	}
	e->pinned = true;
}
