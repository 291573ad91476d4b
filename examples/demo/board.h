/* SPDX-License-Identifier: MIT */
/*
 * The board: what firmware, or a vfio-user client, would describe. It puts
 * an SN-2 (its device model) on a bus, with its registers and its
 * interrupt line, for that bus's flavour of the driver.
 */
#ifndef BOARD_H
#define BOARD_H

#include <stdbool.h>

struct device;
struct device_driver;
struct pci_dev;
struct pci_fake;
struct platform_device;
struct simdev;
struct simdev_config;

/**
 * struct board - an SN-2 on a bus
 * @bus: "platform" or "PCI", for messages
 * @where: where the registers are, for messages
 * @sd: the device model
 * @dev: the device the driver binds to
 * @drv: the driver of that bus
 * @driver_register: registers @drv with its bus (it binds to @dev)
 * @driver_unregister: unbinds and unregisters it
 * @destroy: takes the device away; every driver unregistered first
 * @fd: the file holding the registers, or -1
 * @window: whether the platform board added a register window
 * @pdev: the platform device, or NULL
 * @tree: the PCI board's fake sysfs tree, or NULL
 * @pci: the PCI device, or NULL
 */
struct board {
	const char *bus;
	const char *where;
	struct simdev *sd;
	struct device *dev;
	struct device_driver *drv;
	int (*driver_register)(void);
	void (*driver_unregister)(void);
	void (*destroy)(struct board *b);
	int fd;
	bool window;
	struct platform_device *pdev;
	struct pci_fake *tree;
	struct pci_dev *pci;
};

int board_platform_create(struct board *b, const struct simdev_config *cfg);
int board_pci_create(struct board *b, const struct simdev_config *cfg);

#endif /* BOARD_H */
