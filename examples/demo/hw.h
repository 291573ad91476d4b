/* SPDX-License-Identifier: MIT */
/*
 * The SN-2, a small two-port network controller, as its datasheet would
 * describe it: what the driver (netdrv.c) and the device model (simdev.c)
 * agree on, and nothing else.
 *
 * Registers are 32 bits, little-endian, in one 4 KiB window. Each register
 * has one writer: the driver writes the configuration and the doorbells,
 * the device writes the status and the counters, except that a reset puts
 * them all back to 0 (the driver waits for the reset to finish, so it is
 * not writing then) and that the driver sets the head indexes before it
 * enables the device (the device reads them when it is enabled).
 *
 * Each port has a transmit ring and a receive ring of 16-byte descriptors
 * in DMA memory. Indexes are free-running 32-bit counts; the slot is the
 * count modulo the ring size. The driver fills a descriptor and gives it to
 * the device by setting SN_DESC_OWN last; the device hands it back by
 * setting SN_DESC_DONE last. The doorbell (TAIL) says how many descriptors
 * the driver has given in all; the device publishes how many it has done
 * (HEAD).
 *
 * Interrupts are counted, not flagged: INT_STATUS counts the device's
 * completion events. The driver acknowledges by writing back the count it
 * has seen. The device raises its line when events are unacknowledged and
 * no raise of its is outstanding (one raise per acknowledgement at most),
 * so an acknowledgement can never hide an event that came after the read.
 */
#ifndef SN_HW_H
#define SN_HW_H

#include <stddef.h>
#include <stdint.h>

#define SN_REGS_SIZE 0x1000u
#define SN_ID 0x00	   /* read-only: SN_ID_VALUE */
#define SN_NPORTS 0x04	   /* read-only: number of ports */
#define SN_CTRL 0x08	   /* driver: SN_CTRL_ENABLE */
#define SN_STATUS 0x0c	   /* device: SN_STATUS_* */
#define SN_RESET 0x10	   /* driver: a new token starts a reset */
#define SN_RESET_DONE 0x14 /* device: the token, once reset */
#define SN_INT_STATUS 0x18 /* device: completion events posted */
#define SN_INT_ACK 0x1c	   /* driver: the INT_STATUS it has handled */
#define SN_INT_MASK 0x20   /* driver: 1 enables the interrupt */
#define SN_PORT(p) (0x100u + (unsigned int)(p)*0x40u)
#define SN_TX_BASE_LO 0x00 /* bus address of the transmit ring */
#define SN_TX_BASE_HI 0x04
#define SN_RX_BASE_LO 0x08 /* bus address of the receive ring */
#define SN_RX_BASE_HI 0x0c
#define SN_RING_SIZE 0x10 /* descriptors per ring: a power of two */
#define SN_TX_TAIL 0x14	  /* doorbell: transmit descriptors given */
#define SN_RX_TAIL 0x18	  /* doorbell: receive descriptors given */
#define SN_TX_HEAD 0x1c	  /* transmit descriptors done */
#define SN_RX_HEAD 0x20	  /* receive descriptors done */

#define SN_ID_VALUE 0x534e3032u /* "SN02" */
#define SN_PCI_VENDOR 0x534e	/* made up: "SN" */
#define SN_PCI_DEVICE 0x0002
#define SN_MAX_PORTS 2
#define SN_MAX_RING 4096u
#define SN_CTRL_ENABLE 0x1u
#define SN_STATUS_RUNNING 0x1u
#define SN_STATUS_DMA_ERROR 0x2u /* a descriptor or ring it cannot reach */

/* Buffers hold at most this much; a longer frame is the device's bug. */
#define SN_BUF_SIZE 2048u

struct sn_desc {
	uint64_t addr;	/* bus address of the buffer */
	uint32_t csum;	/* sn_csum() of the frame */
	uint16_t len;	/* frame bytes (receive: buffer bytes when given) */
	uint16_t flags; /* SN_DESC_*, written last */
};

#define SN_DESC_OWN 0x1u  /* the device may use it */
#define SN_DESC_DONE 0x2u /* the device is done with it */
#define SN_DESC_ERR 0x4u  /* with DONE: the frame's checksum was wrong */

/*
 * The device is another CPU here (a thread), as for virtio's "weak
 * barriers": ownership moves with a release store of the flags and is
 * seen with an acquire load, so every other field of the descriptor, and
 * the buffer, is ordered by it. On real hardware, dma_wmb() followed by a
 * plain store does the same.
 */
static inline void sn_desc_set_flags(struct sn_desc *d, uint16_t flags)
{
	__atomic_store_n(&d->flags, flags, __ATOMIC_RELEASE);
}

static inline uint16_t sn_desc_flags(const struct sn_desc *d)
{
	return __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);
}

/* The frame checksum: 32-bit FNV-1a. */
static inline uint32_t sn_csum(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t h = 2166136261u;

	while (len--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

#endif /* SN_HW_H */
