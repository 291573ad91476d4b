/* SPDX-License-Identifier: MIT */
/*
 * The block API of the NVMe driver: reads and writes of whole 4 KiB
 * blocks of namespace 1, submitted on an I/O queue and reaped from it.
 *
 * A handle outlives the binding: once the controller is unbound every
 * call fails with -ENODEV, and every request submitted before has been
 * completed (with its status, or -ENODEV) for its submitter to reap.
 */
#ifndef NVME_BLK_H
#define NVME_BLK_H

#include <stdint.h>
#include <devres/pci.h>

struct nvme_blk;

enum nvme_op {
	NVME_OP_READ,
	NVME_OP_WRITE,
	NVME_OP_FLUSH,
};

/* A reference on the handle of a bound controller; NULL if not bound. */
struct nvme_blk *nvme_blk_get(struct pci_dev *pdev);
void nvme_blk_put(struct nvme_blk *b);

/* Blocks of namespace 1; I/O queues; blocks per command at most. */
uint64_t nvme_blk_capacity(struct nvme_blk *b);
unsigned int nvme_blk_queues(struct nvme_blk *b);
unsigned int nvme_blk_max_blocks(struct nvme_blk *b);

/*
 * Submits @op of @n blocks at @lba on queue @qi. A write's data is
 * copied from @data now; a read's is copied to @data when the request is
 * reaped, so @data must stay valid until then. Returns the tag (>= 0),
 * -EBUSY when the queue is full, -EINVAL for a range out of the
 * namespace, -ENOMEM when no PRP list is left, -ENODEV once unbound.
 */
int nvme_blk_submit(struct nvme_blk *b, unsigned int qi, enum nvme_op op,
		    uint64_t lba, unsigned int n, void *data);

/*
 * Waits for a request of queue @qi to complete (@tag, or any when -1),
 * and returns 0 with its tag in *@ret_tag and its status in *@ret_status
 * (0, -EIO, -ETIMEDOUT after a reset, -ENODEV at unbind). A command past
 * its deadline resets the controller first. Returns -ENOENT when nothing
 * is in flight, -ENODEV once unbound with nothing left to reap.
 */
int nvme_blk_reap(struct nvme_blk *b, unsigned int qi, int tag, int *ret_tag,
		  int *ret_status);

/* Submits and reaps one request: its status. */
int nvme_blk_rw(struct nvme_blk *b, unsigned int qi, enum nvme_op op,
		uint64_t lba, unsigned int n, void *data);

/* Resets of the controller since the bind; completions on queue @qi. */
unsigned int nvme_blk_resets(struct nvme_blk *b);
/*
 * Interrupts taken and completions seen on queue @qi since the bind
 * (interrupts stay 0 on a polled queue); -ENODEV once unbound.
 */
int nvme_blk_queue_stats(struct nvme_blk *b, unsigned int qi,
			 unsigned long *ret_irqs,
			 unsigned long *ret_completions);
/* Requests in flight when remove() began (0 while bound). */
unsigned int nvme_blk_inflight_at_unbind(struct nvme_blk *b);
/* Makes the next I/O doorbell write vanish, as a lost write would. */
void nvme_blk_drop_doorbell(struct nvme_blk *b);

#endif /* NVME_BLK_H */
