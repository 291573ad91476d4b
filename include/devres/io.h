/* SPDX-License-Identifier: MIT */
/*
 * Register windows and the MMIO accessors.
 *
 * In userspace a device's registers are reached through an fd: a PCI
 * resourceN file, a UIO map, or a memfd that a simulated device shares.
 * iomem_window_add() declares which fd backs a range of physical
 * addresses; ioremap() and devm_ioremap() map a part of such a range, and
 * readl(), writel() and the rest of the kernel's accessors reach the
 * registers, one access of exactly the width asked for, ordered for the
 * device as in the kernel (docs/io.md gives the ordering model).
 */
#ifndef DEVRES_IO_H
#define DEVRES_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <devres/types.h>
#include <devres/ioport.h>

#ifdef __cplusplus
extern "C" {
#endif

struct device;

/**
 * iomem_window_add() - declare what backs a range of physical addresses
 * @start: the first physical address of the window
 * @size: its size in bytes
 * @fd: an fd open for reading and writing that can be mapped shared: a PCI
 *      resourceN file, a UIO device, a memfd
 * @offset: where in @fd the window's first byte is
 * @name: what the window is called in the resource tree (copied)
 *
 * Exists only in userspace. @fd is duplicated (close-on-exec); the caller
 * keeps its own. The range also enters iomem_resource, not busy, so that
 * platform devices' resources and drivers' regions nest inside it. When
 * @fd is a regular file (a memfd), it must already hold the whole window,
 * so that no register access can fault past its end. Windows never
 * overlap.
 *
 * Context: any thread. A fault-injection point (the dup counts in the
 * ledger as an fd).
 * Return: 0; -EINVAL for an empty or wrapping range, a negative offset, a
 * NULL name, or a file too short; -EBADF for a bad fd; -EACCES when @fd is
 * not open for reading and writing; -EBUSY when the range overlaps another
 * window or straddles a range of the resource tree; -ENOMEM; -EMFILE.
 */
DEVRES_API int iomem_window_add(phys_addr_t start, resource_size_t size, int fd,
				off_t offset, const char *name);

/**
 * iomem_window_remove() - withdraw a register window
 * @start: the window's first physical address, as added
 *
 * Exists only in userspace. Closes the window's fd and takes its range
 * out of iomem_resource; ranges nested in it (devices' resources) stay in
 * the tree. A window that something still uses cannot go.
 *
 * Context: any thread.
 * Return: 0; -EBUSY (with a WARN) while a mapping of the window is alive
 * or a busy region lies inside it; -ENOENT (with a WARN) when no window
 * starts at @start; -ECHILD (with a WARN) in a child of fork() for a
 * window of its parent.
 */
DEVRES_API int iomem_window_remove(phys_addr_t start);

/**
 * ioremap() - map registers
 * @offset: the physical address of the first register
 * @size: how many bytes
 *
 * Maps [@offset, @offset + @size) through the window that holds all of
 * it, shared with the fd behind the window, so that writes reach the
 * device and reads see it. @offset need not be page aligned. Give the
 * mapping back with iounmap().
 *
 * Context: any thread. A fault-injection point (twice: the bookkeeping
 * and the mmap, which counts in the ledger as a mapping and its bytes).
 * Return: the address of the first register, or NULL with errno set:
 * EINVAL for an empty or wrapping range, ENXIO when no window holds
 * @offset, ERANGE when the window that holds @offset, or the regular file
 * behind it (a memfd shrunk since the window was added), ends before
 * @offset + @size, ECHILD (with a WARN) in a child of fork() when the
 * window is its parent's, ENOMEM, or what mmap() said.
 */
DEVRES_API void *ioremap(phys_addr_t offset, size_t size);

/**
 * ioremap_wc() - map registers, write-combining
 * @offset: the physical address of the first register
 * @size: how many bytes
 *
 * The same as ioremap(): userspace cannot choose the caching of a shared
 * mapping; the fd decides (a PCI resourceN_wc file maps write-combining).
 *
 * Context: any thread. A fault-injection point.
 * Return: as ioremap().
 */
DEVRES_API void *ioremap_wc(phys_addr_t offset, size_t size);

/**
 * iounmap() - unmap registers
 * @addr: what ioremap() returned, or NULL (ignored)
 *
 * Unmaps a register window that ioremap() or ioremap_wc() made, as the
 * kernel's iounmap() does; accessing it afterwards is a bug. A BAR
 * mapping of pci_iomap() is unmapped too, as the kernel's iounmap() of a
 * memory BAR does. A managed one (devm_ioremap(), pcim_iomap() and the
 * calls built on them) is a managed mapping released by hand: it WARNs,
 * naming its device and managed call, is unmapped now, and its node (and
 * a pcim_iomap() one's pcim_iomap_table() slot) goes with it, so that
 * the device's release does not unmap it again. A plain ioremap() one
 * the program unmapped (or moved) itself with munmap() or mremap() is
 * forgotten, its range left as it is: another owner may have it by now.
 *
 * Context: any thread. Preserves errno. A WARN when @addr is not a live
 * mapping from ioremap() or pci_iomap() (an address inside one, one
 * already unmapped), when its range was unmapped behind the library's
 * back, or, in a child of fork(), is its parent's (then it stays mapped).
 */
DEVRES_API void iounmap(volatile void *addr);

/**
 * devm_ioremap() - ioremap(), unmapped when the device lets go
 * @dev: the device
 * @offset: the physical address of the first register
 * @size: how many bytes
 *
 * ioremap() of @size bytes of registers at @offset, recorded against @dev: the
 * window is unmapped when the device's resources are released, or earlier with
 * devm_iounmap().
 *
 * Context: any thread. A fault-injection point (three times).
 * Return: the address of the first register, or NULL with errno set as
 * ioremap() (EINVAL, with a WARN, for a bad device).
 */
DEVRES_API void *devm_ioremap(struct device *dev, resource_size_t offset,
			      resource_size_t size);

/**
 * devm_ioremap_wc() - ioremap_wc(), unmapped when the device lets go
 * @dev: the device
 * @offset: the physical address of the first register
 * @size: how many bytes
 *
 * devm_ioremap() with a write-combining mapping, as ioremap_wc() makes it;
 * unmapped with @dev's resources or with devm_iounmap().
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_ioremap().
 */
DEVRES_API void *devm_ioremap_wc(struct device *dev, resource_size_t offset,
				 resource_size_t size);

/**
 * devm_iounmap() - unmap a managed mapping now
 * @dev: the device
 * @addr: what devm_ioremap() or devm_ioremap_wc() returned for @dev
 *
 * Unmaps a window that devm_ioremap() or devm_ioremap_wc() made for @dev
 * before the device lets go, and takes its record off the device.
 *
 * Context: any thread. A WARN when @addr is not a managed mapping of @dev.
 */
DEVRES_API void devm_iounmap(struct device *dev, void *addr);

/**
 * devm_ioremap_resource() - claim and map a memory resource
 * @dev: the device
 * @res: an IORESOURCE_MEM resource (a platform device's, typically)
 *
 * devm_request_mem_region() for @res (named after it, or after @dev), then
 * devm_ioremap(): both are given back when the device lets go. When the
 * mapping fails, the call gives back its own claim and only that: one
 * released meanwhile, and the range claimed again on @dev by another call,
 * is left to that call.
 *
 * Context: any thread. A fault-injection point.
 * Return: the address of the first register, or an ERR_PTR: -EINVAL for
 * a NULL or non-MEM resource (or a bad device, with a WARN), -EBUSY when
 * the region cannot be claimed, -ENOMEM when it cannot be mapped (errno
 * tells why, as ioremap()).
 */
DEVRES_API void *devm_ioremap_resource(struct device *dev,
				       const struct resource *res);

/**
 * devm_ioremap_resource_wc() - devm_ioremap_resource(), write-combining
 * @dev: the device
 * @res: an IORESOURCE_MEM resource
 *
 * devm_ioremap_resource() with a write-combining mapping: checks @res, claims
 * its range for @dev and maps it, all undone with the device's resources.
 *
 * Context: any thread. A fault-injection point.
 * Return: as devm_ioremap_resource().
 */
DEVRES_API void *devm_ioremap_resource_wc(struct device *dev,
					  const struct resource *res);

/* Barriers ---------------------------------------------------------------- */

/*
 * How each accessor orders itself for the device (docs/io.md explains the
 * model). DEVRES_IO_BEFORE_WRITE: earlier writes to memory (a DMA buffer)
 * are visible to the device before the register write. DEVRES_IO_AFTER_READ:
 * the register read completes before later reads of memory.
 */
#if defined(__aarch64__)
#define DEVRES_IO_BEFORE_WRITE() __asm__ __volatile__("dmb oshst" ::: "memory")
#define DEVRES_IO_AFTER_READ() __asm__ __volatile__("dmb oshld" ::: "memory")
#define DEVRES_MB() __asm__ __volatile__("dsb sy" ::: "memory")
#define DEVRES_RMB() __asm__ __volatile__("dsb ld" ::: "memory")
#define DEVRES_WMB() __asm__ __volatile__("dsb st" ::: "memory")
#define DEVRES_DMA_RMB() __asm__ __volatile__("dmb oshld" ::: "memory")
#define DEVRES_DMA_WMB() __asm__ __volatile__("dmb oshst" ::: "memory")
#elif defined(__x86_64__) || defined(__i386__)
/* x86 keeps loads with loads and stores with stores: the compiler must too. */
#define DEVRES_IO_BEFORE_WRITE() __asm__ __volatile__("" ::: "memory")
#define DEVRES_IO_AFTER_READ() __asm__ __volatile__("" ::: "memory")
#define DEVRES_MB() __asm__ __volatile__("mfence" ::: "memory")
#define DEVRES_RMB() __asm__ __volatile__("lfence" ::: "memory")
#define DEVRES_WMB() __asm__ __volatile__("sfence" ::: "memory")
#define DEVRES_DMA_RMB() __asm__ __volatile__("" ::: "memory")
#define DEVRES_DMA_WMB() __asm__ __volatile__("" ::: "memory")
#else
/* Elsewhere, a full fence: correct, if slower than it could be. */
#define DEVRES_IO_BEFORE_WRITE() __sync_synchronize()
#define DEVRES_IO_AFTER_READ() __sync_synchronize()
#define DEVRES_MB() __sync_synchronize()
#define DEVRES_RMB() __sync_synchronize()
#define DEVRES_WMB() __sync_synchronize()
#define DEVRES_DMA_RMB() __sync_synchronize()
#define DEVRES_DMA_WMB() __sync_synchronize()
#endif

/* The kernel's names, unless the program has its own. */
#ifndef mb
#define mb() DEVRES_MB()
#endif
#ifndef rmb
#define rmb() DEVRES_RMB()
#endif
#ifndef wmb
#define wmb() DEVRES_WMB()
#endif
#ifndef dma_rmb
#define dma_rmb() DEVRES_DMA_RMB()
#endif
#ifndef dma_wmb
#define dma_wmb() DEVRES_DMA_WMB()
#endif

/* Byte order ------------------------------------------------------------- */

/* Registers are little-endian unless the accessor's name ends in "be". */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define DEVRES_LE16(x) __builtin_bswap16(x)
#define DEVRES_LE32(x) __builtin_bswap32(x)
#define DEVRES_LE64(x) __builtin_bswap64(x)
#define DEVRES_BE16(x) (x)
#define DEVRES_BE32(x) (x)
#define DEVRES_BE64(x) (x)
#else
#define DEVRES_LE16(x) (x)
#define DEVRES_LE32(x) (x)
#define DEVRES_LE64(x) (x)
#define DEVRES_BE16(x) __builtin_bswap16(x)
#define DEVRES_BE32(x) __builtin_bswap32(x)
#define DEVRES_BE64(x) __builtin_bswap64(x)
#endif

/* Accessors -------------------------------------------------------------- */

/**
 * readl_relaxed() - read a 32-bit little-endian register, unordered
 * @addr: the register, naturally aligned, in a mapping from ioremap()
 *
 * One volatile 32-bit load: never split, merged, repeated or left out.
 * Ordered with the other accesses to the same device by the device
 * mapping (on real MMIO), but not with accesses to memory: see readl().
 * readb_relaxed(), readw_relaxed() and readq_relaxed() are the same for
 * 8, 16 and 64 bits.
 *
 * Return: the register's value, in CPU byte order.
 */
static inline uint32_t readl_relaxed(const volatile void *addr)
{
	return DEVRES_LE32(*(const volatile uint32_t *)addr);
}

static inline uint8_t readb_relaxed(const volatile void *addr)
{
	return *(const volatile uint8_t *)addr;
}

static inline uint16_t readw_relaxed(const volatile void *addr)
{
	return DEVRES_LE16(*(const volatile uint16_t *)addr);
}

static inline uint64_t readq_relaxed(const volatile void *addr)
{
	return DEVRES_LE64(*(const volatile uint64_t *)addr);
}

/**
 * writel_relaxed() - write a 32-bit little-endian register, unordered
 * @value: the value, in CPU byte order
 * @addr: the register, naturally aligned, in a mapping from ioremap()
 *
 * One volatile 32-bit store, not ordered after earlier writes to memory:
 * see writel(). writeb_relaxed(), writew_relaxed() and writeq_relaxed()
 * are the same for 8, 16 and 64 bits.
 */
static inline void writel_relaxed(uint32_t value, volatile void *addr)
{
	*(volatile uint32_t *)addr = DEVRES_LE32(value);
}

static inline void writeb_relaxed(uint8_t value, volatile void *addr)
{
	*(volatile uint8_t *)addr = value;
}

static inline void writew_relaxed(uint16_t value, volatile void *addr)
{
	*(volatile uint16_t *)addr = DEVRES_LE16(value);
}

static inline void writeq_relaxed(uint64_t value, volatile void *addr)
{
	*(volatile uint64_t *)addr = DEVRES_LE64(value);
}

/**
 * readl() - read a 32-bit little-endian register
 * @addr: the register, naturally aligned, in a mapping from ioremap()
 *
 * readl_relaxed(), then a barrier: the read completes before any later
 * read of memory, so a driver that reads "DMA done" from the device and
 * then reads the DMA buffer sees what the device wrote. readb(), readw()
 * and readq() are the same for 8, 16 and 64 bits; ioread8(), ioread16(),
 * ioread32() and ioread64() are the same as readb() ... readq().
 *
 * Return: the register's value, in CPU byte order.
 */
static inline uint32_t readl(const volatile void *addr)
{
	uint32_t v = readl_relaxed(addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

static inline uint8_t readb(const volatile void *addr)
{
	uint8_t v = readb_relaxed(addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

static inline uint16_t readw(const volatile void *addr)
{
	uint16_t v = readw_relaxed(addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

static inline uint64_t readq(const volatile void *addr)
{
	uint64_t v = readq_relaxed(addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

/**
 * writel() - write a 32-bit little-endian register
 * @value: the value, in CPU byte order
 * @addr: the register, naturally aligned, in a mapping from ioremap()
 *
 * A barrier, then writel_relaxed(): every earlier write to memory is
 * visible to the device before the register write, so a driver that fills
 * a DMA descriptor and then rings a doorbell needs nothing more.
 * writeb(), writew() and writeq() are the same for 8, 16 and 64 bits;
 * iowrite8() ... iowrite64() are the same as writeb() ... writeq().
 */
static inline void writel(uint32_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	writel_relaxed(value, addr);
}

static inline void writeb(uint8_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	writeb_relaxed(value, addr);
}

static inline void writew(uint16_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	writew_relaxed(value, addr);
}

static inline void writeq(uint64_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	writeq_relaxed(value, addr);
}

static inline uint8_t ioread8(const volatile void *addr)
{
	return readb(addr);
}

static inline uint16_t ioread16(const volatile void *addr)
{
	return readw(addr);
}

static inline uint32_t ioread32(const volatile void *addr)
{
	return readl(addr);
}

static inline uint64_t ioread64(const volatile void *addr)
{
	return readq(addr);
}

static inline void iowrite8(uint8_t value, volatile void *addr)
{
	writeb(value, addr);
}

static inline void iowrite16(uint16_t value, volatile void *addr)
{
	writew(value, addr);
}

static inline void iowrite32(uint32_t value, volatile void *addr)
{
	writel(value, addr);
}

static inline void iowrite64(uint64_t value, volatile void *addr)
{
	writeq(value, addr);
}

/**
 * ioread32be() - read a 32-bit big-endian register
 * @addr: the register, naturally aligned, in a mapping from ioremap()
 *
 * As readl(), for a register the device keeps big-endian. ioread16be()
 * and ioread64be() are the same for 16 and 64 bits.
 *
 * Return: the register's value, in CPU byte order.
 */
static inline uint32_t ioread32be(const volatile void *addr)
{
	uint32_t v = DEVRES_BE32(*(const volatile uint32_t *)addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

static inline uint16_t ioread16be(const volatile void *addr)
{
	uint16_t v = DEVRES_BE16(*(const volatile uint16_t *)addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

static inline uint64_t ioread64be(const volatile void *addr)
{
	uint64_t v = DEVRES_BE64(*(const volatile uint64_t *)addr);

	DEVRES_IO_AFTER_READ();
	return v;
}

/**
 * iowrite32be() - write a 32-bit big-endian register
 * @value: the value, in CPU byte order
 * @addr: the register, naturally aligned, in a mapping from ioremap()
 *
 * As writel(), for a register the device keeps big-endian. iowrite16be()
 * and iowrite64be() are the same for 16 and 64 bits.
 */
static inline void iowrite32be(uint32_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	*(volatile uint32_t *)addr = DEVRES_BE32(value);
}

static inline void iowrite16be(uint16_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	*(volatile uint16_t *)addr = DEVRES_BE16(value);
}

static inline void iowrite64be(uint64_t value, volatile void *addr)
{
	DEVRES_IO_BEFORE_WRITE();
	*(volatile uint64_t *)addr = DEVRES_BE64(value);
}

/**
 * memcpy_fromio() - copy from registers (or device memory) to memory
 * @to: the destination in memory
 * @from: the source, in a mapping from ioremap()
 * @count: bytes
 *
 * Volatile loads, each of them once: single bytes up to the first 8-byte
 * boundary of @from, then 8 bytes at a time, then single bytes. Ordered
 * as readq_relaxed(), then a barrier as readl() at the end.
 */
static inline void memcpy_fromio(void *to, const volatile void *from,
				 size_t count)
{
	const volatile uint8_t *s = (const volatile uint8_t *)from;
	uint8_t *d = (uint8_t *)to;

	for (; count && ((uintptr_t)s & 7); count--)
		*d++ = *s++;
	for (; count >= 8; count -= 8, s += 8, d += 8) {
		uint64_t v = *(const volatile uint64_t *)s;

		__builtin_memcpy(d, &v, 8);
	}
	for (; count; count--)
		*d++ = *s++;
	DEVRES_IO_AFTER_READ();
}

/**
 * memcpy_toio() - copy from memory to registers (or device memory)
 * @to: the destination, in a mapping from ioremap()
 * @from: the source in memory
 * @count: bytes
 *
 * A barrier as writel(), then volatile stores, each byte written once:
 * single bytes up to the first 8-byte boundary of @to, then 8 bytes at a
 * time, then single bytes.
 */
static inline void memcpy_toio(volatile void *to, const void *from,
			       size_t count)
{
	volatile uint8_t *d = (volatile uint8_t *)to;
	const uint8_t *s = (const uint8_t *)from;

	DEVRES_IO_BEFORE_WRITE();
	for (; count && ((uintptr_t)d & 7); count--)
		*d++ = *s++;
	for (; count >= 8; count -= 8, s += 8, d += 8) {
		uint64_t v;

		__builtin_memcpy(&v, s, 8);
		*(volatile uint64_t *)d = v;
	}
	for (; count; count--)
		*d++ = *s++;
}

/**
 * memset_io() - fill registers (or device memory) with a byte
 * @addr: the destination, in a mapping from ioremap()
 * @value: the byte
 * @count: bytes
 *
 * As memcpy_toio(), with every byte @value.
 */
static inline void memset_io(volatile void *addr, int value, size_t count)
{
	volatile uint8_t *d = (volatile uint8_t *)addr;
	uint64_t v = 0x0101010101010101ull * (uint8_t)value;

	DEVRES_IO_BEFORE_WRITE();
	for (; count && ((uintptr_t)d & 7); count--)
		*d++ = (uint8_t)value;
	for (; count >= 8; count -= 8, d += 8)
		*(volatile uint64_t *)d = v;
	for (; count; count--)
		*d++ = (uint8_t)value;
}

#ifdef __cplusplus
}
#endif

#endif /* DEVRES_IO_H */
