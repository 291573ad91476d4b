/* SPDX-License-Identifier: MIT */
/* DMA pools (dma_pool_create(), dmam_pool_create()). */
#ifndef KCOMPAT_LINUX_DMAPOOL_H
#define KCOMPAT_LINUX_DMAPOOL_H

#include <linux/dma-mapping.h>

#endif /* KCOMPAT_LINUX_DMAPOOL_H */
