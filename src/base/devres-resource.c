// SPDX-License-Identifier: MIT
/*
 * The managed forms of the resource tree's calls: a range requested
 * through them is given back when the device's resources are released.
 * Each managed call has its own release function, so that logs and dumps
 * name the call that made the node.
 */
#include <errno.h>
#include <pthread.h>
#include <devres/devres.h>
#include "resource.h"

struct region_dr {
	resource_size_t start;
	resource_size_t n;
};

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
				   const char *name, const char *fix)
{
	struct devres__owner owner;
	struct region_dr *dr;
	struct resource *res;

	if (!devres__dev_ok(dev, call) ||
	    devres__opt_bad(dev, name, call, "name"))
		return NULL;
	dr = devres_alloc_named(release, sizeof(*dr), GFP_KERNEL, call);
	if (!dr)
		return NULL;
	dr->start = start;
	dr->n = n;
	owner = (struct devres__owner){ .dev = dev,
					.node = dr,
					.release = release,
					.call = call,
					.fix = fix };
	/* On success the node is on @dev (added under the tree's lock). */
	res = devres__request_region(root, start, n, name, 0, &owner);
	if (!res)
		devres_free(dr);
	return res;
}

struct resource *devm_request_region(struct device *dev, resource_size_t start,
				     resource_size_t n, const char *name)
{
	return request_dr(dev, devm_region_release, __func__, &ioport_resource,
			  start, n, name, "devm_release_region()");
}

struct resource *devm_request_mem_region(struct device *dev,
					 resource_size_t start,
					 resource_size_t n, const char *name)
{
	return request_dr(dev, devm_mem_region_release, __func__,
			  &iomem_resource, start, n, name,
			  "devm_release_mem_region()");
}

static void release_managed(struct device *dev, dr_release_t release,
			    resource_size_t start, resource_size_t n,
			    const char *func)
{
	struct region_dr match = { .start = start, .n = n };

	if (!devres__dev_ok(dev, func))
		return;
	if (devres_release(dev, release, region_match, &match))
		devres__warn(dev, func, "no managed region [%#llx-%#llx]",
			     (unsigned long long)start,
			     (unsigned long long)(start + n - 1));
}

void devm_release_region(struct device *dev, resource_size_t start,
			 resource_size_t n)
{
	release_managed(dev, devm_region_release, start, n, __func__);
}

void devm_release_mem_region(struct device *dev, resource_size_t start,
			     resource_size_t n)
{
	release_managed(dev, devm_mem_region_release, start, n, __func__);
}

/*
 * A range the caller owns, described in the tree while the device lives.
 * The struct resource is the caller's, with no room for an owner: the
 * nodes that own one are on a list instead, so that release_resource() of
 * a managed range finds its node, and a node whose range was released by
 * hand (and perhaps requested again by another owner) leaves it alone.
 */
struct resource_dr {
	struct resource *res;
	struct resource_dr *next, *prev;
	struct devres__owner owner;
};

static pthread_mutex_t owned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct resource_dr owned = { .next = &owned, .prev = &owned };

/* Held across fork(): the child finds it free (docs/fork.md). */
__attribute__((constructor)) static void owned_atfork(void)
{
	devres__atfork_mutex(DEVRES_FORK_OWNED, &owned_lock);
}

static void unlink_dr(struct resource_dr *dr)
{
	dr->prev->next = dr->next;
	dr->next->prev = dr->prev;
	dr->next = dr->prev = NULL;
}

static void devm_resource_release(struct device *dev, void *res)
{
	struct resource_dr *dr = res;
	bool mine;

	(void)dev;
	pthread_mutex_lock(&owned_lock);
	mine = dr->next != NULL;
	if (mine)
		unlink_dr(dr);
	pthread_mutex_unlock(&owned_lock);
	if (mine)
		release_resource(dr->res);
}

void devres__resource_hand(struct resource *old, const char *func)
{
	struct devres__hand hand;
	struct resource_dr *dr;

	pthread_mutex_lock(&owned_lock);
	for (dr = owned.next; dr != &owned; dr = dr->next)
		if (dr->res == old)
			break;
	if (dr != &owned) {
		unlink_dr(dr);
		/* Frees dr (the node's data): nothing of it is read after. */
		devres__disown(&dr->owner, &hand);
	}
	pthread_mutex_unlock(&owned_lock);
	if (dr != &owned)
		devres__warn_hand(&hand, func, "a resource");
}

static int resource_match(struct device *dev, void *res, void *data)
{
	const struct resource_dr *dr = res;

	(void)dev;
	return dr->res == data;
}

int devm_request_resource(struct device *dev, struct resource *root,
			  struct resource *new_res)
{
	struct resource_dr *dr;

	if (!devres__dev_ok(dev, __func__))
		return -EINVAL;
	if (devres__arg_bad(dev, root, __func__, "resource") ||
	    devres__arg_bad(dev, new_res, __func__, "resource") ||
	    devres__opt_bad(dev, new_res->name, __func__, "resource name"))
		return -EINVAL;
	dr = devres_alloc_named(devm_resource_release, sizeof(*dr), GFP_KERNEL,
				"devm_request_resource");
	if (!dr)
		return -ENOMEM;
	if (request_resource_conflict(root, new_res)) {
		devres_free(dr);
		return -EBUSY;
	}
	dr->res = new_res;
	dr->owner = (struct devres__owner){ .dev = dev,
					    .node = dr,
					    .release = devm_resource_release,
					    .call = "devm_request_resource",
					    .fix = "devm_release_resource()" };
	pthread_mutex_lock(&owned_lock);
	dr->next = &owned;
	dr->prev = owned.prev;
	owned.prev->next = dr;
	owned.prev = dr;
	pthread_mutex_unlock(&owned_lock);
	devres_add(dev, dr);
	return 0;
}

void devm_release_resource(struct device *dev, struct resource *new_res)
{
	if (!devres__dev_ok(dev, __func__))
		return;
	if (devres_release(dev, devm_resource_release, resource_match, new_res))
		devres__warn(dev, __func__, "resource %p is not managed",
			     (void *)new_res);
}
