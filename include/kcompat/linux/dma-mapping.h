/* SPDX-License-Identifier: MIT */
/* DMA masks, coherent buffers and streaming maps of libdevres. */
#ifndef KCOMPAT_LINUX_DMA_MAPPING_H
#define KCOMPAT_LINUX_DMA_MAPPING_H

#include <devres/dma.h>
#include <linux/device.h>

#endif /* KCOMPAT_LINUX_DMA_MAPPING_H */
