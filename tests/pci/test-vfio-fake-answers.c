// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * The VFIO backend against a kernel whose answers are hostile
 * (tests/pci/vfiofake.h: a seccomp supervisor answers the backend's
 * opens and VFIO requests, nothing reaches /dev/vfio): one row per
 * answer, each run in a child of its own under an alarm, through the
 * same calls: the scan, config space, pci_iomap() of BAR 0,
 * pci_alloc_irq_vectors() with every kind, a coherent DMA buffer,
 * pci_vfio_dma_mappings(), the removal. A BAR whose region is empty,
 * not mmap-able, or lies past what an offset can say is refused and
 * nothing else; a capability chain that loops or points outside the
 * reply ends its walk; a group that is not viable is not taken, and its
 * offender named in an info line; vector counts beyond what the kind has
 * (INTx one, MSI 32, MSI-X 2048, as the PCI specification bounds them
 * and the kernel's vfio-pci reports) are taken at that bound, and a
 * count without an eventfd is none. None of it is the program's misuse:
 * no WARN, and the ledger is back where it started once the device is
 * removed. A request the kernel fails (one row each) leaves the device
 * untaken, or the call failing with the kernel's error, and nothing
 * behind; a failed unmap is the one WARN (vfio_unmap).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/dma.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "vfiofake.h"
#include "hostile/cell-child.h"

#define A "0000:00:05.0"
#define B "0000:00:06.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8
#define NO (-1)

struct row {
	const char *name;
	void (*conf)(struct vf_conf *c);
	int scanned;	  /* devices the scan takes */
	bool cfg;	  /* the vendor reads back */
	bool iomap;	  /* BAR 0 maps */
	unsigned int max; /* max_vecs asked */
	int vectors;	  /* what pci_alloc_irq_vectors() returns */
	int warns;
	bool no_dma; /* the coherent buffer is refused */
};

static void plain(struct vf_conf *c)
{
	(void)c;
}

static void bar_empty(struct vf_conf *c)
{
	c->set_bar0 = true;
	c->bar0_flags = VFIO_REGION_INFO_FLAG_READ |
			VFIO_REGION_INFO_FLAG_WRITE |
			VFIO_REGION_INFO_FLAG_MMAP;
	c->bar0_off = VF_BAR0_OFF;
	c->bar0_size = 0;
}

static void bar_no_mmap(struct vf_conf *c)
{
	bar_empty(c);
	c->bar0_flags &= ~VFIO_REGION_INFO_FLAG_MMAP;
	c->bar0_size = 4096;
}

static void bar_off_past_off_t(struct vf_conf *c)
{
	bar_empty(c);
	c->bar0_off = UINT64_MAX - 4095;
	c->bar0_size = 4096;
}

static void bar_end_wraps(struct vf_conf *c)
{
	bar_empty(c);
	c->bar0_off = (uint64_t)INT64_MAX - 4095;
	c->bar0_size = UINT64_MAX - 8191;
}

static void caps(struct vf_conf *c, uint32_t first, const uint32_t *links,
		 const uint16_t *ids, int n)
{
	c->caps_len = 16u * (uint32_t)n;
	c->bar0_cap_offset = first;
	for (int i = 0; i < n; i++) {
		struct vfio_info_cap_header h = { .id = ids[i],
						  .version = 1,
						  .next = links[i] };

		memcpy(c->caps + (size_t)16 * (size_t)i, &h, sizeof(h));
	}
}

/* Two capabilities, the second linking back to the first. */
static void caps_loop(struct vf_conf *c)
{
	const uint32_t off = sizeof(struct vfio_region_info);
	const uint32_t links[] = { off + 16, off };
	const uint16_t ids[] = { VFIO_REGION_INFO_CAP_TYPE,
				 VFIO_REGION_INFO_CAP_TYPE };

	caps(c, off, links, ids, 2);
}

/* A capability linking to itself. */
static void caps_self(struct vf_conf *c)
{
	const uint32_t off = sizeof(struct vfio_region_info);
	const uint32_t links[] = { off };
	const uint16_t ids[] = { VFIO_REGION_INFO_CAP_TYPE };

	caps(c, off, links, ids, 1);
}

/* The chain starts past the end of the reply. */
static void caps_out_of_range(struct vf_conf *c)
{
	const uint32_t links[] = { 0 };
	const uint16_t ids[] = { VFIO_REGION_INFO_CAP_SPARSE_MMAP };

	caps(c, 0xfffffff0u, links, ids, 1);
}

/* A sparse mmap capability: the BAR is not mapped whole. */
static void caps_sparse(struct vf_conf *c)
{
	const uint32_t off = sizeof(struct vfio_region_info);
	const uint32_t links[] = { 0 };
	const uint16_t ids[] = { VFIO_REGION_INFO_CAP_SPARSE_MMAP };

	caps(c, off, links, ids, 1);
}

static void cfg_empty(struct vf_conf *c)
{
	c->cfg_size = 1;
}

static void cfg_off_wraps(struct vf_conf *c)
{
	c->set_cfg_off = true;
	c->cfg_off = UINT64_MAX - 1;
}

static void not_viable(struct vf_conf *c)
{
	c->not_viable = true;
}

static void irqs_none(struct vf_conf *c)
{
	memset(c->irq_count, 0, sizeof(c->irq_count));
}

static void irqs_no_eventfd(struct vf_conf *c)
{
	for (int i = 0; i < VFIO_PCI_NUM_IRQS; i++)
		c->irq_flags[i] = VFIO_IRQ_INFO_MASKABLE;
}

static void intx_many(struct vf_conf *c)
{
	irqs_none(c);
	c->irq_count[VFIO_PCI_INTX_IRQ_INDEX] = 5;
}

static void msi_many(struct vf_conf *c)
{
	irqs_none(c);
	c->irq_count[VFIO_PCI_MSI_IRQ_INDEX] = 64;
}

static void msix_many(struct vf_conf *c)
{
	irqs_none(c);
	c->irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = 65536;
}

static void msix_huge(struct vf_conf *c)
{
	irqs_none(c);
	c->irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = UINT32_MAX;
}

#define FAILS(fn, req, err)                                                    \
	static void fn(struct vf_conf *c)                                      \
	{                                                                      \
		c->fail_req = (req);                                           \
		c->fail_err = (err);                                           \
	}

FAILS(fail_device_fd, VFIO_GROUP_GET_DEVICE_FD, EBUSY)
FAILS(fail_status, VFIO_GROUP_GET_STATUS, EIO)
FAILS(fail_set_container, VFIO_GROUP_SET_CONTAINER, EBUSY)
FAILS(fail_set_iommu, VFIO_SET_IOMMU, EPERM)
FAILS(fail_api, VFIO_GET_API_VERSION, EINVAL)
FAILS(fail_iommu_info, VFIO_IOMMU_GET_INFO, EINVAL)
FAILS(fail_device_info, VFIO_DEVICE_GET_INFO, EINVAL)
FAILS(fail_region_info, VFIO_DEVICE_GET_REGION_INFO, EINVAL)
FAILS(fail_irq_info, VFIO_DEVICE_GET_IRQ_INFO, EINVAL)
FAILS(fail_set_irqs, VFIO_DEVICE_SET_IRQS, EINVAL)
FAILS(fail_map, VFIO_IOMMU_MAP_DMA, ENOMEM)
FAILS(fail_unmap, VFIO_IOMMU_UNMAP_DMA, EINVAL)

/* clang-format off */
static const struct row rows[] = {
	{ "as vfio-pci answers", plain, 1, true, true, 8, 4, 0, false },
	{ "BAR 0 empty", bar_empty, 1, true, false, 8, 4, 0, false },
	{ "BAR 0 without MMAP", bar_no_mmap, 1, true, false, 8, 4, 0, false },
	{ "BAR 0 offset past off_t", bar_off_past_off_t, 1, true, false, 8,
	  4, 0, false },
	{ "BAR 0 end wraps", bar_end_wraps, 1, true, false, 8, 4, 0, false },
	{ "capabilities in a loop", caps_loop, 1, true, true, 8, 4, 0, false },
	{ "capability linked to itself", caps_self, 1, true, true, 8, 4, 0, false },
	{ "capability out of range", caps_out_of_range, 1, true, true, 8, 4,
	  0, false },
	{ "sparse BAR 0", caps_sparse, 1, true, false, 8, 4, 0, false },
	{ "config region of 1 byte", cfg_empty, 1, false, true, 8, 4, 0, false },
	{ "config offset wraps", cfg_off_wraps, 1, false, true, 8, 4, 0, false },
	{ "group not viable", not_viable, 0, false, false, 8, NO, 0, false },
	{ "no vectors", irqs_none, 1, true, true, 8, -ENOSPC, 0, false },
	{ "vectors without eventfd", irqs_no_eventfd, 1, true, true, 8,
	  -ENOSPC, 0, false },
	{ "5 INTx vectors", intx_many, 1, true, true, 8, 1, 0, false },
	{ "64 MSI vectors", msi_many, 1, true, true, 64, 32, 0, false },
	{ "65536 MSI-X vectors", msix_many, 1, true, true, 1000, 1000, 0, false },
	{ "2^32-1 MSI-X vectors", msix_huge, 1, true, true, 64, 64, 0, false },
	{ "GET_DEVICE_FD fails", fail_device_fd, 0, false, false, 8, NO, 0, false },
	{ "GET_STATUS fails", fail_status, 0, false, false, 8, NO, 0, false },
	{ "SET_CONTAINER fails", fail_set_container, 0, false, false, 8, NO,
	  0, false },
	{ "SET_IOMMU fails", fail_set_iommu, 0, false, false, 8, NO, 0, false },
	{ "GET_API_VERSION fails", fail_api, 0, false, false, 8, NO, 0, false },
	{ "IOMMU_GET_INFO fails", fail_iommu_info, 0, false, false, 8, NO, 0, false },
	{ "DEVICE_GET_INFO fails", fail_device_info, 0, false, false, 8, NO,
	  0, false },
	{ "GET_REGION_INFO fails", fail_region_info, 0, false, false, 8, NO,
	  0, false },
	{ "GET_IRQ_INFO fails", fail_irq_info, 1, true, true, 8, -ENOSPC, 0, false },
	{ "SET_IRQS fails", fail_set_irqs, 1, true, true, 8, -EINVAL, 0, false },
	{ "MAP_DMA fails", fail_map, 1, true, true, 8, 4, 0, true },
	{ "UNMAP_DMA fails", fail_unmap, 1, true, true, 8, 4, 1, false },
};
/* clang-format on */

#define NR_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static bool offender_named;

/* WARNs are shown: a cell that fails on their count names them. */
static void warn_sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	if (strstr(text, "IOMMU group 7 is not viable: " B " is bound to "
			 "e1000e, not "
			 "vfio-pci"))
		offender_named = true;
	if (level <= DEVRES_LOG_WARNING)
		fprintf(stderr, "%s\n", text);
}

/* What the row expects of each call; the cell's exit status. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s: %s:%d: %s\n", row->name,          \
				__FILE__, __LINE__, #cond);                    \
			return 1;                                              \
		}                                                              \
	} while (0)

static int script(const struct row *row)
{
	struct devres_ledger base, now;
	struct pci_dev *p;
	dma_addr_t handle = 0;
	uint64_t bytes = 0;
	void __iomem *bar;
	uint16_t w = 0;
	int warns, ret;
	void *buf;

	devres_set_log_sink(warn_sink, NULL);
	devres_ledger_snapshot(&base);
	warns = devres_warn_count();
	CHECK(pci_bus_scan() == row->scanned);
	if (!row->scanned) {
		CHECK(offender_named == (row->conf == not_viable));
		pci_bus_remove_all();
		devres_ledger_snapshot(&now);
		CHECK(!devres_ledger_diff(&base, &now, stderr));
		CHECK(devres_warn_count() - warns == row->warns);
		return 0;
	}
	p = pci_get_device(VENDOR, DEVICE, NULL);
	CHECK(p && pci_dev_is_vfio(p));
	CHECK((pci_read_config_word(p, PCI_VENDOR_ID, &w) == 0 &&
	       w == VENDOR) == row->cfg);
	bar = pci_iomap(p, 0, 0);
	CHECK((bar != NULL) == row->iomap);
	if (bar)
		pci_iounmap(p, bar);
	ret = pci_alloc_irq_vectors(p, 1, row->max, PCI_IRQ_ALL_TYPES);
	if (ret != row->vectors)
		fprintf(stderr, "%s: %d vectors\n", row->name, ret);
	CHECK(ret == row->vectors);
	if (ret > 0) {
		CHECK(vf_read(irq_count) == ret);
		CHECK(pci_irq_vector(p, (unsigned int)ret - 1) > 0);
		pci_free_irq_vectors(p);
	}
	CHECK(dma_set_mask_and_coherent(&p->dev, UINT64_MAX >> 16) == 0);
	buf = dma_alloc_coherent(&p->dev, 8192, &handle, GFP_KERNEL);
	CHECK(!buf == row->no_dma);
	if (buf) {
		CHECK(handle);
		CHECK(pci_vfio_dma_mappings(p, &bytes) == 1 && bytes == 8192);
		dma_free_coherent(&p->dev, 8192, buf, handle);
	}
	CHECK(pci_vfio_dma_mappings(p, &bytes) == 0 && bytes == 0);
	pci_dev_put(p);
	pci_bus_remove_all();
	devres_ledger_snapshot(&now);
	CHECK(!devres_ledger_diff(&base, &now, stderr));
	CHECK(devres_warn_count() - warns == row->warns);
	return 0;
}

static int try_start(int r, int c)
{
	const struct vf_conf conf = { .vendor = VENDOR };

	(void)r;
	(void)c;
	return vf_start(&conf) ? 77 : 0;
}

static int one(int r, int c)
{
	struct vf_conf conf = { .vendor = VENDOR, .device = DEVICE };

	(void)c;
	alarm(30);
	conf.irq_count[VFIO_PCI_INTX_IRQ_INDEX] = 1;
	conf.irq_count[VFIO_PCI_MSI_IRQ_INDEX] = 1;
	conf.irq_count[VFIO_PCI_MSIX_IRQ_INDEX] = 4;
	rows[r].conf(&conf);
	if (vf_start(&conf))
		return 77;
	return script(&rows[r]);
}

/* Whether this kernel lets a test be a VFIO kernel (seccomp notify). */
static bool fake_works(void)
{
	int st = run_cell_in_child(try_start, 0, 0);

	return WIFEXITED(st) && !WEXITSTATUS(st);
}

/*
 * The group's devices under kernel/iommu_groups/7/devices: A, and B
 * bound to another driver of the host (the one a group not viable
 * names), which is not a PCI device of the tree.
 */
static void group_with_offender(void)
{
	char path[4096];
	int dir;

	snprintf(path, sizeof(path), "%s/kernel/iommu_groups/%d/devices/" B,
		 pci_fake_root(ft), VF_GROUP);
	for (char *s = path + strlen(pci_fake_root(ft)) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		(void)mkdir(path, 0755);
		*s = '/';
	}
	assert_int_equal(mkdir(path, 0755), 0);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0);
	assert_int_equal(symlinkat("../../../../bus/pci/drivers/e1000e", dir,
				   "driver"),
			 0);
	close(dir);
	snprintf(path, sizeof(path), "%s/kernel/iommu_groups/%d/devices/" A,
		 pci_fake_root(ft), VF_GROUP);
	assert_int_equal(symlink("../../../../bus/pci/devices/" A, path), 0);
}

static void test_hostile_answers(void **state)
{
	struct pci_fake_dev a = fake_dev(A, VENDOR, DEVICE, 1);
	const char *names[NR_ROWS];
	const char *const cols[] = { "scan to removal" };

	(void)state;
	if (under_valgrind() || !fake_works())
		skip();
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(vf_fake_device(A), 0);
	group_with_offender();
	assert_int_equal(pci_vfio_enable(), 0);
	for (int i = 0; i < NR_ROWS; i++)
		names[i] = rows[i].name;
	run_cells_in_children_wide(one, names, NR_ROWS, cols, 1, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hostile_answers, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
