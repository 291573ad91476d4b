// SPDX-License-Identifier: MIT
/*
 * The platform bus: devices named "name.id" and described by resources,
 * matched to drivers by name or by an id table.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "base.h"
#include "resource.h"

/* A platform device allocated here, with room for its name. */
struct platform_object {
	struct platform_device pdev;
	char name[];
};

static const struct platform_device_id *
match_id(const struct platform_device_id *id, struct platform_device *pdev)
{
	for (; id->name[0]; id++) {
		if (strcmp(pdev->name, id->name) == 0) {
			pdev->id_entry = id;
			return id;
		}
	}
	return NULL;
}

static int platform_match(struct device *dev, const struct device_driver *drv)
{
	struct platform_device *pdev = to_platform_device(dev);
	const struct platform_driver *pdrv =
		container_of(drv, const struct platform_driver, driver);

	if (pdrv->id_table)
		return match_id(pdrv->id_table, pdev) != NULL;
	return strcmp(pdev->name, drv->name) == 0;
}

static int platform_probe(struct device *dev)
{
	struct platform_driver *pdrv = to_platform_driver(dev->driver);

	return pdrv->probe ? pdrv->probe(to_platform_device(dev)) : 0;
}

static void platform_remove(struct device *dev)
{
	struct platform_driver *pdrv = to_platform_driver(dev->driver);

	if (pdrv->remove)
		pdrv->remove(to_platform_device(dev));
}

static const struct bus_type platform_bus_type = {
	.name = "platform",
	.match = platform_match,
	.probe = platform_probe,
	.remove = platform_remove,
};

static void platform_deleted(struct device *dev);

/* Registered on first use; its state is static, so it cannot fail. */
static struct bus_private platform_bus = {
	.bus = &platform_bus_type,
	.is_static = true,
	.deleted = platform_deleted,
};
static pthread_once_t platform_bus_once = PTHREAD_ONCE_INIT;

static void platform_bus_init(void)
{
	devres__bus_add_static(&platform_bus);
}

static void platform_bus_ready(void)
{
	pthread_once(&platform_bus_once, platform_bus_init);
}

/*
 * The resource arrays platform_device_add_resources() made, each with the
 * device it was made for. The library frees only these: a device's
 * owner may point pdev->resource at an array of its own (static, on its
 * stack, in its own allocation), which is never the library's to free.
 * Looked up by the device, never by reading what pdev->resource points to.
 */
struct res_block {
	struct res_block *next;
	const struct platform_device *pdev;
	struct resource res[];
};

static struct res_block *res_blocks; /* under devres__dm_lock */

/* Unlinks and returns @pdev's block, if the library made one. */
static struct res_block *res_block_take(const struct platform_device *pdev)
{
	struct res_block **pp, *b;

	dm_lock();
	for (pp = &res_blocks; (b = *pp) && b->pdev != pdev; pp = &b->next)
		;
	if (b)
		*pp = b->next;
	dm_unlock();
	return b;
}

static void platform_device_release(struct device *dev)
{
	struct platform_object *pa =
		container_of(dev, struct platform_object, pdev.dev);

	free(res_block_take(&pa->pdev));
	free(pa);
}

struct platform_device *platform_device_alloc(const char *name, int id)
{
	struct platform_object *pa;
	size_t len;

	if (devres__arg_bad(NULL, name, __func__, "name"))
		return NULL;
	if (devres__should_fail())
		return NULL;
	len = strlen(name) + 1;
	pa = calloc(1, sizeof(*pa) + len);
	if (!pa)
		return NULL;
	memcpy(pa->name, name, len);
	pa->pdev.name = pa->name;
	pa->pdev.id = id;
	device_initialize(&pa->pdev.dev);
	pa->pdev.dev.release = platform_device_release;
	return &pa->pdev;
}

/*
 * A copy of @num resources and of their names in one block, out of any
 * tree: what the device keeps must not point into its owner's memory.
 * 0 and the block in *@ret_b, or -EINVAL (a bad name) or -ENOMEM.
 */
static int dup_resources(const struct platform_device *pdev,
			 const struct resource *res, unsigned int num,
			 struct res_block **ret_b)
{
	size_t size = sizeof(struct res_block) + num * sizeof(*res);
	struct res_block *b;
	struct resource *r;
	char *names;

	for (unsigned int i = 0; i < num; i++) {
		if (devres__opt_bad(&pdev->dev, res[i].name,
				    "platform_device_add_resources",
				    "resource name"))
			return -EINVAL;
		if (res[i].name)
			size += strlen(res[i].name) + 1;
	}
	if (devres__should_fail())
		return -ENOMEM;
	b = calloc(1, size);
	if (!b)
		return -ENOMEM;
	b->pdev = pdev;
	r = b->res;
	names = (char *)(r + num);
	for (unsigned int i = 0; i < num; i++) {
		r[i] = res[i];
		r[i].parent = r[i].sibling = r[i].child = NULL;
		if (res[i].name) {
			size_t len = strlen(res[i].name) + 1;

			r[i].name = memcpy(names, res[i].name, len);
			names += len;
		}
	}
	*ret_b = b;
	return 0;
}

/*
 * Why a platform device in state @st cannot take resources now, or NULL. Giving the copy
 * back (no resources) is allowed once the device is off the bus too: from
 * its owner's release callback, say.
 */
static const char *res_refused(enum dm_dev_state st, bool giving_back)
{
	if (st == DEV_ZEROED || st == DEV_INITIALIZED || st == DEV_RELEASED)
		return NULL;
	if (giving_back && (st == DEV_DELETED || st == DEV_RELEASING))
		return NULL;
	return st == DEV_DELETED     ? "device was deleted"
	       : st == DEV_RELEASING ? "device is being released"
				     : "device is already added";
}

int platform_device_add_resources(struct platform_device *pdev,
				  const struct resource *res, unsigned int num)
{
	struct res_block **pp, *b = NULL, *old;
	bool giving_back = !(res && num);
	const char *why;

	if (devres__arg_bad(NULL, pdev, __func__, "device") ||
	    (num && devres__opt_bad(&pdev->dev, res, __func__, "resource")))
		return -EINVAL;
	why = res_refused(dm_dev_state(&pdev->dev), giving_back);
	if (why)
		goto refused;
	if (!giving_back) {
		int ret = dup_resources(pdev, res, num, &b);

		if (ret)
			return ret;
	}
	/*
	 * The state is read again where platform_device_add() claims the
	 * device and device_add() makes it added, and the array swapped
	 * there: an add that began meanwhile (another thread's) names the
	 * array's resources and puts them in the tree, and the old array
	 * freed under it would be in use.
	 */
	dm_lock();
	why = res_refused(dm_dev_state(&pdev->dev), giving_back);
	if (!why && devres__naming_locked(&pdev->dev))
		why = "another add of it is in progress";
	if (!why) {
		/* The array the library made before, not what the owner set. */
		for (pp = &res_blocks; (old = *pp) && old->pdev != pdev;
		     pp = &old->next)
			;
		if (old)
			*pp = old->next;
		pdev->resource = b ? b->res : NULL;
		pdev->num_resources = b ? num : 0;
		if (b) {
			b->next = res_blocks;
			res_blocks = b;
		}
	}
	dm_unlock();
	if (why) {
		free(b);
		goto refused;
	}
	free(old);
	return 0;

refused:
	devres__state_warn(&pdev->dev, __func__, why);
	return -EINVAL;
}

/*
 * Automatic ids, the lowest free one first as the kernel's IDA gives them:
 * an id is the device's from its add to its delete, then free again.
 */
static unsigned long *auto_ids;
static size_t auto_words;

#define ID_BITS (8 * sizeof(unsigned long))

/*
 * One fault point on every call, whether the bitmap grows or not: the
 * points of an add must not depend on how many automatic ids the process
 * handed out before, or a sweep's failure N would fall on another call
 * once the table has room (docs/exhaustion.md).
 */
static int alloc_auto_id(void)
{
	unsigned long *grown;
	size_t w;
	int id = -ENOMEM;

	if (devres__should_fail())
		return -ENOMEM;
	dm_lock();
	for (w = 0; w < auto_words && auto_ids[w] == ~0ul; w++)
		;
	if (w == auto_words && w < (size_t)INT_MAX / ID_BITS) {
		grown = realloc(auto_ids, (w + 1) * sizeof(*grown));
		if (grown) {
			auto_ids = grown;
			auto_ids[w] = 0;
			auto_words++;
		}
	}
	if (w < auto_words) {
		int bit = __builtin_ctzl(~auto_ids[w]);

		auto_ids[w] |= 1ul << bit;
		id = (int)(w * ID_BITS) + bit;
	}
	dm_unlock();
	return id;
}

/* Once per automatic id: two deletes of one device race for it. */
static void free_auto_id(struct platform_device *pdev)
{
	int id;

	if (!__atomic_exchange_n(&pdev->id_auto, false, __ATOMIC_ACQ_REL))
		return;
	id = pdev->id;
	pdev->id = PLATFORM_DEVID_AUTO;
	dm_lock();
	auto_ids[id / ID_BITS] &= ~(1ul << (id % ID_BITS));
	dm_unlock();
}

static int set_name(struct platform_device *pdev)
{
	int id;

	switch (pdev->id) {
	case PLATFORM_DEVID_NONE:
		return devres__dev_set_name_claimed(&pdev->dev, "%s",
						    pdev->name);
	case PLATFORM_DEVID_AUTO:
		id = alloc_auto_id();
		if (id < 0)
			return id;
		pdev->id = id;
		pdev->id_auto = true;
		return devres__dev_set_name_claimed(&pdev->dev, "%s.%d.auto",
						    pdev->name, pdev->id);
	default:
		return devres__dev_set_name_claimed(&pdev->dev, "%s.%d",
						    pdev->name, pdev->id);
	}
}

static int pdev_add(struct platform_device *pdev);

static void naming_drop(void *arg)
{
	devres__naming_drop(arg);
}

/*
 * The resources the add named after the device lose that name when the
 * add fails or the device is deleted: the name is the device's, freed
 * with it, and the array may be its owner's, used again for another
 * device (which would enter the tree under a freed name).
 */
/*
 * A resource's name is written by the add and the deletion while another
 * thread may look it up (platform_get_resource_byname()): each side reads
 * or writes it once, whole.
 */
static const char *res_name(const struct resource *r)
{
	return __atomic_load_n(&r->name, __ATOMIC_RELAXED);
}

static void res_name_set(struct resource *r, const char *name)
{
	__atomic_store_n(&r->name, name, __ATOMIC_RELAXED);
}

static void unname_resources(struct platform_device *pdev)
{
	for (unsigned int i = 0; i < pdev->num_resources; i++)
		if (res_name(&pdev->resource[i]) == dev_name(&pdev->dev))
			res_name_set(&pdev->resource[i], NULL);
}

int platform_device_add(struct platform_device *pdev)
{
	struct devres__naming a;
	int ret;

	if (devres__arg_bad(NULL, pdev, __func__, "device"))
		return -EINVAL;
	/*
	 * Added (also from its own probe, inside its add), deleted...:
	 * device_add() refuses it with the WARN of its state, and nothing
	 * is renamed on the way.
	 */
	if (dm_dev_state(&pdev->dev) != DEV_INITIALIZED)
		return pdev_add(pdev);
	/*
	 * Claimed before it is named: a second add, dev_set_name() and
	 * platform_device_add_resources() are refused until the add is done
	 * (the name and the array are lent to the resource tree).
	 */
	if (!devres__naming_claim(&a, &pdev->dev)) {
		/* Not by name: the other add may be renaming it. */
		devres__warn(NULL, __func__,
			     "platform device %p: another add of it is in "
			     "progress",
			     (void *)pdev);
		return -EBUSY;
	}
	/* Dropped also when a probe ends the thread: the add is done. */
	pthread_cleanup_push(naming_drop, &a);
	ret = pdev_add(pdev);
	pthread_cleanup_pop(1);
	return ret;
}

static int pdev_add(struct platform_device *pdev)
{
	int ret;

	if (devres__arg_bad(NULL, pdev, "platform_device_add", "device") ||
	    devres__opt_bad(&pdev->dev, pdev->name, "platform_device_add",
			    "name"))
		return -EINVAL;
	if (!pdev->name) {
		devres__warn(&pdev->dev, "platform_device_add",
			     "device has no name");
		return -EINVAL;
	}
	/* Renaming a registered device first would corrupt it. */
	if (!devres__dev_ok(&pdev->dev, "platform_device_add"))
		return -EINVAL;
	/* Not initialized: device_add() refuses it with the right WARN. */
	if (dm_dev_state(&pdev->dev) != DEV_INITIALIZED)
		return device_add(&pdev->dev);

	platform_bus_ready();
	pdev->dev.bus = &platform_bus_type;
	ret = set_name(pdev);
	if (ret)
		goto fail;
	for (unsigned int i = 0; i < pdev->num_resources; i++)
		if (!res_name(&pdev->resource[i]))
			res_name_set(&pdev->resource[i], dev_name(&pdev->dev));
	/* MEM and IO resources enter the resource tree, as in the kernel. */
	ret = devres__insert_resources(pdev->resource, pdev->num_resources);
	if (ret)
		goto fail;
	ret = device_add(&pdev->dev);
	if (ret) {
		devres__remove_resources(pdev->resource, pdev->num_resources);
		goto fail;
	}
	return 0;

fail:
	unname_resources(pdev);
	free_auto_id(pdev);
	return ret;
}

/*
 * What follows a platform device's deletion, however it is deleted (the
 * bus's deletion steps, subsys.h): its resources leave the tree, lose
 * the name the add gave them, and its automatic id is free again.
 */
static void platform_deleted(struct device *dev)
{
	struct platform_device *pdev = to_platform_device(dev);

	devres__remove_resources(pdev->resource, pdev->num_resources);
	unname_resources(pdev);
	free_auto_id(pdev);
}

static void pdev_del(struct platform_device *pdev)
{
	if (devres__arg_bad(NULL, pdev, "platform_device_del", "device"))
		return;
	device_del(&pdev->dev);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void platform_device_del(struct platform_device *pdev)
{
	int err = errno;

	pdev_del(pdev);
	errno = err;
}

void platform_device_put(struct platform_device *pdev)
{
	if (pdev && !devres__arg_bad(NULL, pdev, __func__, "device"))
		put_device(&pdev->dev);
}

int platform_device_register(struct platform_device *pdev)
{
	int ret;

	if (devres__arg_bad(NULL, pdev, __func__, "device"))
		return -EINVAL;
	/* Refused, not wiped, when in use or initialized by another thread. */
	ret = devres__device_init(&pdev->dev, __func__);
	if (ret)
		return ret;
	return platform_device_add(pdev);
}

/* The caller's reference, put also when the thread ends in the deletion. */
static void pdev_put(void *arg)
{
	platform_device_put(arg);
}

static void pdev_unregister(struct platform_device *pdev)
{
	if (!pdev ||
	    devres__arg_bad(NULL, pdev, "platform_device_unregister", "device"))
		return;
	/* Refused as a whole: the put alone would drop a reference. */
	if (!devres__may_unregister(&pdev->dev, "platform_device_"
						"unregister"))
		return;
	pthread_cleanup_push(pdev_put, pdev);
	platform_device_del(pdev);
	pthread_cleanup_pop(1);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void platform_device_unregister(struct platform_device *pdev)
{
	int err = errno;

	pdev_unregister(pdev);
	errno = err;
}

struct platform_device *
platform_device_register_simple(const char *name, int id,
				const struct resource *res, unsigned int num)
{
	struct platform_device *pdev;
	int ret;

	if (devres__arg_bad(NULL, name, __func__, "name") ||
	    (num && devres__opt_bad(NULL, res, __func__, "resource")))
		return ERR_PTR(-EINVAL);
	pdev = platform_device_alloc(name, id);
	if (!pdev)
		return ERR_PTR(-ENOMEM);
	ret = platform_device_add_resources(pdev, res, num);
	if (!ret)
		ret = platform_device_add(pdev);
	if (ret) {
		platform_device_put(pdev);
		return ERR_PTR(ret);
	}
	return pdev;
}

int platform_driver_register(struct platform_driver *drv)
{
	if (devres__arg_bad(NULL, drv, __func__, "driver"))
		return -EINVAL;
	platform_bus_ready();
	devres__driver_fill(&drv->driver, &platform_bus_type, NULL);
	return driver_register(&drv->driver);
}

static void pdrv_unregister(struct platform_driver *drv)
{
	if (devres__arg_bad(NULL, drv, "platform_driver_unregister", "driver"))
		return;
	driver_unregister(&drv->driver);
}

/* Callbacks run from here may change errno; the caller's is given back. */
void platform_driver_unregister(struct platform_driver *drv)
{
	int err = errno;

	pdrv_unregister(drv);
	errno = err;
}

struct resource *platform_get_resource(struct platform_device *pdev,
				       unsigned int type, unsigned int num)
{
	if (devres__arg_bad(NULL, pdev, __func__, "device"))
		return NULL;
	for (unsigned int i = 0; i < pdev->num_resources; i++) {
		struct resource *r = &pdev->resource[i];

		if (resource_type(r) == type && num-- == 0)
			return r;
	}
	return NULL;
}

struct resource *platform_get_resource_byname(struct platform_device *pdev,
					      unsigned int type,
					      const char *name)
{
	if (devres__arg_bad(NULL, pdev, __func__, "device") ||
	    devres__arg_bad(&pdev->dev, name, __func__, "name"))
		return NULL;
	for (unsigned int i = 0; i < pdev->num_resources; i++) {
		struct resource *r = &pdev->resource[i];
		/* Read once: a deletion may take it back meanwhile. */
		const char *rname = res_name(r);

		if (resource_type(r) == type && rname &&
		    strcmp(rname, name) == 0)
			return r;
	}
	return NULL;
}

int platform_get_irq_optional(struct platform_device *pdev, unsigned int num)
{
	struct resource *r;

	if (devres__arg_bad(NULL, pdev, __func__, "device"))
		return -EINVAL;
	r = platform_get_resource(pdev, IORESOURCE_IRQ, num);

	/* The kernel's defers while the interrupt's controller is missing. */
	if (r && devres_should_defer(&pdev->dev, "platform_get_irq"))
		return -EPROBE_DEFER;
	if (!r)
		return -ENXIO;
	if (r->start == 0 || r->start > INT_MAX) {
		devres__warn(&pdev->dev, __func__, "invalid interrupt %llu",
			     (unsigned long long)r->start);
		return -EINVAL;
	}
	return (int)r->start;
}

/* As the kernel's: a missing interrupt is logged against the device. */
int platform_get_irq(struct platform_device *pdev, unsigned int num)
{
	int ret;

	if (devres__arg_bad(NULL, pdev, __func__, "device"))
		return -EINVAL;
	ret = platform_get_irq_optional(pdev, num);
	if (ret < 0)
		return dev_err_probe(&pdev->dev, ret,
				     "IRQ index %u not found\n", num);
	return ret;
}
