// SPDX-License-Identifier: MIT
/*
 * The block handle: the one object of the driver that is not managed,
 * because it outlives the binding. It counts its users (calls in
 * progress and requests submitted but not reaped); remove() waits for
 * them to reach zero before it cuts the handle from the controller, so
 * no caller is ever inside memory the binding releases.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <devres/device.h>
#include <devres/dma.h>
#include "driver.h"
#include "blk.h"

struct nvme_blk {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct nvme_ctrl *ctrl; /* NULL once unbound */
	unsigned int refs;
	unsigned int calls;    /* calls inside the driver */
	unsigned long pending; /* submitted, not reaped */
	uint64_t nblocks;
	unsigned int nr_queues, max_blocks, resets;
	atomic_uint inflight_at_unbind;
};

struct nvme_blk *nvme_blk_attach(struct nvme_ctrl *c)
{
	struct nvme_blk *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->idle, NULL);
	b->ctrl = c;
	b->refs = 1;
	b->nblocks = c->nblocks;
	b->nr_queues = c->nr_io;
	b->max_blocks = c->max_pages;
	return b;
}

/*
 * Every request was failed or completed by remove(): its submitter reaps
 * it at once. One that does not within 10 s has left the handle behind;
 * the binding goes anyway (its requests are then lost to it).
 */
void nvme_blk_detach(struct nvme_blk *b, unsigned int inflight)
{
	struct timespec t;

	atomic_store(&b->inflight_at_unbind, inflight);
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 10;
	pthread_mutex_lock(&b->lock);
	while ((b->calls || b->pending) &&
	       pthread_cond_timedwait(&b->idle, &b->lock, &t) == 0)
		;
	if (b->calls || b->pending)
		dev_warn(b->ctrl->dev,
			 "unbind: %u call(s), %lu request(s) "
			 "not reaped in 10 s\n",
			 b->calls, b->pending);
	b->resets = atomic_load(&b->ctrl->resets);
	b->ctrl = NULL;
	pthread_mutex_unlock(&b->lock);
	nvme_blk_put(b);
}

struct nvme_blk *nvme_blk_get(struct pci_dev *pdev)
{
	struct nvme_ctrl *c = pci_get_drvdata(pdev);
	struct nvme_blk *b = c ? c->blk : NULL;

	if (b) {
		pthread_mutex_lock(&b->lock);
		b->refs++;
		pthread_mutex_unlock(&b->lock);
	}
	return b;
}

void nvme_blk_put(struct nvme_blk *b)
{
	bool last;

	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	last = !--b->refs;
	pthread_mutex_unlock(&b->lock);
	if (last) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->idle);
		free(b);
	}
}

/*
 * A call begins: the controller, or NULL once unbound. A call that only
 * reaps (@reaping) may still enter after remove() began, to take what
 * remove() failed.
 */
static struct nvme_ctrl *enter(struct nvme_blk *b, bool reaping)
{
	struct nvme_ctrl *c;

	pthread_mutex_lock(&b->lock);
	c = b->ctrl;
	if (c && !reaping && atomic_load(&c->dying))
		c = NULL;
	if (c)
		b->calls++;
	pthread_mutex_unlock(&b->lock);
	return c;
}

static void leave(struct nvme_blk *b, long submitted)
{
	pthread_mutex_lock(&b->lock);
	b->calls--;
	b->pending = (unsigned long)((long)b->pending + submitted);
	if (!b->calls && !b->pending)
		pthread_cond_broadcast(&b->idle);
	pthread_mutex_unlock(&b->lock);
}

uint64_t nvme_blk_capacity(struct nvme_blk *b)
{
	return b->nblocks;
}

unsigned int nvme_blk_queues(struct nvme_blk *b)
{
	return b->nr_queues;
}

unsigned int nvme_blk_max_blocks(struct nvme_blk *b)
{
	return b->max_blocks;
}

unsigned int nvme_blk_resets(struct nvme_blk *b)
{
	struct nvme_ctrl *c = enter(b, true);
	unsigned int n;

	if (!c)
		return b->resets;
	n = atomic_load(&c->resets);
	leave(b, 0);
	return n;
}

int nvme_blk_queue_stats(struct nvme_blk *b, unsigned int qi,
			 unsigned long *ret_irqs,
			 unsigned long *ret_completions)
{
	struct nvme_ctrl *c = enter(b, true);
	struct nvme_queue *q;

	if (!c)
		return -ENODEV;
	if (qi >= c->nr_io) {
		leave(b, 0);
		return -EINVAL;
	}
	q = c->io[qi];
	pthread_mutex_lock(&q->lock);
	*ret_irqs = q->irqs;
	*ret_completions = q->completions;
	pthread_mutex_unlock(&q->lock);
	leave(b, 0);
	return 0;
}

unsigned int nvme_blk_inflight_at_unbind(struct nvme_blk *b)
{
	return atomic_load(&b->inflight_at_unbind);
}

void nvme_blk_drop_doorbell(struct nvme_blk *b)
{
	struct nvme_ctrl *c = enter(b, false);

	if (c) {
		atomic_store(&c->drop_next_doorbell, true);
		leave(b, 0);
	}
}

/*
 * The data's pages for the controller: PRP1 the first, PRP2 the second
 * or, for more, a list from the pool of the pages after the first.
 */
static int map_data(struct nvme_ctrl *c, struct nvme_req *r,
		    struct nvme_sqe *sqe, unsigned int pages)
{
	sqe->prp1 = r->buf_dma;
	if (pages == 2)
		sqe->prp2 = r->buf_dma + NVME_PAGE;
	if (pages <= 2)
		return 0;
	r->prp = dma_pool_alloc(c->prp_pool, GFP_KERNEL, &r->prp_dma);
	if (!r->prp)
		return -ENOMEM;
	for (unsigned int i = 1; i < pages; i++)
		r->prp[i - 1] = r->buf_dma + (dma_addr_t)i * NVME_PAGE;
	sqe->prp2 = r->prp_dma;
	return 0;
}

int nvme_blk_submit(struct nvme_blk *b, unsigned int qi, enum nvme_op op,
		    uint64_t lba, unsigned int n, void *data)
{
	static const uint8_t opcodes[] = { NVME_CMD_READ, NVME_CMD_WRITE,
					   NVME_CMD_FLUSH };
	struct nvme_ctrl *c = enter(b, false);
	struct nvme_sqe sqe = { 0 };
	struct nvme_queue *q;
	struct nvme_req *r;
	uint32_t per = 0;
	int tag, ret;

	if (!c)
		return -ENODEV;
	if (qi >= c->nr_io || (unsigned int)op > NVME_OP_FLUSH ||
	    (op != NVME_OP_FLUSH &&
	     (!n || n > c->max_pages || lba >= c->nblocks ||
	      n > c->nblocks - lba || !data))) {
		leave(b, 0);
		return -EINVAL;
	}
	q = c->io[qi];
	tag = nvme_queue_tag(q);
	if (tag < 0) {
		leave(b, 0);
		return tag;
	}
	r = &q->reqs[tag];
	sqe.opcode = opcodes[op];
	sqe.nsid = c->nsid;
	if (op != NVME_OP_FLUSH) {
		per = 1u << (12 - c->lba_shift);
		r->len = n * NVME_PAGE;
		r->user = op == NVME_OP_READ ? data : NULL;
		r->lba = lba;
		if (op == NVME_OP_WRITE)
			memcpy(r->buf, data, r->len);
		ret = map_data(c, r, &sqe, n);
		if (ret) {
			nvme_queue_untag(q, tag);
			leave(b, 0);
			return ret;
		}
		sqe.cdw10 = (uint32_t)(lba * per);
		sqe.cdw11 = (uint32_t)((lba * per) >> 32);
		sqe.cdw12 = n * per - 1;
	}
	nvme_queue_submit_tag(q, tag, &sqe);
	leave(b, 1);
	return tag;
}

int nvme_blk_reap(struct nvme_blk *b, unsigned int qi, int tag, int *ret_tag,
		  int *ret_status)
{
	struct nvme_ctrl *c = enter(b, true);
	int ret;

	if (!c)
		return -ENODEV;
	if (qi >= c->nr_io) {
		leave(b, 0);
		return -EINVAL;
	}
	for (;;) {
		unsigned int resets = atomic_load(&c->resets);

		ret = nvme_queue_reap(c->io[qi], tag, ret_tag, ret_status, NULL,
				      NULL);
		if (ret != -ETIMEDOUT)
			break;
		/* A command is overdue: unless someone just did, reset. */
		if (atomic_load(&c->resets) == resets &&
		    nvme_ctrl_reset(c) == -ENODEV)
			nvme_queue_fail_all(c->io[qi], -ENODEV);
	}
	leave(b, ret ? 0 : -1);
	return ret;
}

int nvme_blk_rw(struct nvme_blk *b, unsigned int qi, enum nvme_op op,
		uint64_t lba, unsigned int n, void *data)
{
	int tag = nvme_blk_submit(b, qi, op, lba, n, data), got, status, ret;

	if (tag < 0)
		return tag;
	ret = nvme_blk_reap(b, qi, tag, &got, &status);
	return ret ? ret : status;
}
