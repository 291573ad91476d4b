/* SPDX-License-Identifier: MIT */
/*
 * Misc devices in name only: the structure and its minor numbers, so
 * that a driver that includes the header (many watchdog drivers still
 * do) compiles. Registering one makes no device node; a driver that
 * serves one needs a misc framework stub of its own (docs/kcompat.md).
 */
#ifndef KCOMPAT_LINUX_MISCDEVICE_H
#define KCOMPAT_LINUX_MISCDEVICE_H

#include <linux/fs.h>

#define MISC_DYNAMIC_MINOR 255
#define WATCHDOG_MINOR 130
#define HWRNG_MINOR 183

struct miscdevice {
	int minor;
	const char *name;
	const struct file_operations *fops;
	struct device *parent;
	struct device *this_device;
	umode_t mode;
};

#endif /* KCOMPAT_LINUX_MISCDEVICE_H */
