/* SPDX-License-Identifier: MIT */
/*
 * The driver's own structures, shared by its files: the controller
 * (ctrl.c), its queues (queue.c), the admin commands (admin.c) and the
 * block layer on top (blk.c). See docs/nvme.md for how they fit.
 */
#ifndef NVME_DRIVER_H
#define NVME_DRIVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <devres/dma.h>
#include <devres/pci.h>
#include "nvme.h"

#define NVME_VENDOR 0x1b36 /* Red Hat, QEMU's emulated devices */
#define NVME_DEVICE 0x0010

#define NVME_ADMIN_DEPTH 32
#define NVME_IO_DEPTH 64 /* entries; one stays empty: 63 commands */
#define NVME_MAX_IO_QUEUES 8
#define NVME_MAX_PAGES 32 /* 128 KiB per command, at most */

struct nvme_ctrl;
struct nvme_blk;

/* One command in flight, and its tag's bounce buffer. */
struct nvme_req {
	bool busy;   /* the tag is taken */
	bool queued; /* its command is in the ring: the controller owns it */
	bool done;   /* completed (or failed) and not yet reaped */
	bool wanted; /* a caller waits for this very tag */
	int status;  /* 0, -EIO (an NVMe error), -ETIMEDOUT, -ENODEV */
	uint32_t result; /* dword 0 of the completion */
	uint8_t opcode;
	uint32_t len; /* bytes of data */
	void *user;   /* where a read's data goes when it is reaped */
	uint64_t lba;
	struct timespec deadline;
	void *buf; /* NVME_MAX_PAGES pages, DMA-coherent */
	dma_addr_t buf_dma;
	uint64_t *prp; /* a PRP list from the pool, while in flight */
	dma_addr_t prp_dma;
};

/* A submission and completion queue pair, and its interrupt. */
struct nvme_queue {
	struct nvme_ctrl *ctrl;
	uint16_t qid;	/* 0: the admin queue */
	uint16_t depth; /* entries in each ring */
	struct nvme_sqe *sq;
	dma_addr_t sq_dma;
	struct nvme_cqe *cq;
	dma_addr_t cq_dma;
	uint32_t __iomem *sq_db, *cq_db;
	uint16_t sq_tail, cq_head;
	uint8_t cq_phase;
	bool polled; /* no interrupt: completions are reaped by the waiter */
	int irq;     /* the vector's interrupt line, -1 when polled */
	pthread_mutex_t lock; /* the rings, the indices and the tags */
	pthread_cond_t cond;  /* a tag completed */
	atomic_bool live;     /* accepting commands */
	unsigned int inflight;
	unsigned long completions, irqs;
	struct nvme_req *reqs; /* depth - 1 tags */
};

struct nvme_ctrl {
	struct pci_dev *pdev;
	struct device *dev;
	void __iomem *bar;
	uint64_t cap;
	uint32_t db_stride;	/* bytes between doorbells */
	uint32_t timeout_ms;	/* CAP.TO: how long enable/disable may take */
	uint32_t io_timeout_ms; /* a command older than this times out */
	char sn[21], mn[41], fr[9];
	uint32_t max_pages; /* pages per command: MDTS, at most NVME_MAX_PAGES */
	uint32_t nsid;
	uint64_t nblocks; /* namespace 1, in 4 KiB blocks */
	uint32_t lba_shift;
	struct dma_pool *prp_pool;
	struct nvme_queue *admin;
	struct nvme_queue *io[NVME_MAX_IO_QUEUES];
	unsigned int nr_io;
	bool use_irq; /* I/O queues complete by interrupt (else by polling) */
	/* Shared between the I/O threads, the interrupt thread and remove. */
	atomic_bool enabled; /* CC.EN as last written */
	atomic_bool dying;   /* remove() began: no new command */
	atomic_uint resets;
	atomic_bool drop_next_doorbell; /* fault injection: a lost doorbell */
	pthread_mutex_t reset_lock;
	struct nvme_blk *blk;
};

/* Module parameters, in effect: set before the driver is registered. */
extern bool nvme_param_poll;
extern unsigned int nvme_param_queues;
extern unsigned int nvme_param_timeout_ms;
extern struct pci_driver nvme_driver;
/* Enables, and disables confirmed by CSTS.RDY read back as 0. */
extern atomic_uint nvme_stat_enables, nvme_stat_disables;

/* ctrl.c */
int nvme_ctrl_disable(struct nvme_ctrl *c);
int nvme_ctrl_enable(struct nvme_ctrl *c);
int nvme_ctrl_init_regs(struct nvme_ctrl *c);
bool nvme_ctrl_fatal(struct nvme_ctrl *c);
int nvme_ctrl_reset(struct nvme_ctrl *c);
void nvme_ctrl_shutdown(struct nvme_ctrl *c);
bool nvme_ctrl_ready(struct nvme_ctrl *c);

/* queue.c */
struct nvme_queue *nvme_queue_alloc(struct nvme_ctrl *c, uint16_t qid,
				    uint16_t depth, bool polled,
				    unsigned int vector);
void nvme_queue_restart(struct nvme_queue *q);
int nvme_queue_tag(struct nvme_queue *q);
void nvme_queue_untag(struct nvme_queue *q, int tag);
int nvme_queue_submit_tag(struct nvme_queue *q, int tag, struct nvme_sqe *sqe);
int nvme_queue_reap(struct nvme_queue *q, int tag, int *ret_tag,
		    int *ret_status, uint32_t *ret_result,
		    const struct timespec *limit);
void nvme_queue_fail_all(struct nvme_queue *q, int status);
int nvme_queue_exec(struct nvme_queue *q, struct nvme_sqe *sqe,
		    uint32_t *ret_result);
unsigned int nvme_queue_process(struct nvme_queue *q);

/* admin.c */
int nvme_identify(struct nvme_ctrl *c);
int nvme_set_queue_count(struct nvme_ctrl *c, unsigned int *count);
int nvme_create_io_queue(struct nvme_ctrl *c, struct nvme_queue *q,
			 unsigned int vector);
int nvme_delete_io_queue(struct nvme_ctrl *c, struct nvme_queue *q);
int nvme_setup_io_queues(struct nvme_ctrl *c);

/* blk.c: the binding's side of the block handle */
struct nvme_blk *nvme_blk_attach(struct nvme_ctrl *c);
void nvme_blk_detach(struct nvme_blk *b, unsigned int inflight);

#endif /* NVME_DRIVER_H */
