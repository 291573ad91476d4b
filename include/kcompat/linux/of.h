/* SPDX-License-Identifier: MIT */
/*
 * Device tree matching without a device tree: the board gives a device
 * its compatible string with kcompat_set_compatible(), and
 * of_device_get_match_data() / device_get_match_data() match it against
 * the bound driver's of_match_table.
 */
#ifndef KCOMPAT_LINUX_OF_H
#define KCOMPAT_LINUX_OF_H

#include <string.h>
#include <devres/devres.h>
#include <linux/device.h>
#include <linux/mod_devicetable.h>

struct device_node;
#define of_match_ptr(x) (x)
#define of_node_put(np) ((void)(np))

/* The compatible string's node: weak, so that one program has one. */
void kcompat_compatible_release(struct device *dev, void *res);
__attribute__((weak)) void kcompat_compatible_release(struct device *dev,
						      void *res)
{
	(void)dev;
	(void)res;
}

/*
 * kcompat_set_compatible() - what the device tree would say of @dev
 * @dev: the device, registered or not, not yet bound
 * @compatible: e.g. "acme,rng-v2"; copied
 *
 * Board code, not driver code: the string lives on @dev until it is
 * deleted. Return: 0 or -ENOMEM; -EDEADLK from a match or for-each
 * callback of @dev (a WARN, nothing set).
 */
static inline int kcompat_set_compatible(struct device *dev,
					 const char *compatible)
{
	size_t len = strlen(compatible) + 1;
	int err = devres_may_add(dev, "kcompat_set_compatible");
	char *s;

	if (err)
		return err;
	s = devres_alloc(kcompat_compatible_release, len, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	memcpy(s, compatible, len);
	devres_add(dev, s);
	return 0;
}

static inline const char *kcompat_compatible(struct device *dev)
{
	return (const char *)devres_find(dev, kcompat_compatible_release, NULL,
					 NULL);
}

static inline const struct of_device_id *
of_match_device(const struct of_device_id *ids, const struct device *dev)
{
	const char *c;

	/* NULL: no table, nothing matches, as the kernel's. */
	if (ids && devres_ptr_bad(ids)) {
		devres_warn_bad_arg("of_match_device", "match table", ids);
		return NULL;
	}
	c = kcompat_compatible((struct device *)dev);
	for (; c && ids && (ids->compatible[0] || ids->name[0]); ids++)
		if (strcmp(ids->compatible, c) == 0)
			return ids;
	return NULL;
}

static inline const void *of_device_get_match_data(const struct device *dev)
{
	const struct of_device_id *id;

	if (devres_ptr_bad(dev)) {
		devres_warn_bad_arg("of_device_get_match_data", "device", dev);
		return NULL;
	}
	if (!dev->driver)
		return NULL;
	id = of_match_device(dev->driver->of_match_table, dev);
	return id ? id->data : NULL;
}

#define device_get_match_data(dev) of_device_get_match_data(dev)

static inline bool of_device_is_compatible(const struct device *dev,
					   const char *compatible)
{
	const char *c;

	if (devres_ptr_bad(compatible)) {
		devres_warn_bad_arg("of_device_is_compatible", "compatible",
				    compatible);
		return false;
	}
	c = kcompat_compatible((struct device *)dev);
	return c && strcmp(c, compatible) == 0;
}

#endif /* KCOMPAT_LINUX_OF_H */
