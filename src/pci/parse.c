// SPDX-License-Identifier: MIT
/*
 * Parsers of what sysfs holds: device names, the `resource` file, single
 * numbers, the config header. Every byte is untrusted (a fake or hostile
 * tree), so each parser checks lengths and ranges and never reads past
 * @len; fuzz/fuzz-pci.c runs them on random input.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "pci.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Exactly @min..@max lowercase hex digits from *@s, up to @end. */
static int hex_field(const char **s, const char *end, int min, int max,
		     unsigned int *ret)
{
	unsigned int v = 0;
	int n = 0;

	while (*s + n < end && n < max && hexval((*s)[n]) >= 0) {
		v = v << 4 | (unsigned int)hexval((*s)[n]);
		n++;
	}
	if (n < min || (*s + n < end && hexval((*s)[n]) >= 0))
		return -EINVAL;
	*s += n;
	*ret = v;
	return 0;
}

/*
 * "DDDD:BB:DD.F" as the kernel names PCI functions: a domain of 4 to 8
 * lowercase hex digits (VMD domains have 5), 2 for the bus, 2 for the slot
 * (at most 0x1f) and one digit 0-7 for the function. Anything else is not
 * a PCI function and is ignored by the scan.
 */
int pci__parse_name(const char *name, unsigned int *ret_domain,
		    unsigned int *ret_bus, unsigned int *ret_devfn)
{
	unsigned int domain, bus, slot, func;
	const char *s = name, *end;
	size_t len;

	if (!name)
		return -EINVAL;
	len = strnlen(name, PCI_NAME_MAX + 1);
	if (len > PCI_NAME_MAX)
		return -EINVAL;
	end = name + len;
	if (hex_field(&s, end, 4, 8, &domain) || s == end || *s++ != ':' ||
	    hex_field(&s, end, 2, 2, &bus) || s == end || *s++ != ':' ||
	    hex_field(&s, end, 2, 2, &slot) || s == end || *s++ != '.' ||
	    s == end || *s < '0' || *s > '7' || s + 1 != end)
		return -EINVAL;
	func = (unsigned int)(*s - '0');
	if (slot > 0x1f)
		return -EINVAL;
	*ret_domain = domain;
	*ret_bus = bus;
	*ret_devfn = PCI_DEVFN(slot, func);
	return 0;
}

/* "0x" and 1 to 16 hex digits, as the kernel prints resource lines. */
static int u64_field(const char **s, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	int n = 0;

	if (end - *s < 3 || (*s)[0] != '0' ||
	    ((*s)[1] != 'x' && (*s)[1] != 'X'))
		return -EINVAL;
	*s += 2;
	while (*s < end && hexval(**s) >= 0) {
		if (++n > 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)hexval(**s);
		(*s)++;
	}
	if (!n)
		return -EINVAL;
	*ret = v;
	return 0;
}

/*
 * One line "0x<start> 0x<end> 0x<flags>" per resource, as the kernel's
 * resource_show() prints them; unused resources are all zero. A line that
 * is cut short, holds anything else, has an end before its start or a size
 * that does not fit in 64 bits, or a file with more lines than @nres, is
 * -EINVAL. Fewer lines leave the rest of @res zeroed.
 */
int pci__parse_resource(const char *buf, size_t len, struct resource *res,
			unsigned int nres)
{
	const char *s = buf, *end = buf + len;
	unsigned int i = 0;

	memset(res, 0, nres * sizeof(*res));
	while (s < end) {
		uint64_t start, last, flags;

		if (i == nres)
			return -EINVAL;
		if (u64_field(&s, end, &start) || s == end || *s++ != ' ' ||
		    u64_field(&s, end, &last) || s == end || *s++ != ' ' ||
		    u64_field(&s, end, &flags) || s == end || *s++ != '\n')
			return -EINVAL;
		if (flags > ULONG_MAX)
			return -EINVAL;
		if (start == 0 && last == 0) {
			/* Unused: keep the flags only when nothing claims a range. */
			i++;
			continue;
		}
		/* A size of 2^64 does not fit resource_size_t arithmetic. */
		if (last < start || (start == 0 && last == UINT64_MAX))
			return -EINVAL;
		if (!(flags & IORESOURCE_TYPE_BITS))
			return -EINVAL;
		res[i].start = start;
		res[i].end = last;
		/* Claims are this process's to make, not the tree's. */
		res[i].flags = (unsigned long)flags &
			       ~(IORESOURCE_BUSY | IORESOURCE_EXCLUSIVE);
		i++;
	}
	return (int)i;
}

/*
 * One unsigned number, decimal or "0x" hex, then at most one newline: the
 * `irq` and `enable` files. Larger than @max is -ERANGE.
 */
int pci__parse_uint(const char *buf, size_t len, unsigned long max,
		    unsigned long *ret)
{
	unsigned long v = 0;
	unsigned int base = 10;
	size_t i = 0, digits = 0;

	if (len && buf[len - 1] == '\n')
		len--;
	if (len >= 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
		base = 16;
		i = 2;
	}
	for (; i < len; i++, digits++) {
		int d = base == 16
				? hexval(buf[i])
				: (buf[i] >= '0' && buf[i] <= '9' ? buf[i] - '0'
								  : -1);

		if (d < 0)
			return -EINVAL;
		if (v > (max - (unsigned long)d) / base)
			return -ERANGE;
		v = v * base + (unsigned long)d;
	}
	if (!digits)
		return -EINVAL;
	*ret = v;
	return 0;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/*
 * The first 64 bytes of config space, the part any reader may see: ids,
 * class, revision, header type. A vendor of 0xffff is what a missing
 * function reads as.
 */
int pci__parse_header(struct pci_dev *pdev, const uint8_t *cfg, size_t len)
{
	if (len < 64)
		return -ENODATA;
	pdev->vendor = le16(cfg + PCI_VENDOR_ID);
	pdev->device = le16(cfg + PCI_DEVICE_ID);
	if (pdev->vendor == 0xffff || pdev->vendor == 0)
		return -ENODEV;
	pdev->revision = cfg[PCI_REVISION_ID];
	pdev->DEVRES_PCI_CLASS = (unsigned int)cfg[PCI_CLASS_PROG] |
				 (unsigned int)cfg[PCI_CLASS_DEVICE] << 8 |
				 (unsigned int)cfg[PCI_CLASS_DEVICE + 1] << 16;
	pdev->hdr_type = cfg[PCI_HEADER_TYPE] & PCI_HEADER_TYPE_MASK;
	if (pdev->hdr_type == PCI_HEADER_TYPE_NORMAL) {
		pdev->subsystem_vendor = le16(cfg + PCI_SUBSYSTEM_VENDOR_ID);
		pdev->subsystem_device = le16(cfg + PCI_SUBSYSTEM_ID);
	}
	return 0;
}
