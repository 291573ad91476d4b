// SPDX-License-Identifier: MIT
/*
 * The platform board: the SN-2's registers are a memfd declared as a
 * register window at SN_PHYS; the platform device's resources say where
 * they are and which interrupt line is its.
 */
#include <errno.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/io.h>
#include <devres/platform.h>
#include "board.h"
#include "hw.h"
#include "netdrv.h"
#include "simdev.h"

#define SN_PHYS 0xfe000000ull

static int platform_register(void)
{
	return platform_driver_register(&netdrv_driver);
}

static void platform_unregister(void)
{
	platform_driver_unregister(&netdrv_driver);
}

static void platform_destroy(struct board *b)
{
	if (b->pdev)
		platform_device_unregister(b->pdev);
	simdev_destroy(b->sd);
	if (b->window)
		iomem_window_remove(SN_PHYS);
	if (b->fd >= 0)
		close(b->fd);
}

int board_platform_create(struct board *b, const struct simdev_config *cfg)
{
	struct resource res[] = {
		DEFINE_RES_MEM(SN_PHYS, SN_REGS_SIZE),
		DEFINE_RES_IRQ(0),
	};
	int ret;

	*b = (struct board){ .bus = "platform",
			     .where = "registers: a memfd at 0xfe000000",
			     .fd = -1,
			     .drv = &netdrv_driver.driver,
			     .driver_register = platform_register,
			     .driver_unregister = platform_unregister,
			     .destroy = platform_destroy };
	b->fd = memfd_create("sn2-regs", MFD_CLOEXEC);
	if (b->fd < 0 || ftruncate(b->fd, SN_REGS_SIZE))
		return -errno;
	b->sd = simdev_create(b->fd, cfg);
	if (!b->sd)
		return -errno;
	ret = iomem_window_add(SN_PHYS, SN_REGS_SIZE, b->fd, 0, "sn2-window");
	if (ret)
		return ret;
	b->window = true;
	res[1].start = res[1].end = (resource_size_t)simdev_irq(b->sd);
	b->pdev = platform_device_register_simple("sn2", PLATFORM_DEVID_NONE,
						  res, 2);
	if (IS_ERR(b->pdev)) {
		ret = (int)PTR_ERR(b->pdev);
		b->pdev = NULL;
		return ret;
	}
	b->dev = &b->pdev->dev;
	return simdev_start(b->sd, b->dev);
}
