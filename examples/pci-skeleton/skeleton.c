// SPDX-License-Identifier: MIT
/*
 * A PCI driver in the kernel's shape, for QEMU's "edu" device: an id
 * table, and a probe that takes everything through managed calls
 * (pcim_enable_device, pcim_iomap_regions, dmam_alloc_coherent,
 * devm_request_irq). There is no remove: when the driver is unbound, or
 * the probe fails half way, the library gives it all back, newest first.
 *
 * Compared with the kernel's version of this driver, only the includes
 * differ.
 */
#include <errno.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include "skeleton.h"

#define EDU_BAR 0
#define EDU_DMA_SIZE 4096

struct edu {
	struct pci_dev *pdev;
	void __iomem *regs;
	void *dma_buf;
	dma_addr_t dma_handle;
};

static int interrupts;

int edu_interrupts(void)
{
	return __atomic_load_n(&interrupts, __ATOMIC_ACQUIRE);
}

static irqreturn_t edu_irq(int irq, void *dev_id)
{
	struct edu *edu = dev_id;
	uint32_t status = readl((char *)edu->regs + EDU_REG_IRQ_STATUS);

	(void)irq;
	if (!status)
		return IRQ_NONE;
	writel(status, (char *)edu->regs + EDU_REG_IRQ_ACK);
	__atomic_add_fetch(&interrupts, 1, __ATOMIC_RELEASE);
	return IRQ_HANDLED;
}

static int edu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct edu *edu;
	uint32_t ident;
	int ret, irq;

	(void)id;
	edu = devm_kzalloc(dev, sizeof(*edu), GFP_KERNEL);
	if (!edu)
		return -ENOMEM;
	edu->pdev = pdev;
	pci_set_drvdata(pdev, edu);

	ret = pcim_enable_device(pdev);
	if (ret)
		return dev_err_probe(dev, ret, "cannot enable\n");
	ret = pcim_iomap_regions(pdev, 1 << EDU_BAR, "edu");
	if (ret)
		return dev_err_probe(dev, ret, "cannot map BAR %d\n", EDU_BAR);
	edu->regs = pcim_iomap_table(pdev)[EDU_BAR];

	ident = readl((char *)edu->regs + EDU_REG_IDENT);
	if (ident != EDU_IDENT)
		return dev_err_probe(dev, -ENODEV, "unknown chip %#x\n", ident);

	edu->dma_buf = dmam_alloc_coherent(dev, EDU_DMA_SIZE, &edu->dma_handle,
					   GFP_KERNEL);
	if (!edu->dma_buf)
		return -ENOMEM;
	writel((uint32_t)edu->dma_handle, (char *)edu->regs + EDU_REG_DMA_SRC);
	writel((uint32_t)(edu->dma_handle >> 32),
	       (char *)edu->regs + EDU_REG_DMA_SRC_HI);
	pci_set_master(pdev);

	irq = pci_irq_vector(pdev, 0);
	if (irq < 0)
		return dev_err_probe(dev, irq, "no interrupt\n");
	ret = devm_request_irq(dev, (unsigned int)irq, edu_irq, 0, "edu", edu);
	if (ret)
		return dev_err_probe(dev, ret, "cannot request irq %d\n", irq);

	dev_info(dev, "edu %x.%x ready, DMA at %#llx\n", ident >> 24,
		 (ident >> 16) & 0xff, (unsigned long long)edu->dma_handle);
	return 0;
}

static const struct pci_device_id edu_ids[] = {
	{ PCI_DEVICE(EDU_VENDOR, EDU_DEVICE) },
	{ 0 },
};

struct pci_driver edu_driver = {
	.name = "edu",
	.id_table = edu_ids,
	.probe = edu_probe,
};
