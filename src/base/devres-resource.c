// SPDX-License-Identifier: MIT
/*
 * The managed forms of the resource tree's calls: a range requested
 * through them is given back when the device's resources are released.
 * Each managed call has its own release function, so that logs and dumps
 * name the call that made the node.
 */
#include <errno.h>
#include <stdint.h>
#include <devres/devres.h>
#include "resource.h"

struct region_dr {
	resource_size_t start;
	resource_size_t n;
	uint64_t seq; /* the claim's number: its identity with the node */
};

/* The last claim's number: 0 is none. */
static uint64_t region_seq;

/*
 * Gives back the region this node owns. Released by hand, it is gone
 * with its node (release_region() WARNed); a region another owner has
 * at the same range since is not this node's, and is left alone.
 */
static void release_dr(struct resource *root, void *res, const char *func)
{
	struct region_dr *r = res;

	devres__release_region(root, r->start, r->n, r, func);
}

static void devm_region_release(struct device *dev, void *res)
{
	(void)dev;
	release_dr(&ioport_resource, res, "devm_request_region");
}

static void devm_mem_region_release(struct device *dev, void *res)
{
	(void)dev;
	release_dr(&iomem_resource, res, "devm_request_mem_region");
}

static int region_match(struct device *dev, void *res, void *data)
{
	const struct region_dr *a = res, *b = data;

	(void)dev;
	return a->start == b->start && a->n == b->n;
}

static struct resource *request_dr(struct device *dev, dr_release_t release,
				   const char *call, struct resource *root,
				   resource_size_t start, resource_size_t n,
				   const char *name, const char *fix,
				   struct devres__region_id *ret_id)
{
	struct devres__owner owner;
	struct region_dr *dr;
	struct resource *res;

	if (!devres__dev_ok_to_acquire(dev, call) ||
	    devres__opt_bad(dev, name, call, "name"))
		return NULL;
	dr = devres_alloc_named(release, sizeof(*dr), GFP_KERNEL, call);
	if (!dr)
		return NULL;
	dr->start = start;
	dr->n = n;
	dr->seq = __atomic_add_fetch(&region_seq, 1, __ATOMIC_RELAXED);
	/* Read before the claim: once on @dev, the node may go at once. */
	if (ret_id)
		*ret_id = (struct devres__region_id){ dr, dr->seq };
	owner = (struct devres__owner){ .dev = dev,
					.node = dr,
					.release = release,
					.call = call,
					.fix = fix };
	/* On success the node is on @dev (added under the tree's lock). */
	res = devres__request_region(root, start, n, name, 0, &owner);
	if (!res) {
		devres_free(dr);
		if (ret_id)
			*ret_id = (struct devres__region_id){ 0 };
	}
	return res;
}

struct resource *devm_request_region(struct device *dev, resource_size_t start,
				     resource_size_t n, const char *name)
{
	return request_dr(dev, devm_region_release, __func__, &ioport_resource,
			  start, n, name, "devm_release_region()", NULL);
}

struct resource *devm_request_mem_region(struct device *dev,
					 resource_size_t start,
					 resource_size_t n, const char *name)
{
	return request_dr(dev, devm_mem_region_release, __func__,
			  &iomem_resource, start, n, name,
			  "devm_release_mem_region()", NULL);
}

/*
 * The managed claims by identity, for a call that must give back exactly
 * what it made (pcim_iomap_regions(), devm_ioremap_resource()): the node
 * and the claim's number, as the same range may be released and claimed
 * again by another call meanwhile, its node perhaps in the same storage.
 * A node on the list is live: its number is read under the device's lock.
 */
static int node_match(struct device *dev, void *res, void *data)
{
	const struct devres__region_id *id = data;

	(void)dev;
	return res == id->node && ((struct region_dr *)res)->seq == id->seq;
}

struct resource *devres__request_region_node(struct device *dev, bool mem,
					     resource_size_t start,
					     resource_size_t n,
					     const char *name, const char *call,
					     const char *fix,
					     struct devres__region_id *ret_id)
{
	*ret_id = (struct devres__region_id){ 0 };
	if (mem)
		return request_dr(dev, devm_mem_region_release, call,
				  &iomem_resource, start, n, name, fix, ret_id);
	return request_dr(dev, devm_region_release, call, &ioport_resource,
			  start, n, name, fix, ret_id);
}

bool devres__region_node_held(struct device *dev, bool mem,
			      const struct devres__region_id *id)
{
	return id->node &&
	       devres_find(dev,
			   mem ? devm_mem_region_release : devm_region_release,
			   node_match, (void *)id) != NULL;
}

bool devres__region_node_release(struct device *dev, bool mem,
				 const struct devres__region_id *id)
{
	return id->node && !devres_release(dev,
					   mem ? devm_mem_region_release
					       : devm_region_release,
					   node_match, (void *)id);
}

static void release_managed(struct device *dev, dr_release_t release,
			    struct resource *root, resource_size_t start,
			    resource_size_t n, const char *func)
{
	struct region_dr match = { .start = start, .n = n };
	unsigned long long first = start, last = start + n - 1;
	struct devres__hand h;

	if (!devres__dev_ok(dev, func))
		return;
	if (!devres_release(dev, release, region_match, &match))
		return;
	/* Another device's region (or another call's): named, left alone. */
	devres__warn_foreign(
		dev, func, devres__region_owner(root, start, n, &h) ? &h : NULL,
		"no managed region [%#llx-%#llx]", first, last);
}

void devm_release_region(struct device *dev, resource_size_t start,
			 resource_size_t n)
{
	release_managed(dev, devm_region_release, &ioport_resource, start, n,
			__func__);
}

void devm_release_mem_region(struct device *dev, resource_size_t start,
			     resource_size_t n)
{
	release_managed(dev, devm_mem_region_release, &iomem_resource, start, n,
			__func__);
}

void devres__devm_release_region_as(struct device *dev, bool mem,
				    resource_size_t start, resource_size_t n,
				    const char *func)
{
	if (mem)
		release_managed(dev, devm_mem_region_release, &iomem_resource,
				start, n, func);
	else
		release_managed(dev, devm_region_release, &ioport_resource,
				start, n, func);
}

/*
 * A range the caller owns, described in the tree while the device lives.
 * The struct resource is the caller's, with no room for an owner: its node
 * is listed under the tree's lock (resource.h), so that release_resource()
 * of a managed range finds its node, and a node whose range was released
 * by hand (and perhaps requested again by another owner) leaves it alone.
 */
static void devm_resource_release(struct device *dev, void *res)
{
	(void)dev;
	devres__release_owned(res);
}

static int resource_match(struct device *dev, void *res, void *data)
{
	const struct devres__owned_res *o = res;

	(void)dev;
	return o->res == data;
}

int devm_request_resource(struct device *dev, struct resource *root,
			  struct resource *new_res)
{
	struct devres__owned_res *o;
	struct resource *conflict;

	if (!devres__dev_ok_to_acquire(dev, __func__))
		return -EINVAL;
	if (devres__arg_bad(dev, root, __func__, "resource") ||
	    devres__arg_bad(dev, new_res, __func__, "resource") ||
	    devres__opt_bad(dev, new_res->name, __func__, "resource name"))
		return -EINVAL;
	o = devres_alloc_named(devm_resource_release, sizeof(*o), GFP_KERNEL,
			       "devm_request_resource");
	if (!o)
		return -ENOMEM;
	o->res = new_res;
	o->owner = (struct devres__owner){ .dev = dev,
					   .node = o,
					   .release = devm_resource_release,
					   .call = "devm_request_resource",
					   .fix = "devm_release_resource()" };
	/* In the tree, listed and on @dev in one hold of the tree's lock. */
	conflict = devres__request_owned(root, o);
	if (conflict) {
		devres_free(o);
		return IS_ERR(conflict) ? (int)PTR_ERR(conflict) : -EBUSY;
	}
	return 0;
}

void devm_release_resource(struct device *dev, struct resource *new_res)
{
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__))
		return;
	if (!devres_release(dev, devm_resource_release, resource_match,
			    new_res))
		return;
	devres__warn_foreign(dev, __func__,
			     devres__owned_res_owner(new_res, &h) ? &h : NULL,
			     "resource %p is not managed", (void *)new_res);
}
