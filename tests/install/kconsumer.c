// SPDX-License-Identifier: MIT
/* A kernel-style driver file built against the installed compat headers. */
#include <linux/bitfield.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>

#define CTRL_MODE GENMASK(5, 4)

static int kc_probe(struct platform_device *pdev)
{
	u32 *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	*p = FIELD_PREP(CTRL_MODE, 2);
	return FIELD_GET(CTRL_MODE, *p) == 2 ? 0 : -EINVAL;
}

static struct platform_driver kc_driver = {
	.probe = kc_probe,
	.driver = { .name = "kconsumer" },
};
module_platform_driver(kc_driver);
MODULE_LICENSE("MIT");

int main(void)
{
	struct platform_device *pdev;
	int ret = kc_driver_init();

	if (ret)
		return 1;
	pdev = platform_device_register_simple("kconsumer", -1, NULL, 0);
	if (IS_ERR(pdev))
		return 1;
	ret = pdev->dev.driver ? 0 : 1;
	platform_device_unregister(pdev);
	kc_driver_exit();
	return ret;
}
