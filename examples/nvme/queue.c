// SPDX-License-Identifier: MIT
/*
 * Queue pairs: a submission ring and a completion ring in DMA-coherent
 * memory, their doorbells in BAR 0, tags with their bounce buffers, and
 * the interrupt vector that says the completion ring moved (or none: the
 * waiter polls). Everything is taken with managed calls, so a queue the
 * probe opens in a devres group goes with its group.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/irq.h>
#include "driver.h"

static void now_plus(struct timespec *t, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static bool past(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return n.tv_sec > t->tv_sec ||
	       (n.tv_sec == t->tv_sec && n.tv_nsec >= t->tv_nsec);
}

/* The request is over: its PRP list goes back to the pool at once. */
static void finish(struct nvme_queue *q, struct nvme_req *r, int status,
		   uint32_t result)
{
	r->result = result;
	if (r->prp) {
		dma_pool_free(q->ctrl->prp_pool, r->prp, r->prp_dma);
		r->prp = NULL;
	}
	r->status = status;
	r->done = true;
	q->inflight--;
}

/*
 * Takes the completions the controller posted, with q->lock held. The
 * phase bit of an entry flips each time the ring wraps: an entry whose
 * phase is the expected one is new. The CID comes from the device: one
 * that names no command in flight is counted and dropped.
 */
static unsigned int process_locked(struct nvme_queue *q)
{
	unsigned int n = 0;

	for (;;) {
		volatile struct nvme_cqe *e = &q->cq[q->cq_head];
		uint16_t status = e->status;
		uint16_t cid;
		struct nvme_req *r;

		if (NVME_CQE_PHASE(status) != q->cq_phase)
			break;
		/* The rest of the entry is read after its phase bit. */
		atomic_thread_fence(memory_order_acquire);
		cid = e->cid;
		r = cid < q->depth - 1 ? &q->reqs[cid] : NULL;
		if (r && r->queued && !r->done)
			finish(q, r, (status >> 1) ? -EIO : 0, e->result);
		else
			dev_warn(q->ctrl->dev,
				 "queue %u: completion for "
				 "unknown command %u\n",
				 q->qid, cid);
		if (++q->cq_head == q->depth) {
			q->cq_head = 0;
			q->cq_phase ^= 1;
		}
		n++;
	}
	if (n) {
		writel(q->cq_head, q->cq_db);
		q->completions += n;
		pthread_cond_broadcast(&q->cond);
	}
	return n;
}

unsigned int nvme_queue_process(struct nvme_queue *q)
{
	unsigned int n;

	pthread_mutex_lock(&q->lock);
	n = process_locked(q);
	pthread_mutex_unlock(&q->lock);
	return n;
}

static irqreturn_t nvme_irq(int irq, void *data)
{
	struct nvme_queue *q = data;
	unsigned int n;

	(void)irq;
	pthread_mutex_lock(&q->lock);
	q->irqs++;
	n = process_locked(q);
	pthread_mutex_unlock(&q->lock);
	return n ? IRQ_HANDLED : IRQ_NONE;
}

/*
 * A queue of @depth entries, with one tag per usable entry, each with a
 * bounce buffer of max_pages pages (one buffer for them all: one IOMMU
 * mapping, not 63). @vector is the MSI-X vector the completions raise.
 */
struct nvme_queue *nvme_queue_alloc(struct nvme_ctrl *c, uint16_t qid,
				    uint16_t depth, bool polled,
				    unsigned int vector)
{
	struct device *dev = c->dev;
	size_t pages = qid ? c->max_pages : 1, each = pages * NVME_PAGE;
	struct nvme_queue *q;
	dma_addr_t bufs_dma;
	uint8_t *bufs;
	char *name;

	q = devm_kzalloc(dev, sizeof(*q), GFP_KERNEL);
	if (!q)
		return NULL;
	q->ctrl = c;
	q->qid = qid;
	q->depth = depth;
	q->polled = polled;
	q->irq = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->reqs = devm_kcalloc(dev, depth - 1u, sizeof(*q->reqs), GFP_KERNEL);
	if (!q->reqs)
		return NULL;
	q->sq = dmam_alloc_coherent(dev, depth * sizeof(struct nvme_sqe),
				    &q->sq_dma, GFP_KERNEL);
	if (!q->sq)
		return NULL;
	q->cq = dmam_alloc_coherent(dev, depth * sizeof(struct nvme_cqe),
				    &q->cq_dma, GFP_KERNEL);
	if (!q->cq)
		return NULL;
	bufs = dmam_alloc_coherent(dev, (depth - 1u) * each, &bufs_dma,
				   GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (unsigned int i = 0; i + 1u < depth; i++) {
		q->reqs[i].buf = bufs + i * each;
		q->reqs[i].buf_dma = bufs_dma + i * each;
	}
	q->sq_db = (uint32_t __iomem *)((char *)c->bar + NVME_REG_DBS +
					(2u * qid) * c->db_stride);
	q->cq_db = (uint32_t __iomem *)((char *)c->bar + NVME_REG_DBS +
					(2u * qid + 1u) * c->db_stride);
	nvme_queue_restart(q);
	if (!polled) {
		name = devm_kasprintf(dev, GFP_KERNEL, "nvme-q%u", qid);
		if (!name)
			return NULL;
		q->irq = pci_irq_vector(c->pdev, vector);
		if (q->irq < 0 || devm_request_irq(dev, (unsigned int)q->irq,
						   nvme_irq, 0, name, q))
			return NULL;
	}
	return q;
}

/* Empty rings, as a controller expects a queue it is about to create. */
void nvme_queue_restart(struct nvme_queue *q)
{
	pthread_mutex_lock(&q->lock);
	memset(q->sq, 0, q->depth * sizeof(struct nvme_sqe));
	memset((void *)q->cq, 0, q->depth * sizeof(struct nvme_cqe));
	q->sq_tail = 0;
	q->cq_head = 0;
	q->cq_phase = 1;
	pthread_mutex_unlock(&q->lock);
}

/* A free tag, marked busy, or -EBUSY; -ENODEV when the queue is down. */
int nvme_queue_tag(struct nvme_queue *q)
{
	int ret = -EBUSY;

	pthread_mutex_lock(&q->lock);
	if (!atomic_load(&q->live)) {
		ret = -ENODEV;
	} else if (q->inflight + 1u < q->depth) {
		for (int i = 0; i + 1 < q->depth; i++) {
			if (!q->reqs[i].busy) {
				q->reqs[i].busy = true;
				q->reqs[i].done = false;
				q->reqs[i].status = 0;
				q->inflight++;
				ret = i;
				break;
			}
		}
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/* Gives back a tag that was never submitted. */
void nvme_queue_untag(struct nvme_queue *q, int tag)
{
	pthread_mutex_lock(&q->lock);
	q->reqs[tag].busy = false;
	q->inflight--;
	pthread_mutex_unlock(&q->lock);
}

/*
 * Puts @sqe in the ring under @tag and rings the doorbell. The tag is
 * busy (nvme_queue_tag()); the command's buffers are ready.
 */
int nvme_queue_submit_tag(struct nvme_queue *q, int tag, struct nvme_sqe *sqe)
{
	struct nvme_req *r = &q->reqs[tag];

	pthread_mutex_lock(&q->lock);
	if (!atomic_load(&q->live) || r->done) {
		/* A reset or remove failed it between tag and submit. */
		if (!r->done)
			finish(q, r, -ENODEV, 0);
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	sqe->cid = (uint16_t)tag;
	r->opcode = sqe->opcode;
	r->queued = true;
	now_plus(&r->deadline, q->ctrl->io_timeout_ms);
	memcpy(&q->sq[q->sq_tail], sqe, sizeof(*sqe));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
	/* The entry is in memory before the doorbell (writel orders it). */
	if (!q->qid || !atomic_exchange(&q->ctrl->drop_next_doorbell, false))
		writel(q->sq_tail, q->sq_db);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* Frees a completed tag and returns its status, with q->lock held. */
static int reap_locked(struct nvme_queue *q, int tag)
{
	struct nvme_req *r = &q->reqs[tag];
	int status = r->status;

	if (!status && r->opcode == NVME_CMD_READ && r->user && q->qid)
		memcpy(r->user, r->buf, r->len);
	r->user = NULL;
	r->busy = false;
	r->queued = false;
	r->done = false;
	r->wanted = false;
	return status;
}

/*
 * Waits until tag @tag (or any tag not waited for by someone else, when
 * @tag is -1) completes, and frees it: its status in *@ret_status, the
 * tag in *@ret_tag. -ETIMEDOUT when a command is past its deadline (the
 * caller resets the controller, which fails it, and waits again), or
 * when @limit passes; -ENODEV when the queue died with nothing left to
 * reap.
 */
int nvme_queue_reap(struct nvme_queue *q, int tag, int *ret_tag,
		    int *ret_status, uint32_t *ret_result,
		    const struct timespec *limit)
{
	int ret = -EAGAIN;

	pthread_mutex_lock(&q->lock);
	if (tag >= 0)
		q->reqs[tag].wanted = true;
	for (;;) {
		struct timespec until;
		int found = -1;
		bool overdue = false;

		if (q->polled && atomic_load(&q->live))
			process_locked(q);
		for (int i = 0; i + 1 < q->depth && found < 0; i++) {
			struct nvme_req *r = &q->reqs[i];

			if (!r->busy)
				continue;
			if (r->done && (tag < 0 ? !r->wanted : i == tag))
				found = i;
			else if (r->queued && !r->done && past(&r->deadline))
				overdue = true;
		}
		if (found >= 0) {
			if (ret_result)
				*ret_result = q->reqs[found].result;
			*ret_status = reap_locked(q, found);
			*ret_tag = found;
			ret = 0;
			break;
		}
		if (overdue) {
			ret = -ETIMEDOUT;
			break;
		}
		if (tag < 0 && !q->inflight) {
			ret = -ENOENT;
			break;
		}
		if (limit && past(limit)) {
			ret = -ETIMEDOUT;
			break;
		}
		if (q->polled && atomic_load(&q->live)) {
			pthread_mutex_unlock(&q->lock);
			sched_yield();
			pthread_mutex_lock(&q->lock);
			continue;
		}
		/* Wake at least every 100 ms to look at the deadlines. */
		now_plus(&until, 100);
		pthread_cond_timedwait(&q->cond, &q->lock, &until);
	}
	if (tag >= 0 && ret)
		q->reqs[tag].wanted = false;
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/*
 * Fails every command in flight: the controller is disabled (it will
 * not touch their buffers again) or the queue is going away.
 */
void nvme_queue_fail_all(struct nvme_queue *q, int status)
{
	pthread_mutex_lock(&q->lock);
	for (int i = 0; i + 1 < q->depth; i++) {
		struct nvme_req *r = &q->reqs[i];

		/*
		 * Only commands in the ring: a tag taken but not yet
		 * submitted is its submitter's, who finds the queue down.
		 */
		if (r->queued && !r->done)
			finish(q, r,
			       status == -EIO && past(&r->deadline) ? -ETIMEDOUT
								    : status,
			       0);
	}
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

/* One command, waited for: the admin commands of probe, reset, remove. */
int nvme_queue_exec(struct nvme_queue *q, struct nvme_sqe *sqe,
		    uint32_t *ret_result)
{
	int tag = nvme_queue_tag(q), got, status, ret;

	if (tag < 0)
		return tag;
	nvme_queue_submit_tag(q, tag, sqe);
	ret = nvme_queue_reap(q, tag, &got, &status, ret_result, NULL);
	return ret ? ret : status;
}
