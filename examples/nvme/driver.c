// SPDX-License-Identifier: MIT
/*
 * The PCI driver: a probe that takes every resource through managed
 * calls, each I/O queue pair in a devres group of its own, and a remove
 * that stops the controller before the bus releases any of it.
 */
#include <errno.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/io.h>
#include "driver.h"
#include "blk.h"

bool nvme_param_poll;
unsigned int nvme_param_queues = 2;
unsigned int nvme_param_timeout_ms = 5000;
atomic_uint nvme_stat_enables, nvme_stat_disables;

/*
 * Deletes one queue pair while the controller runs: the rollback of a
 * pair that did not come up whole. A disabled controller has no queues.
 */
static void delete_queue_action(void *data)
{
	struct nvme_queue *q = data;

	if (atomic_load(&q->ctrl->enabled) && !nvme_ctrl_fatal(q->ctrl))
		(void)nvme_delete_io_queue(q->ctrl, q);
	atomic_store(&q->live, false);
}

/* Disables the controller and counts it only when CSTS.RDY reads 0. */
static void stop(struct nvme_ctrl *c)
{
	if (!nvme_ctrl_disable(c) && !nvme_ctrl_ready(c))
		atomic_fetch_add(&nvme_stat_disables, 1);
}

/*
 * One I/O queue pair, in its own group: its rings, tags, buffers and
 * interrupt handler, and its deletion. When any step fails, the group's
 * release gives back this pair alone, newest first, and the controller
 * goes on with the pairs it has.
 */
static int add_io_queue(struct nvme_ctrl *c, uint16_t depth)
{
	uint16_t qid = (uint16_t)(c->nr_io + 1);
	struct nvme_queue *q;
	void *group;
	int ret;

	group = devres_open_group(c->dev, NULL, GFP_KERNEL);
	if (!group)
		return -ENOMEM;
	q = nvme_queue_alloc(c, qid, depth, !c->use_irq, qid);
	ret = q ? nvme_create_io_queue(c, q, qid) : -ENOMEM;
	if (!ret)
		ret = devm_add_action_or_reset(c->dev, delete_queue_action, q);
	if (ret) {
		devres_release_group(c->dev, group);
		dev_warn(c->dev, "I/O queue %u: %d: rolled back alone\n", qid,
			 ret);
		return ret;
	}
	devres_close_group(c->dev, group);
	c->io[c->nr_io++] = q;
	return 0;
}

static int setup(struct nvme_ctrl *c)
{
	struct pci_dev *pdev = c->pdev;
	unsigned int want = nvme_param_queues, nvec;
	uint16_t depth;
	int ret;

	ret = nvme_ctrl_init_regs(c);
	if (ret)
		return dev_err_probe(c->dev, ret, "not an NVMe controller\n");
	ret = dma_set_mask_and_coherent(c->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	/* A previous owner (a process that died) may have left it enabled. */
	ret = nvme_ctrl_disable(c);
	if (ret)
		return dev_err_probe(c->dev, ret, "cannot disable\n");
	pci_set_master(pdev);
	if (want > NVME_MAX_IO_QUEUES)
		want = NVME_MAX_IO_QUEUES;
	ret = pci_alloc_irq_vectors(pdev, 1, 1 + want, PCI_IRQ_MSIX);
	if (ret < 0)
		return dev_err_probe(c->dev, ret, "no MSI-X vector\n");
	nvec = (unsigned int)ret;
	c->max_pages = 1;
	c->admin = nvme_queue_alloc(c, 0, NVME_ADMIN_DEPTH, false, 0);
	if (!c->admin)
		return -ENOMEM;
	c->prp_pool =
		dmam_pool_create("nvme-prp", c->dev, NVME_PAGE, NVME_PAGE, 0);
	if (!c->prp_pool)
		return -ENOMEM;
	ret = nvme_ctrl_enable(c);
	if (ret)
		return dev_err_probe(c->dev, ret, "cannot enable\n");
	atomic_fetch_add(&nvme_stat_enables, 1);
	atomic_store(&c->admin->live, true);
	ret = nvme_identify(c);
	if (ret)
		return dev_err_probe(c->dev, ret, "identify failed\n");
	if (c->use_irq && want > nvec - 1)
		want = nvec - 1;
	if (!want)
		return -ENOSPC;
	ret = nvme_set_queue_count(c, &want);
	if (ret)
		return ret;
	depth = NVME_CAP_MQES(c->cap) < NVME_IO_DEPTH
			? (uint16_t)NVME_CAP_MQES(c->cap)
			: NVME_IO_DEPTH;
	for (unsigned int i = 0; i < want; i++)
		if (add_io_queue(c, depth))
			break;
	if (!c->nr_io)
		return dev_err_probe(c->dev, -EIO, "no I/O queue came up\n");
	c->blk = nvme_blk_attach(c);
	if (!c->blk)
		return -ENOMEM;
	return 0;
}

static int nvme_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct nvme_ctrl *c;
	int ret;

	(void)id;
	c = devm_kzalloc(dev, sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->pdev = pdev;
	c->dev = dev;
	c->use_irq = !nvme_param_poll;
	c->io_timeout_ms = nvme_param_timeout_ms;
	pthread_mutex_init(&c->reset_lock, NULL);
	ret = pcim_enable_device(pdev);
	if (ret)
		return dev_err_probe(dev, ret, "cannot enable\n");
	ret = pcim_iomap_regions(pdev, 1 << 0, "nvme");
	if (ret)
		return dev_err_probe(dev, ret, "cannot map BAR 0\n");
	c->bar = pcim_iomap_table(pdev)[0];
	ret = setup(c);
	if (ret) {
		/*
		 * The bus turns bus mastering off before it releases what the
		 * probe took, but a controller still enabled would keep its
		 * queues: stop it here, while it still answers.
		 */
		if (atomic_load(&c->enabled))
			stop(c);
		return ret;
	}
	pci_set_drvdata(pdev, c);
	dev_info(dev, "%s %s %s: %llu blocks of 4 KiB, %u I/O queue(s), %s\n",
		 c->mn, c->sn, c->fr, (unsigned long long)c->nblocks, c->nr_io,
		 c->use_irq ? "MSI-X" : "polled");
	return 0;
}

/*
 * Before anything is released: no new command, each queue deleted (the
 * controller ends its commands), a normal shutdown, the controller
 * disabled, whatever is still in flight failed, and the block handle
 * cut once its users have reaped every request they submitted.
 */
static void nvme_remove(struct pci_dev *pdev)
{
	struct nvme_ctrl *c = pci_get_drvdata(pdev);
	unsigned int inflight = 0;

	atomic_store(&c->dying, true);
	pthread_mutex_lock(&c->reset_lock);
	for (unsigned int i = 0; i < c->nr_io; i++) {
		pthread_mutex_lock(&c->io[i]->lock);
		inflight += c->io[i]->inflight;
		pthread_mutex_unlock(&c->io[i]->lock);
	}
	for (unsigned int i = c->nr_io; i-- > 0;)
		atomic_store(&c->io[i]->live, false);
	for (unsigned int i = c->nr_io; i-- > 0;)
		if (atomic_load(&c->enabled) && !nvme_ctrl_fatal(c))
			(void)nvme_delete_io_queue(c, c->io[i]);
	if (atomic_load(&c->enabled))
		nvme_ctrl_shutdown(c);
	stop(c);
	atomic_store(&c->admin->live, false);
	for (unsigned int i = 0; i < c->nr_io; i++)
		nvme_queue_fail_all(c->io[i], -ENODEV);
	nvme_queue_fail_all(c->admin, -ENODEV);
	pthread_mutex_unlock(&c->reset_lock);
	nvme_blk_detach(c->blk, inflight);
}

static const struct pci_device_id nvme_ids[] = {
	{ PCI_DEVICE(NVME_VENDOR, NVME_DEVICE) },
	{ 0 },
};

struct pci_driver nvme_driver = {
	.name = "nvme-vfio",
	.id_table = nvme_ids,
	.probe = nvme_probe,
	.remove = nvme_remove,
};
