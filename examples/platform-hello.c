// SPDX-License-Identifier: MIT
/*
 * platform-hello: the smallest complete platform driver.
 *
 * Its probe acquires everything through managed (devm_*) calls, so there is
 * no error ladder and almost no remove: when probe fails half way, or when
 * the driver is unbound, the library gives everything back, newest first.
 *
 * Build against the installed library:  cc platform-hello.c $(pkg-config
 * --cflags --libs devres)
 *
 * Run it with DEVRES_LOG=1 to see every acquisition and release, and with
 * --sweep to test every error path of the probe: it is made to fail at
 * each acquisition in turn, and the library checks nothing leaked.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <devres/fault.h>
#include <devres/platform.h>

/* The driver's per-device state. */
struct hello {
	struct device *dev;
	int irq;
	char *rx, *tx;
	int greetings;
};

/* Undone by the library: here a "power off" for what probe powered on. */
static void hello_power_off(void *data)
{
	struct hello *hw = data;

	dev_info(hw->dev, "powered off\n");
}

/*
 * A mid-layer (a library the driver uses) that acquires several things
 * and, when one fails, gives back only its own, leaving the driver's alone.
 * A group marks where it started.
 */
static char buffers_group; /* any unique address names the group */

static int hello_buffers_init(struct device *dev, struct hello *hw)
{
	if (!devres_open_group(dev, &buffers_group, GFP_KERNEL))
		return -ENOMEM;
	hw->rx = devm_kzalloc(dev, 256, GFP_KERNEL);
	hw->tx = devm_kzalloc(dev, 256, GFP_KERNEL);
	if (!hw->rx || !hw->tx) {
		/* Releases rx or tx, whichever was allocated; nothing else. */
		devres_release_group(dev, &buffers_group);
		return -ENOMEM;
	}
	devres_close_group(dev, &buffers_group);
	return 0;
}

static int hello_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct hello *hw;
	int ret;

	/* Freed by the library when the driver detaches. */
	hw = devm_kzalloc(dev, sizeof(*hw), GFP_KERNEL);
	if (!hw)
		return -ENOMEM;
	hw->dev = dev;

	hw->irq = platform_get_irq(pdev, 0);
	if (hw->irq < 0)
		return dev_err_probe(dev, hw->irq, "no interrupt\n");

	dev_info(dev, "powered on\n");
	/* If recording the action fails, it runs at once: no leak. */
	ret = devm_add_action_or_reset(dev, hello_power_off, hw);
	if (ret)
		return ret;

	ret = hello_buffers_init(dev, hw);
	if (ret)
		return ret; /* everything above is released for us */

	platform_set_drvdata(pdev, hw);
	dev_info(dev, "hello! irq %d, registers at %#llx\n", hw->irq,
		 (unsigned long long)platform_get_resource(pdev, IORESOURCE_MEM,
							   0)
			 ->start);
	return 0;
}

/* Only what is not a resource: stop the device. The rest is managed. */
static void hello_remove(struct platform_device *pdev)
{
	struct hello *hw = platform_get_drvdata(pdev);

	dev_info(&pdev->dev, "goodbye after %d greetings\n", ++hw->greetings);
}

static struct platform_driver hello_driver = {
	.probe = hello_probe,
	.remove = hello_remove,
	.driver = { .name = "hello" },
};

/* Fails each acquisition of the probe in turn; 0 when nothing leaked. */
static int sweep(struct platform_device *pdev)
{
	struct devres_sweep_result r;

	return driver_probe_sweep(&hello_driver.driver, &pdev->dev, &r);
}

int main(int argc, char **argv)
{
	/* What a board file (or firmware) would say about the device. */
	static const struct resource res[] = {
		DEFINE_RES_MEM(0xfe000000, 0x1000),
		DEFINE_RES_IRQ(42),
	};
	struct platform_device *pdev;
	int ret;

	pdev = platform_device_register_simple("hello", PLATFORM_DEVID_NONE,
					       res, 2);
	if (IS_ERR(pdev)) {
		fprintf(stderr, "cannot register the device: %ld\n",
			PTR_ERR(pdev));
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "--sweep") == 0) {
		ret = sweep(pdev);
		platform_device_unregister(pdev);
		return ret != 0;
	}

	/* The driver binds to the matching device right away. */
	ret = platform_driver_register(&hello_driver);
	if (ret) {
		platform_device_unregister(pdev);
		return 1;
	}
	printf("%s is %s\n", dev_name(&pdev->dev),
	       device_is_bound(&pdev->dev) ? "bound" : "not bound");
	devres_dump(&pdev->dev, stdout);

	/* Unbinds: remove, then every managed resource, newest first. */
	platform_device_unregister(pdev);
	platform_driver_unregister(&hello_driver);
	return 0;
}
