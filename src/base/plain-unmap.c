// SPDX-License-Identifier: MIT
/*
 * The plain unmaps of device memory, iounmap() and pci_iounmap(), each
 * accepted by the kernel for a mapping of the other's family: on a MMIO
 * BAR the kernel's pci_iounmap() is iounmap(), so a driver may give a
 * pcim_iomap() address to iounmap() as well as a devm_ioremap() one to
 * pci_iounmap(). Each subsystem that hands out such mappings (io, PCI)
 * registers here, as the library loads, the one function that gives back
 * a mapping of its own by hand; a plain unmap asks each in turn. So a
 * managed mapping given to either call is caught there, whichever family
 * made it: one WARN naming its device and managed call, its node taken
 * off and the mapping unmapped once, by the subsystem that owns its
 * record (a pcim_iomap_table() slot goes with it). Layers only call
 * downward: io and PCI know nothing of each other, only of this table.
 */
#include <errno.h>
#include "subsys.h"

/*
 * One a subsystem: two today (io, PCI). A fifth is refused with a WARN,
 * not dropped unsaid: its managed mappings given to a plain unmap would
 * go unfound, and be unmapped a second time by their device's release.
 */
#define MAX_UNMAPPERS 4

static devres__unmapper_t unmappers[MAX_UNMAPPERS];
static unsigned int nr_unmappers;

int devres__unmapper_register(devres__unmapper_t fn)
{
	unsigned int n = __atomic_load_n(&nr_unmappers, __ATOMIC_RELAXED);

	if (n >= MAX_UNMAPPERS) {
		devres__warn(NULL, "iounmap",
			     "%u unmappers of plain unmaps registered: no room "
			     "for another, whose managed mappings iounmap() "
			     "and pci_iounmap() will not find",
			     MAX_UNMAPPERS);
		return -ENOSPC;
	}
	unmappers[n] = fn;
	__atomic_store_n(&nr_unmappers, n + 1, __ATOMIC_RELEASE);
	return 0;
}

int devres__unmap_plain(void *addr, const char *call)
{
	unsigned int n = __atomic_load_n(&nr_unmappers, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < n; i++)
		if (unmappers[i](addr, call) != -ENOENT)
			return 0;
	return -ENOENT;
}
