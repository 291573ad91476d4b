/* SPDX-License-Identifier: MIT */
/*
 * struct resource: a range of addresses, I/O ports or interrupt numbers
 * that a device is described by.
 *
 * This is the minimal part the platform bus needs. The resource tree
 * (iomem_resource, ioport_resource, request_region and the managed forms)
 * is completed by the resource-tree issue, which owns this header from then.
 */
#ifndef DEVRES_IOPORT_H
#define DEVRES_IOPORT_H

#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct resource - a range, as the kernel's
 * @start: first address (or port, or interrupt number)
 * @end: last address, inclusive
 * @name: who the range belongs to, or NULL
 * @flags: IORESOURCE_* type and attribute bits
 * @desc: a descriptor for the resource tree (IORES_DESC_NONE)
 * @parent: the enclosing range in the resource tree, or NULL
 * @sibling: the next range at the same level of the tree
 * @child: the first range nested in this one
 */
struct resource {
	resource_size_t start;
	resource_size_t end;
	const char *name;
	unsigned long flags;
	unsigned long desc;
	struct resource *parent, *sibling, *child;
};

#define IORESOURCE_TYPE_BITS 0x00001f00ul
#define IORESOURCE_IO 0x00000100ul
#define IORESOURCE_MEM 0x00000200ul
#define IORESOURCE_REG 0x00000300ul
#define IORESOURCE_IRQ 0x00000400ul
#define IORESOURCE_DMA 0x00000800ul
#define IORESOURCE_BUS 0x00001000ul
#define IORESOURCE_BUSY 0x80000000ul

#define IORES_DESC_NONE 0

/* clang-format off */
/* A resource of @size units from @start, for initializers. */
#define DEFINE_RES_NAMED(_start, _size, _name, _flags)                         \
	{ .start = (_start), .end = (_start) + (_size) - 1, .name = (_name),   \
	  .flags = (_flags), .desc = IORES_DESC_NONE, .parent = NULL,          \
	  .sibling = NULL, .child = NULL }
/* clang-format on */
#define DEFINE_RES_MEM_NAMED(_start, _size, _name)                             \
	DEFINE_RES_NAMED((_start), (_size), (_name), IORESOURCE_MEM)
#define DEFINE_RES_MEM(_start, _size)                                          \
	DEFINE_RES_MEM_NAMED((_start), (_size), NULL)
#define DEFINE_RES_IO_NAMED(_start, _size, _name)                              \
	DEFINE_RES_NAMED((_start), (_size), (_name), IORESOURCE_IO)
#define DEFINE_RES_IO(_start, _size)                                           \
	DEFINE_RES_IO_NAMED((_start), (_size), NULL)
#define DEFINE_RES_IRQ_NAMED(_irq, _name)                                      \
	DEFINE_RES_NAMED((_irq), 1, (_name), IORESOURCE_IRQ)
#define DEFINE_RES_IRQ(_irq) DEFINE_RES_IRQ_NAMED((_irq), NULL)

/**
 * resource_size() - the number of units a resource spans
 * @res: the resource
 *
 * Return: @res->end - @res->start + 1.
 */
static inline resource_size_t resource_size(const struct resource *res)
{
	return res->end - res->start + 1;
}

/**
 * resource_type() - the type bits of a resource
 * @res: the resource
 *
 * Return: one of IORESOURCE_IO, IORESOURCE_MEM, IORESOURCE_IRQ, ...
 */
static inline unsigned long resource_type(const struct resource *res)
{
	return res->flags & IORESOURCE_TYPE_BITS;
}

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_IOPORT_H */
