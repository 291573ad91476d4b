// SPDX-License-Identifier: MIT
/*
 * platform-regs: a platform driver that drives registers.
 *
 * Its probe maps the device's register block with
 * devm_platform_ioremap_resource(), which claims the range in the
 * resource tree and maps it through the register window that backs it;
 * then it talks to the device with readl() and writel(). There is no
 * unmapping and no release of the region anywhere: the library gives both
 * back when the driver is unbound, or when probe fails half way.
 *
 * The "device" here is a memfd, declared as the window behind its
 * physical addresses with iomem_window_add(). A real driver declares the
 * same thing with the fd of a PCI resourceN file or of a UIO map.
 *
 * Build against the installed library:  cc platform-regs.c $(pkg-config
 * --cflags --libs devres)
 *
 * Run it with DEVRES_LOG=1 to see each acquisition and release, and with
 * --sweep to fail each acquisition of the probe in turn and check that
 * nothing leaks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/platform.h>

/* Where the board puts the device, and its registers. */
#define REGS_PHYS 0xfe000000ull
#define REGS_SIZE 0x1000u
#define REG_ID 0x00   /* read-only: 0x52454753 ("REGS") */
#define REG_CTRL 0x04 /* bit 0: enable */
#define REG_SCRATCH 0x08

#define CHIP_ID 0x52454753u
#define CTRL_ENABLE 0x1u

struct regs {
	struct device *dev;
	char *base;
};

/* Undone by the library before the mapping goes: the device stops. */
static void regs_disable(void *data)
{
	struct regs *rg = data;

	writel(readl(rg->base + REG_CTRL) & ~CTRL_ENABLE, rg->base + REG_CTRL);
}

static int regs_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct regs *rg;
	uint32_t id;

	rg = devm_kzalloc(dev, sizeof(*rg), GFP_KERNEL);
	if (!rg)
		return -ENOMEM;
	rg->dev = dev;

	/* Claims the region and maps it: an ERR_PTR when either fails. */
	rg->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(rg->base))
		return dev_err_probe(dev, (int)PTR_ERR(rg->base),
				     "cannot map the registers\n");

	id = readl(rg->base + REG_ID);
	if (id != CHIP_ID)
		return dev_err_probe(dev, -ENODEV, "unknown chip %#x\n", id);

	writel(readl(rg->base + REG_CTRL) | CTRL_ENABLE, rg->base + REG_CTRL);
	/* If recording the action fails, it runs at once: no leak. */
	if (devm_add_action_or_reset(dev, regs_disable, rg))
		return -ENOMEM;

	writel(0xc0ffee, rg->base + REG_SCRATCH);
	platform_set_drvdata(pdev, rg);
	dev_info(dev, "chip %#x enabled, scratch reads %#x\n", id,
		 readl(rg->base + REG_SCRATCH));
	return 0;
}

static struct platform_driver regs_driver = {
	.probe = regs_probe,
	.driver = { .name = "regs" },
};

/* The simulated device: a memfd holding its registers, reset. */
static int device_create(volatile uint32_t **ret_view)
{
	int fd = memfd_create("regs-device", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || ftruncate(fd, REGS_SIZE))
		return -1;
	p = mmap(NULL, REGS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	*ret_view = p;
	(*ret_view)[REG_ID / 4] = CHIP_ID;
	return fd;
}

int main(int argc, char **argv)
{
	/* What a board file (or firmware) would say about the device. */
	static const struct resource res[] = {
		DEFINE_RES_MEM(REGS_PHYS, REGS_SIZE),
		DEFINE_RES_IRQ(42),
	};
	struct devres_sweep_result r;
	struct platform_device *pdev;
	volatile uint32_t *view;
	int fd, ret = 1;

	fd = device_create(&view);
	if (fd < 0 ||
	    iomem_window_add(REGS_PHYS, REGS_SIZE, fd, 0, "sim-window")) {
		fprintf(stderr, "cannot set up the simulated device\n");
		return 1;
	}
	pdev = platform_device_register_simple("regs", PLATFORM_DEVID_NONE, res,
					       2);
	if (IS_ERR(pdev)) {
		fprintf(stderr, "cannot register the device: %ld\n",
			PTR_ERR(pdev));
		return 1;
	}

	if (argc > 1 && strcmp(argv[1], "--sweep") == 0) {
		ret = driver_probe_sweep(&regs_driver.driver, &pdev->dev, &r);
		ret = ret != 0 || (view[REG_CTRL / 4] & CTRL_ENABLE);
	} else if (platform_driver_register(&regs_driver) == 0) {
		printf("%s is %s; the device sees ctrl %#x, scratch %#x\n",
		       dev_name(&pdev->dev),
		       device_is_bound(&pdev->dev) ? "bound" : "not bound",
		       view[REG_CTRL / 4], view[REG_SCRATCH / 4]);
		printf("/proc/iomem:\n");
		resource_dump(&iomem_resource, stdout);
		devres_dump(&pdev->dev, stdout);
		platform_driver_unregister(&regs_driver);
		printf("unbound; the device sees ctrl %#x\n",
		       view[REG_CTRL / 4]);
		ret = 0;
	}

	/* The window goes once nothing maps or claims it any more. */
	platform_device_unregister(pdev);
	if (iomem_window_remove(REGS_PHYS))
		ret = 1;
	munmap((void *)view, REGS_SIZE);
	close(fd);
	return ret;
}
