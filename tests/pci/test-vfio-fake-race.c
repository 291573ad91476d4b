// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * A VFIO device (against the fake VFIO kernel of vfiofake.h) released by
 * one thread (its unbind, its driver's unregister, the bus's removal)
 * while another thread, holding its own reference, keeps calling into
 * it: coherent buffers allocated and freed (IOMMU mappings of the
 * group's container), pci_vfio_dma_mappings(), config reads through the
 * device fd, vectors allocated and freed, BAR 0 mapped and unmapped, a
 * reset. Each call succeeds or fails cleanly, none hangs or crashes; once
 * the thread has dropped its reference the ledger is back at its
 * baseline, and the fake kernel holds no IOMMU mapping and no vector.
 * One cell per call and release, each in a child of its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/dma.h>
#include <devres/io.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "vfiofake.h"
#include "hostile/cell-child.h"

#define A "0000:00:05.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8

enum call {
	DMA,
	MAPPINGS,
	CONFIG,
	VECTORS,
	IOMAP,
	RESET,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"dma_alloc_coherent()+free", "pci_vfio_dma_mappings()",
	"pci_read_config_dword()",   "pci_alloc_irq_vectors()+free",
	"pci_iomap()+unmap",	     "pci_reset_function()",
};

enum release {
	UNBIND,
	UNREGISTER,
	REMOVE,
	NR_RELEASES
};

static const char *const release_name[NR_RELEASES] = {
	"device_release_driver()",
	"pci_unregister_driver()",
	"pci_bus_remove_all()",
};

static enum call cur;
static int stop, rounds;

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)id;
	return pcim_enable_device(pdev);
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "vfio-race",
	.id_table = ids,
	.probe = probe,
};

static void call_once(struct pci_dev *p)
{
	dma_addr_t handle;
	uint64_t bytes;
	uint32_t v;
	void __iomem *bar;
	void *buf;

	switch (cur) {
	case DMA:
		buf = dma_alloc_coherent(&p->dev, 4096, &handle, GFP_KERNEL);
		if (buf)
			dma_free_coherent(&p->dev, 4096, buf, handle);
		break;
	case MAPPINGS:
		(void)pci_vfio_dma_mappings(p, &bytes);
		break;
	case CONFIG:
		(void)pci_read_config_dword(p, PCI_VENDOR_ID, &v);
		break;
	case VECTORS:
		if (pci_alloc_irq_vectors(p, 1, 4, PCI_IRQ_ALL_TYPES) > 0)
			pci_free_irq_vectors(p);
		break;
	case IOMAP:
		bar = pci_iomap(p, 0, 0);
		if (bar)
			pci_iounmap(p, bar);
		break;
	case RESET:
		(void)pci_reset_function(p);
		break;
	case NR_CALLS:
		break;
	}
}

static void *caller(void *arg)
{
	struct pci_dev *p = arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		call_once(p);
		__atomic_add_fetch(&rounds, 1, __ATOMIC_RELEASE);
	}
	/* A few more once the release is done. */
	for (int i = 0; i < 20; i++)
		call_once(p);
	pci_dev_put(p);
	return NULL;
}

static void discard_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s: %s:%d: %s\n", call_name[cur],     \
				__FILE__, __LINE__, #cond);                    \
			return 1;                                              \
		}                                                              \
	} while (0)

static int one(int r, int c)
{
	struct vf_conf conf = { .vendor = VENDOR, .device = DEVICE };
	struct devres_ledger base, now;
	struct pci_dev *p;
	pthread_t t;

	alarm(30);
	cur = (enum call)r;
	conf.irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = 4;
	if (vf_conf_tree(&conf, A) || vf_start(&conf))
		return 2;
	devres_set_log_sink(discard_sink, NULL);
	devres_ledger_snapshot(&base);
	CHECK(pci_register_driver(&drv) == 0);
	CHECK(pci_bus_scan() == 1);
	p = pci_get_device(VENDOR, DEVICE, NULL);
	CHECK(p && p->dev.driver);
	CHECK(dma_set_mask_and_coherent(&p->dev, UINT64_MAX >> 16) == 0);
	CHECK(pthread_create(&t, NULL, caller, p) == 0);
	while (__atomic_load_n(&rounds, __ATOMIC_ACQUIRE) < 20)
		sched_yield();
	if (c == UNBIND)
		device_release_driver(&p->dev);
	else if (c == UNREGISTER)
		pci_unregister_driver(&drv);
	else
		pci_bus_remove_all();
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	CHECK(pthread_join(t, NULL) == 0);
	if (c != UNREGISTER)
		pci_unregister_driver(&drv);
	pci_bus_remove_all();
	CHECK(vf_read(maps) == 0);
	devres_ledger_snapshot(&now);
	CHECK(!devres_ledger_diff(&base, &now, stderr));
	return 0;
}

static int try_start(int r, int c)
{
	const struct vf_conf conf = { .vendor = VENDOR };

	(void)r;
	(void)c;
	return vf_start(&conf) ? 77 : 0;
}

static void test_release_races_calls(void **state)
{
	struct pci_fake_dev a = fake_dev(A, VENDOR, DEVICE, 1);
	int st;

	(void)state;
	st = run_cell_in_child(try_start, 0, 0);
	if (under_valgrind() || !WIFEXITED(st) || WEXITSTATUS(st))
		skip();
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(vf_fake_device(A), 0);
	assert_int_equal(pci_vfio_enable(), 0);
	run_cells_in_children_wide(one, call_name, NR_CALLS, release_name,
				   NR_RELEASES, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_release_races_calls,
						pci_setup, pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
