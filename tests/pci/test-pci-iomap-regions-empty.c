// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan pci */
/*
 * pcim_iomap_regions() with a mask that names an empty BAR: the kernel's
 * (since 6.11, through pcim_iomap_region()) maps nothing there and fails
 * the call; before, the BAR was skipped and its pcim_iomap_table() slot
 * left NULL for the driver to read. All or nothing: -EINVAL, and the BARs
 * of the mask before and after the empty one are neither claimed nor
 * mapped (a pci_request_region() of each succeeds, the table's slots are
 * NULL, the device holds no node). A mask of BARs that all have a size
 * maps them. Not a misuse (the kernel returns the error without a WARN).
 * Table: 7 masks over a function with BARs 0 and 2, BARs 1 and 3-5 empty.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/pci.h>
#include <devres/pci_fake.h>
#include "testlib.h"
#include "pci/fake-fn.h"

static const struct {
	int mask;
	int ret;
} masks[] = {
	{ 1 << 0, 0 },
	{ 1 << 0 | 1 << 2, 0 },
	{ 1 << 1, -EINVAL },
	{ 1 << 0 | 1 << 1, -EINVAL },
	{ 1 << 0 | 1 << 1 | 1 << 2, -EINVAL },
	{ 1 << 2 | 1 << 5, -EINVAL },
	{ 1 << 3, -EINVAL },
};

#define NR_MASKS ((int)(sizeof(masks) / sizeof(masks[0])))

static void every_mask(void **state)
{
	struct pci_fake_dev d = { .name = "0000:00:03.0",
				  .vendor = 0x1af4,
				  .device = 0x1041 };
	struct pci_fake *t;
	struct pci_dev *p;

	(void)state;
	d.bar_size[0] = 4096;
	d.bar_flags[0] = IORESOURCE_MEM;
	d.bar_size[2] = 8192;
	d.bar_flags[2] = IORESOURCE_MEM;
	t = fake_fn_tree(&d);
	assert_non_null(t);
	p = pci_get_device(0x1af4, 0x1041, NULL);
	assert_non_null(p);
	for (int i = 0; i < NR_MASKS; i++) {
		void __iomem *const *table;
		struct devres_stats st;

		print_message("mask %#x\n", masks[i].mask);
		start_capture();
		assert_int_equal(pcim_iomap_regions(p, masks[i].mask, "empty"),
				 masks[i].ret);
		expect_no_warn();
		table = pcim_iomap_table(p);
		assert_non_null(table);
		for (int bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
			bool mapped = !masks[i].ret &&
				      (masks[i].mask & (1 << bar));

			assert_true(!table[bar] == !mapped);
			if (!pci_resource_len(p, bar) || mapped)
				continue;
			/* Not claimed: free for an unmanaged claim. */
			assert_int_equal(pci_request_region(p, bar, "probe"),
					 0);
			pci_release_region(p, bar);
		}
		devres_get_stats(&p->dev, &st);
		if (masks[i].ret)
			assert_int_equal(st.allocs, 0);
		devres_release_all(&p->dev);
	}
	pci_dev_put(p);
	assert_int_equal(fake_fn_tree_remove(t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_mask),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
