// SPDX-License-Identifier: MIT
/*
 * The SN-2 driver's PCI glue: enable the function, map BAR 0, become a bus
 * master, find the interrupt; the rest is netdrv_setup(), as on the
 * platform bus. All managed: the bus disables the function at unbind.
 */
#include <devres/pci.h>
#include "netdrv-priv.h"

static const struct pci_device_id netdrv_pci_ids[] = {
	{ PCI_DEVICE(SN_PCI_VENDOR, SN_PCI_DEVICE) },
	{ 0 },
};

/**
 * netdrv_pci_probe() - bind to an SN-2 on PCI
 * @pdev: the function
 * @id: the entry of netdrv_pci_ids that matched
 *
 * Context: the driver core, from a bind.
 * Return: 0, or a negative errno.
 */
static int netdrv_pci_probe(struct pci_dev *pdev,
			    const struct pci_device_id *id)
{
	int ret, irq;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, 1 << 0, "sn2");
	if (ret)
		return dev_err_probe(&pdev->dev, ret, "cannot map BAR 0\n");
	pci_set_master(pdev);
	irq = pci_irq_vector(pdev, 0);
	if (irq < 0)
		return irq;
	return netdrv_setup(&pdev->dev, pcim_iomap_table(pdev)[0], irq);
}

static void netdrv_pci_remove(struct pci_dev *pdev)
{
	netdrv_goodbye(&pdev->dev);
}

struct pci_driver netdrv_pci_driver = {
	.name = "sn2",
	.id_table = netdrv_pci_ids,
	.probe = netdrv_pci_probe,
	.remove = netdrv_pci_remove,
};
