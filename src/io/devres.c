// SPDX-License-Identifier: MIT
/*
 * The managed forms of ioremap: devm_ioremap() and devm_ioremap_wc(),
 * devm_ioremap_resource() (claim the region, then map it), and the
 * platform bus's shortcuts to them. Each call has its own release
 * function, so that logs and dumps name the call that made the node.
 */
#include <errno.h>
#include <stdint.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/platform.h>
#include "io-internal.h"

static void devm_ioremap_release(struct device *dev, void *res)
{
	(void)dev;
	io__unmap_owned(*(void **)res, res);
}

static void devm_ioremap_wc_release(struct device *dev, void *res)
{
	(void)dev;
	io__unmap_owned(*(void **)res, res);
}

static int map_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	return *(void **)res == data;
}

static void *map_dr(struct device *dev, dr_release_t release, const char *call,
		    resource_size_t offset, resource_size_t size)
{
	struct devres__owner owner;
	void **ptr;

	if (!devres__dev_ok_to_acquire(dev, call)) {
		errno = EINVAL;
		return NULL;
	}
	if (size > SIZE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	ptr = devres_alloc_named(release, sizeof(*ptr), GFP_KERNEL, call);
	if (!ptr) {
		errno = ENOMEM;
		return NULL;
	}
	owner = (struct devres__owner){ .dev = dev,
					.node = ptr,
					.release = release,
					.call = call,
					.fix = "devm_iounmap()" };
	/* The node is io__remap()'s: on @dev with the address, or freed. */
	return io__remap(offset, (size_t)size, &owner);
}

void *devm_ioremap(struct device *dev, resource_size_t offset,
		   resource_size_t size)
{
	return map_dr(dev, devm_ioremap_release, __func__, offset, size);
}

void *devm_ioremap_wc(struct device *dev, resource_size_t offset,
		      resource_size_t size)
{
	return map_dr(dev, devm_ioremap_wc_release, __func__, offset, size);
}

void devm_iounmap(struct device *dev, void *addr)
{
	struct devres__hand h;

	if (!devres__dev_ok(dev, __func__))
		return;
	if (!devres_release(dev, devm_ioremap_release, map_match, addr) ||
	    !devres_release(dev, devm_ioremap_wc_release, map_match, addr))
		return;
	/* Another device's mapping (or another call's): named, left alone. */
	devres__warn_foreign(dev, __func__,
			     devres__maps_owner(addr, &h) ? &h : NULL,
			     "%p is not a managed mapping", addr);
}

static void *map_resource(struct device *dev, const struct resource *res,
			  void *(*map)(struct device *, resource_size_t,
				       resource_size_t),
			  const char *func)
{
	struct devres__region_id claim;
	resource_size_t size;
	const char *name;
	void *addr;
	int err;

	if (!devres__dev_ok_to_acquire(dev, func) ||
	    devres__opt_bad(dev, res, func, "resource") ||
	    (res && devres__opt_bad(dev, res->name, func, "resource name")))
		return ERR_PTR(-EINVAL);
	/* Logged as the kernel logs them: the driver's probe returns the error. */
	if (!res || resource_type(res) != IORESOURCE_MEM) {
		if (res)
			dev_err(dev,
				"invalid resource [%#llx-%#llx flags %#lx]\n",
				(unsigned long long)res->start,
				(unsigned long long)res->end, res->flags);
		else
			dev_err(dev, "invalid resource (null)\n");
		return ERR_PTR(-EINVAL);
	}
	size = resource_size(res);
	name = res->name ? res->name : dev_name(dev);
	if (!devres__request_region_node(dev, true, res->start, size, name,
					 "devm_request_mem_region",
					 "devm_release_mem_region()", &claim)) {
		dev_err(dev,
			"can't request region for resource [mem %#llx-%#llx]\n",
			(unsigned long long)res->start,
			(unsigned long long)res->end);
		return ERR_PTR(-EBUSY);
	}
	addr = map(dev, res->start, size);
	if (!addr) {
		err = errno;
		/*
		 * This call's claim, by identity: one given back meanwhile
		 * and the range claimed again on the device (another call of
		 * the driver's, from a signal handler or a log sink on this
		 * thread, or on another thread) is the other call's.
		 */
		(void)devres__region_node_release(dev, true, &claim);
		dev_err(dev, "ioremap failed for resource [mem %#llx-%#llx]\n",
			(unsigned long long)res->start,
			(unsigned long long)res->end);
		errno = err;
		return ERR_PTR(-ENOMEM);
	}
	return addr;
}

void *devm_ioremap_resource(struct device *dev, const struct resource *res)
{
	return map_resource(dev, res, devm_ioremap, __func__);
}

void *devm_ioremap_resource_wc(struct device *dev, const struct resource *res)
{
	return map_resource(dev, res, devm_ioremap_wc, __func__);
}

/* The platform helpers: their WARNs name the call the driver made. */
static void *platform_map(struct platform_device *pdev, unsigned int index,
			  struct resource **res, const char *func)
{
	struct resource *r;

	if (devres__arg_bad(NULL, pdev, func, "device") ||
	    devres__opt_bad(&pdev->dev, res, func, "res"))
		return ERR_PTR(-EINVAL);
	r = platform_get_resource(pdev, IORESOURCE_MEM, index);
	if (res)
		*res = r;
	return map_resource(&pdev->dev, r, devm_ioremap, func);
}

void *devm_platform_get_and_ioremap_resource(struct platform_device *pdev,
					     unsigned int index,
					     struct resource **res)
{
	return platform_map(pdev, index, res, __func__);
}

void *devm_platform_ioremap_resource(struct platform_device *pdev,
				     unsigned int index)
{
	return platform_map(pdev, index, NULL, __func__);
}
