/* SPDX-License-Identifier: MIT */
/*
 * Zeroed blocks the library allocates for itself and nobody else sees (a
 * device's index table): calloc() and free(), except in ASan builds, which
 * keep released ones for reuse (blocks.c).
 */
#ifndef DEVRES_BLOCKS_H
#define DEVRES_BLOCKS_H

#include <stdlib.h>
#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define BLOCKS_KEPT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BLOCKS_KEPT 1
#endif
#endif

#ifdef BLOCKS_KEPT
HIDDEN void *devres__block_zalloc(size_t len);
HIDDEN void devres__block_free(void *p);
#else
static inline void *devres__block_zalloc(size_t len)
{
	return calloc(1, len);
}

static inline void devres__block_free(void *p)
{
	free(p);
}
#endif

#endif /* DEVRES_BLOCKS_H */
