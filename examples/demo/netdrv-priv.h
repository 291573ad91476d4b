/* SPDX-License-Identifier: MIT */
/*
 * Shared by the SN-2 driver (netdrv.c) and its port mid-layer (netport.c).
 */
#ifndef NETDRV_PRIV_H
#define NETDRV_PRIV_H

#include <pthread.h>
#include <stdint.h>
#include <devres/types.h>
#include "hw.h"
#include "netdrv.h"

#define ND_RING_SIZE 64u

struct device;
struct dma_pool;

/* What a ring slot holds while its descriptor is out. */
struct nd_slot {
	void *buf;
	dma_addr_t dma;
};

/* @tail: descriptors given to the device; @head: taken back. */
struct nd_ring {
	struct sn_desc *desc;
	dma_addr_t desc_dma;
	struct nd_slot *slot;
	uint32_t head, tail;
};

struct nd_port {
	struct netdrv *nd;
	unsigned int index;
	uint8_t __iomem *regs; /* this port's register block */
	struct nd_ring tx, rx;
};

struct netdrv {
	struct device *dev;
	uint8_t __iomem *regs;
	int irq;
	int wake_fd; /* the stack waits on it */
	struct dma_pool *pool;
	pthread_mutex_t lock; /* rings, stats, rx handler */
	uint32_t int_acked;   /* the INT_STATUS last acknowledged */
	uint32_t reset_token;
	unsigned int nports;
	struct nd_port *port[SN_MAX_PORTS];
	netdrv_rx_t rx;
	void *rx_ctx;
	struct netdrv_stats stats;
	uint32_t wd_tx_head; /* the watchdog's last look at transmit */
	unsigned int wd_ticks;
};

/* netdrv.c: the body of every bus's probe and remove. */
int netdrv_setup(struct device *dev, void __iomem *regs, int irq);
void netdrv_goodbye(struct device *dev);

/* netport.c: the mid-layer. */
int nd_ports_init(struct netdrv *nd);
void nd_port_program(struct nd_port *port);
unsigned int nd_port_poll(struct nd_port *port);
int nd_port_xmit(struct nd_port *port, const void *frame, size_t len);

#endif /* NETDRV_PRIV_H */
