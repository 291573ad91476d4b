// SPDX-License-Identifier: MIT
/*
 * The controller's registers: enable and disable (CC.EN, waited for on
 * CSTS.RDY within CAP.TO), a normal shutdown, and the reset that a
 * command timeout ends in.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <devres/device.h>
#include <devres/io.h>
#include "driver.h"

static uint32_t reg(struct nvme_ctrl *c, unsigned int off)
{
	return readl((char *)c->bar + off);
}

static void set_reg(struct nvme_ctrl *c, unsigned int off, uint32_t v)
{
	writel(v, (char *)c->bar + off);
}

/* A 64-bit register as two 32-bit writes, low half first. */
static void set_reg64(struct nvme_ctrl *c, unsigned int off, uint64_t v)
{
	set_reg(c, off, (uint32_t)v);
	set_reg(c, off + 4, (uint32_t)(v >> 32));
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * Waits for CSTS.RDY to read @ready. All ones is a device that is gone
 * (or a BAR that is no longer decoded); CFS a controller that failed.
 */
static int wait_ready(struct nvme_ctrl *c, bool ready)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t csts = reg(c, NVME_REG_CSTS);

		if (csts == 0xffffffffu)
			return -ENODEV;
		if (ready && (csts & NVME_CSTS_CFS))
			return -EIO;
		if (!!(csts & NVME_CSTS_RDY) == ready)
			return 0;
		if (ms_since(&t0) > c->timeout_ms)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

bool nvme_ctrl_ready(struct nvme_ctrl *c)
{
	return reg(c, NVME_REG_CSTS) & NVME_CSTS_RDY;
}

bool nvme_ctrl_fatal(struct nvme_ctrl *c)
{
	uint32_t csts = reg(c, NVME_REG_CSTS);

	return csts == 0xffffffffu || (csts & NVME_CSTS_CFS);
}

/* Reads what the controller can do; run once, before anything else. */
int nvme_ctrl_init_regs(struct nvme_ctrl *c)
{
	c->cap = readq(c->bar);
	if (c->cap == ~0ull)
		return -ENODEV;
	c->db_stride = 4u << NVME_CAP_DSTRD(c->cap);
	/* CAP.TO is at least 500 ms; TCG may make the device slower still. */
	c->timeout_ms = NVME_CAP_TO_MS(c->cap);
	if (c->timeout_ms < 500)
		c->timeout_ms = 500;
	c->timeout_ms += 2000;
	if (!NVME_CAP_CSS_NVM(c->cap) || NVME_CAP_MPSMIN(c->cap) != 0)
		return -ENODEV; /* no NVM command set, or no 4 KiB pages */
	if (NVME_CAP_MQES(c->cap) < 2)
		return -ENODEV;
	return 0;
}

/*
 * Clearing CC.EN stops the controller: it processes no more commands,
 * deletes every I/O queue and forgets the admin queue. Once CSTS.RDY
 * reads 0 it does no more DMA, and the queue memory may be reused or
 * freed.
 */
int nvme_ctrl_disable(struct nvme_ctrl *c)
{
	uint32_t cc = reg(c, NVME_REG_CC);

	atomic_store(&c->enabled, false);
	if (cc == 0xffffffffu)
		return -ENODEV;
	if (cc & NVME_CC_EN)
		set_reg(c, NVME_REG_CC, cc & ~NVME_CC_EN);
	return wait_ready(c, false);
}

/* With the admin queue allocated: points the controller at it, enables. */
int nvme_ctrl_enable(struct nvme_ctrl *c)
{
	struct nvme_queue *aq = c->admin;
	int ret;

	set_reg(c, NVME_REG_AQA,
		(uint32_t)(aq->depth - 1) << 16 | (uint32_t)(aq->depth - 1));
	set_reg64(c, NVME_REG_ASQ, aq->sq_dma);
	set_reg64(c, NVME_REG_ACQ, aq->cq_dma);
	set_reg(c, NVME_REG_CC,
		NVME_CC_CSS_NVM | NVME_CC_MPS(12) | NVME_CC_IOSQES |
			NVME_CC_IOCQES | NVME_CC_EN);
	ret = wait_ready(c, true);
	if (!ret)
		atomic_store(&c->enabled, true);
	return ret;
}

/*
 * Recovers from a command that timed out: the controller is disabled,
 * which stops it and deletes its I/O queues, every command still in
 * flight is failed (-ETIMEDOUT past its deadline, -EIO otherwise), and
 * the controller is enabled again with the same queues, created anew.
 * Commands failed here are reaped by their submitters as any other.
 */
int nvme_ctrl_reset(struct nvme_ctrl *c)
{
	unsigned int i;
	int ret;

	pthread_mutex_lock(&c->reset_lock);
	if (atomic_load(&c->dying)) {
		pthread_mutex_unlock(&c->reset_lock);
		return -ENODEV;
	}
	dev_warn(c->dev, "command timeout: resetting the controller\n");
	for (i = 0; i < c->nr_io; i++)
		atomic_store(&c->io[i]->live, false);
	atomic_store(&c->admin->live, false);
	ret = nvme_ctrl_disable(c);
	/* Only once the controller is stopped may its buffers be reused. */
	nvme_queue_fail_all(c->admin, -EIO);
	for (i = 0; i < c->nr_io; i++)
		nvme_queue_fail_all(c->io[i], -EIO);
	if (ret)
		goto out;
	nvme_queue_restart(c->admin);
	ret = nvme_ctrl_enable(c);
	if (!ret)
		ret = nvme_setup_io_queues(c);
out:
	atomic_fetch_add(&c->resets, 1);
	if (ret)
		dev_err(c->dev, "reset failed: %d\n", ret);
	pthread_mutex_unlock(&c->reset_lock);
	return ret;
}

/*
 * A normal shutdown (CC.SHN): the controller finishes what it must
 * (flushes its cache) and reports it in CSTS.SHST.
 */
void nvme_ctrl_shutdown(struct nvme_ctrl *c)
{
	struct timespec t0;
	uint32_t cc = reg(c, NVME_REG_CC);

	if (cc == 0xffffffffu)
		return;
	set_reg(c, NVME_REG_CC, (cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((reg(c, NVME_REG_CSTS) & NVME_CSTS_SHST_MASK) !=
		       NVME_CSTS_SHST_CMPLT &&
	       ms_since(&t0) < c->timeout_ms)
		usleep(1000);
}
