/* SPDX-License-Identifier: MIT */
/*
 * struct resource and the resource tree: which ranges of the physical
 * address space (iomem_resource) and of the I/O port space
 * (ioport_resource) exist, who describes them, and who holds them busy.
 *
 * As in the kernel, a range nests inside its parent, siblings never
 * overlap, and a driver claims what it drives with request_mem_region()
 * (or its managed form devm_request_mem_region()), which marks the range
 * IORESOURCE_BUSY so that nobody else can claim it. Platform devices'
 * MEM and IO resources enter the tree when the device is added and leave
 * it when it is deleted; register windows (devres/io.h) enter it when they
 * are declared. docs/io.md describes the rules.
 */
#ifndef DEVRES_IOPORT_H
#define DEVRES_IOPORT_H

#include <stdio.h>
#include <devres/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;

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
/* Claimed by a driver through request_region() and its family. */
#define IORESOURCE_EXCLUSIVE 0x08000000ul
#define IORESOURCE_UNSET 0x20000000ul
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
 * A bad @res (NULL, ERR_PTR, a small integer) WARNs and gives 0.
 *
 * Return: @res->end - @res->start + 1.
 */
static inline resource_size_t resource_size(const struct resource *res)
{
	if (devres_ptr_bad(res)) {
		devres_warn_bad_arg("resource_size", "resource", res);
		return 0;
	}
	return res->end - res->start + 1;
}

/**
 * resource_type() - the type bits of a resource
 * @res: the resource
 *
 * A bad @res (NULL, ERR_PTR, a small integer) WARNs and gives 0.
 *
 * Return: one of IORESOURCE_IO, IORESOURCE_MEM, IORESOURCE_IRQ, ...
 */
static inline unsigned long resource_type(const struct resource *res)
{
	if (devres_ptr_bad(res)) {
		devres_warn_bad_arg("resource_type", "resource", res);
		return 0;
	}
	return res->flags & IORESOURCE_TYPE_BITS;
}

/**
 * resource_contains() - whether one resource holds all of another
 * @r1: the outer resource
 * @r2: the inner resource
 *
 * A bad pointer (NULL, ERR_PTR, a small integer) WARNs and gives false.
 *
 * Return: true when both have the same type, neither is IORESOURCE_UNSET,
 * and [@r2->start, @r2->end] lies inside [@r1->start, @r1->end].
 */
static inline bool resource_contains(const struct resource *r1,
				     const struct resource *r2)
{
	if (devres_ptr_bad(r1) || devres_ptr_bad(r2)) {
		devres_warn_bad_arg("resource_contains", "resource",
				    devres_ptr_bad(r1) ? r1 : r2);
		return false;
	}
	if ((r1->flags ^ r2->flags) & IORESOURCE_TYPE_BITS)
		return false;
	if ((r1->flags | r2->flags) & IORESOURCE_UNSET)
		return false;
	return r1->start <= r2->start && r1->end >= r2->end;
}

/**
 * resource_overlaps() - whether two resources share an address
 * @r1: a resource
 * @r2: another resource
 *
 * A bad pointer (NULL, ERR_PTR, a small integer) WARNs and gives false.
 *
 * Only the ranges are compared, not the types.
 *
 * Return: true when the ranges intersect.
 */
static inline bool resource_overlaps(const struct resource *r1,
				     const struct resource *r2)
{
	if (devres_ptr_bad(r1) || devres_ptr_bad(r2)) {
		devres_warn_bad_arg("resource_overlaps", "resource",
				    devres_ptr_bad(r1) ? r1 : r2);
		return false;
	}
	return r1->start <= r2->end && r1->end >= r2->start;
}

/**
 * resource_intersection() - the range two resources share
 * @r1: a resource
 * @r2: another resource
 * @r: where the intersection is written (start and end only)
 *
 * A bad pointer (NULL, ERR_PTR, a small integer) WARNs and gives false.
 *
 * Return: true, with @r filled, when the ranges intersect; false otherwise.
 */
static inline bool resource_intersection(const struct resource *r1,
					 const struct resource *r2,
					 struct resource *r)
{
	if (devres_ptr_bad(r1) || devres_ptr_bad(r2) || devres_ptr_bad(r)) {
		devres_warn_bad_arg("resource_intersection", "resource",
				    devres_ptr_bad(r1)	 ? r1
				    : devres_ptr_bad(r2) ? r2
							 : r);
		return false;
	}
	if (r1->start > r2->end || r1->end < r2->start)
		return false;
	r->start = r1->start > r2->start ? r1->start : r2->start;
	r->end = r1->end < r2->end ? r1->end : r2->end;
	return true;
}

/**
 * devres_iomem_resource() - the root of the physical address space
 *
 * Use it through its kernel name, iomem_resource, as in
 * ``request_resource(&iomem_resource, &res)``. It spans every address
 * and is named "PCI mem".
 *
 * Context: any thread.
 * Return: the root; never NULL.
 */
DEVRES_API struct resource *devres_iomem_resource(void);

/**
 * devres_ioport_resource() - the root of the I/O port space
 *
 * Use it through its kernel name, ioport_resource. It spans ports 0 to
 * 0xffff and is named "PCI IO".
 *
 * Context: any thread.
 * Return: the root; never NULL.
 */
DEVRES_API struct resource *devres_ioport_resource(void);

#define iomem_resource (*devres_iomem_resource())
#define ioport_resource (*devres_ioport_resource())

/**
 * request_resource_conflict() - insert a range as a leaf, or name who is in
 * the way
 * @root: the parent range
 * @new_res: the range to insert (caller's storage, kept until released)
 *
 * @new_res must lie inside @root and overlap none of @root's children; it then
 * becomes one of them. It does not matter whether anything is busy: this is
 * how a bus describes what it has, not how a driver claims it.
 *
 * Context: any thread; takes the tree's lock.
 * Return: NULL on success; @root when @new_res is empty, inverted or not
 * inside it; @new_res itself, with a WARN, when it is already in a tree, is
 * a root (iomem_resource, ioport_resource), or is @root or a range above
 * it (it would be its own descendant);
 * otherwise the child @new_res overlaps. ERR_PTR(-EINVAL), with a WARN,
 * for a bad @root or @new_res pointer (NULL, ERR_PTR, first page).
 */
DEVRES_API struct resource *request_resource_conflict(struct resource *root,
						      struct resource *new_res);

/**
 * request_resource() - insert a range as a leaf of another
 * @root: the parent range
 * @new_res: the range to insert (caller's storage, kept until released)
 *
 * request_resource_conflict(), with an errno.
 *
 * Context: any thread; takes the tree's lock.
 * Return: 0, or -EBUSY when @new_res does not fit (see
 * request_resource_conflict()); -EINVAL (with a WARN) for NULL.
 */
DEVRES_API int request_resource(struct resource *root,
				struct resource *new_res);

/**
 * insert_resource_conflict() - insert a range at its level in a tree
 * @parent: where to start looking
 * @new_res: the range to insert (caller's storage, kept until released)
 *
 * Goes down from @parent to the deepest range that holds all of @new_res, and
 * inserts it there; ranges at that level that @new_res covers entirely become
 * its children. This is how a platform device's resources and a register
 * window take their place whatever was declared first.
 *
 * Context: any thread; takes the tree's lock.
 * Return: NULL on success; otherwise the range @new_res partly overlaps
 * (or @parent, when @new_res is not inside it; or @new_res itself, with a
 * WARN, when it is already in the tree, is a root, or is @parent or a
 * range above it). ERR_PTR(-EINVAL), with a WARN,
 * for a bad @parent or @new_res pointer (NULL, ERR_PTR, first page).
 */
DEVRES_API struct resource *insert_resource_conflict(struct resource *parent,
						     struct resource *new_res);

/**
 * insert_resource() - insert a range at its level in a tree
 * @parent: where to start looking
 * @new_res: the range to insert (caller's storage, kept until released)
 *
 * insert_resource_conflict(), with an errno.
 *
 * Context: any thread; takes the tree's lock.
 * Return: 0, or -EBUSY when @new_res partly overlaps a range or does not fit;
 * -EINVAL (with a WARN) for NULL.
 */
DEVRES_API int insert_resource(struct resource *parent,
			       struct resource *new_res);

/**
 * release_resource() - take a range, and everything nested in it, out of
 * the tree
 * @old: a range inserted by request_resource() or insert_resource(), or
 *       a region of request_region() and the like
 *
 * The ranges nested inside @old stay its children, out of the tree with it,
 * but for the busy regions of request_region() and the like: still
 * claimed, they stay in the tree, lifted into @old's parent, with a WARN
 * (the kernel leaves them pointing into @old; here their owners give
 * them back as usual). A region of request_region() or request_mem_region() is no longer
 * claimed and is the caller's, to give to free() (as the kernel's
 * release_and_free_resource() does). One of a managed request
 * (devm_request_region(), devm_request_mem_region()) is released at the
 * call and taken off its device, with a WARN: use devm_release_region().
 *
 * Context: any thread; takes the tree's lock.
 * Return: 0, or -EINVAL when @old is not in a tree; -ECHILD (with a WARN)
 * in a child of fork() when @old is a region its parent requested.
 */
DEVRES_API int release_resource(struct resource *old);

/**
 * remove_resource() - take a range out of the tree, keeping its children
 * @old: a range inserted by request_resource() or insert_resource(), or
 *       a region of request_region() and the like
 *
 * The ranges nested inside @old take its place in its parent. A region
 * leaves as with release_resource(): the caller's to free(), or, of a
 * managed request, released at the call with a WARN.
 *
 * Context: any thread; takes the tree's lock.
 * Return: 0, or -EINVAL when @old is not in a tree; -ECHILD (with a WARN)
 * in a child of fork() when @old is a region its parent requested.
 */
DEVRES_API int remove_resource(struct resource *old);

/**
 * remove_resource_unless_busy() - remove_resource(), unless something
 * inside is claimed
 * @old: a range inserted by request_resource() or insert_resource()
 *
 * Exists only in userspace: what iomem_window_remove() uses to take a
 * window out of the tree in one step with the check that no driver holds a
 * range inside it, so that no request can slip in between. A range of
 * devm_request_resource() leaves as with remove_resource(): its node is
 * taken off its device at the call, with a WARN.
 *
 * Context: any thread; takes the tree's lock.
 * Return: 0; -EBUSY when @old or a range nested in it is IORESOURCE_BUSY;
 * -EINVAL when @old is not in a tree.
 */
DEVRES_API int remove_resource_unless_busy(struct resource *old);

/**
 * request_region() - claim a range of I/O ports
 * @start: the first port
 * @n: how many
 * @name: who claims them (copied)
 *
 * Allocates a range marked IORESOURCE_BUSY and inserts it into
 * ioport_resource. The range may nest inside ranges that are not busy
 * (a device's resources, a bus window) when it fits inside them, never
 * across their boundaries and never inside or across a busy one.
 *
 * Context: any thread. A fault-injection point.
 * Return: the claimed range, to be given back with release_region(); NULL
 * when it is empty, wraps past the end of the space, conflicts, or memory
 * is short.
 */
DEVRES_API struct resource *request_region(resource_size_t start,
					   resource_size_t n, const char *name);

/**
 * request_mem_region() - claim a range of physical addresses
 * @start: the first address
 * @n: how many bytes
 * @name: who claims them (copied)
 *
 * request_region() in iomem_resource.
 *
 * Context: any thread. A fault-injection point.
 * Return: as request_region().
 */
DEVRES_API struct resource *
request_mem_region(resource_size_t start, resource_size_t n, const char *name);

/**
 * request_mem_region_exclusive() - claim a range of physical addresses for
 * this driver only
 * @start: the first address
 * @n: how many bytes
 * @name: who claims them (copied)
 *
 * request_mem_region(), with the range also marked IORESOURCE_EXCLUSIVE,
 * which iomem_is_exclusive() reports: a tool that maps physical memory
 * directly is to keep off it.
 *
 * Context: any thread. A fault-injection point.
 * Return: as request_region().
 */
DEVRES_API struct resource *request_mem_region_exclusive(resource_size_t start,
							 resource_size_t n,
							 const char *name);

/**
 * release_region() - give back I/O ports
 * @start: the first port, as requested
 * @n: how many, as requested
 *
 * Finds the busy range [@start, @start + @n) that request_region() made
 * and frees it. The range must be exactly one that was requested.
 *
 * Context: any thread. Preserves errno.
 */
DEVRES_API void release_region(resource_size_t start, resource_size_t n);

/**
 * release_mem_region() - give back physical addresses
 * @start: the first address, as requested
 * @n: how many bytes, as requested
 *
 * release_region() in iomem_resource. Releasing a range that was never
 * requested is a misuse: a WARN, nothing changes.
 *
 * Context: any thread. Preserves errno.
 */
DEVRES_API void release_mem_region(resource_size_t start, resource_size_t n);

/**
 * iomem_is_exclusive() - whether an address is claimed exclusively
 * @addr: a physical address
 *
 * Looks @addr up in the iomem resource tree, as the kernel does before letting
 * /dev/mem map it.
 *
 * Context: any thread.
 * Return: true when @addr lies in a busy range claimed with
 * request_mem_region_exclusive().
 */
DEVRES_API bool iomem_is_exclusive(uint64_t addr);

/**
 * resource_dump() - print a resource tree in /proc/iomem format
 * @root: the tree, e.g. &iomem_resource
 * @f: where to print
 *
 * One line per range below @root, "start-end : name", in hexadecimal,
 * indented by two spaces per level, as /proc/iomem and /proc/ioports.
 *
 * The tree is read under its lock and written to @f after it is let go,
 * so @f may block or call back into the library (a fopencookie() writer).
 *
 * Context: any thread; takes the tree's lock.
 * Return: the number of lines printed; -EINVAL for NULL arguments; -ENOMEM
 * when the copy cannot be made.
 */
DEVRES_API int resource_dump(const struct resource *root, FILE *f);

/**
 * devm_request_resource() - request_resource(), released with the device
 * @dev: the device
 * @root: the parent range
 * @new_res: the range to insert (caller's storage, kept while the device holds
 *       it)
 *
 * request_resource() of @new_res under @root, recorded against @dev: the range
 * is released with the device's resources or with devm_release_resource(),
 * as release_resource() does (busy regions still claimed inside it stay in
 * the tree, with a WARN).
 *
 * Context: any thread. A fault-injection point.
 * Return: 0; -EBUSY when @new_res does not fit; -ENOMEM; -EINVAL (with a WARN)
 * for a bad device; -ENODEV (with a WARN) when the device was released
 * meanwhile by a last put_device() on another thread (nothing inserted).
 */
DEVRES_API int devm_request_resource(struct device *dev, struct resource *root,
				     struct resource *new_res);

/**
 * devm_release_resource() - release a range devm_request_resource() took
 * @dev: the device
 * @new_res: the range
 *
 * Releases a range that devm_request_resource() inserted for @dev, before the
 * device lets go, and takes its record off the device.
 *
 * Context: any thread. A WARN when @dev does not hold @new_res.
 */
DEVRES_API void devm_release_resource(struct device *dev,
				      struct resource *new_res);

/**
 * devm_request_region() - request_region(), released with the device
 * @dev: the device
 * @start: the first port
 * @n: how many
 * @name: who claims them (copied)
 *
 * request_region() of @n I/O ports from @start, recorded against @dev: they
 * are released with the device's resources or with devm_release_region().
 *
 * Context: any thread. A fault-injection point (twice).
 * Return: the claimed range, or NULL as request_region(); NULL also
 * (WARNed, nothing claimed) when @dev was released meanwhile by a last
 * put_device() on another thread.
 */
DEVRES_API struct resource *devm_request_region(struct device *dev,
						resource_size_t start,
						resource_size_t n,
						const char *name);

/**
 * devm_request_mem_region() - request_mem_region(), released with the
 * device
 * @dev: the device
 * @start: the first address
 * @n: how many bytes
 * @name: who claims them (copied)
 *
 * Context: any thread. A fault-injection point (twice).
 * Return: the claimed range, or NULL as request_region().
 */
DEVRES_API struct resource *devm_request_mem_region(struct device *dev,
						    resource_size_t start,
						    resource_size_t n,
						    const char *name);

/**
 * devm_release_region() - release ports before the device lets go
 * @dev: the device
 * @start: the first port, as requested
 * @n: how many, as requested
 *
 * Releases I/O ports that devm_request_region() claimed for @dev, before the
 * device lets go, and takes their record off the device.
 *
 * Context: any thread. A WARN when @dev holds no such managed range.
 */
DEVRES_API void devm_release_region(struct device *dev, resource_size_t start,
				    resource_size_t n);

/**
 * devm_release_mem_region() - release addresses before the device lets go
 * @dev: the device
 * @start: the first address, as requested
 * @n: how many bytes, as requested
 *
 * Releases addresses that devm_request_mem_region() claimed for @dev, before
 * the device lets go, and takes their record off the device.
 *
 * Context: any thread. A WARN when @dev holds no such managed range.
 */
DEVRES_API void devm_release_mem_region(struct device *dev,
					resource_size_t start,
					resource_size_t n);

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_IOPORT_H */
