// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every managed acquisition crossed with every plain call that gives the
 * same kind of resource back, its own family's and another's, the ones
 * the kernel (or POSIX) accepts for that resource: a mapping of device
 * memory to iounmap(), pci_iounmap() (with its device or none: the
 * kernel's pci_iounmap() of a MMIO BAR is iounmap()) and munmap(2),
 * whichever of devm_ioremap(), devm_ioremap_wc(), devm_ioremap_resource(),
 * pcim_iomap() or pcim_iomap_regions() made it; a descriptor to close(2),
 * dup2(2), dup3(2), close_range(2) and fclose(3) of a stream fdopen(3)
 * made of it; a stream to fclose(3) and to each call on its number; a
 * busy region to its release and to release_resource() or
 * remove_resource() of the resource its request returned; a coherent
 * buffer to dma_free_coherent() and munmap(2); a pool to
 * dma_pool_destroy(); the managed enable to pci_disable_device(); a
 * mapping of devm_mmap() to munmap(2); a handler of devm_request_irq(),
 * devm_request_threaded_irq() or devm_request_irq() on a PCI function's
 * vector to free_irq().
 *
 * Each cell (docs/misuse.md, "Managed resources given back by hand"):
 * exactly one WARN, at the plain call, naming the device, the call, the
 * managed call and what to use; the resource given back there (the
 * ledger's count of its kind back to what it was) and its node off the
 * device (a BAR's pcim_iomap_table() slot cleared); then another owner
 * takes the same address, number or range, the device's resources are
 * released (no WARN, no other node than those left) and the other
 * owner's resource must still be there and work; after it is given back,
 * the ledger is what it was before the cell.
 *
 * Then the calls the kernel would not accept for that resource but the
 * library can tell cheaply (iounmap() or pci_iounmap() of a devm_mmap()
 * mapping or a coherent buffer, dma_free_coherent() naming another
 * device, pci_free_irq_vectors() under a handler still requested on a
 * vector, the kernel's rule being free_irq() first): refused, one WARN,
 * nothing given back, the node kept; the device's release gives it back
 * once.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "irq/irq-test.h"
#include "io/iotest.h"
#include "misuse/one-pci-fn.h"

#define WIN 0xa8000000ull
#define WIN_SIZE 0x4000ull
#define REG 0xa8001000ull /* a region and mapping inside the window */
#define REG_SIZE 0x1000ull
#define PORT 0x320
#define PORT_N 8
#define DMA_SIZE 8192

static int memfd;
static volatile unsigned char *devside;
static int line, vec_line;

/* What one cell holds: the device's resource, then the other owner's. */
static struct {
	void *addr, *other_addr;
	struct resource *res, *other_res;
	dma_addr_t handle, other_handle;
	struct dma_pool *pool, *other_pool;
	FILE *f;
	int fd, other_fd;
	int irq;
	int calls, other_calls; /* handler calls */
	int id;			/* the dev_id both owners give */
} c;

/* A managed acquisition, and what its WARN names. */
struct acq {
	const char *name;
	const char *call; /* the managed call named in the WARN */
	const char *fix;  /* what to use instead */
	void (*fn)(void);
	bool pci;  /* on the fake PCI function, not test-dev */
	int nodes; /* the device's nodes after it */
};

/* A plain release, and the function its WARN names. */
struct rel {
	const char *name;
	const char *func;
	void (*fn)(void);
};

/* The kind of resource: its count, its other owner. */
struct kind {
	long (*live)(const struct devres_ledger *l);
	/* Takes the same address or number; whether it got the same. */
	bool (*other)(void);
	void (*check)(void);
	void (*other_rel)(void);
};

struct cell {
	const struct acq *a;
	const struct rel *r;
	const struct kind *k;
	/* Refused (the kernel would not accept it): the WARN's words. */
	const char *refused;
	const char *refused_dev;
	char name[96];
};

/* Mappings of device memory */

static void ioremap_acq(void)
{
	c.addr = devm_ioremap(&tdev, REG, REG_SIZE);
	assert_non_null(c.addr);
}

static void ioremap_wc_acq(void)
{
	c.addr = devm_ioremap_wc(&tdev, REG, REG_SIZE);
	assert_non_null(c.addr);
}

static void ioremap_res_acq(void)
{
	static struct resource r = DEFINE_RES_MEM(REG, REG_SIZE);

	c.addr = devm_ioremap_resource(&tdev, &r);
	assert_false(IS_ERR(c.addr));
}

static void pcim_iomap_acq(void)
{
	c.addr = pcim_iomap(pdev, 0, 0);
	assert_non_null(c.addr);
}

static void pcim_iomap_regions_acq(void)
{
	assert_int_equal(pcim_iomap_regions(pdev, 1 << 0, "mine"), 0);
	c.addr = pcim_iomap_table(pdev)[0];
	assert_non_null(c.addr);
}

static void iounmap_hand(void)
{
	iounmap(c.addr);
}

static void pci_iounmap_hand(void)
{
	pci_iounmap(pdev, c.addr);
}

static void pci_iounmap_nodev_hand(void)
{
	pci_iounmap(NULL, c.addr);
}

static void munmap_hand(void)
{
	assert_int_equal(munmap(c.addr, REG_SIZE), 0);
}

static long maps_live(const struct devres_ledger *l)
{
	return l->maps;
}

static bool ioremap_other(void)
{
	c.other_addr = devm_ioremap(&other, REG, REG_SIZE);
	assert_non_null(c.other_addr);
	return c.other_addr == c.addr;
}

static void ioremap_check(void)
{
	writel(0x5a5aa5a5, (char *)c.other_addr + 0x10);
	assert_int_equal(*(volatile uint32_t *)(devside + 0x1010), 0x5a5aa5a5);
}

static void ioremap_rel(void)
{
	devm_iounmap(&other, c.other_addr);
}

static bool bar_other(void)
{
	c.other_addr = pci_iomap(pdev, 0, 0);
	assert_non_null(c.other_addr);
	return c.other_addr == c.addr;
}

static void bar_check(void)
{
	writel(0xc0ffee, c.other_addr);
	assert_int_equal(readl(c.other_addr), 0xc0ffee);
}

static void bar_rel(void)
{
	pci_iounmap(pdev, c.other_addr);
}

static const struct kind io_map = { maps_live, ioremap_other, ioremap_check,
				    ioremap_rel };
static const struct kind bar_map = { maps_live, bar_other, bar_check, bar_rel };

static const struct acq io_acqs[] = {
	{ "devm_ioremap", "devm_ioremap", "devm_iounmap()", ioremap_acq, false,
	  1 },
	{ "devm_ioremap_wc", "devm_ioremap_wc", "devm_iounmap()",
	  ioremap_wc_acq, false, 1 },
	{ "devm_ioremap_resource", "devm_ioremap", "devm_iounmap()",
	  ioremap_res_acq, false, 2 },
};

static const struct acq bar_acqs[] = {
	{ "pcim_iomap", "pcim_iomap", "pcim_iounmap()", pcim_iomap_acq, true,
	  1 },
	{ "pcim_iomap_regions", "pcim_iomap", "pcim_iounmap()",
	  pcim_iomap_regions_acq, true, 2 },
};

static const struct rel map_rels[] = {
	{ "iounmap", "iounmap", iounmap_hand },
	{ "pci_iounmap", "pci_iounmap", pci_iounmap_hand },
	{ "pci_iounmap(NULL)", "pci_iounmap", pci_iounmap_nodev_hand },
	{ "munmap", "munmap", munmap_hand },
};

/* Descriptors and streams */

static void open_acq(void)
{
	c.fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	assert_true(c.fd >= 0);
}

static void eventfd_acq(void)
{
	c.fd = devm_eventfd(&tdev, 0, 0);
	assert_true(c.fd >= 0);
}

static void fopen_acq(void)
{
	c.f = devm_fopen(&tdev, "/dev/null", "r");
	assert_non_null(c.f);
	c.fd = fileno(c.f);
}

static void close_hand(void)
{
	assert_int_equal(close(c.fd), 0);
}

/* Another open file over the number (the program's own, closed at once). */
static void dup2_hand(void)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, c.fd), c.fd);
	assert_int_equal(close(c.fd), 0);
	assert_int_equal(close(fd), 0);
}

static void dup3_hand(void)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(dup3(fd, c.fd, O_CLOEXEC), c.fd);
	assert_int_equal(close(c.fd), 0);
	assert_int_equal(close(fd), 0);
}

static void close_range_hand(void)
{
	assert_int_equal(close_range((unsigned int)c.fd, (unsigned int)c.fd, 0),
			 0);
}

static void fclose_hand(void)
{
	assert_int_equal(fclose(c.f), 0);
	c.f = NULL;
}

static void fdopen_fclose_hand(void)
{
	FILE *f = fdopen(c.fd, "r");

	assert_non_null(f);
	assert_int_equal(fclose(f), 0);
}

static long fds_live(const struct devres_ledger *l)
{
	return l->fds;
}

static bool fd_other(void)
{
	c.other_fd = memfd_create("theirs", MFD_CLOEXEC);
	assert_true(c.other_fd >= 0);
	return c.other_fd == c.fd;
}

static void fd_check(void)
{
	assert_true(fcntl(c.other_fd, F_GETFD) >= 0);
	assert_int_equal(write(c.other_fd, "x", 1), 1);
}

static void fd_rel(void)
{
	assert_int_equal(close(c.other_fd), 0);
}

static const struct kind fd_kind = { fds_live, fd_other, fd_check, fd_rel };

static const struct acq fd_acqs[] = {
	{ "devm_open", "devm_open", "devm_close()", open_acq, false, 1 },
	{ "devm_eventfd", "devm_eventfd", "devm_close()", eventfd_acq, false,
	  1 },
};

static const struct rel fd_rels[] = {
	{ "close", "close", close_hand },
	{ "dup2", "dup2", dup2_hand },
	{ "dup3", "dup3", dup3_hand },
	{ "close_range", "close_range", close_range_hand },
	{ "fclose(fdopen())", "fclose", fdopen_fclose_hand },
};

static const struct acq stream_acqs[] = {
	{ "devm_fopen", "devm_fopen", "devm_fclose()", fopen_acq, false, 1 },
};

static const struct rel stream_rels[] = {
	{ "fclose", "fclose", fclose_hand },
	{ "close(fileno())", "close", close_hand },
	{ "dup2(fileno())", "dup2", dup2_hand },
	{ "close_range(fileno())", "close_range", close_range_hand },
	{ "fclose(fdopen(fileno()))", "fclose", fdopen_fclose_hand },
};

/* Busy regions */

static void mem_region_acq(void)
{
	c.res = devm_request_mem_region(&tdev, REG, REG_SIZE, "mine");
	assert_non_null(c.res);
}

static void pcim_region_acq(void)
{
	assert_int_equal(pcim_request_region(pdev, 0, "mine"), 0);
	c.res = NULL;
}

static void region_acq(void)
{
	c.res = devm_request_region(&tdev, PORT, PORT_N, "mine");
	assert_non_null(c.res);
}

static void release_mem_region_hand(void)
{
	release_mem_region(REG, REG_SIZE);
}

static void release_resource_hand(void)
{
	assert_int_equal(release_resource(c.res), 0);
}

static void remove_resource_hand(void)
{
	assert_int_equal(remove_resource(c.res), 0);
}

static void bar_release_mem_region_hand(void)
{
	release_mem_region(pci_resource_start(pdev, 0),
			   pci_resource_len(pdev, 0));
}

static void release_region_hand(void)
{
	release_region(PORT, PORT_N);
}

static long regions_live(const struct devres_ledger *l)
{
	return l->regions;
}

static bool mem_region_other(void)
{
	c.other_res = devm_request_mem_region(&other, REG, REG_SIZE, "other");
	assert_non_null(c.other_res);
	return true;
}

static void mem_region_check(void)
{
	assert_null(request_mem_region(REG, REG_SIZE, "third"));
	assert_string_equal(c.other_res->name, "other");
}

static void mem_region_rel(void)
{
	devm_release_mem_region(&other, REG, REG_SIZE);
}

static bool bar_region_other(void)
{
	c.other_res = request_mem_region(pci_resource_start(pdev, 0),
					 pci_resource_len(pdev, 0), "other");
	assert_non_null(c.other_res);
	return true;
}

static void bar_region_check(void)
{
	assert_null(request_mem_region(pci_resource_start(pdev, 0),
				       pci_resource_len(pdev, 0), "third"));
	assert_string_equal(c.other_res->name, "other");
}

static void bar_region_rel(void)
{
	release_mem_region(pci_resource_start(pdev, 0),
			   pci_resource_len(pdev, 0));
}

static bool region_other(void)
{
	c.other_res = devm_request_region(&other, PORT, PORT_N, "other");
	assert_non_null(c.other_res);
	return true;
}

static void region_check(void)
{
	assert_null(request_region(PORT, PORT_N, "third"));
	assert_string_equal(c.other_res->name, "other");
}

static void region_rel(void)
{
	devm_release_region(&other, PORT, PORT_N);
}

static const struct kind mem_region_kind = { regions_live, mem_region_other,
					     mem_region_check, mem_region_rel };
static const struct kind bar_region_kind = { regions_live, bar_region_other,
					     bar_region_check, bar_region_rel };
static const struct kind region_kind = { regions_live, region_other,
					 region_check, region_rel };

static const struct acq mem_region_acqs[] = {
	{ "devm_request_mem_region", "devm_request_mem_region",
	  "devm_release_mem_region()", mem_region_acq, false, 1 },
};

static const struct rel mem_region_rels[] = {
	{ "release_mem_region", "release_mem_region", release_mem_region_hand },
	{ "release_resource", "release_resource", release_resource_hand },
	{ "remove_resource", "remove_resource", remove_resource_hand },
};

static const struct acq bar_region_acqs[] = {
	{ "pcim_request_region", "pcim_request_region", "pcim_release_region()",
	  pcim_region_acq, true, 1 },
};

static const struct rel bar_region_rels[] = {
	{ "release_mem_region", "release_mem_region",
	  bar_release_mem_region_hand },
};

static const struct acq region_acqs[] = {
	{ "devm_request_region", "devm_request_region", "devm_release_region()",
	  region_acq, false, 1 },
};

static const struct rel region_rels[] = {
	{ "release_region", "release_region", release_region_hand },
	{ "release_resource", "release_resource", release_resource_hand },
	{ "remove_resource", "remove_resource", remove_resource_hand },
};

/* DMA */

static void coherent_acq(void)
{
	c.addr = dmam_alloc_coherent(&tdev, DMA_SIZE, &c.handle, GFP_KERNEL);
	assert_non_null(c.addr);
}

static void dma_free_hand(void)
{
	dma_free_coherent(&tdev, DMA_SIZE, c.addr, c.handle);
}

static void dma_munmap_hand(void)
{
	assert_int_equal(munmap(c.addr, DMA_SIZE), 0);
}

static long dma_live(const struct devres_ledger *l)
{
	return l->dma_buffers;
}

/* The device's own space: the unmanaged owner gets the same bus range. */
static bool coherent_other(void)
{
	c.other_addr = dma_alloc_coherent(&tdev, DMA_SIZE, &c.other_handle,
					  GFP_KERNEL);
	assert_non_null(c.other_addr);
	return c.other_handle == c.handle;
}

static void coherent_check(void)
{
	memset(c.other_addr, 0x77, DMA_SIZE);
	assert_ptr_equal(dma_iova_to_virt(&tdev, c.other_handle, DMA_SIZE),
			 c.other_addr);
}

static void coherent_rel(void)
{
	dma_free_coherent(&tdev, DMA_SIZE, c.other_addr, c.other_handle);
}

static void pool_acq(void)
{
	c.pool = dmam_pool_create("mine", &tdev, 64, 8, 0);
	assert_non_null(c.pool);
}

static void pool_hand(void)
{
	dma_pool_destroy(c.pool);
}

static bool pool_other(void)
{
	c.other_pool = dmam_pool_create("theirs", &other, 64, 8, 0);
	assert_non_null(c.other_pool);
	return c.other_pool == c.pool;
}

static void pool_check(void)
{
	dma_addr_t h;
	void *p = dma_pool_alloc(c.other_pool, GFP_KERNEL, &h);

	assert_non_null(p);
	memset(p, 0x11, 64);
	dma_pool_free(c.other_pool, p, h);
}

static void pool_rel(void)
{
	dmam_pool_destroy(c.other_pool);
}

/* A pool is live while a block can be taken from it. */
static long pool_live(const struct devres_ledger *l)
{
	(void)l;
	return 0;
}

static const struct kind coherent_kind = { dma_live, coherent_other,
					   coherent_check, coherent_rel };
static const struct kind pool_kind = { pool_live, pool_other, pool_check,
				       pool_rel };

/* Its node and the device's DMA state's. */
static const struct acq coherent_acqs[] = {
	{ "dmam_alloc_coherent", "dmam_alloc_coherent", "dmam_free_coherent()",
	  coherent_acq, false, 2 },
};

static const struct rel coherent_rels[] = {
	{ "dma_free_coherent", "dma_free_coherent", dma_free_hand },
	{ "munmap", "munmap", dma_munmap_hand },
};

static const struct acq pool_acqs[] = {
	{ "dmam_pool_create", "dmam_pool_create", "dmam_pool_destroy()",
	  pool_acq, false, 1 },
};

static const struct rel pool_rels[] = {
	{ "dma_pool_destroy", "dma_pool_destroy", pool_hand },
};

/* The managed enable */

static void enable_acq(void)
{
	assert_int_equal(pcim_enable_device(pdev), 0);
}

static void disable_hand(void)
{
	pci_disable_device(pdev);
}

static long enable_live(const struct devres_ledger *l)
{
	(void)l;
	return pci_is_enabled(pdev);
}

static bool enable_other(void)
{
	assert_int_equal(pci_enable_device(pdev), 0);
	return true;
}

static void enable_check(void)
{
	assert_true(pci_is_enabled(pdev));
}

static void enable_rel(void)
{
	pci_disable_device(pdev);
	assert_false(pci_is_enabled(pdev));
}

static const struct kind enable_kind = { enable_live, enable_other,
					 enable_check, enable_rel };

static const struct acq enable_acqs[] = {
	{ "pcim_enable_device", "pcim_enable_device",
	  "nothing, the device's release disables it", enable_acq, true, 1 },
};

static const struct rel enable_rels[] = {
	{ "pci_disable_device", "pci_disable_device", disable_hand },
};

/* Interrupts: a line of test-dev's, and the PCI function's vector */

static irqreturn_t mine_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&c.calls, 1);
	return IRQ_HANDLED;
}

static irqreturn_t theirs_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	add_int(&c.other_calls, 1);
	return IRQ_HANDLED;
}

static void irq_acq(void)
{
	c.irq = line;
	assert_int_equal(devm_request_irq(&tdev, line, mine_handler, 0, "mine",
					  &c.id),
			 0);
}

static void threaded_irq_acq(void)
{
	c.irq = line;
	assert_int_equal(devm_request_threaded_irq(&tdev, line, NULL,
						   mine_handler, IRQF_ONESHOT,
						   "mine", &c.id),
			 0);
}

/* Vector 0 of the function, its own line, as a PCI driver's handler. */
static void vector_irq_acq(void)
{
	assert_int_equal(pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX), 1);
	c.irq = pci_irq_vector(pdev, 0);
	assert_int_equal(c.irq, vec_line);
	assert_int_equal(devm_request_irq(&pdev->dev, (unsigned int)c.irq,
					  mine_handler, 0, "mine", &c.id),
			 0);
}

static void free_irq_hand(void)
{
	(void)free_irq((unsigned int)c.irq, &c.id);
}

static long irq_live(const struct devres_ledger *l)
{
	return l->irq_handlers;
}

/* The same line and the same dev_id: only identity tells them apart. */
static bool irq_other(void)
{
	assert_int_equal(request_irq((unsigned int)c.irq, theirs_handler, 0,
				     "theirs", &c.id),
			 0);
	return true;
}

static void irq_check(void)
{
	int before = load_int(&c.other_calls);

	assert_int_equal(irq_line_raise(c.irq), 0);
	assert_true(wait_at_least(&c.other_calls, before + 1));
}

static void irq_rel(void)
{
	(void)free_irq((unsigned int)c.irq, &c.id);
}

static const struct kind irq_kind = { irq_live, irq_other, irq_check, irq_rel };

static const struct acq irq_acqs[] = {
	{ "devm_request_irq", "devm_request_irq", "devm_free_irq()", irq_acq,
	  false, 1 },
	{ "devm_request_threaded_irq", "devm_request_threaded_irq",
	  "devm_free_irq()", threaded_irq_acq, false, 1 },
	{ "devm_request_irq(PCI vector)", "devm_request_irq", "devm_free_irq()",
	  vector_irq_acq, true, 1 },
};

static const struct rel irq_rels[] = {
	{ "free_irq", "free_irq", free_irq_hand },
};

/* Mappings of memory: devm_mmap() */

static void mmap_acq(void)
{
	int fd = memfd_create("mine", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	c.addr = devm_mmap(&tdev, NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_SHARED, fd, 0);
	assert_int_equal(close(fd), 0);
	assert_false(IS_ERR(c.addr));
}

static void mmap_munmap_hand(void)
{
	assert_int_equal(munmap(c.addr, 4096), 0);
}

static bool mmap_other(void)
{
	int fd = memfd_create("theirs", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	c.other_addr = mmap(c.addr, 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	assert_int_equal(close(fd), 0);
	assert_ptr_equal(c.other_addr, c.addr);
	return true;
}

static void mmap_check(void)
{
	memset(c.other_addr, 0x3c, 4096);
	assert_int_equal(((volatile unsigned char *)c.other_addr)[4095], 0x3c);
}

static void mmap_rel(void)
{
	assert_int_equal(munmap(c.other_addr, 4096), 0);
}

static const struct kind mmap_kind = { maps_live, mmap_other, mmap_check,
				       mmap_rel };

static const struct acq mmap_acqs[] = {
	{ "devm_mmap", "devm_mmap", "devm_munmap()", mmap_acq, false, 1 },
};

static const struct rel mmap_rels[] = {
	{ "munmap", "munmap", mmap_munmap_hand },
};

/* Refused: calls the kernel would not accept for the resource. */

static void dma_free_other_hand(void)
{
	dma_free_coherent(&other, DMA_SIZE, c.addr, c.handle);
}

struct family {
	const struct acq *acqs;
	size_t nacqs;
	const struct rel *rels;
	size_t nrels;
	const struct kind *k;
	const char *refused; /* the WARN's words, when refused */
	const char *refused_dev;
};

#define FAMILY(a, r, k)                                                        \
	{                                                                      \
		a, sizeof(a) / sizeof((a)[0]), r, sizeof(r) / sizeof((r)[0]),  \
			&(k), NULL, NULL                                       \
	}
#define REFUSED(a, r, k, words, dev)                                           \
	{                                                                      \
		a, sizeof(a) / sizeof((a)[0]), r, sizeof(r) / sizeof((r)[0]),  \
			&(k), words, dev                                       \
	}

static const struct rel io_rels_refused[] = {
	{ "iounmap", "iounmap", iounmap_hand },
	{ "pci_iounmap", "pci_iounmap", pci_iounmap_hand },
};

/* The kernel's rule: free_irq() before the vectors go. */
static void free_vectors_hand(void)
{
	pci_free_irq_vectors(pdev);
}

static const struct acq vector_acqs[] = {
	{ "devm_request_irq(PCI vector)", "devm_request_irq", "devm_free_irq()",
	  vector_irq_acq, true, 1 },
};

static const struct rel vector_rels[] = {
	{ "pci_free_irq_vectors", "pci_free_irq_vectors", free_vectors_hand },
};

static const struct rel dma_other_rels[] = {
	{ "dma_free_coherent(other)", "dma_free_coherent",
	  dma_free_other_hand },
};

static const struct family families[] = {
	FAMILY(io_acqs, map_rels, io_map),
	FAMILY(bar_acqs, map_rels, bar_map),
	FAMILY(fd_acqs, fd_rels, fd_kind),
	FAMILY(stream_acqs, stream_rels, fd_kind),
	FAMILY(mem_region_acqs, mem_region_rels, mem_region_kind),
	FAMILY(bar_region_acqs, bar_region_rels, bar_region_kind),
	FAMILY(region_acqs, region_rels, region_kind),
	FAMILY(coherent_acqs, coherent_rels, coherent_kind),
	FAMILY(pool_acqs, pool_rels, pool_kind),
	FAMILY(enable_acqs, enable_rels, enable_kind),
	FAMILY(mmap_acqs, mmap_rels, mmap_kind),
	FAMILY(irq_acqs, irq_rels, irq_kind),
	REFUSED(mmap_acqs, io_rels_refused, mmap_kind, "is not a mapping from",
		"(no device)"),
	REFUSED(coherent_acqs, io_rels_refused, coherent_kind,
		"is not a mapping from", "(no device)"),
	REFUSED(vector_acqs, vector_rels, irq_kind, "still has a handler",
		"0000:00:01.0"),
	REFUSED(coherent_acqs, dma_other_rels, coherent_kind,
		"is not a coherent buffer", "other-dev"),
};

static struct device *mine(const struct cell *x)
{
	return x->a->pci ? &pdev->dev : &tdev;
}

static int nodes(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return (int)st.allocs;
}

static const struct cell *cur;

static void run_cell(void **state)
{
	const struct cell *x = cur;
	struct device *dev = mine(x);
	struct devres_ledger l0, l;
	char reason[160];
	long live0, held;
	bool same;
	int left = x->refused ? x->a->nodes : x->a->nodes - 1;

	(void)state;
	memset(&c, 0, sizeof(c));
	devres_ledger_snapshot(&l0);
	live0 = x->k->live(&l0);
	x->a->fn();
	assert_int_equal(nodes(dev), x->a->nodes);
	/* A descriptor counts its twin too (posix.md): one or more. */
	devres_ledger_snapshot(&l);
	held = x->k->live(&l) - live0;
	if (x->k->live != pool_live)
		assert_true(held >= 1);

	start_capture();
	x->r->fn();
	if (x->refused) {
		expect_warn_on(x->refused_dev, x->r->func, x->refused);
	} else {
		snprintf(reason, sizeof(reason), "acquired with %s(): use %s",
			 x->a->call, x->a->fix);
		expect_warn_on(dev_name(dev), x->r->func, reason);
	}
	/* Given back once, there (or kept), its node with it. */
	assert_int_equal(nodes(dev), left);
	devres_ledger_snapshot(&l);
	if (x->k->live != pool_live)
		assert_int_equal(x->k->live(&l),
				 live0 + (x->refused ? held : 0));
	if (x->a->pci && !x->refused)
		assert_null(pcim_iomap_table(pdev)[0]);
	/*
	 * A stream's number given back by a call on the number: the FILE is
	 * the program's from then on, and its fclose() a plain one (its
	 * number gone), made before another owner may take the number.
	 */
	if (c.f) {
		start_capture();
		(void)fclose(c.f);
		expect_no_warn();
	}

	/* Another owner where it was; the device's release leaves it. */
	same = !x->refused && x->k->other();
	print_message("%s: the other owner got the same one: %s\n", x->name,
		      same ? "yes" : "no");
	start_capture();
	assert_int_equal(devres_release_all(dev), left);
	expect_no_warn();
	if (!x->refused) {
		x->k->check();
		x->k->other_rel();
	}
	(void)devres_release_all(&other);
	devres_ledger_snapshot(&l);
	assert_int_equal(devres_ledger_diff(&l0, &l, stderr), 0);
}

static int cell_setup(void **state)
{
	cur = *state;
	if (irq_threads_settle())
		return -1;
	return two_dev_setup(state);
}

/* What a failed cell left on the PCI function goes before the check. */
static int cell_teardown(void **state)
{
	(void)devres_release_all(&pdev->dev);
	pci_free_irq_vectors(pdev);
	return irq_teardown(state);
}

static int group_setup(void **state)
{
	(void)state;
	memfd = dev_memfd(WIN_SIZE);
	if (memfd < 0)
		return -1;
	devside = dev_view(memfd, WIN_SIZE);
	if (!devside || iomem_window_add(WIN, WIN_SIZE, memfd, 0, "win"))
		return -1;
	line = irq_line_create("line");
	vec_line = irq_line_create("vector");
	if (line <= 0 || vec_line <= 0 || one_pci_fn_setup(4096))
		return -1;
	return pci_dev_set_irq_lines(pdev, &vec_line, 1);
}

static int group_teardown(void **state)
{
	(void)state;
	one_pci_fn_teardown();
	irq_line_destroy(vec_line);
	irq_line_destroy(line);
	iomem_window_remove(WIN);
	munmap((void *)devside, WIN_SIZE);
	close(memfd);
	return 0;
}

#define MAX_CELLS 96

int main(void)
{
	static struct cell cells[MAX_CELLS];
	static struct CMUnitTest tests[MAX_CELLS];
	size_t n = 0;

	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		const struct family *fa = &families[f];

		for (size_t i = 0; i < fa->nacqs; i++) {
			for (size_t j = 0; j < fa->nrels; j++) {
				struct cell *x = &cells[n];

				if (n == MAX_CELLS)
					return 1;
				x->a = &fa->acqs[i];
				x->r = &fa->rels[j];
				x->k = fa->k;
				x->refused = fa->refused;
				x->refused_dev = fa->refused_dev;
				snprintf(x->name, sizeof(x->name), "%s%s/%s",
					 fa->refused ? "refused " : "",
					 x->a->name, x->r->name);
				tests[n] = (struct CMUnitTest){
					.name = x->name,
					.test_func = run_cell,
					.setup_func = cell_setup,
					.teardown_func = cell_teardown,
					.initial_state = x,
				};
				n++;
			}
		}
	}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return _cmocka_run_group_tests("hand-cross", tests, n, group_setup,
				       group_teardown);
}
