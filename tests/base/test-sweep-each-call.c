// SPDX-License-Identifier: MIT
/* ctest-labels: fault tsan */
/*
 * Every managed acquisition swept on its own: each of its fault points
 * failed in turn (fail-nth N = 1, 2, ...), on a device that is added and
 * not bound, and in a probe through the driver core. A call that fails
 * must fail as a whole, whichever of its points failed (the first, or
 * the second of a call that takes several: an irq handler's node then
 * its line, a region then its mapping, a pool then its node): its caller
 * sees the failure (no error swallowed, none changed: strict), and the
 * ledger is back where it was just before the call, with nothing left on
 * the device for its release to give back. Every call has at least one
 * point, and the sweep prints no WARN.
 *
 * Calls x {device, probe}: each cell in a child under an alarm.
 * Labelled out of make memcheck (not "unit"): each cell a child under
 * valgrind took a minute in all; ASan runs it.
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
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/dma.h>
#include <devres/fault.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include <devres/irq.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "sweep-each.h"

#define WIN 0xe0000000ull
#define WIN_SIZE 0x4000u

struct env {
	struct platform_device *pdev;
	struct device *dev;
	int irq;
	int memfd;
	struct resource parent;
	int reset_runs;
};

static struct env E;

static irqreturn_t handler(int irq, void *id)
{
	(void)irq;
	(void)id;
	return IRQ_HANDLED;
}

static void reset_action(void *data)
{
	(void)data;
	E.reset_runs++;
}

static int worker(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		usleep(1000);
	return 0;
}

static void rev_release(void *res)
{
	(void)res;
}

/* Each call: its own prerequisites first, then the call under test. */
static int c_kmalloc(struct device *dev)
{
	begin();
	return devm_kmalloc(dev, 64, GFP_KERNEL) ? 0
						 : failed(__func__, -ENOMEM);
}

static int c_kcalloc(struct device *dev)
{
	begin();
	return devm_kcalloc(dev, 8, 32, GFP_KERNEL) ? 0
						    : failed(__func__, -ENOMEM);
}

static int c_krealloc(struct device *dev)
{
	char *p = devm_kmalloc(dev, 16, GFP_KERNEL), *q;

	if (!p)
		return -ENOMEM;
	memset(p, 0x5a, 16);
	begin();
	q = devm_krealloc(dev, p, (size_t)64 * 1024, GFP_KERNEL);
	if (q)
		return q[15] == 0x5a ? 0 : -EIO;
	/* The old block is intact and still the device's. */
	if (p[15] != 0x5a)
		bad++;
	return failed(__func__, -ENOMEM);
}

static int c_kstrdup(struct device *dev)
{
	char src[] = "a heap string";

	begin();
	return devm_kstrdup(dev, src, GFP_KERNEL) ? 0
						  : failed(__func__, -ENOMEM);
}

static int c_kasprintf(struct device *dev)
{
	begin();
	return devm_kasprintf(dev, GFP_KERNEL, "%s-%d", "x", 7)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_kmemdup(struct device *dev)
{
	static const char src[32] = "bytes";

	begin();
	return devm_kmemdup(dev, src, sizeof(src), GFP_KERNEL)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_pages(struct device *dev)
{
	begin();
	return devm_get_free_pages(dev, GFP_KERNEL, 1)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_group(struct device *dev)
{
	void *id;

	begin();
	id = devres_open_group(dev, NULL, GFP_KERNEL);
	if (!id)
		return failed(__func__, -ENOMEM);
	if (!devm_kzalloc(dev, 8, GFP_KERNEL)) {
		devres_release_group(dev, id);
		return failed(__func__, -ENOMEM);
	}
	devres_close_group(dev, id);
	return 0;
}

static int c_action(struct device *dev)
{
	int ret;

	begin();
	ret = devm_add_action(dev, reset_action, NULL);
	return ret ? failed(__func__, ret) : 0;
}

static int c_action_or_reset(struct device *dev)
{
	int runs = E.reset_runs, ret;

	begin();
	ret = devm_add_action_or_reset(dev, reset_action, NULL);
	if (!ret)
		return 0;
	/* The action ran once, at the failure. */
	if (E.reset_runs != runs + 1) {
		fprintf(stderr, "action ran %d times\n", E.reset_runs - runs);
		bad++;
	}
	return failed(__func__, ret);
}

static int c_region(struct device *dev)
{
	begin();
	return devm_request_region(dev, 0x700, 0x10, "ports")
		       ? 0
		       : failed(__func__, -EBUSY);
}

static int c_mem_region(struct device *dev)
{
	begin();
	return devm_request_mem_region(dev, WIN + 0x100, 0x100, "regs")
		       ? 0
		       : failed(__func__, -EBUSY);
}

static int c_request_resource(struct device *dev)
{
	static struct resource child;
	int ret;

	memset(&child, 0, sizeof(child));
	child.start = E.parent.start + 0x10;
	child.end = E.parent.start + 0x1f;
	child.name = "child";
	child.flags = IORESOURCE_MEM;
	begin();
	ret = devm_request_resource(dev, &E.parent, &child);
	return ret ? failed(__func__, ret) : 0;
}

static int c_ioremap(struct device *dev)
{
	begin();
	return devm_ioremap(dev, WIN + 0x1000, 0x100)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_ioremap_wc(struct device *dev)
{
	begin();
	return devm_ioremap_wc(dev, WIN + 0x1000, 0x100)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_ioremap_resource(struct device *dev)
{
	struct resource r = DEFINE_RES_MEM_NAMED(WIN + 0x2000, 0x80, "r");
	void *p;

	begin();
	p = devm_ioremap_resource(dev, &r);
	return IS_ERR(p) ? failed(__func__, (int)PTR_ERR(p)) : 0;
}

static int c_ioremap_resource_wc(struct device *dev)
{
	struct resource r = DEFINE_RES_MEM_NAMED(WIN + 0x2000, 0x80, "r");
	void *p;

	begin();
	p = devm_ioremap_resource_wc(dev, &r);
	return IS_ERR(p) ? failed(__func__, (int)PTR_ERR(p)) : 0;
}

static int c_platform_ioremap(struct device *dev)
{
	void *p;

	begin();
	p = devm_platform_ioremap_resource(to_platform_device(dev), 0);
	return IS_ERR(p) ? failed(__func__, (int)PTR_ERR(p)) : 0;
}

static int c_platform_get_ioremap(struct device *dev)
{
	struct resource *res = NULL;
	void *p;

	begin();
	p = devm_platform_get_and_ioremap_resource(to_platform_device(dev), 0,
						   &res);
	return IS_ERR(p) ? failed(__func__, (int)PTR_ERR(p)) : 0;
}

static int c_irq(struct device *dev)
{
	int ret;

	begin();
	ret = devm_request_irq(dev, (unsigned int)E.irq, handler, IRQF_SHARED,
			       "each", dev);
	return ret ? failed(__func__, ret) : 0;
}

static int c_threaded_irq(struct device *dev)
{
	int ret;

	begin();
	ret = devm_request_threaded_irq(dev, (unsigned int)E.irq, NULL, handler,
					IRQF_ONESHOT | IRQF_SHARED, "each",
					dev);
	return ret ? failed(__func__, ret) : 0;
}

static int c_any_context_irq(struct device *dev)
{
	int ret;

	begin();
	ret = devm_request_any_context_irq(dev, (unsigned int)E.irq, handler,
					   IRQF_SHARED, "each", dev);
	return ret < 0 ? failed(__func__, ret) : 0;
}

/*
 * A device's first DMA call makes its DMA state, a node that stays until
 * the device's release (whatever the call did): made before the call
 * under test, as the device's other state is.
 */
static int dma_prime(struct device *dev)
{
	dma_addr_t h;
	void *p = dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	dma_free_coherent(dev, 4096, p, h);
	return 0;
}

static int c_coherent(struct device *dev)
{
	dma_addr_t h;

	if (dma_prime(dev))
		return -ENOMEM;
	begin();
	return dmam_alloc_coherent(dev, 8192, &h, GFP_KERNEL)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_pool(struct device *dev)
{
	if (dma_prime(dev))
		return -ENOMEM;
	begin();
	return dmam_pool_create("each", dev, 64, 0, 0)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static int c_pool_alloc(struct device *dev)
{
	struct dma_pool *pool = dmam_pool_create("each", dev, 64, 0, 0);
	dma_addr_t h;
	void *p;

	if (!pool || dma_prime(dev))
		return -ENOMEM;
	begin();
	/* A block of a managed pool, its first: the call makes a chunk. */
	p = dma_pool_alloc(pool, GFP_KERNEL, &h);
	if (!p)
		return failed(__func__, -ENOMEM);
	dma_pool_free(pool, p, h);
	return 0;
}

static int c_open(struct device *dev)
{
	int fd;

	begin();
	fd = devm_open(dev, "/dev/null", O_RDONLY);
	return fd < 0 ? failed(__func__, fd) : 0;
}

static int c_openat(struct device *dev)
{
	int fd;

	begin();
	fd = devm_openat(dev, AT_FDCWD, "/dev/null", O_RDONLY);
	return fd < 0 ? failed(__func__, fd) : 0;
}

static int c_add_fd(struct device *dev)
{
	int fd = eventfd(0, EFD_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	begin();
	ret = devm_add_fd(dev, fd);
	if (!ret)
		return 0;
	/* Consumed in every case. */
	if (fcntl(fd, F_GETFD) != -1) {
		fprintf(stderr, "devm_add_fd left fd %d open\n", fd);
		close(fd);
		bad++;
	}
	return failed(__func__, ret);
}

static int c_eventfd(struct device *dev)
{
	int fd;

	begin();
	fd = devm_eventfd(dev, 0, 0);
	return fd < 0 ? failed(__func__, fd) : 0;
}

static int c_memfd(struct device *dev)
{
	int fd;

	begin();
	fd = devm_memfd_create(dev, "each", 0);
	return fd < 0 ? failed(__func__, fd) : 0;
}

static int c_timerfd(struct device *dev)
{
	int fd;

	begin();
	fd = devm_timerfd_create(dev, CLOCK_MONOTONIC, 0);
	return fd < 0 ? failed(__func__, fd) : 0;
}

static int c_fopen(struct device *dev)
{
	begin();
	return devm_fopen(dev, "/dev/null", "r") ? 0 : failed(__func__, -errno);
}

static int c_mmap(struct device *dev)
{
	void *p;

	begin();
	p = devm_mmap(dev, NULL, 8192, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return IS_ERR(p) ? failed(__func__, (int)PTR_ERR(p)) : 0;
}

static int c_thread(struct device *dev)
{
	struct devres_thread *t;

	begin();
	t = devm_thread_run(dev, worker, NULL, "each");
	return IS_ERR(t) ? failed(__func__, (int)PTR_ERR(t)) : 0;
}

static int c_revocable(struct device *dev)
{
	static int res;

	begin();
	return devm_revocable_create(dev, &res, rev_release)
		       ? 0
		       : failed(__func__, -ENOMEM);
}

static const struct call calls[] = {
	{ "devm_kmalloc", c_kmalloc },
	{ "devm_kcalloc", c_kcalloc },
	{ "devm_krealloc", c_krealloc },
	{ "devm_kstrdup", c_kstrdup },
	{ "devm_kasprintf", c_kasprintf },
	{ "devm_kmemdup", c_kmemdup },
	{ "devm_get_free_pages", c_pages },
	{ "devres_open_group", c_group },
	{ "devm_add_action", c_action },
	{ "devm_add_action_or_reset", c_action_or_reset },
	{ "devm_request_region", c_region },
	{ "devm_request_mem_region", c_mem_region },
	{ "devm_request_resource", c_request_resource },
	{ "devm_ioremap", c_ioremap },
	{ "devm_ioremap_wc", c_ioremap_wc },
	{ "devm_ioremap_resource", c_ioremap_resource },
	{ "devm_ioremap_resource_wc", c_ioremap_resource_wc },
	{ "devm_platform_ioremap_resource", c_platform_ioremap },
	{ "devm_platform_get_and_ioremap_resource", c_platform_get_ioremap },
	{ "devm_request_irq", c_irq },
	{ "devm_request_threaded_irq", c_threaded_irq },
	{ "devm_request_any_context_irq", c_any_context_irq },
	{ "dmam_alloc_coherent", c_coherent },
	{ "dmam_pool_create", c_pool },
	{ "dma_pool_alloc (managed pool)", c_pool_alloc },
	{ "devm_open", c_open },
	{ "devm_openat", c_openat },
	{ "devm_add_fd", c_add_fd },
	{ "devm_eventfd", c_eventfd },
	{ "devm_memfd_create", c_memfd },
	{ "devm_timerfd_create", c_timerfd },
	{ "devm_fopen", c_fopen },
	{ "devm_mmap", c_mmap },
	{ "devm_thread_run", c_thread },
	{ "devm_revocable_create", c_revocable },
};

#define NCALLS ((int)(sizeof(calls) / sizeof(calls[0])))

static int setup(void)
{
	static const struct resource res[] = {
		DEFINE_RES_MEM_NAMED(WIN + 0x3000, 0x100, "ctrl"),
	};

	E.memfd = memfd_create("each-call", MFD_CLOEXEC);
	if (E.memfd < 0 || ftruncate(E.memfd, WIN_SIZE))
		return -1;
	if (iomem_window_add(WIN, WIN_SIZE, E.memfd, 0, "each"))
		return -1;
	E.parent = (struct resource)DEFINE_RES_MEM_NAMED(0xd0000000ull, 0x1000,
							 "parent");
	if (request_resource(&iomem_resource, &E.parent))
		return -1;
	E.irq = irq_line_create("each");
	if (E.irq <= 0)
		return -1;
	E.pdev = platform_device_register_simple("each-call", 0, res, 1);
	if (IS_ERR(E.pdev))
		return -1;
	E.dev = &E.pdev->dev;
	return 0;
}

static int cell(int row, int col)
{
	alarm(20);
	if (setup())
		return 10;
	cur = &calls[row];
	return sweep_cell(cur->name, col, op_on_device, undo_on_device, E.dev,
			  &each_driver.driver, E.dev);
}

static void each_call(void **state)
{
	const char *rows[NCALLS];
	int i;

	(void)state;
	for (i = 0; i < NCALLS; i++)
		rows[i] = calls[i].name;
	sweep_table(cell, rows, NCALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_call),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
