// SPDX-License-Identifier: MIT
/*
 * kdma: a DMA engine with sixteen channels, each with a coherent
 * descriptor ring, a pool of descriptors and one completion interrupt,
 * written as a kernel driver is. Its buggy twins: KC_TWIN 1 returns
 * -EINVAL when devm_kcalloc() fails; KC_TWIN 2 keeps an unmanaged
 * kcalloc() table that it frees in remove but leaks on its error paths.
 */
#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#define KDMA_NR_CHANS 16
#define KDMA_RING_SIZE 256
#define KDMA_CHAN_BASE(i) (0x100 + (i)*0x10)
#define KDMA_CHAN_RING_LO(i) (KDMA_CHAN_BASE(i) + 0x0)
#define KDMA_CHAN_RING_HI(i) (KDMA_CHAN_BASE(i) + 0x4)
#define KDMA_CHAN_CTRL(i) (KDMA_CHAN_BASE(i) + 0x8)
#define KDMA_CHAN_CTRL_EN BIT(0)
#define KDMA_IRQ_STATUS 0x00

struct kdma_chan {
	struct list_head node;
	int id;
	void *ring;
	dma_addr_t ring_dma;
};

struct kdma {
	void __iomem *base;
	struct dma_pool *desc_pool;
	struct kdma_chan *chans;
	struct list_head free_chans;
	spinlock_t lock;
	u32 *slot_map; /* KC_TWIN 2: unmanaged */
	unsigned long completions;
};

static irqreturn_t kdma_irq(int irq, void *data)
{
	struct kdma *d = data;
	unsigned long flags;
	u32 status;

	(void)irq;
	status = readl(d->base + KDMA_IRQ_STATUS);
	if (!status)
		return IRQ_NONE;
	spin_lock_irqsave(&d->lock, flags);
	d->completions += hweight32(status);
	spin_unlock_irqrestore(&d->lock, flags);
	writel(0, d->base + KDMA_IRQ_STATUS);
	return IRQ_HANDLED;
}

static void kdma_stop(void *data)
{
	struct kdma *d = data;

	for (int i = 0; i < KDMA_NR_CHANS; i++)
		writel(0, d->base + KDMA_CHAN_CTRL(i));
}

#if KC_TWIN != 2
static void kdma_free_map(void *map)
{
	kfree(map);
}
#endif

static int kdma_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct kdma *d;
	int irq, ret;

	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(32));
	if (ret)
		return ret;
	d = devm_kzalloc(dev, sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->chans =
		devm_kcalloc(dev, KDMA_NR_CHANS, sizeof(*d->chans), GFP_KERNEL);
	if (!d->chans)
#if KC_TWIN == 1
		return -EINVAL; /* the bug: not what failed */
#else
		return -ENOMEM;
#endif
	d->slot_map = kcalloc(KDMA_NR_CHANS, sizeof(u32), GFP_KERNEL);
	if (!d->slot_map)
		return -ENOMEM;
#if KC_TWIN != 2
	ret = devm_add_action_or_reset(dev, kdma_free_map, d->slot_map);
	if (ret)
		return ret;
#endif
	d->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(d->base))
		return PTR_ERR(d->base);
	d->desc_pool = dmam_pool_create("kdma-desc", dev, 64, 64, 0);
	if (!d->desc_pool)
		return -ENOMEM;
	INIT_LIST_HEAD(&d->free_chans);
	spin_lock_init(&d->lock);
	for (int i = 0; i < KDMA_NR_CHANS; i++) {
		struct kdma_chan *c = &d->chans[i];

		c->id = i;
		c->ring = dmam_alloc_coherent(dev, KDMA_RING_SIZE, &c->ring_dma,
					      GFP_KERNEL);
		if (!c->ring)
			return -ENOMEM;
		writel(lower_32_bits(c->ring_dma),
		       d->base + KDMA_CHAN_RING_LO(i));
		writel(upper_32_bits(c->ring_dma),
		       d->base + KDMA_CHAN_RING_HI(i));
		d->slot_map[i] = (u32)i;
		list_add_tail(&c->node, &d->free_chans);
	}
	irq = platform_get_irq(pdev, 0);
	if (irq < 0)
		return irq;
	ret = devm_request_irq(dev, (unsigned int)irq, kdma_irq, 0,
			       dev_name(dev), d);
	if (ret)
		return ret;
	for (int i = 0; i < KDMA_NR_CHANS; i++)
		writel(KDMA_CHAN_CTRL_EN, d->base + KDMA_CHAN_CTRL(i));
	ret = devm_add_action_or_reset(dev, kdma_stop, d);
	if (ret)
		return ret;
	platform_set_drvdata(pdev, d);
	return 0;
}

#if KC_TWIN == 2
static void kdma_remove(struct platform_device *pdev)
{
	struct kdma *d = platform_get_drvdata(pdev);

	kfree(d->slot_map);
}
#endif

static const struct of_device_id kdma_of_match[] = { { .compatible = "kc,"
								     "kdma" },
						     {} };
MODULE_DEVICE_TABLE(of, kdma_of_match);

static struct platform_driver kdma_driver = {
	.probe = kdma_probe,
#if KC_TWIN == 2
	.remove = kdma_remove,
#endif
	.driver = {
		.name = "kdma",
		.of_match_table = kdma_of_match,
	},
};
module_platform_driver(kdma_driver);

MODULE_DESCRIPTION("kcompat test DMA engine");
MODULE_LICENSE("MIT");
