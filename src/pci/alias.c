// SPDX-License-Identifier: MIT
/*
 * One file, one device, one BAR. In sysfs every file of a device is its
 * own, and every entry of bus/pci/devices leads to a directory of its
 * own; a hostile tree can break both at a scan: an entry linked to the
 * directory of a device already registered (two struct pci_dev for one
 * device, each enabling, mapping and claiming it), or a file hard-linked
 * into another's place (resource1 the same file as resource0: a write to
 * one BAR lands in the other; config the same file as another device's).
 * The checks after the scan compare each file with what the scan saw, so
 * they cannot see an alias the scan saw already: it is refused here,
 * before the device is registered.
 */
#include <errno.h>
#include <string.h>
#include "pci.h"

bool pci__same_file(const struct pci_file_id *a, const struct pci_file_id *b)
{
	return a->present && b->present && a->dev == b->dev &&
	       a->ino == b->ino && a->btime_sec == b->btime_sec &&
	       a->btime_nsec == b->btime_nsec;
}

/* Whether a file of @a is a file of @b (for @a == @b: another of its own). */
static bool shares(const struct pci_dev_private *a,
		   const struct pci_dev_private *b)
{
	for (int i = 0; i < PCI_F_NR; i++)
		for (int j = a == b ? i + 1 : 0; j < PCI_F_NR; j++)
			if (pci__same_file(&a->files[i], &b->files[j]))
				return true;
	return false;
}

int pci__check_alias(const struct pci_dev_private *p,
		     const struct pci_dev_private *registered,
		     char ret_other[PCI_NAME_MAX + 1])
{
	if (shares(p, p))
		return -EINVAL;
	for (const struct pci_dev_private *r = registered; r; r = r->next) {
		if (shares(p, r)) {
			memcpy(ret_other, r->name, sizeof(r->name));
			return -EEXIST;
		}
	}
	return 0;
}
