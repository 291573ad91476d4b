// SPDX-License-Identifier: MIT
/*
 * The PCI board: the SN-2 is a function in a fake sysfs tree. Its BAR 0
 * file (resource0) holds the registers, which the device model maps too;
 * the bus scan finds the function, and the board gives it its interrupt
 * line, as a VFIO backend would give its eventfds.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include "board.h"
#include "hw.h"
#include "netdrv.h"
#include "simdev.h"

#define SN_PCI_ADDR "0000:00:03.0"

static int pci_register(void)
{
	return pci_register_driver(&netdrv_pci_driver);
}

static void pci_unregister(void)
{
	pci_unregister_driver(&netdrv_pci_driver);
}

static void pci_destroy(struct board *b)
{
	if (b->pci)
		pci_dev_put(b->pci);
	pci_bus_remove_all();
	simdev_destroy(b->sd);
	if (b->fd >= 0)
		close(b->fd);
	pci_sysfs_set_root(NULL);
	pci_fake_destroy(b->tree);
}

int board_pci_create(struct board *b, const struct simdev_config *cfg)
{
	struct pci_fake_dev desc = {
		.name = SN_PCI_ADDR,
		.vendor = SN_PCI_VENDOR,
		.device = SN_PCI_DEVICE,
		.class = 0x020000, /* network, Ethernet */
		.bar_size = { SN_REGS_SIZE },
		.bar_flags = { IORESOURCE_MEM },
	};
	char path[4096];
	int ret, irq;

	*b = (struct board){ .bus = "PCI",
			     .where = SN_PCI_ADDR ", registers: BAR 0 in a "
						  "fake sysfs tree",
			     .fd = -1,
			     .drv = &netdrv_pci_driver.driver,
			     .driver_register = pci_register,
			     .driver_unregister = pci_unregister,
			     .destroy = pci_destroy };
	b->tree = pci_fake_create();
	if (!b->tree)
		return -errno;
	ret = pci_fake_add(b->tree, &desc);
	if (!ret)
		ret = pci_fake_path(b->tree, SN_PCI_ADDR, "resource0", path,
				    sizeof(path));
	if (ret)
		return ret;
	b->fd = open(path, O_RDWR | O_CLOEXEC);
	if (b->fd < 0)
		return -errno;
	b->sd = simdev_create(b->fd, cfg);
	if (!b->sd)
		return -errno;
	ret = pci_sysfs_set_root(pci_fake_root(b->tree));
	if (ret)
		return ret;
	ret = pci_bus_scan();
	if (ret < 0)
		return ret;
	b->pci = pci_get_device(SN_PCI_VENDOR, SN_PCI_DEVICE, NULL);
	if (!b->pci)
		return -ENODEV;
	irq = simdev_irq(b->sd);
	ret = pci_dev_set_irq_lines(b->pci, &irq, 1);
	if (ret)
		return ret;
	b->dev = &b->pci->dev;
	return simdev_start(b->sd, b->dev);
}
