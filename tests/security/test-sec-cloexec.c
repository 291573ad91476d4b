// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Every fd the library creates is close-on-exec: after each kind of managed
 * call, while what it acquired is live and again once it is released, no
 * descriptor lacks FD_CLOEXEC that did not before, and none is left open.
 *
 * One line in calls[] per kind of call: a subsystem adds its own (devm_open,
 * devm_mmap, devm_request_irq, dmam_alloc_coherent, pcim_enable_device ...)
 * as it lands. Today the library's only fds come from the resolver under a
 * configurable root, which is hidden and so compiled in here (as in
 * test-sec-resolve.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/platform.h>
#include <devres/posix.h>
#include <devres/irq.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include "testlib.h"

#define devres__fail_nth test_fail_nth
#define devres__fail_armed test_fail_armed
#define devres__fail_now test_fail_now
#define devres__open_beneath test_open_beneath
#define devres__own_fd_opening test_own_fd_opening
#define devres__own_fd_opened test_own_fd_opened
#define devres__own_fd_close test_own_fd_close
#include "../../src/base/resolve.c"

TLS_FAST unsigned int test_fail_nth;
/* The stand-in count is read whenever it is set: always armed. */
unsigned int test_fail_armed = 1;

bool test_fail_now(const char *what, int err)
{
	(void)what;
	(void)err;
	return --test_fail_nth == 0;
}

/* The walk's record of the fds it opens: the library's, not here. */
void test_own_fd_opening(void)
{
}

void test_own_fd_opened(int fd, enum devres__own_kind kind, const char *name)
{
	(void)fd;
	(void)kind;
	(void)name;
}

int test_own_fd_close(int fd)
{
	return close(fd);
}

struct call {
	const char *name;
	/* Acquires on @dev and leaves it acquired. */
	void (*acquire)(struct device *dev);
	/* Gives it back; NULL for devres_release_all(dev). */
	void (*release)(struct device *dev);
};

static void nop_action(void *data)
{
	(void)data;
}

static void nop_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void kmalloc_family(struct device *dev)
{
	assert_non_null(devm_kzalloc(dev, 64, GFP_KERNEL));
	assert_non_null(devm_kstrdup(dev, "x", GFP_KERNEL));
	assert_non_null(devm_kasprintf(dev, GFP_KERNEL, "%d", 1));
	assert_true(devm_get_free_pages(dev, GFP_KERNEL, 0) != 0);
}

static void node_and_action(struct device *dev)
{
	void *res = devres_alloc(nop_release, 8, GFP_KERNEL);

	assert_non_null(res);
	devres_add(dev, res);
	assert_int_equal(devm_add_action(dev, nop_action, NULL), 0);
}

static void group(struct device *dev)
{
	void *id = devres_open_group(dev, NULL, GFP_KERNEL);

	assert_non_null(id);
	assert_non_null(devm_kzalloc(dev, 8, GFP_KERNEL));
	devres_close_group(dev, id);
}

/* A platform device bound to a driver whose probe acquires. */
static int plat_probe(struct platform_device *pdev)
{
	return devm_kzalloc(&pdev->dev, 8, GFP_KERNEL) ? 0 : -ENOMEM;
}

static struct platform_driver plat_drv = {
	.probe = plat_probe,
	.driver = { .name = "sec-cloexec" },
};
static struct platform_device *plat_dev;

static void platform_bind(struct device *dev)
{
	(void)dev;
	assert_int_equal(platform_driver_register(&plat_drv), 0);
	plat_dev = platform_device_register_simple("sec-cloexec", 0, NULL, 0);
	assert_false(IS_ERR_OR_NULL(plat_dev));
	assert_non_null(plat_dev->dev.driver);
}

static void platform_unbind(struct device *dev)
{
	(void)dev;
	platform_device_unregister(plat_dev);
	platform_driver_unregister(&plat_drv);
}

/* The resolver under a root (the PCI subsystem's sysfs opens). */
static void close_fd(void *data)
{
	close((int)(intptr_t)data);
}

static void open_beneath(struct device *dev)
{
	int root = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd[3];

	assert_true(root >= 0);
	fd[0] = test_open_beneath(root, "status", O_RDONLY, 0);
	fd[1] = walk_beneath(root, "status", O_RDONLY, 0);
	fd[2] = walk_beneath(root, "task/../fdinfo/", O_RDONLY, 0);
	close(root);
	for (int i = 0; i < 3; i++) {
		assert_true(fd[i] >= 0);
		assert_int_equal(
			devm_add_action_or_reset(dev, close_fd,
						 (void *)(intptr_t)fd[i]),
			0);
	}
}

/* Every descriptor-making call of devres/posix.h, and a managed thread. */
static int idle_thread(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 0;
}

static void posix_calls(struct device *dev)
{
	int mfd = devm_memfd_create(dev, "sec-cloexec", 0);

	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	assert_true(devm_open(dev, "/dev/null", O_RDONLY) >= 0);
	assert_true(devm_openat(dev, AT_FDCWD, "/dev/null", O_WRONLY) >= 0);
	assert_true(devm_eventfd(dev, 0, 0) >= 0);
	assert_true(devm_timerfd_create(dev, CLOCK_MONOTONIC, 0) >= 0);
	assert_non_null(devm_fopen(dev, "/dev/null", "r"));
	assert_false(IS_ERR(
		devm_mmap(dev, NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0)));
	assert_false(
		IS_ERR(devm_thread_run(dev, idle_thread, NULL, "cloexec")));
}

/* An eventfd line with a managed handler: the line's fd and the dispatcher's. */
static int irq_lines[2];

static irqreturn_t irq_nop(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static void irq_calls(struct device *dev)
{
	int efd = eventfd(0, EFD_CLOEXEC);

	assert_true(efd >= 0);
	irq_lines[0] = irq_line_create("sec-cloexec");
	irq_lines[1] = irq_line_attach_fd(efd, "sec-cloexec-fd");
	close(efd);
	for (int i = 0; i < 2; i++) {
		assert_true(irq_lines[i] > 0);
		assert_int_equal(devm_request_irq(dev,
						  (unsigned int)irq_lines[i],
						  irq_nop, 0, "sec-cloexec",
						  &irq_lines[i]),
				 0);
	}
}

static void irq_release(struct device *dev)
{
	devres_release_all(dev);
	for (int i = 0; i < 2; i++)
		assert_int_equal(irq_line_destroy(irq_lines[i]), 0);
}

/* Coherent DMA memory, a pool and a streaming mapping. */
static char dma_buf[256];
static dma_addr_t dma_handle, dma_block_handle;
static struct dma_pool *dma_pool;
static void *dma_block;

static void dma_calls(struct device *dev)
{
	dma_addr_t h;

	assert_non_null(dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL));
	dma_pool = dmam_pool_create("sec-cloexec", dev, 64, 64, 0);
	assert_non_null(dma_pool);
	dma_block = dma_pool_alloc(dma_pool, GFP_KERNEL, &dma_block_handle);
	assert_non_null(dma_block);
	dma_handle =
		dma_map_single(dev, dma_buf, sizeof(dma_buf), DMA_TO_DEVICE);
	assert_false(dma_mapping_error(dev, dma_handle));
}

static void dma_release(struct device *dev)
{
	dma_unmap_single(dev, dma_handle, sizeof(dma_buf), DMA_TO_DEVICE);
	dma_pool_free(dma_pool, dma_block, dma_block_handle);
	devres_release_all(dev);
}

/* A memfd-backed register window, a region claimed in it and a mapping. */
#define SEC_WINDOW 0xfe100000u

static void io_calls(struct device *dev)
{
	struct resource res = DEFINE_RES_MEM(SEC_WINDOW, 4096);
	int mfd = memfd_create("sec-cloexec-regs", MFD_CLOEXEC);

	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	assert_int_equal(iomem_window_add(SEC_WINDOW, 4096, mfd, 0, "sec"), 0);
	close(mfd);
	assert_false(IS_ERR(devm_ioremap_resource(dev, &res)));
}

static void io_release(struct device *dev)
{
	devres_release_all(dev);
	assert_int_equal(iomem_window_remove(SEC_WINDOW), 0);
}

/* A fake sysfs tree scanned, and a PCI driver enabling and mapping a BAR. */
static struct pci_fake *pci_tree;
static int pci_probed;

static int sec_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	uint32_t v;
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (!ret)
		ret = pcim_iomap_regions(pdev, 1, "sec-cloexec");
	if (!ret)
		ret = pci_read_config_dword(pdev, 0, &v);
	pci_probed = !ret;
	return ret;
}

static const struct pci_device_id sec_pci_ids[] = {
	{ PCI_DEVICE(0x1234, 0x5678) },
	{ 0 },
};

static struct pci_driver sec_pci_driver = {
	.name = "sec-cloexec",
	.id_table = sec_pci_ids,
	.probe = sec_pci_probe,
};

static void pci_calls(struct device *dev)
{
	struct pci_fake_dev d = { .name = "0000:00:05.0",
				  .vendor = 0x1234,
				  .device = 0x5678 };

	(void)dev;
	d.bar_size[0] = 4096;
	d.bar_flags[0] = IORESOURCE_MEM;
	pci_tree = pci_fake_create();
	assert_non_null(pci_tree);
	assert_int_equal(pci_fake_add(pci_tree, &d), 0);
	assert_int_equal(pci_sysfs_set_root(pci_fake_root(pci_tree)), 0);
	assert_int_equal(pci_bus_scan(), 1);
	assert_int_equal(pci_register_driver(&sec_pci_driver), 0);
	assert_true(pci_probed);
}

static void pci_release(struct device *dev)
{
	(void)dev;
	pci_unregister_driver(&sec_pci_driver);
	pci_bus_remove_all();
	assert_int_equal(pci_sysfs_set_root("/sys"), 0);
	pci_fake_destroy(pci_tree);
}

static const struct call calls[] = {
	{ "devm_kmalloc family", kmalloc_family, NULL },
	{ "devres node and action", node_and_action, NULL },
	{ "devres group", group, NULL },
	{ "platform device bound", platform_bind, platform_unbind },
	{ "open beneath a root", open_beneath, NULL },
	{ "posix fds, stream, map, thread", posix_calls, NULL },
	{ "irq lines and a managed handler", irq_calls, irq_release },
	{ "dma coherent, pool, streaming", dma_calls, dma_release },
	{ "io window, region, mapping", io_calls, io_release },
	{ "pci scan, enable, iomap, config", pci_calls, pci_release },
};

static void every_call_cloexec(void **state)
{
	struct device *dev = *state;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		const struct call *c = &calls[i];
		int bad = count_fds_without_cloexec(), fds = count_open_fds();

		c->acquire(dev);
		if (count_fds_without_cloexec() != bad)
			fail_msg("%s: an fd without FD_CLOEXEC", c->name);
		if (c->release)
			c->release(dev);
		else
			devres_release_all(dev);
		if (count_fds_without_cloexec() != bad ||
		    count_open_fds() != fds)
			fail_msg("%s: an fd left after release", c->name);
	}
}

/* The scan sees what it is there to see. */
static void scan_can_fail(void **state)
{
	int bad = count_fds_without_cloexec();
	int fd = open("/dev/null", O_RDONLY);

	(void)state;
	assert_true(fd > 2);
	assert_int_equal(count_fds_without_cloexec(), bad + 1);
	assert_int_equal(fcntl(fd, F_SETFD, FD_CLOEXEC), 0);
	assert_int_equal(count_fds_without_cloexec(), bad);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scan_can_fail),
		cmocka_unit_test_setup_teardown(every_call_cloexec, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
