// SPDX-License-Identifier: MIT
/* A program built against the installed libdevres. */
#include <stdio.h>
#include <stdlib.h>
#include <devres/device.h>

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
