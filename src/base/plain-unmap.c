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

#define MAX_UNMAPPERS 4

static devres__unmapper_t unmappers[MAX_UNMAPPERS];
static unsigned int nr_unmappers;

void devres__unmapper_register(devres__unmapper_t fn)
{
	unsigned int n = __atomic_load_n(&nr_unmappers, __ATOMIC_RELAXED);

	/* Constructors only, one subsystem each: never past the array. */
	if (n >= MAX_UNMAPPERS)
		return;
	unmappers[n] = fn;
	__atomic_store_n(&nr_unmappers, n + 1, __ATOMIC_RELEASE);
}

int devres__unmap_plain(void *addr, const char *call)
{
	unsigned int n = __atomic_load_n(&nr_unmappers, __ATOMIC_ACQUIRE);

	for (unsigned int i = 0; i < n; i++)
		if (unmappers[i](addr, call) != -ENOENT)
			return 0;
	return -ENOENT;
}
