// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A managed resource given back with its plain release (one row for each
 * place of the library that takes a resource from its node: regions,
 * resources, ioremap and its munmap, handlers, coherent buffers, pools,
 * fds, streams, mappings, PCI BAR mappings and claims) x where the plain
 * release runs: plainly; in a devres_for_each_res() callback, a
 * devres_find(), devres_get(), devres_remove(), devres_destroy() or
 * devres_release() match of the device, which hold the device's devres lock; in an action run by
 * devm_release_action(); in an action released before the resource's
 * node by devres_release_all(). Each cell: exactly one WARN, naming the
 * device and the plain call (no second one naming a devres call), the
 * resource's node off the device, and once the device's resources are
 * released the ledger back at its start. Each cell runs in a child of
 * its own under an alarm. The plain release racing the device's release
 * on another thread is test-unmanaged-release's.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "io/iotest.h"
#include "kcompat/kc-cell.h"
#include "misuse/one-pci-fn.h"

#define WIN 0xa0000000ull
#define WIN_SIZE 0x4000ull
#define REG 0xa0001000ull
#define REG_SIZE 0x1000ull
#define DMA_SIZE 8192

static int memfd, line;
static volatile unsigned char *devside;
static void *addr;
static dma_addr_t handle;
static struct dma_pool *pool;
static int fd, cookie;
static struct resource rr = DEFINE_RES_MEM_NAMED(0xb0000000, 0x1000, "rr");

static void mem_region_acq(void)
{
	CHECK(devm_request_mem_region(&tdev, REG, REG_SIZE, "mine"));
}

static void mem_region_hand(void)
{
	release_mem_region(REG, REG_SIZE);
}

static void resource_acq(void)
{
	CHECK(!devm_request_resource(&tdev, &iomem_resource, &rr));
}

static void resource_hand(void)
{
	release_resource(&rr);
}

static void ioremap_acq(void)
{
	addr = devm_ioremap(&tdev, REG, REG_SIZE);
	CHECK(addr);
}

static void iounmap_hand(void)
{
	iounmap(addr);
}

static void io_munmap_hand(void)
{
	CHECK(!munmap(addr, REG_SIZE));
}

static irqreturn_t handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static void irq_acq(void)
{
	CHECK(!devm_request_irq(&tdev, line, handler, 0, "mine", &cookie));
}

static void irq_hand(void)
{
	free_irq(line, &cookie);
}

static void coherent_acq(void)
{
	addr = dmam_alloc_coherent(&tdev, DMA_SIZE, &handle, GFP_KERNEL);
	CHECK(addr);
}

static void coherent_hand(void)
{
	dma_free_coherent(&tdev, DMA_SIZE, addr, handle);
}

static void pool_acq(void)
{
	pool = dmam_pool_create("mine", &tdev, 64, 8, 0);
	CHECK(pool);
}

static void pool_hand(void)
{
	dma_pool_destroy(pool);
}

static void open_acq(void)
{
	fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	CHECK(fd >= 0);
}

static void close_hand(void)
{
	close(fd);
}

static void fopen_acq(void)
{
	addr = devm_fopen(&tdev, "/dev/null", "w");
	CHECK(addr);
}

static void fclose_hand(void)
{
	CHECK(!fclose(addr));
}

static void mmap_acq(void)
{
	int m = memfd_create("mine", MFD_CLOEXEC);

	CHECK(m >= 0 && !ftruncate(m, 4096));
	addr = devm_mmap(&tdev, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			 m, 0);
	close(m);
	CHECK(!IS_ERR(addr));
}

static void mmap_hand(void)
{
	munmap(addr, 4096);
}

static void pcim_iomap_acq(void)
{
	addr = pcim_iomap(pdev, 0, 0);
	CHECK(addr);
}

static void pcim_iomap_regions_acq(void)
{
	CHECK(!pcim_iomap_regions(pdev, 1 << 0, "mine"));
	addr = pcim_iomap_table(pdev)[0];
	CHECK(addr);
}

static void pci_iounmap_hand(void)
{
	pci_iounmap(pdev, addr);
}

static void pcim_region_acq(void)
{
	CHECK(!pcim_request_region(pdev, 0, "mine"));
}

static void pci_release_region_hand(void)
{
	pci_release_region(pdev, 0);
}

/* NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding) */
struct row {
	const char *name;
	const char *func;   /* the plain release the WARN names */
	const char *reason; /* in its WARN */
	int left;	    /* the device's nodes after it, plainly */
	void (*acquire)(void);
	void (*by_hand)(void);
	bool pci;
};

static const struct row rows[] = {
	{ "devm_request_mem_region/release_mem_region", "release_mem_region",
	  "acquired with devm_request_mem_region()", 0, mem_region_acq,
	  mem_region_hand, false },
	{ "devm_request_resource/release_resource", "release_resource",
	  "acquired with devm_request_resource()", 0, resource_acq,
	  resource_hand, false },
	{ "devm_ioremap/iounmap", "iounmap", "acquired with devm_ioremap()", 0,
	  ioremap_acq, iounmap_hand, false },
	{ "devm_ioremap/munmap", "munmap", "acquired with devm_ioremap()", 0,
	  ioremap_acq, io_munmap_hand, false },
	{ "devm_request_irq/free_irq", "free_irq",
	  "acquired with devm_request_irq()", 0, irq_acq, irq_hand, false },
	/* The device's DMA state keeps its node. */
	{ "dmam_alloc_coherent/dma_free_coherent", "dma_free_coherent",
	  "acquired with dmam_alloc_coherent()", 1, coherent_acq, coherent_hand,
	  false },
	{ "dmam_pool_create/dma_pool_destroy", "dma_pool_destroy",
	  "acquired with dmam_pool_create()", 0, pool_acq, pool_hand, false },
	{ "devm_open/close", "close", "acquired with devm_open()", 0, open_acq,
	  close_hand, false },
	{ "devm_fopen/fclose", "fclose", "acquired with devm_fopen()", 0,
	  fopen_acq, fclose_hand, false },
	{ "devm_mmap/munmap", "munmap", "acquired with devm_mmap()", 0,
	  mmap_acq, mmap_hand, false },
	{ "pcim_iomap/pci_iounmap", "pci_iounmap", "acquired with pcim_iomap()",
	  0, pcim_iomap_acq, pci_iounmap_hand, true },
	/* The BAR's claim stays. */
	{ "pcim_iomap_regions/pci_iounmap", "pci_iounmap",
	  "acquired with pcim_iomap()", 1, pcim_iomap_regions_acq,
	  pci_iounmap_hand, true },
	{ "pcim_request_region/pci_release_region", "pci_release_region",
	  "acquired with pcim_request_region()", 0, pcim_region_acq,
	  pci_release_region_hand, true },
};

#define NR_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

enum ctx {
	PLAIN,
	FOR_EACH,
	FIND,
	GET,
	REMOVE,
	DESTROY,
	RELEASE,
	ACTION,
	RELEASE_ALL,
	NR_CTX
};

static const char *const ctx_name[NR_CTX] = { "plain",
					      "for-each callback",
					      "devres_find match",
					      "devres_get match",
					      "devres_remove match",
					      "devres_destroy match",
					      "devres_release match",
					      "devm_release_action",
					      "devres_release_all" };

static const struct row *cur;
static int handed;

static void hand_once(void)
{
	if (!handed++)
		cur->by_hand();
}

static void helper_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void each(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	hand_once();
}

static int match_no(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	hand_once();
	return 0;
}

static int match_yes(struct device *dev, void *res, void *data)
{
	return !match_no(dev, res, data);
}

static void act(void *data)
{
	(void)data;
	hand_once();
}

static void add_helper(struct device *dev)
{
	void *h = devres_alloc(helper_release, 8, GFP_KERNEL);

	CHECK(h);
	devres_add(dev, h);
}

/* Runs the plain release in @ctx; the helper nodes the device keeps. */
static int run_in(struct device *mine, enum ctx ctx)
{
	void *h;

	switch (ctx) {
	case PLAIN:
		hand_once();
		return 0;
	case FOR_EACH:
		devres_for_each_res(mine, helper_release, NULL, NULL, each,
				    NULL);
		return 1;
	case FIND:
		CHECK(!devres_find(mine, helper_release, match_no, NULL));
		return 1;
	case GET:
		h = devres_alloc(helper_release, 8, GFP_KERNEL);
		CHECK(h);
		CHECK(devres_get(mine, h, match_no, NULL) == h);
		return 2;
	case REMOVE:
		h = devres_remove(mine, helper_release, match_yes, NULL);
		CHECK(h);
		devres_free(h);
		return 0;
	case DESTROY:
		CHECK(!devres_destroy(mine, helper_release, match_yes, NULL));
		return 0;
	case RELEASE:
		CHECK(!devres_release(mine, helper_release, match_yes, NULL));
		return 0;
	case ACTION:
		devm_release_action(mine, act, NULL);
		return 0;
	default:
		devres_release_all(mine);
		return -1;
	}
}

/* Windows, lines and PCI devices are their process's: made in the cell. */
static int cell_setup(void)
{
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

static void cell_teardown(void)
{
	one_pci_fn_teardown();
	irq_line_destroy(line);
	iomem_window_remove(WIN);
	munmap((void *)devside, WIN_SIZE);
	close(memfd);
}

static void cell(int row, int ctx, int unused)
{
	struct devres_ledger before, after;
	struct devres_stats st;
	struct device *mine;
	char head[128];
	int warns, helpers;

	(void)unused;
	alarm(CELL_ALARM_S);
	cur = &rows[row];
	CHECK(!cell_setup());
	devres_ledger_snapshot(&before);
	CHECK(!init_dev(&tdev, "test-dev"));
	mine = cur->pci ? &pdev->dev : &tdev;
	cur->acquire();
	if (ctx != PLAIN && ctx != ACTION && ctx != RELEASE_ALL)
		add_helper(mine);
	if (ctx == ACTION || ctx == RELEASE_ALL)
		CHECK(!devm_add_action(mine, act, NULL));
	start_capture();
	warns = devres_warn_count();
	helpers = run_in(mine, (enum ctx)ctx);
	devres_set_log_sink(NULL, NULL);
	CHECK(handed == 1);
	snprintf(head, sizeof(head), "WARNING: %s: %s: ", dev_name(mine),
		 cur->func);
	if (cap.n != 1 || strncmp(cap.line[0], head, strlen(head)) != 0)
		fprintf(stderr, "%s / %s: %d line(s), the first \"%s\"\n",
			cur->name, ctx_name[ctx], cap.n, cap.line[0]);
	CHECK(cap.n == 1 && devres_warn_count() - warns == 1);
	CHECK(!strncmp(cap.line[0], head, strlen(head)));
	CHECK(strstr(cap.line[0], cur->reason));
	devres_get_stats(mine, &st);
	CHECK(st.allocs == (helpers < 0 ? 0 : helpers + cur->left));
	CHECK(!devres_check(mine));
	devres_release_all(mine);
	put_device(&tdev);
	devres_ledger_snapshot(&after);
	CHECK(!devres_ledger_diff(&before, &after, stderr));
	cell_teardown();
}

static void every_cell(void **state)
{
	int failed = 0;
	char name[128];

	(void)state;
	for (int r = 0; r < NR_ROWS; r++)
		for (int x = 0; x < NR_CTX; x++) {
			snprintf(name, sizeof(name), "%s / %s", rows[r].name,
				 ctx_name[x]);
			failed += in_child(cell, r, x, 0, name);
		}
	if (failed)
		fprintf(stderr, "%d of %d cells failed\n", failed,
			NR_ROWS * NR_CTX);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
