/* SPDX-License-Identifier: MIT */
/* QEMU's edu device (docs/specs/edu.rst in QEMU) and its driver, edu.c. */
#ifndef EDU_H
#define EDU_H

#include <pthread.h>
#include <stdint.h>
#include <devres/dma.h>
#include <devres/pci.h>

#define EDU_VENDOR 0x1234
#define EDU_DEVICE 0x11e8
#define EDU_IDENT 0x010000edu

/* BAR 0 registers. */
#define EDU_REG_IDENT 0x00
#define EDU_REG_LIVENESS 0x04 /* reads back the bitwise inverse */
#define EDU_REG_FACT 0x08
#define EDU_REG_STATUS 0x20
#define EDU_STATUS_BUSY 0x01
#define EDU_STATUS_IRQFACT 0x80
#define EDU_REG_IRQ_STATUS 0x24
#define EDU_REG_IRQ_ACK 0x64
#define EDU_REG_DMA_SRC 0x80
#define EDU_REG_DMA_DST 0x88
#define EDU_REG_DMA_CNT 0x90
#define EDU_REG_DMA_CMD 0x98
#define EDU_DMA_RUN 0x1
#define EDU_DMA_TO_RAM 0x2
#define EDU_DMA_IRQ 0x4
#define EDU_IRQ_FACT 0x001
#define EDU_IRQ_DMA 0x100

/* The device's buffer; a transfer must end before its last byte (QEMU 7.2). */
#define EDU_BUF_ADDR 0x40000u
#define EDU_BUF_SIZE 4096u
#define EDU_XFER_MAX (EDU_BUF_SIZE - 1)
#define EDU_BLOCK 256
/* The device drops address bits above 28. */
#define EDU_DMA_BITS 28

struct edu {
	struct pci_dev *pdev;
	void __iomem *regs;
	uint8_t *buf; /* NULL when the bus refused DMA */
	dma_addr_t buf_dma;
	size_t buf_size;
	struct dma_pool *pool; /* small blocks, EDU_BLOCK bytes each */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t pending; /* interrupt status bits seen, not yet waited for */
	unsigned long irqs;
};

extern struct pci_driver edu_driver;
/* The interrupt types the probe asks for (a module parameter, in effect). */
extern unsigned int edu_irq_types;
/*
 * Pages in the coherent buffer (a module parameter too): 1 where DMA
 * addresses are physical, and two pages are seldom contiguous.
 */
extern unsigned int edu_buf_pages;

/* n! in the device's 32 bits; -ETIMEDOUT when no interrupt came. */
int edu_factorial(struct edu *edu, uint32_t n, uint32_t *ret);
/*
 * One DMA of @len bytes between @addr and the device's buffer at @dev_off;
 * -EOPNOTSUPP when the device was bound without DMA.
 */
int edu_dma(struct edu *edu, dma_addr_t addr, uint32_t dev_off, uint32_t len,
	    bool to_ram);

#endif /* EDU_H */
