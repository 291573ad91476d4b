// SPDX-License-Identifier: MIT
/*
 * lspci-lite: list the machine's PCI devices the way `lspci -n` does,
 * through the library's sysfs scan, writing nothing.
 *
 *   lspci-lite        one line per function: slot, class, vendor:device, rev
 *   lspci-lite -v     also the subsystem, the BARs and the capabilities that
 *                     can be read (all of them as root, those in the first
 *                     64 bytes of config space otherwise)
 *
 * DEVRES_SYSFS_ROOT points it at another tree. pci_sysfs_set_readonly()
 * is set before the scan: no resourceN file is opened, no `enable` or
 * config write can happen, whatever the code below calls.
 */
#include <stdio.h>
#include <string.h>
#include <devres/pci.h>

static void print_slot(const struct pci_dev *p, bool domains)
{
	if (domains)
		printf("%04x:", p->domain_nr);
	printf("%02x:%02x.%u", p->bus_nr, PCI_SLOT(p->devfn),
	       PCI_FUNC(p->devfn));
}

static void print_size(unsigned long long size)
{
	const char *unit = "";

	if (size >= (1ull << 30) && !(size & ((1ull << 30) - 1))) {
		size >>= 30;
		unit = "G";
	} else if (size >= (1ull << 20) && !(size & ((1ull << 20) - 1))) {
		size >>= 20;
		unit = "M";
	} else if (size >= (1ull << 10) && !(size & ((1ull << 10) - 1))) {
		size >>= 10;
		unit = "K";
	}
	printf(" [size=%llu%s]\n", size, unit);
}

static void print_verbose(struct pci_dev *p)
{
	uint16_t status, ent;
	uint8_t pos;

	if (p->subsystem_vendor || p->subsystem_device)
		printf("\tSubsystem: %04x:%04x\n", p->subsystem_vendor,
		       p->subsystem_device);
	for (int i = 0; i < PCI_STD_NUM_BARS; i++) {
		unsigned long flags = pci_resource_flags(p, i);

		if (!pci_resource_len(p, i))
			continue;
		printf("\tRegion %d: %s at %llx (%s, %sprefetchable)", i,
		       (flags & IORESOURCE_IO) ? "I/O ports" : "Memory",
		       (unsigned long long)pci_resource_start(p, i),
		       (flags & IORESOURCE_MEM_64) ? "64-bit" : "32-bit",
		       (flags & IORESOURCE_PREFETCH) ? "" : "non-");
		print_size(pci_resource_len(p, i));
	}
	/* The whole list, every id, as far as config space can be read. */
	if (pci_read_config_word(p, PCI_STATUS, &status) ||
	    !(status & PCI_STATUS_CAP_LIST) ||
	    pci_read_config_byte(p,
				 p->hdr_type == PCI_HEADER_TYPE_CARDBUS
					 ? PCI_CB_CAPABILITY_LIST
					 : PCI_CAPABILITY_LIST,
				 &pos))
		pos = 0;
	for (int ttl = 48; (pos & 0xfc) >= 0x40 && ttl--;
	     pos = (uint8_t)(ent >> 8)) {
		pos &= 0xfc;
		if (pci_read_config_word(p, pos, &ent))
			break;
		printf("\tCapabilities: [%02x] id %02x\n", pos, ent & 0xff);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	bool verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	bool domains = false;
	struct pci_dev *p = NULL;
	int n;

	if (argc > 2 || (argc == 2 && !verbose)) {
		fprintf(stderr, "usage: %s [-v]\n", argv[0]);
		return 2;
	}
	pci_sysfs_set_readonly(true);
	n = pci_bus_scan();
	if (n < 0) {
		fprintf(stderr, "lspci-lite: cannot scan: %s\n", strerror(-n));
		return 1;
	}
	/* As lspci: domains are shown when any device is outside domain 0. */
	while ((p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, p)))
		domains |= p->domain_nr != 0;
	while ((p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, p))) {
		print_slot(p, domains);
		printf(" %04x: %04x:%04x", p->class >> 8, p->vendor, p->device);
		if (p->revision)
			printf(" (rev %02x)", p->revision);
		printf("\n");
		if (verbose)
			print_verbose(p);
	}
	pci_bus_remove_all();
	return 0;
}
