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
 * Who owns the managed region exactly [start, start + n) in @parent, or
 * the devm_request_resource() range @res, into @h: false when no managed
 * call does.
 */
HIDDEN bool devres__region_owner(const struct resource *parent,
				 resource_size_t start, resource_size_t n,
				 struct devres__hand *h);
HIDDEN bool devres__owned_res_owner(const struct resource *res,
				    struct devres__hand *h);

/*
 * A devm_request_resource() range: the caller's struct resource, which has
 * no room for an owner, and the node that owns it. Listed under the tree's
 * lock from the hold that puts the range in the tree and the node on its
 * device to the hold that takes the range out: release_resource() or
 * remove_resource() of it by hand then finds the node in the hold that
 * unlinks the range (its WARN, the node taken off), and the node's release
 * finds it no longer listed.
 */
struct devres__owned_res {
	struct resource *res;
	struct devres__owned_res *next, *prev;
	struct devres__owner owner;
};

/*
 * request_resource_conflict() of @o->res in @root, for @o's node: on no
 * conflict (NULL), @o is listed and its node put on its device in the
 * same hold of the tree's lock. ERR_PTR(-ENODEV) when the device refused
 * the node (devres__record()): nothing inserted.
 */
HIDDEN struct resource *devres__request_owned(struct resource *root,
					      struct devres__owned_res *o);
/*
 * The release of @o's node: takes @o->res out of the tree (its children
 * with it) if @o is still listed, in one hold of the tree's lock.
 */
HIDDEN void devres__release_owned(struct devres__owned_res *o);

#endif /* DEVRES_RESOURCE_H */
