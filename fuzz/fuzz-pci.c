// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the PCI subsystem's sysfs parsers (src/pci/parse.c):
 * the first byte picks the parser, the rest is what a hostile tree would
 * hold in the file. Besides ASan and UBSan, each parser's promises are
 * checked: an accepted name prints back as itself, accepted resources are
 * well-formed ranges, an accepted number is within its bound.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pci/pci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *s)
{
	unsigned int dom, bus, devfn;
	char back[32];

	if (pci__parse_name(s, &dom, &bus, &devfn))
		return;
	snprintf(back, sizeof(back), "%04x:%02x:%02x.%u", dom, bus,
		 PCI_SLOT(devfn), PCI_FUNC(devfn));
	/* Domains may be written with more digits than four. */
	if (strlen(s) == strlen(back) && strcmp(s, back) != 0)
		abort();
	if (bus > 0xff || devfn > 0xff)
		abort();
}

static void check_resource(const char *buf, size_t len)
{
	struct resource res[PCI_NUM_RESOURCES];
	int n = pci__parse_resource(buf, len, res, PCI_NUM_RESOURCES);

	if (n < 0)
		return;
	if (n > PCI_NUM_RESOURCES)
		abort();
	for (int i = 0; i < PCI_NUM_RESOURCES; i++) {
		if (!res[i].flags && (res[i].start || res[i].end))
			abort();
		if (!res[i].flags)
			continue;
		if (res[i].end < res[i].start || !resource_type(&res[i]) ||
		    (res[i].flags & IORESOURCE_BUSY) ||
		    resource_size(&res[i]) == 0)
			abort();
	}
}

static void check_uint(const char *buf, size_t len)
{
	unsigned long v;

	if (!pci__parse_uint(buf, len, INT_MAX, &v) && v > INT_MAX)
		abort();
}

static void check_header(const uint8_t *buf, size_t len)
{
	struct pci_dev pdev;

	memset(&pdev, 0, sizeof(pdev));
	if (pci__parse_header(&pdev, buf, len))
		return;
	if (len < 64 || pdev.vendor == 0xffff || pdev.class > 0xffffff ||
	    pdev.hdr_type > PCI_HEADER_TYPE_MASK)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy;

	if (size < 1)
		return 0;
	/* An exact-size copy, so that ASan sees any read past the end. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	switch (data[0] % 4) {
	case 0: {
		char *s = strndup(copy, size - 1);

		if (s)
			check_name(s);
		free(s);
		break;
	}
	case 1:
		check_resource(copy, size - 1);
		break;
	case 2:
		check_uint(copy, size - 1);
		break;
	default:
		check_header((const uint8_t *)copy, size - 1);
		break;
	}
	free(copy);
	return 0;
}
