// SPDX-License-Identifier: MIT
/*
 * What a child of fork() inherits, and what it may not do with it: each
 * call on an object of its parent WARNs once ("belongs to process N", or
 * the call's own WARN for a thing that is not there, such as an
 * interrupt line) and fails as its contract says, without waiting for a
 * lock a thread of the parent may hold and without releasing anything.
 * The parent checks afterwards that all of it is still its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <devres/io.h>
#include <devres/irq.h>
#include "base/fork-inherited.h"

/* Where the museum's register window sits in the physical space. */
#define WIN_BASE 0xfe000000ull
#define WIN_SIZE 4096
#define REGION_IO 0x7100
#define REGION_MEM 0xfd000000ull

static int museum_probe(struct platform_device *pdev)
{
	return devm_kzalloc(&pdev->dev, 64, GFP_KERNEL) ? 0 : -ENOMEM;
}

static irqreturn_t museum_irq(int irq, void *dev_id)
{
	(void)irq;
	__atomic_add_fetch((int *)dev_id, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static int museum_thread(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 3;
}

static void museum_action(void *data)
{
	(void)data;
}

static void museum_revoke(void *res)
{
	(void)res;
}

static void museum_dev_release(struct device *dev)
{
	(void)dev;
}

#define MAKE(x)                                                                \
	do {                                                                   \
		if (!(x)) {                                                    \
			fprintf(stderr, "museum: %s:%d: %s\n", __FILE__,       \
				__LINE__, #x);                                 \
			return __LINE__;                                       \
		}                                                              \
	} while (0)

int museum_make(struct museum *m, const char *pci_addr)
{
	memset(m, 0, sizeof(*m));
	m->dev.release = museum_dev_release;
	device_initialize(&m->dev);
	MAKE(dev_set_name(&m->dev, "museum") == 0);

	/* The driver model: a bound platform device. */
	m->drv.probe = museum_probe;
	m->drv.driver.name = "museum";
	MAKE(platform_driver_register(&m->drv) == 0);
	m->plat = platform_device_register_simple("museum", -1, NULL, 0);
	MAKE(!IS_ERR_OR_NULL(m->plat) && device_is_bound(&m->plat->dev));

	/* Memory, a group, an action. */
	MAKE(devm_kmalloc(&m->dev, 48, GFP_KERNEL));
	MAKE(devm_add_action(&m->dev, museum_action, m) == 0);

	/* Regions: managed and by hand. */
	MAKE(devm_request_region(&m->dev, REGION_IO, 8, "museum"));
	m->region = request_region(REGION_IO + 8, 8, "museum");
	m->mem = request_mem_region(REGION_MEM, 4096, "museum");
	MAKE(m->region && m->mem);

	/* A register window and a mapping through it. */
	m->winfd = memfd_create("museum", MFD_CLOEXEC);
	MAKE(m->winfd >= 0 && ftruncate(m->winfd, WIN_SIZE) == 0);
	MAKE(iomem_window_add(WIN_BASE, WIN_SIZE, m->winfd, 0, "museum") == 0);
	m->io = ioremap(WIN_BASE, 64);
	MAKE(m->io);

	/* An interrupt line, a handler, a managed thread, fds, a mapping. */
	m->irq = irq_line_create("museum");
	MAKE(m->irq > 0);
	MAKE(devm_request_irq(&m->dev, (unsigned int)m->irq, museum_irq, 0,
			      "museum", &m->hits) == 0);
	m->thread = devm_thread_run(&m->dev, museum_thread, NULL, "museum");
	MAKE(!IS_ERR(m->thread));
	m->fd = devm_eventfd(&m->dev, 0, 0);
	MAKE(m->fd >= 0);
	m->map = devm_mmap(&m->dev, NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	MAKE(!IS_ERR(m->map));
	m->stream = devm_fopen(&m->dev, "/dev/null", "r");
	MAKE(m->stream);

	/* DMA: coherent buffers, pools and a block, a streaming mapping. */
	m->coh = dma_alloc_coherent(&m->dev, 4096, &m->coh_dma, GFP_KERNEL);
	m->mcoh = dmam_alloc_coherent(&m->dev, 4096, &m->mcoh_dma, GFP_KERNEL);
	MAKE(m->coh && m->mcoh);
	m->pool = dma_pool_create("museum", &m->dev, 64, 8, 0);
	m->mpool = dmam_pool_create("museum-m", &m->dev, 64, 8, 0);
	MAKE(m->pool && m->mpool);
	m->blk = dma_pool_alloc(m->pool, GFP_KERNEL, &m->blk_dma);
	MAKE(m->blk);
	m->map_dma =
		dma_map_single(&m->dev, m->buf, sizeof(m->buf), DMA_TO_DEVICE);
	MAKE(!dma_mapping_error(&m->dev, m->map_dma));

	/* A revocable resource. */
	m->rev = devm_revocable_create(&m->dev, &m->thing, museum_revoke);
	MAKE(m->rev && revocable_get(m->rev) == m->rev);

	/* A PCI device of the fake tree: enabled, bus master, BAR mapped. */
	m->pci = pci_get_device(0x1af4, 0x77, NULL);
	MAKE(m->pci && strcmp(pci_name(m->pci), pci_addr) == 0);
	MAKE(pci_enable_device(m->pci) == 0);
	pci_set_master(m->pci);
	m->bar = pci_iomap(m->pci, 0, 0);
	MAKE(m->bar);
	return 0;
}

static int visit_bad;

/* The last log line: the WARN must say why. */
static char last[512];

static void keep_last(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	snprintf(last, sizeof(last), "%s", line);
}

/*
 * @what is true when the call failed as its contract says; the call must
 * have WARNed exactly once (@warns), saying @why, and returned at all
 * (alarm()).
 */
static void expect(bool what, int warns, const char *why, const char *call,
		   int line)
{
	int now = devres_warn_count();

	if (what && now == warns + 1 && strstr(last, why))
		return;
	fprintf(stderr, "child: line %d: %s: %s, %d WARNs, last \"%s\"\n", line,
		call,
		what ? "failed as it should" : "did not fail as it should",
		now - warns, last);
	visit_bad++;
}

#define BELONGS "belongs to process"

/* A call with a result, what the result must be, and why it WARNed. */
#define INH_WHY(call, ok, why)                                                 \
	do {                                                                   \
		int w_ = devres_warn_count();                                  \
		last[0] = '\0';                                                \
		expect((call)ok, w_, why, #call, __LINE__);                    \
	} while (0)

#define INH(call, ok) INH_WHY(call, ok, BELONGS)

/* A call with no result. */
#define INHV(call)                                                             \
	do {                                                                   \
		int w_ = devres_warn_count();                                  \
		last[0] = '\0';                                                \
		call;                                                          \
		expect(true, w_, BELONGS, #call, __LINE__);                    \
	} while (0)

/* Every call that takes a device, on @dev, a device of the parent. */
static void visit_device(struct museum *m, struct device *dev)
{
	dma_addr_t h;

	/* The driver model. */
	INH(dev_set_name(dev, "x"), == -EINVAL);
	INH(get_device(dev), == dev);
	INHV(put_device(dev));
	INH(device_add(dev), == -EINVAL);
	INH(device_register(dev), == -ECHILD);
	INHV(device_del(dev));
	INHV(device_unregister(dev));
	INH(device_attach(dev), == -EINVAL);
	INHV(device_release_driver(dev));
	INH(device_is_bound(dev), == false);
	INH(device_driver_attach(&m->drv.driver, dev), == -EINVAL);
	/* devres. */
	INH(devm_kmalloc(dev, 16, GFP_KERNEL), == NULL);
	INHV(devm_kfree(dev, m->buf));
	INH(devm_kstrdup(dev, "x", GFP_KERNEL), == NULL);
	INH(devm_add_action(dev, museum_action, m), == -EINVAL);
	INHV(devm_remove_action(dev, museum_action, m));
	INHV(devm_release_action(dev, museum_action, m));
	INH(devres_open_group(dev, NULL, GFP_KERNEL), == NULL);
	INHV(devres_close_group(dev, NULL));
	INHV(devres_remove_group(dev, NULL));
	INH(devres_release_group(dev, NULL), == 0);
	INH(devres_find(dev, NULL, NULL, NULL), == NULL);
	INH(devres_release(dev, NULL, NULL, NULL), == -ENOENT);
	INH(devres_destroy(dev, NULL, NULL, NULL), == -ENOENT);
	INH(devres_check(dev), == -EINVAL);
	INH(devres_release_all(dev), == -ENODEV);
	/* io */
	INH(devm_request_region(dev, 0x7300, 8, "x"), == NULL);
	INHV(devm_release_region(dev, REGION_IO, 8));
	INH(devm_ioremap(dev, WIN_BASE, 16), == NULL);
	INHV(devm_iounmap(dev, m->io));
	/* irq */
	INH(devm_request_irq(dev, (unsigned int)m->irq, museum_irq, 0, "x",
			     &m->hits),
	    == -EINVAL);
	INHV(devm_free_irq(dev, (unsigned int)m->irq, &m->hits));
	/* dma */
	INH(dma_set_mask(dev, ~0ull), == -EINVAL);
	INH(dma_map_single(dev, m->buf, 16, DMA_TO_DEVICE),
	    == DMA_MAPPING_ERROR);
	INHV(dma_unmap_single(dev, m->map_dma, sizeof(m->buf), DMA_TO_DEVICE));
	/* A sync looks the mapping up only when DMA debugging is on. */
	devres_set_dma_debug(true);
	INHV(dma_sync_single_for_cpu(dev, m->map_dma, 16, DMA_TO_DEVICE));
	INHV(dma_sync_single_for_device(dev, m->map_dma, 16, DMA_TO_DEVICE));
	devres_set_dma_debug(false);
	INH(dma_alloc_coherent(dev, 4096, &h, GFP_KERNEL), == NULL);
	INHV(dma_free_coherent(dev, 4096, m->coh, m->coh_dma));
	INH(dmam_alloc_coherent(dev, 4096, &h, GFP_KERNEL), == NULL);
	INHV(dmam_free_coherent(dev, 4096, m->mcoh, m->mcoh_dma));
	INH(dma_pool_create("x", dev, 64, 8, 0), == NULL);
	INH(dmam_pool_create("x", dev, 64, 8, 0), == NULL);
	/* posix */
	INH(devm_eventfd(dev, 0, 0), == -EINVAL);
	INHV(devm_close(dev, m->fd));
	INH(devm_mmap(dev, NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0),
	    == ERR_PTR(-EINVAL));
	INHV(devm_munmap(dev, m->map, 4096));
	INH(devm_fopen(dev, "/dev/null", "r"), == NULL);
	INH(devm_fclose(dev, m->stream), == -EINVAL);
	INH(devm_thread_run(dev, museum_thread, NULL, "x"),
	    == ERR_PTR(-EINVAL));
	INH(devm_thread_stop(dev, m->thread), == -ECHILD);
	/* revocable */
	INH(devm_revocable_create(dev, &m->thing, museum_revoke), == NULL);
}

int museum_visit(struct museum *m, struct device *busy)
{
	struct devres_ledger before, after;
	struct pci_dev *pdev = m->pci;
	dma_addr_t h;
	uint32_t v;

	visit_bad = 0;
	devres_set_log_sink(keep_last, NULL);
	/* Nothing acquired or released by any of it, in the child's count. */
	devres_ledger_snapshot(&before);

	visit_device(m, &m->dev);
	visit_device(m, &m->plat->dev);
	visit_device(m, &pdev->dev);
	visit_device(m, busy);

	/* The driver model's other objects. */
	INHV(platform_device_unregister(m->plat));
	INHV(platform_driver_unregister(&m->drv));

	/* Regions by hand, windows and mappings. */
	INHV(release_region(REGION_IO + 8, 8));
	INHV(release_mem_region(REGION_MEM, 4096));
	INH(release_resource(m->region), == -ECHILD);
	INH(remove_resource(m->mem), == -ECHILD);
	INH(ioremap(WIN_BASE, 16), == NULL);
	INHV(iounmap(m->io));
	INH(iomem_window_remove(WIN_BASE), == -ECHILD);

	/* The interrupt line: not a line here. */
	INH_WHY(free_irq((unsigned int)m->irq, &m->hits), == NULL,
		"is not a line");
	INH_WHY(irq_line_destroy(m->irq), == -EINVAL, "is not a line");

	/* DMA pools. */
	INH(dma_pool_alloc(m->pool, GFP_KERNEL, &h), == NULL);
	INH(dma_pool_zalloc(m->pool, GFP_KERNEL, &h), == NULL);
	INHV(dma_pool_free(m->pool, m->blk, m->blk_dma));
	INHV(dma_pool_destroy(m->pool));
	INHV(dmam_pool_destroy(m->mpool));
	INH(dma_pool_alloc(m->mpool, GFP_KERNEL, &h), == NULL);

	/* The managed thread's handle. */
	INHV(devres_thread_set_stop_timeout(m->thread, 10));

	/* Revocable handles. */
	INH(revocable_try_access(m->rev), == NULL);
	INH(revocable_get(m->rev), == m->rev);
	INHV(revocable_put(m->rev));

	/* The PCI device: config space, enable, master, BARs, vectors. */
	INH(pci_read_config_dword(pdev, 0, &v), == PCIBIOS_DEVICE_NOT_FOUND);
	INH(pci_write_config_byte(pdev, 0x3c, 1), == PCIBIOS_DEVICE_NOT_FOUND);
	INH(pci_find_capability(pdev, PCI_CAP_ID_MSI), == 0);
	INH(pci_enable_device(pdev), == -EINVAL);
	INHV(pci_disable_device(pdev));
	INHV(pci_set_master(pdev));
	INHV(pci_clear_master(pdev));
	INH(pci_iomap(pdev, 0, 0), == NULL);
	INHV(pci_iounmap(pdev, m->bar));
	INHV(pci_iounmap(NULL, m->bar));
	INH(pcim_enable_device(pdev), == -EINVAL);
	INH(pcim_iomap(pdev, 0, 0), == NULL);
	INH(pcim_iomap_table(pdev), == NULL);
	INH(pcim_request_all_regions(pdev, "x"), == -EINVAL);
	INH(pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_ALL_TYPES), == -EINVAL);
	INH(pci_irq_vector(pdev, 0), == -EINVAL);
	INHV(pci_free_irq_vectors(pdev));
	INH(pci_dev_get(pdev), == pdev);
	INHV(pci_dev_put(pdev));
	/* Not found: lookups and rescans skip the parent's devices. */
	{
		int w = devres_warn_count();

		if (pci_get_device(0x1af4, 0x77, NULL) ||
		    devres_warn_count() != w) {
			fprintf(stderr, "child: parent's pci device found\n");
			visit_bad++;
		}
	}

	devres_ledger_snapshot(&after);
	if (devres_ledger_diff(&before, &after, stderr)) {
		fprintf(stderr, "child: the ledger moved\n");
		visit_bad++;
	}
	/* The child's own go; the parent's stay, and still say whose. */
	pci_bus_remove_all();
	INH(pci_read_config_dword(pdev, 0, &v), == PCIBIOS_DEVICE_NOT_FOUND);
	INH(devres_release_all(&m->dev), == -ENODEV);
	devres_set_log_sink(NULL, NULL);
	return visit_bad;
}

#define CLOSE(x) MAKE(x)

int museum_close(struct museum *m)
{
	dma_addr_t h;
	void *p;
	uint32_t v;

	/* Each of them is still the parent's, and works. */
	MAKE(device_is_bound(&m->plat->dev));
	MAKE(revocable_try_access(m->rev) == &m->thing);
	revocable_access_end(m->rev);
	p = dma_pool_alloc(m->pool, GFP_KERNEL, &h);
	MAKE(p);
	dma_pool_free(m->pool, p, h);
	MAKE(pci_read_config_dword(m->pci, 0, &v) == 0 &&
	     v == (0x1af4u | 0x77u << 16));
	MAKE(irq_line_raise(m->irq) == 0);
	MAKE(wait_hit(&m->hits));

	/* Then released, all of it, by the parent. */
	pci_iounmap(m->pci, m->bar);
	pci_clear_master(m->pci);
	pci_disable_device(m->pci);
	pci_dev_put(m->pci);
	dma_unmap_single(&m->dev, m->map_dma, sizeof(m->buf), DMA_TO_DEVICE);
	dma_pool_free(m->pool, m->blk, m->blk_dma);
	dma_pool_destroy(m->pool);
	dma_free_coherent(&m->dev, 4096, m->coh, m->coh_dma);
	CLOSE(devm_thread_stop(&m->dev, m->thread) == 3);
	iounmap(m->io);
	CLOSE(iomem_window_remove(WIN_BASE) == 0);
	close(m->winfd);
	release_region(REGION_IO + 8, 8);
	release_mem_region(REGION_MEM, 4096);
	CLOSE(devres_release_all(&m->dev) >= 0);
	CLOSE(revocable_try_access(m->rev) == NULL);
	revocable_put(m->rev);
	CLOSE(irq_line_destroy(m->irq) == 0);
	put_device(&m->dev);
	platform_device_unregister(m->plat);
	platform_driver_unregister(&m->drv);
	return 0;
}
