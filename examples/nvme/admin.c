// SPDX-License-Identifier: MIT
/*
 * Admin commands: Identify (controller and namespace 1), the number of
 * I/O queues, and the creation and deletion of I/O queue pairs.
 */
#include <errno.h>
#include <string.h>
#include <devres/device.h>
#include <devres/dma.h>
#include "driver.h"

/* An ASCII field of Identify, space padded, as a C string. */
static void id_string(char *out, const uint8_t *in, size_t n)
{
	memcpy(out, in, n);
	out[n] = '\0';
	while (n && out[n - 1] == ' ')
		out[--n] = '\0';
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int identify(struct nvme_ctrl *c, uint32_t cns, uint32_t nsid,
		    dma_addr_t dma)
{
	struct nvme_sqe sqe = {
		.opcode = NVME_ADMIN_IDENTIFY,
		.nsid = nsid,
		.prp1 = dma,
		.cdw10 = cns,
	};

	return nvme_queue_exec(c->admin, &sqe, NULL);
}

/*
 * What the controller is (model, serial, the largest transfer) and the
 * size and block size of namespace 1. The page the controller writes is
 * managed, and given back as soon as it has been read.
 */
int nvme_identify(struct nvme_ctrl *c)
{
	dma_addr_t dma;
	uint8_t *id = dmam_alloc_coherent(c->dev, NVME_PAGE, &dma, GFP_KERNEL);
	uint8_t mdts, flbas;
	int ret;

	if (!id)
		return -ENOMEM;
	ret = identify(c, NVME_ID_CNS_CTRL, 0, dma);
	if (ret)
		goto out;
	id_string(c->sn, id + NVME_IDC_SN, 20);
	id_string(c->mn, id + NVME_IDC_MN, 40);
	id_string(c->fr, id + NVME_IDC_FR, 8);
	mdts = id[NVME_IDC_MDTS];
	c->max_pages = NVME_MAX_PAGES;
	if (mdts && mdts < 6 && (1u << mdts) < c->max_pages)
		c->max_pages = 1u << mdts;
	if (le32(id + NVME_IDC_NN) < 1) {
		ret = -ENODEV;
		goto out;
	}
	c->nsid = 1;
	memset(id, 0, NVME_PAGE);
	ret = identify(c, NVME_ID_CNS_NS, c->nsid, dma);
	if (ret)
		goto out;
	flbas = id[NVME_IDNS_FLBAS] & 0xf;
	c->lba_shift = id[NVME_IDNS_LBAF + 4 * flbas + 2];
	/* Blocks of 4 KiB made of 512-byte to 4 KiB sectors. */
	if (c->lba_shift < 9 || c->lba_shift > 12) {
		ret = -ENODEV;
		goto out;
	}
	c->nblocks = ((uint64_t)le32(id + NVME_IDNS_NSZE) |
		      (uint64_t)le32(id + NVME_IDNS_NSZE + 4) << 32) >>
		     (12 - c->lba_shift);
out:
	dmam_free_coherent(c->dev, NVME_PAGE, id, dma);
	return ret;
}

/* Asks for @count I/O queue pairs; *@count becomes what was granted. */
int nvme_set_queue_count(struct nvme_ctrl *c, unsigned int *count)
{
	struct nvme_sqe sqe = {
		.opcode = NVME_ADMIN_SET_FEATURES,
		.cdw10 = NVME_FEAT_NUM_QUEUES,
		.cdw11 = (*count - 1) | (*count - 1) << 16,
	};
	uint32_t result = 0, nsq, ncq;
	int ret = nvme_queue_exec(c->admin, &sqe, &result);

	if (ret)
		return ret;
	nsq = (result & 0xffff) + 1;
	ncq = (result >> 16) + 1;
	if (nsq < *count)
		*count = nsq;
	if (ncq < *count)
		*count = ncq;
	return 0;
}

static int delete_queue(struct nvme_ctrl *c, uint8_t opcode, uint16_t qid)
{
	struct nvme_sqe sqe = { .opcode = opcode, .cdw10 = qid };

	return nvme_queue_exec(c->admin, &sqe, NULL);
}

/*
 * Creates @q's completion queue (raising MSI-X @vector, unless polled),
 * then its submission queue, and makes it live.
 */
int nvme_create_io_queue(struct nvme_ctrl *c, struct nvme_queue *q,
			 unsigned int vector)
{
	struct nvme_sqe cq = {
		.opcode = NVME_ADMIN_CREATE_CQ,
		.prp1 = q->cq_dma,
		.cdw10 = (uint32_t)(q->depth - 1) << 16 | q->qid,
		.cdw11 = NVME_QUEUE_PHYS_CONTIG |
			 (q->polled ? 0 : NVME_CQ_IRQ_ENABLED | vector << 16),
	};
	struct nvme_sqe sq = {
		.opcode = NVME_ADMIN_CREATE_SQ,
		.prp1 = q->sq_dma,
		.cdw10 = (uint32_t)(q->depth - 1) << 16 | q->qid,
		.cdw11 = NVME_QUEUE_PHYS_CONTIG | (uint32_t)q->qid << 16,
	};
	int ret = nvme_queue_exec(c->admin, &cq, NULL);

	if (ret)
		return ret;
	ret = nvme_queue_exec(c->admin, &sq, NULL);
	if (ret) {
		(void)delete_queue(c, NVME_ADMIN_DELETE_CQ, q->qid);
		return ret;
	}
	atomic_store(&q->live, true);
	return 0;
}

/*
 * Deleting the submission queue makes the controller end the commands of
 * it that it fetched (completed, or aborted with "SQ deletion"); one it
 * never fetched is the caller's to fail. The completion queue goes after
 * it, as the specification requires.
 */
int nvme_delete_io_queue(struct nvme_ctrl *c, struct nvme_queue *q)
{
	int ret;

	atomic_store(&q->live, false);
	ret = delete_queue(c, NVME_ADMIN_DELETE_SQ, q->qid);
	/* Whatever the SQ deletion completed, the waiters take now. */
	nvme_queue_process(q);
	if (!ret)
		ret = delete_queue(c, NVME_ADMIN_DELETE_CQ, q->qid);
	return ret;
}

/* After a reset: the same queues, created again on empty rings. */
int nvme_setup_io_queues(struct nvme_ctrl *c)
{
	unsigned int n = c->nr_io;
	int ret;

	atomic_store(&c->admin->live, true);
	ret = nvme_set_queue_count(c, &n);
	if (ret)
		return ret;
	if (n < c->nr_io)
		return -EIO;
	for (unsigned int i = 0; i < c->nr_io; i++) {
		nvme_queue_restart(c->io[i]);
		ret = nvme_create_io_queue(c, c->io[i], i + 1);
		if (ret)
			return ret;
	}
	return 0;
}
