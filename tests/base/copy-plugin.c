// SPDX-License-Identifier: MIT
/*
 * A plugin with a copy of the library of its own (the static library,
 * its symbols kept inside: -Wl,--exclude-libs,ALL), for
 * tests/base/test-copies.c, which is linked with the shared one.
 */
#include <string.h>
#include <devres/device.h>
#include <devres/devres.h>

#define PLUGIN_API __attribute__((visibility("default")))

PLUGIN_API struct device *plugin_dev(void);
PLUGIN_API void *plugin_kmalloc(struct device *dev, size_t size);
PLUGIN_API int plugin_release_all(struct device *dev);
PLUGIN_API int plugin_warns(void);

static struct device pdev;

static void plugin_release(struct device *dev)
{
	(void)dev;
}

struct device *plugin_dev(void)
{
	memset(&pdev, 0, sizeof(pdev));
	pdev.release = plugin_release;
	device_initialize(&pdev);
	if (dev_set_name(&pdev, "plugin-dev"))
		return NULL;
	return &pdev;
}

void *plugin_kmalloc(struct device *dev, size_t size)
{
	return devm_kmalloc(dev, size, GFP_KERNEL);
}

int plugin_release_all(struct device *dev)
{
	return devres_release_all(dev);
}

int plugin_warns(void)
{
	return devres_warn_count();
}
