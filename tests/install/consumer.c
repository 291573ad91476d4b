// SPDX-License-Identifier: MIT
/* A program built against the installed libdevres. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/version.h>

static int released;

static void count_release(void *data)
{
	(void)data;
	released++;
}

static void dev_release(struct device *dev)
{
	(void)dev;
}

int main(void)
{
	struct device dev = { .release = dev_release };
	char *s;

	/* The headers and the library it runs with are of one release. */
	if (strcmp(devres_version(), DEVRES_VERSION_STRING) != 0) {
		fprintf(stderr, "library %s, headers %s\n", devres_version(),
			DEVRES_VERSION_STRING);
		return 1;
	}
	device_initialize(&dev);
	if (dev_set_name(&dev, "consumer%d", 0))
		return 1;
	s = devm_kasprintf(&dev, GFP_KERNEL, "hello from %s", dev_name(&dev));
	if (!s || devm_add_action(&dev, count_release, NULL))
		return 1;
	printf("%s\n", s);
	put_device(&dev);
	if (released != 1) {
		fprintf(stderr, "action ran %d times\n", released);
		return 1;
	}
	return 0;
}
