/* SPDX-License-Identifier: MIT */
/* Device id tables: of_device_id here, the platform and PCI ones from libdevres. */
#ifndef KCOMPAT_LINUX_MOD_DEVICETABLE_H
#define KCOMPAT_LINUX_MOD_DEVICETABLE_H

#include <devres/pci.h>
#include <devres/platform.h>

/* One compatible string a driver handles, and its match data. */
struct of_device_id {
	char name[32];
	char type[32];
	char compatible[128];
	const void *data;
};

#endif /* KCOMPAT_LINUX_MOD_DEVICETABLE_H */
