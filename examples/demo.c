// SPDX-License-Identifier: MIT
/*
 * The demo: a "probe" that acquires memory, an action and a mid-layer group
 * through managed calls, fails half way on its first attempt, and succeeds
 * on its second. Every acquisition is logged (devres_set_log), so the output
 * shows the init-failure path and the detach path are the same code.
 */
#include <errno.h>
#include <stdio.h>
#include <devres/device.h>

struct hello {
	char *label;
	int *ring;
};

static void say_goodbye(void *data)
{
	printf("  action: goodbye from %s\n", ((struct hello *)data)->label);
}

/* A mid-layer that takes what it needs and rolls back only its own part. */
static int midlayer_setup(struct device *dev, bool fail)
{
	if (!devres_open_group(dev, midlayer_setup, GFP_KERNEL))
		return -ENOMEM;
	if (!devm_kcalloc(dev, 4, sizeof(long), GFP_KERNEL) || fail) {
		devres_release_group(dev, midlayer_setup);
		return -EIO;
	}
	devres_remove_group(dev, midlayer_setup);
	return 0;
}

static int probe(struct device *dev, bool fail)
{
	struct hello *h;
	int ret;

	h = devm_kzalloc(dev, sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->label = devm_kasprintf(dev, GFP_KERNEL, "%s-hello", dev_name(dev));
	h->ring = devm_kcalloc(dev, 16, sizeof(*h->ring), GFP_KERNEL);
	if (!h->label || !h->ring)
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, say_goodbye, h);
	if (ret)
		return ret;
	ret = midlayer_setup(dev, fail);
	if (ret)
		return ret; /* no unwinding: the caller releases everything */
	dev_set_drvdata(dev, h);
	return 0;
}

/* Log lines go to stdout, in order with the demo's own output. */
static void to_stdout(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	printf("    %s\n", line);
}

static void demo_release(struct device *dev)
{
	(void)dev;
}

int main(void)
{
	struct device dev = { .release = demo_release };
	int ret, n;

	device_initialize(&dev);
	dev_set_name(&dev, "demo0");
	devres_set_log_sink(to_stdout, NULL);
	devres_set_log(true);

	printf("probe #1 (the mid-layer fails):\n");
	ret = probe(&dev, true);
	n = devres_release_all(&dev);
	printf("probe #1 returned %d; %d resources released\n\n", ret, n);

	printf("probe #2:\n");
	ret = probe(&dev, false);
	printf("probe #2 returned %d; the device holds:\n", ret);
	devres_dump(&dev, stdout);

	printf("\ndetach:\n");
	n = devres_release_all(&dev);
	printf("%d resources released\n", n);
	put_device(&dev);
	return ret ? 1 : 0;
}
