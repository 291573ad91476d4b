// SPDX-License-Identifier: MIT
/*
 * The SN-2's device model (see simdev.h and hw.h).
 *
 * One thread polls the registers, as a device's engine would: reset
 * requests first, then, while enabled, the doorbells of each ring. Its own
 * view of the registers is a mapping of the file that holds them,
 * accessed with atomics; the driver's view is its own mapping of that
 * file, made by the bus (ioremap() of a window, pcim_iomap() of a BAR).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <devres/dma.h>
#include <devres/irq.h>
#include "hw.h"
#include "simdev.h"

#define BATCH 64 /* descriptors per ring per pass: the engine's fairness */

struct simport {
	uint64_t tx_base, rx_base;
	uint32_t size;
	uint32_t tx_head, rx_head;
	uint32_t tx_seq, rx_seq; /* the wire's, kept across resets */
	unsigned long rx_left;	 /* frames still to arrive from the wire */
};

struct simdev {
	struct simdev_config cfg;
	int irq;
	uint32_t *regs;
	struct device *dev;
	pthread_t thread;
	bool started;
	int stop;
	bool running, stalled;
	bool drop_armed, stall_armed;
	uint32_t int_status, raised;
	unsigned long completed, transmitted;
	struct simport port[SN_MAX_PORTS];
	struct simdev_stats stats;
};

#define STAT_INC(sd, f) __atomic_fetch_add(&(sd)->stats.f, 1, __ATOMIC_RELAXED)

static uint32_t reg_get(struct simdev *sd, unsigned int off)
{
	return __atomic_load_n(&sd->regs[off / 4], __ATOMIC_ACQUIRE);
}

static void reg_set(struct simdev *sd, unsigned int off, uint32_t v)
{
	__atomic_store_n(&sd->regs[off / 4], v, __ATOMIC_RELEASE);
}

/* ---- the wire --------------------------------------------------------- */

struct frame_hdr {
	uint32_t seq;
	uint16_t port;
	uint16_t len;
};

static uint8_t frame_byte(unsigned int port, uint32_t seq, size_t i)
{
	return (uint8_t)((size_t)seq * 13u + (size_t)port * 101u + i * 7u +
			 (i >> 8));
}

size_t sn_frame_fill(void *buf, unsigned int port, uint32_t seq)
{
	size_t len = 60 + (seq * 7919u + port * 31u) % 1455u;
	struct frame_hdr h = { seq, (uint16_t)port, (uint16_t)len };
	uint8_t *p = buf;

	memcpy(p, &h, sizeof(h));
	for (size_t i = sizeof(h); i < len; i++)
		p[i] = frame_byte(port, seq, i);
	return len;
}

uint32_t sn_frame_seq(const void *buf)
{
	struct frame_hdr h;

	memcpy(&h, buf, sizeof(h));
	return h.seq;
}

bool sn_frame_check(const void *buf, size_t len, unsigned int port,
		    uint32_t seq)
{
	const uint8_t *p = buf;
	struct frame_hdr h;

	if (len < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	if (h.seq != seq || h.port != port || h.len != len)
		return false;
	for (size_t i = sizeof(h); i < len; i++)
		if (p[i] != frame_byte(port, seq, i))
			return false;
	return true;
}

/* ---- the engine ------------------------------------------------------- */

static void dma_error(struct simdev *sd)
{
	STAT_INC(sd, dma_errors);
	reg_set(sd, SN_STATUS, reg_get(sd, SN_STATUS) | SN_STATUS_DMA_ERROR);
	sd->stalled = true; /* a real engine halts: only a reset helps */
}

static struct sn_desc *ring_at(struct simdev *sd, uint64_t base, uint32_t size,
			       uint32_t idx)
{
	struct sn_desc *ring;

	/* Translated on every use: the driver may have unmapped it. */
	ring = dma_iova_to_virt(sd->dev, base, size * sizeof(*ring));
	if (!ring) {
		dma_error(sd);
		return NULL;
	}
	return &ring[idx & (size - 1)];
}

static unsigned int do_tx(struct simdev *sd, unsigned int p)
{
	struct simport *sp = &sd->port[p];
	uint32_t tail = reg_get(sd, SN_PORT(p) + SN_TX_TAIL);
	unsigned int n = 0;

	while (sp->tx_head != tail && n < BATCH && !sd->stalled) {
		struct sn_desc *d =
			ring_at(sd, sp->tx_base, sp->size, sp->tx_head);
		uint16_t err = 0;
		void *buf;

		if (!d || !(sn_desc_flags(d) & SN_DESC_OWN))
			break;
		if (sd->stall_armed && sd->transmitted >= sd->cfg.stall_at) {
			sd->stall_armed = false;
			sd->stalled = true;
			STAT_INC(sd, stalls);
			break;
		}
		buf = d->len && d->len <= SN_BUF_SIZE
			      ? dma_iova_to_virt(sd->dev, d->addr, d->len)
			      : NULL;
		if (!buf) {
			dma_error(sd);
			err = SN_DESC_ERR;
		} else if (sn_csum(buf, d->len) != d->csum) {
			STAT_INC(sd, tx_bad_csum);
			err = SN_DESC_ERR;
		} else if (!sn_frame_check(buf, d->len, p, sp->tx_seq)) {
			STAT_INC(sd, tx_bad_seq);
			sp->tx_seq = sn_frame_seq(buf) + 1;
		} else {
			STAT_INC(sd, tx_ok);
			sp->tx_seq++;
		}
		sn_desc_set_flags(d, SN_DESC_DONE | err);
		sp->tx_head++;
		sd->transmitted++;
		n++;
	}
	reg_set(sd, SN_PORT(p) + SN_TX_HEAD, sp->tx_head);
	return n;
}

static void corrupt(struct simdev *sd, unsigned int p, struct sn_desc *d)
{
	STAT_INC(sd, corrupted);
	if (p == 0)
		d->csum ^= 0x100;
	else
		d->len = 0xffff; /* longer than any buffer */
}

static unsigned int do_rx(struct simdev *sd, unsigned int p)
{
	struct simport *sp = &sd->port[p];
	uint32_t tail = reg_get(sd, SN_PORT(p) + SN_RX_TAIL);
	unsigned int n = 0;

	while (sp->rx_head != tail && n < BATCH && !sd->stalled &&
	       __atomic_load_n(&sp->rx_left, __ATOMIC_ACQUIRE)) {
		struct sn_desc *d =
			ring_at(sd, sp->rx_base, sp->size, sp->rx_head);
		void *buf;
		size_t len;

		if (!d || !(sn_desc_flags(d) & SN_DESC_OWN))
			break;
		buf = d->len >= SN_BUF_SIZE
			      ? dma_iova_to_virt(sd->dev, d->addr, SN_BUF_SIZE)
			      : NULL;
		if (!buf) {
			dma_error(sd);
			sn_desc_set_flags(d, SN_DESC_DONE | SN_DESC_ERR);
			break;
		}
		len = sn_frame_fill(buf, p, sp->rx_seq);
		d->csum = sn_csum(buf, len);
		d->len = (uint16_t)len;
		if (sd->cfg.corrupt_at && sp->rx_seq == sd->cfg.corrupt_at)
			corrupt(sd, p, d);
		sn_desc_set_flags(d, SN_DESC_DONE);
		sp->rx_seq++;
		sp->rx_head++;
		__atomic_fetch_sub(&sp->rx_left, 1, __ATOMIC_RELEASE);
		STAT_INC(sd, rx_frames);
		n++;
	}
	reg_set(sd, SN_PORT(p) + SN_RX_HEAD, sp->rx_head);
	return n;
}

/* Raises the line for unacknowledged events, unless a raise is pending. */
static void do_irq(struct simdev *sd)
{
	uint32_t ack = reg_get(sd, SN_INT_ACK);

	if (!reg_get(sd, SN_INT_MASK) || sd->int_status == ack ||
	    (int32_t)(ack - sd->raised) < 0)
		return;
	sd->raised = sd->int_status;
	if (sd->drop_armed && sd->completed >= sd->cfg.drop_irq_at) {
		sd->drop_armed = false;
		STAT_INC(sd, dropped_irqs);
		return;
	}
	irq_line_raise(sd->irq);
}

static void do_reset(struct simdev *sd)
{
	for (unsigned int off = SN_CTRL; off < SN_REGS_SIZE; off += 4)
		if (off != SN_RESET && off != SN_RESET_DONE)
			reg_set(sd, off, 0);
	for (unsigned int p = 0; p < SN_MAX_PORTS; p++) {
		struct simport *sp = &sd->port[p];

		sp->tx_base = sp->rx_base = 0;
		sp->size = sp->tx_head = sp->rx_head = 0;
	}
	sd->running = sd->stalled = false;
	sd->int_status = sd->raised = 0;
	STAT_INC(sd, resets);
}

static uint64_t reg_get64(struct simdev *sd, unsigned int lo)
{
	return reg_get(sd, lo) | (uint64_t)reg_get(sd, lo + 4) << 32;
}

/* Enabled: load the rings the driver programmed. */
static int do_enable(struct simdev *sd)
{
	for (unsigned int p = 0; p < SN_MAX_PORTS; p++) {
		struct simport *sp = &sd->port[p];
		uint32_t size = reg_get(sd, SN_PORT(p) + SN_RING_SIZE);

		if (!size || size > SN_MAX_RING || (size & (size - 1))) {
			dma_error(sd);
			return -EINVAL;
		}
		sp->size = size;
		sp->tx_base = reg_get64(sd, SN_PORT(p) + SN_TX_BASE_LO);
		sp->rx_base = reg_get64(sd, SN_PORT(p) + SN_RX_BASE_LO);
		sp->tx_head = reg_get(sd, SN_PORT(p) + SN_TX_HEAD);
		sp->rx_head = reg_get(sd, SN_PORT(p) + SN_RX_HEAD);
	}
	sd->running = true;
	reg_set(sd, SN_STATUS, SN_STATUS_RUNNING);
	return 0;
}

static unsigned int step(struct simdev *sd)
{
	uint32_t token = reg_get(sd, SN_RESET);
	unsigned int n = 0;

	if (token != reg_get(sd, SN_RESET_DONE)) {
		do_reset(sd);
		reg_set(sd, SN_RESET_DONE, token);
		return 1;
	}
	if (!(reg_get(sd, SN_CTRL) & SN_CTRL_ENABLE)) {
		sd->running = false;
		return 0;
	}
	if (!sd->running && (sd->stalled || do_enable(sd)))
		return 0;
	for (unsigned int p = 0; p < SN_MAX_PORTS; p++) {
		n += do_tx(sd, p);
		n += do_rx(sd, p);
	}
	if (n) {
		sd->completed += n;
		reg_set(sd, SN_INT_STATUS, ++sd->int_status);
	}
	do_irq(sd);
	return n;
}

static void *engine(void *arg)
{
	struct simdev *sd = arg;
	const struct timespec idle = { 0, 20000 };

	while (!__atomic_load_n(&sd->stop, __ATOMIC_ACQUIRE))
		if (!step(sd))
			nanosleep(&idle, NULL);
	return NULL;
}

/* ---- the board's side ------------------------------------------------- */

struct simdev *simdev_create(int fd, const struct simdev_config *cfg)
{
	struct simdev *sd = calloc(1, sizeof(*sd));
	void *regs;
	int err;

	if (!sd)
		return NULL;
	sd->cfg = *cfg;
	sd->drop_armed = cfg->drop_irq_at != 0;
	sd->stall_armed = cfg->stall_at != 0;
	regs = mmap(NULL, SN_REGS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    0);
	if (regs == MAP_FAILED) {
		err = errno;
		free(sd);
		errno = err;
		return NULL;
	}
	sd->regs = regs;
	reg_set(sd, SN_ID, SN_ID_VALUE);
	reg_set(sd, SN_NPORTS, SN_MAX_PORTS);
	sd->irq = irq_line_create("sn2");
	if (sd->irq < 0) {
		err = -sd->irq;
		munmap(regs, SN_REGS_SIZE);
		free(sd);
		errno = err;
		return NULL;
	}
	return sd;
}

int simdev_irq(const struct simdev *sd)
{
	return sd->irq;
}

int simdev_start(struct simdev *sd, struct device *dev)
{
	sd->dev = dev;
	if (pthread_create(&sd->thread, NULL, engine, sd))
		return -EAGAIN;
	sd->started = true;
	return 0;
}

void simdev_feed(struct simdev *sd, unsigned long frames_per_port)
{
	for (unsigned int p = 0; p < SN_MAX_PORTS; p++)
		__atomic_store_n(&sd->port[p].rx_left, frames_per_port,
				 __ATOMIC_RELEASE);
}

void simdev_get_stats(struct simdev *sd, struct simdev_stats *ret_stats)
{
	const unsigned long *s = (const unsigned long *)&sd->stats;
	unsigned long *d = (unsigned long *)ret_stats;

	for (size_t i = 0; i < sizeof(*ret_stats) / sizeof(*d); i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

void simdev_destroy(struct simdev *sd)
{
	if (!sd)
		return;
	if (sd->started) {
		__atomic_store_n(&sd->stop, 1, __ATOMIC_RELEASE);
		pthread_join(sd->thread, NULL);
	}
	irq_line_destroy(sd->irq);
	munmap(sd->regs, SN_REGS_SIZE);
	free(sd);
}
