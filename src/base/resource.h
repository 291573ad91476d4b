/* SPDX-License-Identifier: MIT */
/*
 * What the rest of src/base needs of the resource tree beyond
 * devres/ioport.h: the platform bus's insertion and removal of a device's
 * resources, and the region calls with an explicit parent for the managed
 * forms in devres-resource.c.
 */
#ifndef DEVRES_RESOURCE_H
#define DEVRES_RESOURCE_H

#include <devres/ioport.h>
#include "subsys.h"

/*
 * Inserts the MEM and IO resources of @res[0..@n) into their tree (the
 * resource's preset parent, or the root of its type), as
 * platform_device_add() does; on a conflict, takes out those it inserted
 * and returns -EBUSY.
 */
HIDDEN int devres__insert_resources(struct resource *res, unsigned int n);
/* Takes out those of @res[0..@n) that are in a tree; their children stay. */
HIDDEN void devres__remove_resources(struct resource *res, unsigned int n);

/*
 * @owner: the node of a managed request, or NULL; the node, filled, goes
 * on its device in the hold of the tree's lock that claims the region.
 */
HIDDEN struct resource *
devres__request_region(struct resource *parent, resource_size_t start,
		       resource_size_t n, const char *name, unsigned long flags,
		       const struct devres__owner *owner);
/*
 * Releases the busy region [start, start + n): any (@node NULL, by hand:
 * a managed one loses its node, @func WARNs), or only the one @node owns.
 * false when there is no such region.
 */
HIDDEN bool devres__release_region(struct resource *parent,
				   resource_size_t start, resource_size_t n,
				   const void *node, const char *func);

/*
 * devres-resource.c: release_resource() or remove_resource() of @old, a
 * devm_request_resource() range: WARN, and its node leaves the device.
 */
HIDDEN void devres__resource_hand(struct resource *old, const char *func);

#endif /* DEVRES_RESOURCE_H */
