// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every managed acquisition given back with its plain, unmanaged release:
 * one table row per (managed call, plain release) pair. Each row acquires
 * on test-dev through the managed call, gives it back by hand, and checks
 * exactly one WARN naming the device, the plain call, the managed call and
 * the managed release to use, and that the device holds no node any more;
 * then another owner acquires the same address or number, test-dev's
 * resources are released, and the other owner's resource must still be
 * there and work (a register reads back, a handler fires, a buffer or fd is
 * still live). The fixture's teardown checks the ledger against the
 * baseline, and ASan sees any second free.
 *
 * Resources the library cannot see being released (a mapping unmapped
 * with munmap(2)) are caught when the device's resources are released
 * instead: their rows expect the WARN there, and the other owner's
 * resource left alone. close(2) and fclose(3) the library interposes:
 * caught at the call, as its own plain releases.
 *
 * Then each pair again, the plain release on one thread racing the
 * device's release on another, 64 rounds (UNMANAGED_RACE_ROUNDS to
 * change it), the threads trading sides each round: exactly one WARN a round
 * (whichever comes second finds nothing of its own), the resource given
 * back once (ASan, TSan, and the ledger at teardown).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
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
#include "rounds.h"

#define WIN 0xa0000000ull
#define WIN_SIZE 0x4000ull
#define REG 0xa0001000ull /* a region and mapping inside the window */
#define REG_SIZE 0x1000ull
#define PORT 0x300
#define PORT_N 8
#define DMA_SIZE 8192

static int memfd;
static volatile unsigned char *devside;
static int line;

/* What one row holds: test-dev's resource, then the other owner's. */
struct ctx {
	void *addr, *other_addr;
	struct resource *res;
	dma_addr_t handle, other_handle;
	struct dma_pool *pool, *other_pool;
	int fd, other_fd;
	int calls, other_calls; /* handler calls */
	int id, other_id;	/* dev_id cookies */
};

static struct ctx c;

/* Laid out as the rows read, not packed: a table of a few dozen. */
/* NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding) */
struct pair {
	const char *name;
	const char *func; /* the plain release, in the WARN */
	const char *call; /* the managed call it should not undo */
	const char *fix;  /* what to use instead: "devm_iounmap()" */
	bool at_release;  /* the library cannot see the call: WARN later */
	int left;	  /* nodes test-dev holds after the plain release */
	void (*acquire)(void);
	void (*by_hand)(void);
	/* Another owner takes the same address or number; false: not same. */
	bool (*other_acquire)(void);
	void (*other_check)(void);
	void (*other_release)(void);
	bool pci; /* on the fake PCI device, not test-dev */
};

static const struct pair *cur;

/* Regions */

static void region_acq(void)
{
	assert_non_null(devm_request_region(&tdev, PORT, PORT_N, "mine"));
}

static void region_hand(void)
{
	release_region(PORT, PORT_N);
}

static bool region_other(void)
{
	c.res = devm_request_region(&other, PORT, PORT_N, "other");
	assert_non_null(c.res);
	return true;
}

static void region_check(void)
{
	/* Still busy, and still the other owner's. */
	assert_null(request_region(PORT, PORT_N, "third"));
	assert_string_equal(c.res->name, "other");
}

static void region_rel(void)
{
	devm_release_region(&other, PORT, PORT_N);
}

static void mem_region_acq(void)
{
	assert_non_null(devm_request_mem_region(&tdev, REG, REG_SIZE, "mine"));
}

static void mem_region_hand(void)
{
	release_mem_region(REG, REG_SIZE);
}

static bool mem_region_other(void)
{
	c.res = devm_request_mem_region(&other, REG, REG_SIZE, "other");
	assert_non_null(c.res);
	return true;
}

static void mem_region_check(void)
{
	assert_null(request_mem_region(REG, REG_SIZE, "third"));
	assert_string_equal(c.res->name, "other");
}

static void mem_region_rel(void)
{
	devm_release_mem_region(&other, REG, REG_SIZE);
}

/* The same caller's struct resource, requested again by another owner. */
static struct resource rr = DEFINE_RES_MEM_NAMED(0xb0000000, 0x1000, "rr");

static void resource_acq(void)
{
	assert_int_equal(devm_request_resource(&tdev, &iomem_resource, &rr), 0);
}

static void resource_hand(void)
{
	release_resource(&rr);
}

static bool resource_other(void)
{
	assert_int_equal(devm_request_resource(&other, &iomem_resource, &rr),
			 0);
	return true;
}

static void resource_check(void)
{
	struct resource r2 = DEFINE_RES_MEM_NAMED(0xb0000000, 0x1000, "r2");

	assert_ptr_equal(rr.parent, &iomem_resource);
	assert_int_equal(request_resource(&iomem_resource, &r2), -EBUSY);
}

static void resource_rel(void)
{
	devm_release_resource(&other, &rr);
	assert_null(rr.parent);
}

/* Mappings */

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

static void iounmap_hand(void)
{
	iounmap(c.addr);
}

/* The mapping itself taken away: the library's munmap() sees it. */
static void io_munmap_hand(void)
{
	assert_int_equal(munmap(c.addr, REG_SIZE), 0);
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
	devside[0x1020] = 0x42;
	assert_int_equal(readb((char *)c.other_addr + 0x20), 0x42);
}

static void ioremap_rel(void)
{
	devm_iounmap(&other, c.other_addr);
}

/* The region under devm_ioremap_resource(), given back by hand. */
static void res_region_hand(void)
{
	release_mem_region(REG, REG_SIZE);
}

static bool res_region_other(void)
{
	/* The mapping is still test-dev's: only the region is taken. */
	return mem_region_other();
}

/* Interrupts */

static irqreturn_t mine(int irq, void *dev_id)
{
	(void)irq;
	add_int(&c.calls, 1);
	return dev_id == &c.id ? IRQ_HANDLED : IRQ_NONE;
}

static irqreturn_t theirs(int irq, void *dev_id)
{
	(void)irq;
	add_int(&c.other_calls, 1);
	return dev_id == &c.id ? IRQ_HANDLED : IRQ_NONE;
}

static irqreturn_t mine_thread(int irq, void *dev_id)
{
	return mine(irq, dev_id);
}

static void irq_acq(void)
{
	assert_int_equal(devm_request_irq(&tdev, line, mine, 0, "mine", &c.id),
			 0);
}

static void threaded_irq_acq(void)
{
	assert_int_equal(devm_request_threaded_irq(&tdev, line, NULL,
						   mine_thread, IRQF_ONESHOT,
						   "mine", &c.id),
			 0);
}

static void any_context_irq_acq(void)
{
	assert_true(devm_request_any_context_irq(&tdev, line, mine, 0, "mine",
						 &c.id) >= 0);
}

static void irq_hand(void)
{
	free_irq(line, &c.id);
}

/* The same line and the same dev_id: only identity tells them apart. */
static bool irq_other(void)
{
	assert_int_equal(
		devm_request_irq(&other, line, theirs, 0, "theirs", &c.id), 0);
	return true;
}

static void irq_check(void)
{
	int before = load_int(&c.other_calls);

	assert_int_equal(irq_line_raise(line), 0);
	assert_true(wait_at_least(&c.other_calls, before + 1));
}

static void irq_rel(void)
{
	devm_free_irq(&other, line, &c.id);
}

/* DMA */

static void coherent_acq(void)
{
	c.addr = dmam_alloc_coherent(&tdev, DMA_SIZE, &c.handle, GFP_KERNEL);
	assert_non_null(c.addr);
}

static void coherent_hand(void)
{
	dma_free_coherent(&tdev, DMA_SIZE, c.addr, c.handle);
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

/* File descriptors and streams: close(2) and fclose(3), interposed. */

static void memfd_acq(void)
{
	c.fd = devm_memfd_create(&tdev, "mine", 0);
	assert_true(c.fd >= 0);
}

static void open_acq(void)
{
	c.fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	assert_true(c.fd >= 0);
}

static void openat_acq(void)
{
	c.fd = devm_openat(&tdev, AT_FDCWD, "/dev/null", O_RDONLY);
	assert_true(c.fd >= 0);
}

static void add_fd_acq(void)
{
	int fd = memfd_create("given", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(devm_add_fd(&tdev, fd), 0);
	c.fd = fd;
}

static void eventfd_acq(void)
{
	c.fd = devm_eventfd(&tdev, 0, 0);
	assert_true(c.fd >= 0);
}

static void timerfd_acq(void)
{
	c.fd = devm_timerfd_create(&tdev, CLOCK_MONOTONIC, 0);
	assert_true(c.fd >= 0);
}

static void fd_hand(void)
{
	close(c.fd);
}

static bool memfd_other(void)
{
	c.other_fd = memfd_create("theirs", MFD_CLOEXEC);
	assert_true(c.other_fd >= 0);
	return c.other_fd == c.fd;
}

/* The same file, opened another way: st_dev and st_ino alone agree. */
static bool null_other(void)
{
	c.other_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
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
	close(c.other_fd);
}

static void fopen_acq(void)
{
	c.addr = devm_fopen(&tdev, "/dev/null", "w");
	assert_non_null(c.addr);
}

static void fclose_hand(void)
{
	assert_int_equal(fclose(c.addr), 0);
}

/* malloc() may well hand the freed FILE's memory to the next stream. */
static bool fopen_other(void)
{
	c.other_addr = fopen("/dev/null", "we");
	assert_non_null(c.other_addr);
	return c.other_addr == c.addr;
}

static void fopen_check(void)
{
	assert_true(fputs("x", c.other_addr) >= 0);
	assert_int_equal(fflush(c.other_addr), 0);
}

static void fopen_rel(void)
{
	assert_int_equal(fclose(c.other_addr), 0);
}

/* PCI: the fake function's enable count and BAR 0. */

static void enable_acq(void)
{
	assert_int_equal(pcim_enable_device(pdev), 0);
}

static void enable_hand(void)
{
	pci_disable_device(pdev);
}

/* Someone else's enable of the same function, counted like the kernel's. */
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

static void pci_iounmap_hand(void)
{
	pci_iounmap(pdev, c.addr);
}

static void bar_munmap_hand(void)
{
	assert_int_equal(munmap(c.addr, 4096), 0);
}

static bool pci_iomap_other(void)
{
	c.other_addr = pci_iomap(pdev, 0, 0);
	assert_non_null(c.other_addr);
	return c.other_addr == c.addr;
}

static void pci_iomap_check(void)
{
	writel(0xc0ffee, c.other_addr);
	assert_int_equal(readl(c.other_addr), 0xc0ffee);
}

static void pci_iomap_rel(void)
{
	pci_iounmap(pdev, c.other_addr);
}

/* Mappings of memfds: the library defines munmap(2), and sees it. */

static void mmap_acq(void)
{
	int fd = memfd_create("mine", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	c.addr = devm_mmap(&tdev, NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_SHARED, fd, 0);
	close(fd);
	assert_false(IS_ERR(c.addr));
}

static void mmap_hand(void)
{
	munmap(c.addr, 4096);
}

static bool mmap_other(void)
{
	int fd = memfd_create("theirs", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	c.other_addr = mmap(c.addr, 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	close(fd);
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

/*
 * Every managed call the library exports (devm_*, dmam_*, pcim_* in the
 * version script) and every node kind it makes (each release function
 * given to devres_alloc() in src/), with the row above that tests its
 * plain release, or why it has none. check-managed-kinds.sh fails the
 * build's tests when one is missing here; the "coverage" test checks that
 * each named row exists and each other entry says why.
 */
struct managed {
	const char *name;
	const char *row; /* a pairs[] name */
	const char *why; /* no plain release to misuse, or a managed release */
};

#define ROW(n, r)                                                              \
	{                                                                      \
		n, r, NULL                                                     \
	}
#define NONE(n, w)                                                             \
	{                                                                      \
		n, NULL, w                                                     \
	}

static const struct managed managed[] = {
	/* Acquisitions, and the pair that gives each back by hand. */
	ROW("devm_request_region", "devm_request_region/release_region"),
	ROW("devm_request_mem_region", "devm_request_mem_region/"
				       "release_mem_region"),
	ROW("devm_request_resource", "devm_request_resource/release_resource"),
	ROW("devm_ioremap", "devm_ioremap/iounmap"),
	ROW("devm_ioremap_wc", "devm_ioremap_wc/iounmap"),
	ROW("devm_ioremap_resource", "devm_ioremap_resource/iounmap"),
	/* The same node kinds through the same calls as the row. */
	ROW("devm_ioremap_resource_wc", "devm_ioremap_resource/iounmap"),
	ROW("devm_platform_ioremap_resource", "devm_ioremap_resource/iounmap"),
	ROW("devm_platform_get_and_ioremap_resource", "devm_ioremap_resource/"
						      "iounmap"),
	ROW("devm_request_irq", "devm_request_irq/free_irq"),
	ROW("devm_request_threaded_irq", "devm_request_threaded_irq/free_irq"),
	ROW("devm_request_any_context_irq", "devm_request_any_context_irq/"
					    "free_irq"),
	ROW("dmam_alloc_coherent", "dmam_alloc_coherent/dma_free_coherent"),
	ROW("dmam_pool_create", "dmam_pool_create/dma_pool_destroy"),
	ROW("devm_open", "devm_open/close"),
	ROW("devm_openat", "devm_openat/close"),
	ROW("devm_add_fd", "devm_add_fd/close"),
	ROW("devm_memfd_create", "devm_memfd_create/close"),
	ROW("devm_eventfd", "devm_eventfd/close"),
	ROW("devm_timerfd_create", "devm_timerfd_create/close"),
	ROW("devm_mmap", "devm_mmap/munmap"),
	ROW("pcim_enable_device", "pcim_enable_device/pci_disable_device"),
	ROW("pcim_iomap", "pcim_iomap/pci_iounmap"),
	ROW("pcim_iomap_regions", "pcim_iomap_regions/pci_iounmap"),
	ROW("pcim_request_region", "devm_request_mem_region/"
				   "release_mem_region"),
	ROW("pcim_request_all_regions", "devm_request_mem_region/"
					"release_mem_region"),
	NONE("devm_kmalloc", "memory: free(3) of it is a libc error (ASan); "
			     "the compat kfree() and krealloc() WARN with "
			     "devm_kfree()/devm_krealloc() "
			     "(test-kc-kfree-managed)"),
	NONE("devm_kzalloc", "memory, as devm_kmalloc"),
	NONE("devm_kcalloc", "memory, as devm_kmalloc"),
	NONE("devm_kmalloc_array", "memory, as devm_kmalloc"),
	NONE("devm_krealloc", "memory, as devm_kmalloc"),
	NONE("devm_kmemdup", "memory, as devm_kmalloc"),
	NONE("devm_kstrdup", "memory, as devm_kmalloc"),
	NONE("devm_kstrdup_const", "memory, as devm_kmalloc"),
	NONE("devm_kvasprintf", "memory, as devm_kmalloc"),
	NONE("devm_kasprintf", "memory, as devm_kmalloc"),
	NONE("devm_get_free_pages", "no plain free_pages() in the API"),
	NONE("devm_add_action_named", "the action is the caller's"),
	NONE("devm_add_action_or_reset_named", "the action is the caller's"),
	NONE("devm_thread_run", "an opaque handle: only devm_thread_stop()"),
	ROW("devm_fopen", "devm_fopen/fclose"),
	NONE("devm_revocable_create", "revocable_put() of the binding's "
				      "reference WARNs (revocable)"),
	NONE("pcim_pin_device", "makes the enable the driver's own"),
	NONE("pcim_iomap_table", "not managed: the PCI device's own table"),
	/* The managed releases and queries themselves. */
	NONE("devm_release_region", "the managed release"),
	NONE("devm_release_mem_region", "the managed release"),
	NONE("devm_release_resource", "the managed release"),
	NONE("devm_iounmap", "the managed release"),
	NONE("devm_free_irq", "the managed release"),
	NONE("dmam_free_coherent", "the managed release"),
	NONE("dmam_pool_destroy", "the managed release"),
	NONE("devm_close", "the managed release"),
	NONE("devm_fclose", "the managed release"),
	NONE("devm_munmap", "the managed release"),
	NONE("devm_kfree", "the managed release"),
	NONE("devm_free_pages", "the managed release"),
	NONE("devm_thread_stop", "the managed release"),
	NONE("devm_remove_action", "the managed release"),
	NONE("devm_release_action", "the managed release"),
	NONE("devm_is_action_added", "a query: acquires nothing"),
	NONE("devm_is_kmalloc", "a query: acquires nothing"),
	NONE("pcim_iounmap", "the managed release"),
	NONE("pcim_release_region", "the managed release"),
	/* Node kinds the library makes inside other calls. */
	ROW("devm_irq_release", "devm_request_irq/free_irq"),
	ROW("dmam_release", "dmam_alloc_coherent/dma_free_coherent"),
	ROW("dmam_pool_release", "dmam_pool_create/dma_pool_destroy"),
	ROW("devm_resource_release", "devm_request_resource/release_resource"),
	ROW("devm_mmap_release", "devm_mmap/munmap"),
	ROW("pcim_enable_release", "pcim_enable_device/pci_disable_device"),
	ROW("pcim_bar_release", "pcim_iomap/pci_iounmap"),
	NONE("devm_pages_release", "devm_get_free_pages's"),
	ROW("devm_fopen_release", "devm_fopen/fclose"),
	NONE("devm_thread_run_release", "devm_thread_run's"),
	NONE("revocable_revoke", "devm_revocable_create's"),
	NONE("dma_state_release", "the device's DMA state: no handle to it"),
	NONE("sentinel_release", "DMA debug's check: no handle to it"),
	NONE("vector_release", "UIO vectors of pci_alloc_irq_vectors(): "
			       "pci_free_irq_vectors() "
			       "keeps the lines for the binding; "
			       "irq_line_destroy() of one is "
			       "refused (test-pci-uio-vector)"),
	NONE("vectors_release", "VFIO vectors: as vector_release"),
};

static const struct pair pairs[] = {
	{ "devm_request_region/release_region", "release_region",
	  "devm_request_region", "devm_release_region()", false, 0, region_acq,
	  region_hand, region_other, region_check, region_rel, false },
	{ "devm_request_mem_region/release_mem_region", "release_mem_region",
	  "devm_request_mem_region", "devm_release_mem_region()", false, 0,
	  mem_region_acq, mem_region_hand, mem_region_other, mem_region_check,
	  mem_region_rel, false },
	{ "devm_request_resource/release_resource", "release_resource",
	  "devm_request_resource", "devm_release_resource()", false, 0,
	  resource_acq, resource_hand, resource_other, resource_check,
	  resource_rel, false },
	{ "devm_ioremap/iounmap", "iounmap", "devm_ioremap", "devm_iounmap()",
	  false, 0, ioremap_acq, iounmap_hand, ioremap_other, ioremap_check,
	  ioremap_rel, false },
	{ "devm_ioremap_wc/iounmap", "iounmap", "devm_ioremap_wc",
	  "devm_iounmap()", false, 0, ioremap_wc_acq, iounmap_hand,
	  ioremap_other, ioremap_check, ioremap_rel, false },
	{ "devm_ioremap_resource/iounmap", "iounmap", "devm_ioremap",
	  "devm_iounmap()", false, 1, ioremap_res_acq, iounmap_hand, NULL, NULL,
	  NULL, false },
	{ "devm_ioremap_resource/release_mem_region", "release_mem_region",
	  "devm_request_mem_region", "devm_release_mem_region()", false, 1,
	  ioremap_res_acq, res_region_hand, res_region_other, mem_region_check,
	  mem_region_rel, false },
	{ "devm_ioremap/munmap", "munmap", "devm_ioremap", "devm_iounmap()",
	  false, 0, ioremap_acq, io_munmap_hand, ioremap_other, ioremap_check,
	  ioremap_rel, false },
	{ "devm_request_irq/free_irq", "free_irq", "devm_request_irq",
	  "devm_free_irq()", false, 0, irq_acq, irq_hand, irq_other, irq_check,
	  irq_rel, false },
	{ "devm_request_threaded_irq/free_irq", "free_irq",
	  "devm_request_threaded_irq", "devm_free_irq()", false, 0,
	  threaded_irq_acq, irq_hand, irq_other, irq_check, irq_rel, false },
	{ "devm_request_any_context_irq/free_irq", "free_irq",
	  "devm_request_any_context_irq", "devm_free_irq()", false, 0,
	  any_context_irq_acq, irq_hand, irq_other, irq_check, irq_rel, false },
	{ "dmam_alloc_coherent/dma_free_coherent", "dma_free_coherent",
	  "dmam_alloc_coherent", "dmam_free_coherent()", false, 1, coherent_acq,
	  coherent_hand, coherent_other, coherent_check, coherent_rel, false },
	{ "dmam_pool_create/dma_pool_destroy", "dma_pool_destroy",
	  "dmam_pool_create", "dmam_pool_destroy()", false, 0, pool_acq,
	  pool_hand, pool_other, pool_check, pool_rel, false },
	{ "devm_memfd_create/close", "close", "devm_memfd_create",
	  "devm_close()", false, 0, memfd_acq, fd_hand, memfd_other, fd_check,
	  fd_rel, false },
	{ "devm_open/close", "close", "devm_open", "devm_close()", false, 0,
	  open_acq, fd_hand, null_other, fd_check, fd_rel, false },
	{ "devm_openat/close", "close", "devm_openat", "devm_close()", false, 0,
	  openat_acq, fd_hand, null_other, fd_check, fd_rel, false },
	{ "devm_add_fd/close", "close", "devm_add_fd", "devm_close()", false, 0,
	  add_fd_acq, fd_hand, memfd_other, fd_check, fd_rel, false },
	{ "devm_eventfd/close", "close", "devm_eventfd", "devm_close()", false,
	  0, eventfd_acq, fd_hand, memfd_other, fd_check, fd_rel, false },
	{ "devm_timerfd_create/close", "close", "devm_timerfd_create",
	  "devm_close()", false, 0, timerfd_acq, fd_hand, memfd_other, fd_check,
	  fd_rel, false },
	{ "devm_fopen/fclose", "fclose", "devm_fopen", "devm_fclose()", false,
	  0, fopen_acq, fclose_hand, fopen_other, fopen_check, fopen_rel,
	  false },
	{ "devm_mmap/munmap", "munmap", "devm_mmap", "devm_munmap()", false, 0,
	  mmap_acq, mmap_hand, mmap_other, mmap_check, mmap_rel, false },
	{ "pcim_enable_device/pci_disable_device", "pci_disable_device",
	  "pcim_enable_device", "nothing, the device's release disables it",
	  false, 0, enable_acq, enable_hand, enable_other, enable_check,
	  enable_rel, true },
	{ "pcim_iomap/pci_iounmap", "pci_iounmap", "pcim_iomap",
	  "pcim_iounmap()", false, 0, pcim_iomap_acq, pci_iounmap_hand,
	  pci_iomap_other, pci_iomap_check, pci_iomap_rel, true },
	{ "pcim_iomap/munmap", "munmap", "pcim_iomap", "pcim_iounmap()", false,
	  0, pcim_iomap_acq, bar_munmap_hand, pci_iomap_other, pci_iomap_check,
	  pci_iomap_rel, true },
	{ "pcim_iomap_regions/pci_iounmap", "pci_iounmap", "pcim_iomap",
	  "pcim_iounmap()", false, 1, pcim_iomap_regions_acq, pci_iounmap_hand,
	  pci_iomap_other, pci_iomap_check, pci_iomap_rel, true },
	/* Another family's plain unmap, as the kernel's accepts. */
	{ "pcim_iomap/iounmap", "iounmap", "pcim_iomap", "pcim_iounmap()",
	  false, 0, pcim_iomap_acq, iounmap_hand, pci_iomap_other,
	  pci_iomap_check, pci_iomap_rel, true },
	{ "devm_ioremap/pci_iounmap", "pci_iounmap", "devm_ioremap",
	  "devm_iounmap()", false, 0, ioremap_acq, pci_iounmap_hand,
	  ioremap_other, ioremap_check, ioremap_rel, false },
};

static const size_t npairs = sizeof(pairs) / sizeof(pairs[0]);

static void coverage(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(managed) / sizeof(managed[0]); i++) {
		const struct managed *m = &managed[i];
		bool found = false;

		assert_true(!m->row != !m->why);
		if (m->why) {
			assert_true(strlen(m->why) > 8);
			continue;
		}
		for (size_t j = 0; j < npairs; j++)
			found |= m->row && !strcmp(pairs[j].name, m->row);
		if (!found)
			print_error("%s: no row %s\n", m->name, m->row);
		assert_true(found);
	}
}

static void run_pair(void **state)
{
	const struct pair *p = cur;
	struct device *mine = p->pci ? &pdev->dev : &tdev;
	struct devres_stats st;
	char reason[160];
	bool same = false;

	(void)state;
	memset(&c, 0, sizeof(c));
	p->acquire();
	start_capture();
	p->by_hand();
	if (p->at_release) {
		expect_no_warn();
	} else {
		snprintf(reason, sizeof(reason), "acquired with %s(): use %s",
			 p->call, p->fix);
		expect_warn_on(dev_name(mine), p->func, reason);
	}
	/* Its node went with it (or, not seen, stays); the rest stays. */
	devres_get_stats(mine, &st);
	assert_int_equal(st.allocs, p->left);
	if (p->other_acquire)
		same = p->other_acquire();
	print_message("%s: the other owner got the same %s: %s\n", p->name,
		      p->at_release ? "number" : "address or number",
		      same ? "yes" : "no");
	start_capture();
	devres_release_all(mine);
	if (p->at_release)
		expect_warn(p->func, "behind the library's back");
	else
		expect_no_warn();
	if (p->other_check) {
		p->other_check();
		p->other_release();
	}
}

static int race_warns, race_caught, go;

static void count_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	if (!strncmp(text, "WARNING: ", 9))
		add_int(&race_warns, 1);
	/* The plain release came first and took the node. */
	if (strstr(text, "taken off the device"))
		add_int(&race_caught, 1);
}

static int ready, swap;

/* The plain release, or (swapped) the device's release of everything. */
static void side(const struct pair *p, bool hand)
{
	if (hand)
		p->by_hand();
	else
		devres_release_all(p->pci ? &pdev->dev : &tdev);
}

static void *other_side(void *arg)
{
	add_int(&ready, 1);
	while (!load_int(&go))
		sched_yield();
	side(arg, !load_int(&swap));
	return NULL;
}

/* Whether the second of a raced pair may find nothing without a WARN. */
static bool second_may_be_quiet(const char *func)
{
	return !strcmp(func, "release_resource") || !strcmp(func, "close") ||
	       !strcmp(func, "munmap");
}

static void race_pair(void **state)
{
	const struct pair *p = cur;
	int rounds = (int)test_rounds("UNMANAGED_RACE_ROUNDS", 64);
	pthread_t t;

	(void)state;
	__atomic_store_n(&race_caught, 0, __ATOMIC_RELEASE);
	devres_set_log_sink(count_sink, NULL);
	for (int i = 0; i < rounds; i++) {
		int before;

		memset(&c, 0, sizeof(c));
		p->acquire();
		before = load_int(&race_warns);
		__atomic_store_n(&go, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
		/* Which side this thread takes alternates: either comes first. */
		__atomic_store_n(&swap, i % 2, __ATOMIC_RELEASE);
		assert_int_equal(
			pthread_create(&t, NULL, other_side, (void *)p), 0);
		while (!load_int(&ready))
			sched_yield();
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		side(p, i % 2);
		pthread_join(t, NULL);
		/*
		 * Whichever comes second finds nothing and WARNs, but for
		 * release_resource() of a range out of the tree, which
		 * returns -EINVAL quietly, as the kernel's does; close(2)
		 * after the release closed the number, which fails with
		 * EBADF (or, between the release's check and its close, has
		 * the release WARN that it was closed behind its back); and
		 * munmap(2) of a range nothing manages, which is no misuse.
		 */
		if (!second_may_be_quiet(p->func))
			assert_int_equal(load_int(&race_warns) - before, 1);
		else
			assert_in_range(load_int(&race_warns) - before, 0, 1);
	}
	devres_set_log_sink(NULL, NULL);
	print_message("%s: the plain release came first in %d of %d rounds\n",
		      p->name, load_int(&race_caught), rounds);
}

static int pair_setup(void **state)
{
	cur = *state;
	if (irq_threads_settle())
		return -1;
	return two_dev_setup(state);
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
	if (line <= 0)
		return -1;
	return one_pci_fn_setup(4096);
}

static int group_teardown(void **state)
{
	(void)state;
	one_pci_fn_teardown();
	irq_line_destroy(line);
	iomem_window_remove(WIN);
	munmap((void *)devside, WIN_SIZE);
	close(memfd);
	return 0;
}

int main(void)
{
	const size_t n = sizeof(pairs) / sizeof(pairs[0]);
	static char race_names[sizeof(pairs) / sizeof(pairs[0])][96];
	struct CMUnitTest tests[2 * sizeof(pairs) / sizeof(pairs[0]) + 1];
	size_t nraces = 0;

	for (size_t i = 0; i < n; i++)
		tests[i] = (struct CMUnitTest){
			.name = pairs[i].name,
			.test_func = run_pair,
			.setup_func = pair_setup,
			.teardown_func = irq_teardown,
			.initial_state = (void *)&pairs[i],
		};
	/*
	 * A race needs a plain release the library sees; fclose(3) of a
	 * stream the device's release closed first would read a freed
	 * FILE, which no library can prevent.
	 */
	for (size_t i = 0; i < n; i++) {
		if (pairs[i].at_release || !strcmp(pairs[i].func, "fclose"))
			continue;
		snprintf(race_names[i], sizeof(race_names[i]), "race %s",
			 pairs[i].name);
		tests[n + nraces] = tests[i];
		tests[n + nraces].name = race_names[i];
		tests[n + nraces].test_func = race_pair;
		nraces++;
	}
	tests[n + nraces++] = (struct CMUnitTest){ .name = "coverage",
						   .test_func = coverage };
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	start_runtime_threads();
	return _cmocka_run_group_tests("unmanaged-release", tests, n + nraces,
				       group_setup, group_teardown);
}
