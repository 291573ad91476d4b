/* SPDX-License-Identifier: MIT */
/*
 * The parts of the NVM Express base specification (revision 1.4) this
 * driver uses: controller registers, the admin and NVM command sets'
 * submission and completion entries, and the Identify data it reads.
 */
#ifndef NVME_H
#define NVME_H

#include <stdint.h>

/* Controller registers, BAR 0. */
#define NVME_REG_CAP 0x00   /* capabilities, 64 bits */
#define NVME_REG_VS 0x08    /* version */
#define NVME_REG_INTMS 0x0c /* interrupt mask set (pin and MSI only) */
#define NVME_REG_CC 0x14    /* controller configuration */
#define NVME_REG_CSTS 0x1c  /* controller status */
#define NVME_REG_AQA 0x24   /* admin queue attributes */
#define NVME_REG_ASQ 0x28   /* admin submission queue base, 64 bits */
#define NVME_REG_ACQ 0x30   /* admin completion queue base, 64 bits */
#define NVME_REG_DBS 0x1000 /* the first doorbell */

#define NVME_CAP_MQES(cap) ((uint32_t)((cap)&0xffff) + 1)
#define NVME_CAP_TO_MS(cap) ((uint32_t)(((cap) >> 24) & 0xff) * 500)
#define NVME_CAP_DSTRD(cap) ((uint32_t)((cap) >> 32) & 0xf)
#define NVME_CAP_CSS_NVM(cap) (((cap) >> 37) & 1)
#define NVME_CAP_MPSMIN(cap) ((uint32_t)((cap) >> 48) & 0xf)

#define NVME_CC_EN (1u << 0)
#define NVME_CC_CSS_NVM (0u << 4)
#define NVME_CC_MPS(shift) (((uint32_t)(shift)-12) << 7)
#define NVME_CC_SHN_NORMAL (1u << 14)
#define NVME_CC_SHN_MASK (3u << 14)
#define NVME_CC_IOSQES (6u << 16) /* 64-byte submission entries */
#define NVME_CC_IOCQES (4u << 20) /* 16-byte completion entries */

#define NVME_CSTS_RDY (1u << 0)
#define NVME_CSTS_CFS (1u << 1) /* controller fatal status */
#define NVME_CSTS_SHST_MASK (3u << 2)
#define NVME_CSTS_SHST_CMPLT (2u << 2)

/* Admin opcodes. */
#define NVME_ADMIN_DELETE_SQ 0x00
#define NVME_ADMIN_CREATE_SQ 0x01
#define NVME_ADMIN_DELETE_CQ 0x04
#define NVME_ADMIN_CREATE_CQ 0x05
#define NVME_ADMIN_IDENTIFY 0x06
#define NVME_ADMIN_SET_FEATURES 0x09

#define NVME_FEAT_NUM_QUEUES 0x07
#define NVME_ID_CNS_NS 0x00
#define NVME_ID_CNS_CTRL 0x01

/* NVM command set opcodes. */
#define NVME_CMD_FLUSH 0x00
#define NVME_CMD_WRITE 0x01
#define NVME_CMD_READ 0x02

/* Create I/O queue flags (dword 11). */
#define NVME_QUEUE_PHYS_CONTIG (1u << 0)
#define NVME_CQ_IRQ_ENABLED (1u << 1)

/* A submission queue entry: 64 bytes, little-endian. */
struct nvme_sqe {
	uint8_t opcode;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint64_t rsvd2;
	uint64_t mptr;
	uint64_t prp1;
	uint64_t prp2;
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};

/* A completion queue entry: 16 bytes. */
struct nvme_cqe {
	uint32_t result;
	uint32_t rsvd;
	uint16_t sq_head;
	uint16_t sq_id;
	uint16_t cid;
	uint16_t status; /* bit 0: the phase tag; bits 1-15: the status */
};

#define NVME_CQE_PHASE(s) ((s)&1)
#define NVME_CQE_SC(s) ((uint16_t)((s) >> 1) & 0xff) /* status code */
#define NVME_CQE_SCT(s) ((uint16_t)((s) >> 9) & 0x7) /* status code type */

/* Identify Controller, byte offsets. */
#define NVME_IDC_VID 0
#define NVME_IDC_SN 4	 /* 20 bytes, ASCII, space padded */
#define NVME_IDC_MN 24	 /* 40 bytes */
#define NVME_IDC_FR 64	 /* 8 bytes */
#define NVME_IDC_MDTS 77 /* max transfer, a power of two of MPSMIN pages */
#define NVME_IDC_NN 516	 /* number of namespaces, 32 bits */

/* Identify Namespace, byte offsets. */
#define NVME_IDNS_NSZE 0 /* size in logical blocks, 64 bits */
#define NVME_IDNS_FLBAS 26
#define NVME_IDNS_LBAF 128 /* 16 formats, 4 bytes each; LBADS in byte 2 */

#define NVME_PAGE 4096u

#endif /* NVME_H */
