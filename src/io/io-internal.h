/* SPDX-License-Identifier: MIT */
/*
 * What the managed forms of ioremap (devres.c) need of iomap.c: a mapping
 * made on behalf of a node, which records that node, and its release by
 * that node only.
 */
#ifndef DEVRES_IO_INTERNAL_H
#define DEVRES_IO_INTERNAL_H

#include <devres/io.h>
#include "base/subsys.h"

/*
 * ioremap() whose mapping @owner's node releases. The node is a void *
 * the address is written to; it goes on @owner->dev in the hold of the
 * mappings' lock that lists the mapping (an iounmap() by hand takes it
 * off under that lock). With @owner, the node is this call's: on its
 * device on success, freed on failure.
 */
HIDDEN void *io__remap(phys_addr_t offset, size_t size,
		       const struct devres__owner *owner);
/*
 * Unmaps @addr if @node still owns the mapping there; does nothing if it
 * was unmapped by hand (iounmap() already said so). A release path.
 */
HIDDEN void io__unmap_owned(void *addr, const void *node);

#endif /* DEVRES_IO_INTERNAL_H */
