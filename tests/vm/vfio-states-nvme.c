// SPDX-License-Identifier: MIT
/*
 * vfio-states: the least of an NVMe driver that makes QEMU's NVMe
 * controller raise each of its MSI-X vectors on demand. Vector 0 is the
 * admin queue's: a Get Features completes on it. Vector k > 0 gets an I/O
 * completion queue of its own, and a Flush completes on it. Completions
 * are polled; the interrupt is counted by the cell's handler.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/dma.h>
#include <devres/io.h>
#include "vfio-states.h"

#define REG_CAP 0x00
#define REG_CC 0x14
#define REG_CSTS 0x1c
#define REG_AQA 0x24
#define REG_ASQ 0x28
#define REG_ACQ 0x30
#define DEPTH 16u
#define PAGE 4096u

struct sqe {
	uint8_t opcode, flags;
	uint16_t cid;
	uint32_t nsid;
	uint64_t rsvd, mptr, prp1, prp2;
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

struct cqe {
	uint32_t result, rsvd;
	uint16_t sq_head, sq_id, cid, status;
};

static void write64(struct nvme_mini *m, unsigned int reg, uint64_t v)
{
	writel((uint32_t)v, (char *)m->bar + reg);
	writel((uint32_t)(v >> 32), (char *)m->bar + reg + 4);
}

static uint32_t *doorbell(struct nvme_mini *m, unsigned int q, bool cq)
{
	return (uint32_t *)((char *)m->bar + 0x1000 +
			    (2 * q + cq) * (4u << m->dstrd));
}

static struct sqe *sq_of(struct nvme_mini *m, unsigned int q)
{
	return (struct sqe *)((char *)m->mem + (2 * q) * PAGE);
}

static volatile struct cqe *cq_of(struct nvme_mini *m, unsigned int q)
{
	return (volatile struct cqe *)((char *)m->mem + (2 * q + 1) * PAGE);
}

static dma_addr_t dma_of(struct nvme_mini *m, unsigned int q, bool cq)
{
	return m->mem_dma + (2 * q + cq) * PAGE;
}

static bool wait_csts(struct nvme_mini *m, uint32_t rdy)
{
	for (int i = 0; i < 2000; i++) {
		if ((readl((char *)m->bar + REG_CSTS) & 1) == rdy)
			return true;
		usleep(1000);
	}
	return false;
}

int mini_enable(struct nvme_mini *m)
{
	writel(0, (char *)m->bar + REG_CC);
	if (!wait_csts(m, 0))
		return -ETIMEDOUT;
	memset(m->mem, 0, (2 * MINI_QUEUES) * PAGE);
	memset(m->q, 0, sizeof(m->q));
	for (unsigned int q = 0; q < MINI_QUEUES; q++)
		m->q[q].phase = 1;
	writel((DEPTH - 1) << 16 | (DEPTH - 1), (char *)m->bar + REG_AQA);
	write64(m, REG_ASQ, dma_of(m, 0, false));
	write64(m, REG_ACQ, dma_of(m, 0, true));
	/* 64-byte submission and 16-byte completion entries, 4 KiB pages. */
	writel(6u << 16 | 4u << 20 | 1, (char *)m->bar + REG_CC);
	if (!wait_csts(m, 1))
		return -ETIMEDOUT;
	m->q[0].created = true;
	return 0;
}

/* Submits @e on queue @q and polls its completion; the status code. */
static int exec(struct nvme_mini *m, unsigned int q, struct sqe *e)
{
	struct nvme_mini_queue *s = &m->q[q];
	volatile struct cqe *c;

	e->cid = s->tail;
	memcpy(&sq_of(m, q)[s->tail], e, sizeof(*e));
	s->tail = (uint16_t)((s->tail + 1) % DEPTH);
	wmb(); /* the entry before the doorbell */
	writel(s->tail, doorbell(m, q, false));
	c = &cq_of(m, q)[s->head];
	for (int i = 0; (c->status & 1) != s->phase; i++) {
		if (i == 2000)
			return -ETIMEDOUT;
		usleep(1000);
	}
	rmb(); /* the phase tag before the rest of the entry */
	int status = c->status >> 1;

	s->head = (uint16_t)((s->head + 1) % DEPTH);
	if (!s->head)
		s->phase ^= 1;
	writel(s->head, doorbell(m, q, true));
	return status ? -EIO : 0;
}

/* An I/O queue pair whose completions interrupt on vector @q. */
static int create_queue(struct nvme_mini *m, unsigned int q)
{
	struct sqe cq = { .opcode = 0x05,
			  .prp1 = dma_of(m, q, true),
			  .cdw10 = (DEPTH - 1) << 16 | q,
			  .cdw11 = q << 16 | 3 };
	struct sqe sq = { .opcode = 0x01,
			  .prp1 = dma_of(m, q, false),
			  .cdw10 = (DEPTH - 1) << 16 | q,
			  .cdw11 = q << 16 | 1 };
	int ret = exec(m, 0, &cq);

	if (!ret)
		ret = exec(m, 0, &sq);
	m->q[q].created = !ret;
	return ret;
}

int mini_complete(struct nvme_mini *m, unsigned int vector)
{
	struct sqe get = { .opcode = 0x0a, .cdw10 = 0x07 };
	struct sqe flush = { .opcode = 0x00, .nsid = 1 };
	int ret;

	if (vector >= MINI_QUEUES)
		return -EINVAL;
	if (!vector)
		return exec(m, 0, &get);
	if (!m->q[vector].created) {
		ret = create_queue(m, vector);
		if (ret)
			return ret;
	}
	return exec(m, vector, &flush);
}

void mini_burst(struct nvme_mini *m)
{
	struct nvme_mini_queue *s = &m->q[0];

	/* Identify Controller, 4 KiB each into the last queue's page. */
	for (unsigned int i = 0; i < DEPTH - 1; i++) {
		struct sqe e = { .opcode = 0x06,
				 .cid = (uint16_t)i,
				 .prp1 = dma_of(m, MINI_QUEUES - 1, false),
				 .cdw10 = 1 };

		memcpy(&sq_of(m, 0)[s->tail], &e, sizeof(e));
		s->tail = (uint16_t)((s->tail + 1) % DEPTH);
	}
	wmb();
	writel(s->tail, doorbell(m, 0, false));
}

/* The driver: the BAR, bus mastering and the queues' memory, managed. */
static int mini_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct nvme_mini *m = devm_kzalloc(&pdev->dev, sizeof(*m), GFP_KERNEL);
	int ret;

	(void)id;
	if (!m)
		return -ENOMEM;
	ret = pcim_enable_device(pdev);
	if (!ret)
		ret = pcim_iomap_regions(pdev, 1, "nvme-mini");
	if (!ret)
		ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	m->pdev = pdev;
	m->bar = pcim_iomap_table(pdev)[0];
	m->dstrd = (unsigned int)(readl((char *)m->bar + REG_CAP + 4) & 0xf);
	m->mem = dmam_alloc_coherent(&pdev->dev, 2 * MINI_QUEUES * PAGE,
				     &m->mem_dma, GFP_KERNEL);
	if (!m->mem)
		return -ENOMEM;
	pci_set_master(pdev);
	pci_set_drvdata(pdev, m);
	return 0;
}

static const struct pci_device_id mini_ids[] = {
	{ PCI_DEVICE(NVME_VENDOR, NVME_DEVICE) },
	{ 0 },
};

struct pci_driver nvme_mini_driver = {
	.name = "nvme-mini",
	.id_table = mini_ids,
	.probe = mini_probe,
};
