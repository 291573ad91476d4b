// SPDX-License-Identifier: MIT
/*
 * kmb: a PCI mailbox with MSI, written as a kernel driver is. The host
 * posts a message through BAR 0 and rings a doorbell; the device answers
 * in a reply register and signals vector 0. A message buffer of its own
 * (kzalloc) is freed by a managed action. KC_TWIN 1 is its buggy twin,
 * which adds that action with devm_add_action() and returns without
 * freeing the buffer when adding fails.
 */
#include <linux/completion.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#define KMB_VENDOR 0x1b36
#define KMB_DEVICE 0x11e8
#define KMB_DOORBELL 0x00
#define KMB_STATUS 0x04
#define KMB_STATUS_REPLY BIT(0)
#define KMB_REPLY 0x08
#define KMB_MSG 0x10
#define KMB_MSG_WORDS 4

struct kmb {
	void __iomem *bar;
	struct completion reply;
	u32 *buf;
	int nvec;
};

static irqreturn_t kmb_irq(int irq, void *data)
{
	struct kmb *mb = data;

	(void)irq;
	if (!(readl(mb->bar + KMB_STATUS) & KMB_STATUS_REPLY))
		return IRQ_NONE;
	writel(0, mb->bar + KMB_STATUS);
	complete(&mb->reply);
	return IRQ_HANDLED;
}

/* Posts @word (and the rest of the buffer) and rings the doorbell. */
static __maybe_unused void kmb_post(struct kmb *mb, u32 word)
{
	mb->buf[0] = word;
	reinit_completion(&mb->reply);
	memcpy_toio(mb->bar + KMB_MSG, mb->buf, KMB_MSG_WORDS * sizeof(u32));
	writel(1, mb->bar + KMB_DOORBELL);
}

/* The device's answer, or -ETIMEDOUT. */
static __maybe_unused long kmb_wait_reply(struct kmb *mb)
{
	if (!wait_for_completion_timeout(&mb->reply, msecs_to_jiffies(1000)))
		return -ETIMEDOUT;
	return readl(mb->bar + KMB_REPLY);
}

static void kmb_free_buf(void *buf)
{
	kfree(buf);
}

static int kmb_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct kmb *mb;
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	mb = devm_kzalloc(dev, sizeof(*mb), GFP_KERNEL);
	if (!mb)
		return -ENOMEM;
	mb->bar = pcim_iomap_region(pdev, 0, "kmb");
	if (IS_ERR(mb->bar))
		return PTR_ERR(mb->bar);
	mb->buf = kzalloc(KMB_MSG_WORDS * sizeof(u32), GFP_KERNEL);
	if (!mb->buf)
		return -ENOMEM;
#if KC_TWIN
	ret = devm_add_action(dev, kmb_free_buf, mb->buf);
#else
	ret = devm_add_action_or_reset(dev, kmb_free_buf, mb->buf);
#endif
	if (ret)
		return ret;
	init_completion(&mb->reply);
	mb->nvec =
		pci_alloc_irq_vectors(pdev, 1, 2, PCI_IRQ_MSI | PCI_IRQ_MSIX);
	if (mb->nvec < 0)
		return mb->nvec;
	if (!pci_dev_msi_enabled(pdev))
		pci_warn(pdev, "running on INTx\n");
	ret = devm_request_irq(dev, (unsigned int)pci_irq_vector(pdev, 0),
			       kmb_irq, 0, pci_name(pdev), mb);
	if (ret)
		return ret;
	pci_set_drvdata(pdev, mb);
	pci_info(pdev, "mailbox with %d vectors\n", mb->nvec);
	return 0;
}

static const struct pci_device_id kmb_ids[] = {
	{ PCI_VDEVICE(REDHAT, KMB_DEVICE) }, {}
};
MODULE_DEVICE_TABLE(pci, kmb_ids);

static struct pci_driver kmb_driver = {
	.name = "kmb",
	.id_table = kmb_ids,
	.probe = kmb_probe,
};
module_pci_driver(kmb_driver);

MODULE_DESCRIPTION("kcompat test PCI mailbox");
MODULE_LICENSE("MIT");
