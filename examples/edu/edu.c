// SPDX-License-Identifier: MIT
/*
 * A driver for QEMU's edu device in the kernel's shape: an id table and a
 * probe that takes everything through managed calls, and no remove. It
 * does not know how it reaches the device: through VFIO on a real kernel
 * (pci_vfio_enable()), through UIO (pci_uio_enable()), or through a fake
 * sysfs tree with a register model of the device.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/io.h>
#include <devres/irq.h>
#include "edu.h"

unsigned int edu_irq_types = PCI_IRQ_MSI | PCI_IRQ_INTX;
unsigned int edu_buf_pages = 2;

static irqreturn_t edu_irq(int irq, void *dev_id)
{
	struct edu *edu = dev_id;
	uint32_t status = readl((char *)edu->regs + EDU_REG_IRQ_STATUS);

	(void)irq;
	if (!status)
		return IRQ_NONE;
	writel(status, (char *)edu->regs + EDU_REG_IRQ_ACK);
	pthread_mutex_lock(&edu->lock);
	edu->pending |= status;
	edu->irqs++;
	pthread_cond_broadcast(&edu->cond);
	pthread_mutex_unlock(&edu->lock);
	return IRQ_HANDLED;
}

/* Waits up to 2 s of the host's time for interrupt status @bit. */
static int edu_wait(struct edu *edu, uint32_t bit)
{
	struct timespec t;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 2;
	pthread_mutex_lock(&edu->lock);
	while (!(edu->pending & bit) && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&edu->cond, &edu->lock, &t);
	ret = edu->pending & bit ? 0 : -ETIMEDOUT;
	edu->pending &= ~bit;
	pthread_mutex_unlock(&edu->lock);
	return ret;
}

int edu_factorial(struct edu *edu, uint32_t n, uint32_t *ret)
{
	int err;

	writel(n, (char *)edu->regs + EDU_REG_FACT);
	err = edu_wait(edu, EDU_IRQ_FACT);
	if (!err)
		*ret = readl((char *)edu->regs + EDU_REG_FACT);
	return err;
}

int edu_dma(struct edu *edu, dma_addr_t addr, uint32_t dev_off, uint32_t len,
	    bool to_ram)
{
	uint32_t dev = EDU_BUF_ADDR + dev_off;
	char *r = (char *)edu->regs;

	if (!edu->buf)
		return -EOPNOTSUPP;
	if (!len || dev_off + len > EDU_XFER_MAX)
		return -EINVAL;
	writeq(to_ram ? dev : addr, r + EDU_REG_DMA_SRC);
	writeq(to_ram ? addr : dev, r + EDU_REG_DMA_DST);
	writeq(len, r + EDU_REG_DMA_CNT);
	writeq(EDU_DMA_RUN | EDU_DMA_IRQ | (to_ram ? EDU_DMA_TO_RAM : 0),
	       r + EDU_REG_DMA_CMD);
	return edu_wait(edu, EDU_IRQ_DMA);
}

static int edu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct edu *edu;
	uint32_t ident, live;
	int ret, nvec;

	(void)id;
	edu = devm_kzalloc(dev, sizeof(*edu), GFP_KERNEL);
	if (!edu)
		return -ENOMEM;
	edu->pdev = pdev;
	pthread_mutex_init(&edu->lock, NULL);
	pthread_cond_init(&edu->cond, NULL);

	ret = pcim_enable_device(pdev);
	if (ret)
		return dev_err_probe(dev, ret, "cannot enable\n");
	ret = pcim_iomap_regions(pdev, 1 << 0, "edu");
	if (ret)
		return dev_err_probe(dev, ret, "cannot map BAR 0\n");
	edu->regs = pcim_iomap_table(pdev)[0];

	ident = readl((char *)edu->regs + EDU_REG_IDENT);
	if (ident != EDU_IDENT)
		return dev_err_probe(dev, -ENODEV, "unknown chip %#x\n", ident);
	/*
	 * The device has the inverse ready at the next read; a register model
	 * behind a file (a fake tree's) makes it on another thread: allow it
	 * a moment.
	 */
	writel(0x5a5aa5a5u, (char *)edu->regs + EDU_REG_LIVENESS);
	live = readl((char *)edu->regs + EDU_REG_LIVENESS);
	for (int i = 0; i < 1000 && live != ~0x5a5aa5a5u; i++) {
		usleep(1000);
		live = readl((char *)edu->regs + EDU_REG_LIVENESS);
	}
	if (live != ~0x5a5aa5a5u)
		return dev_err_probe(dev, -EIO, "not alive: %#x\n", live);

	/*
	 * edu has no reset: a DMA started by a previous owner (a process
	 * that died) may still run, and its interrupt status stays set.
	 */
	for (int i = 0; i < 200 && (readl((char *)edu->regs + EDU_REG_DMA_CMD) &
				    EDU_DMA_RUN);
	     i++)
		usleep(10 * 1000);
	writel(readl((char *)edu->regs + EDU_REG_IRQ_STATUS),
	       (char *)edu->regs + EDU_REG_IRQ_ACK);

	/*
	 * Where DMA cannot be confined (UIO without physical addresses
	 * allowed) the bus refuses the mask: the factorial unit and the
	 * interrupts still work, without a buffer.
	 */
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(EDU_DMA_BITS));
	if (ret) {
		dev_info(dev, "no DMA (%d): factorials and interrupts only\n",
			 ret);
	} else {
		edu->buf_size =
			(edu_buf_pages ? edu_buf_pages : 1) * EDU_BUF_SIZE;
		edu->buf = dmam_alloc_coherent(dev, edu->buf_size,
					       &edu->buf_dma, GFP_KERNEL);
		if (!edu->buf)
			return -ENOMEM;
		edu->pool = dmam_pool_create("edu", dev, EDU_BLOCK, 64, 0);
		if (!edu->pool)
			return -ENOMEM;
	}
	/* MSI is a write to memory: bus mastering is needed even without DMA. */
	pci_set_master(pdev);

	nvec = pci_alloc_irq_vectors(pdev, 1, 1, edu_irq_types);
	if (nvec < 0)
		return dev_err_probe(dev, nvec, "no interrupt vector\n");
	ret = devm_request_irq(dev, (unsigned int)pci_irq_vector(pdev, 0),
			       edu_irq, 0, "edu", edu);
	if (ret)
		return dev_err_probe(dev, ret, "cannot request irq\n");
	/* A factorial raises an interrupt when it is done. */
	writel(EDU_STATUS_IRQFACT, (char *)edu->regs + EDU_REG_STATUS);
	pci_set_drvdata(pdev, edu);
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
