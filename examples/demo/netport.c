// SPDX-License-Identifier: MIT
/*
 * The SN-2's port mid-layer, shaped as libata's: the driver asks for its
 * ports in one call; the mid-layer takes everything a port needs inside a
 * devres group of its own and, when a port cannot be set up, gives back
 * exactly what it took, leaving the driver's own resources alone.
 */
#include <errno.h>
#include <string.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/dma.h>
#include <devres/io.h>
#include "netdrv-priv.h"

#define RING_BYTES (ND_RING_SIZE * sizeof(struct sn_desc))

static inline uint32_t lower_32_bits(uint64_t v)
{
	return (uint32_t)v;
}

static inline uint32_t upper_32_bits(uint64_t v)
{
	return (uint32_t)(v >> 32);
}

/**
 * nd_port_free_buffers() - give a port's buffers back to the pool
 * @data: the port
 *
 * A managed action, recorded before the port takes its first buffer. At
 * unbind it runs after the device was reset (that action is newer), so the
 * device no longer writes them, and before the pool is destroyed (it is
 * older).
 *
 * Context: the thread releasing the device's resources.
 */
static void nd_port_free_buffers(void *data)
{
	struct nd_port *port = data;
	struct nd_slot *slot = port->tx.slot; /* tx, then rx: one array */

	for (unsigned int i = 0; i < 2 * ND_RING_SIZE; i++) {
		if (slot[i].buf)
			dma_pool_free(port->nd->pool, slot[i].buf, slot[i].dma);
		slot[i].buf = NULL;
	}
}

/* Gives receive descriptor @idx, and the slot's buffer, to the device. */
static void nd_rx_give(struct nd_ring *rx, uint32_t idx)
{
	struct sn_desc *d = &rx->desc[idx % ND_RING_SIZE];

	d->addr = rx->slot[idx % ND_RING_SIZE].dma;
	d->len = SN_BUF_SIZE;
	d->csum = 0;
	sn_desc_set_flags(d, SN_DESC_OWN);
}

/**
 * nd_port_start() - set one port up
 * @nd: the driver's state
 * @index: the port's number
 *
 * Takes the port's state, its two descriptor rings (coherent DMA memory)
 * and a buffer from the pool for each receive descriptor, all managed.
 *
 * Context: probe, inside the ports' group.
 * Return: 0, or -ENOMEM (what was taken is the group's to give back).
 */
static int nd_port_start(struct netdrv *nd, unsigned int index)
{
	struct device *dev = nd->dev;
	struct nd_slot *slot;
	struct nd_port *port;
	int ret;

	port = devm_kzalloc(dev, sizeof(*port), GFP_KERNEL);
	slot = devm_kcalloc(dev, 2 * (size_t)ND_RING_SIZE, sizeof(*slot),
			    GFP_KERNEL);
	if (!port || !slot)
		return -ENOMEM;
	port->nd = nd;
	port->index = index;
	port->regs = nd->regs + SN_PORT(index);
	port->tx.slot = slot;
	port->rx.slot = slot + ND_RING_SIZE;

	port->tx.desc = dmam_alloc_coherent(dev, RING_BYTES, &port->tx.desc_dma,
					    GFP_KERNEL);
	port->rx.desc = dmam_alloc_coherent(dev, RING_BYTES, &port->rx.desc_dma,
					    GFP_KERNEL);
	if (!port->tx.desc || !port->rx.desc)
		return -ENOMEM;

	ret = devm_add_action_or_reset(dev, nd_port_free_buffers, port);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < ND_RING_SIZE; i++) {
		slot = &port->rx.slot[i];
		slot->buf = dma_pool_alloc(nd->pool, GFP_KERNEL, &slot->dma);
		if (!slot->buf)
			return -ENOMEM;
		nd_rx_give(&port->rx, i);
	}
	port->rx.tail = ND_RING_SIZE;
	nd->port[index] = port;
	return 0;
}

/**
 * nd_ports_init() - set every port up, or none
 * @nd: the driver's state; @nd->nports says how many
 *
 * The mid-layer's entry point. Everything the ports take is acquired in a
 * devres group (id: this function); on failure the group alone is
 * released, so the caller's earlier resources stay and its error path is
 * a plain return.
 *
 * Context: probe.
 * Return: 0, or -ENOMEM.
 */
int nd_ports_init(struct netdrv *nd)
{
	struct device *dev = nd->dev;
	int ret = 0;

	if (!devres_open_group(dev, nd_ports_init, GFP_KERNEL))
		return -ENOMEM;
	for (unsigned int i = 0; i < nd->nports && !ret; i++)
		ret = nd_port_start(nd, i);
	if (ret) {
		devres_release_group(dev, nd_ports_init);
		memset(nd->port, 0, sizeof(nd->port));
		return ret;
	}
	/*
	 * Closed, not removed as libata does, so that a dump shows the ports'
	 * resources together; removing would save the group's 40 bytes.
	 */
	devres_close_group(dev, nd_ports_init);
	return 0;
}

/**
 * nd_port_program() - tell the device where a port's rings are
 * @port: the port
 *
 * Context: the device reset and not yet enabled; @port->nd->lock held or
 * the port not yet in use.
 */
void nd_port_program(struct nd_port *port)
{
	uint8_t __iomem *r = port->regs;

	writel(lower_32_bits(port->tx.desc_dma), r + SN_TX_BASE_LO);
	writel(upper_32_bits(port->tx.desc_dma), r + SN_TX_BASE_HI);
	writel(lower_32_bits(port->rx.desc_dma), r + SN_RX_BASE_LO);
	writel(upper_32_bits(port->rx.desc_dma), r + SN_RX_BASE_HI);
	writel(ND_RING_SIZE, r + SN_RING_SIZE);
	writel(port->tx.head, r + SN_TX_HEAD);
	writel(port->tx.tail, r + SN_TX_TAIL);
	writel(port->rx.head, r + SN_RX_HEAD);
	writel(port->rx.tail, r + SN_RX_TAIL);
}

/**
 * nd_port_xmit() - put a frame on a port's transmit ring
 * @port: the port
 * @frame: the frame
 * @len: its bytes, 1 to SN_BUF_SIZE
 *
 * Context: @port->nd->lock held.
 * Return: 0; -EBUSY when the ring is full; -EINVAL for a bad @len;
 * -ENOMEM when the pool has no buffer.
 */
int nd_port_xmit(struct nd_port *port, const void *frame, size_t len)
{
	struct nd_ring *tx = &port->tx;
	struct nd_slot *slot = &tx->slot[tx->tail % ND_RING_SIZE];
	struct sn_desc *d = &tx->desc[tx->tail % ND_RING_SIZE];

	if (tx->tail - tx->head >= ND_RING_SIZE)
		return -EBUSY;
	if (!len || len > SN_BUF_SIZE)
		return -EINVAL;
	slot->buf = dma_pool_alloc(port->nd->pool, GFP_ATOMIC, &slot->dma);
	if (!slot->buf)
		return -ENOMEM;
	memcpy(slot->buf, frame, len);
	d->addr = slot->dma;
	d->len = (uint16_t)len;
	d->csum = sn_csum(slot->buf, len);
	sn_desc_set_flags(d, SN_DESC_OWN);
	writel(++tx->tail, port->regs + SN_TX_TAIL);
	return 0;
}

/* Takes back finished transmit descriptors; returns how many. */
static unsigned int nd_tx_clean(struct nd_port *port)
{
	struct netdrv *nd = port->nd;
	struct nd_ring *tx = &port->tx;
	unsigned int n = 0;

	while (tx->head != tx->tail) {
		struct sn_desc *d = &tx->desc[tx->head % ND_RING_SIZE];
		struct nd_slot *slot = &tx->slot[tx->head % ND_RING_SIZE];
		uint16_t flags = sn_desc_flags(d);

		if (!(flags & SN_DESC_DONE))
			break;
		if (flags & SN_DESC_ERR)
			nd->stats.tx_errors++;
		else
			nd->stats.tx_packets++;
		dma_pool_free(nd->pool, slot->buf, slot->dma);
		slot->buf = NULL;
		sn_desc_set_flags(d, 0);
		tx->head++;
		n++;
	}
	return n;
}

/*
 * Takes received frames and gives their buffers straight back. The length
 * and the checksum come from the device: neither is trusted.
 */
static unsigned int nd_rx(struct nd_port *port)
{
	struct netdrv *nd = port->nd;
	struct nd_ring *rx = &port->rx;
	unsigned int n = 0;

	while (rx->head != rx->tail) {
		struct sn_desc *d = &rx->desc[rx->head % ND_RING_SIZE];
		void *buf = rx->slot[rx->head % ND_RING_SIZE].buf;
		uint16_t flags = sn_desc_flags(d);
		size_t len;

		if (!(flags & SN_DESC_DONE))
			break;
		len = d->len; /* only once DONE: until then it is the device's */
		if ((flags & SN_DESC_ERR) || !len || len > SN_BUF_SIZE) {
			nd->stats.rx_length_errors++;
			dev_warn(nd->dev,
				 "port %u: frame of %zu bytes dropped\n",
				 port->index, len);
		} else if (sn_csum(buf, len) != d->csum) {
			nd->stats.rx_crc_errors++;
			dev_warn(nd->dev,
				 "port %u: frame with a bad checksum dropped\n",
				 port->index);
		} else {
			nd->stats.rx_packets++;
			if (nd->rx)
				nd->rx(nd->rx_ctx, port->index, buf, len);
		}
		nd_rx_give(rx, rx->tail);
		rx->head++;
		rx->tail++;
		n++;
	}
	if (n)
		writel(rx->tail, port->regs + SN_RX_TAIL);
	return n;
}

/**
 * nd_port_poll() - take back what the device finished on a port
 * @port: the port
 *
 * Context: @port->nd->lock held.
 * Return: the number of descriptors taken back.
 */
unsigned int nd_port_poll(struct nd_port *port)
{
	return nd_tx_clean(port) + nd_rx(port);
}
