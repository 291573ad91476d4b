/* SPDX-License-Identifier: MIT */
/*
 * The group fixture of the tables of managed mappings (test-managed-maps-*,
 * test-maps-*): a register window of two pages at WIN on test-dev, backed
 * by a memfd (maps_winfd), and the fake PCI function of one-pci-fn.h with
 * a BAR as long; and the setup of a cell whose state is its row, which
 * dev_setup() would overwrite. Include after testlib.h and io/iotest.h.
 */
#ifndef DEVRES_TESTS_MAPS_FIXTURE_H
#define DEVRES_TESTS_MAPS_FIXTURE_H

#include <unistd.h>
#include "misuse/one-pci-fn.h"

#define WIN 0xa0000000ull

static size_t pg, len; /* a page; every mapping's length (two pages) */
static int maps_winfd = -1;

static inline int maps_group_setup(void **state)
{
	(void)state;
	pg = (size_t)sysconf(_SC_PAGESIZE);
	len = 2 * pg;
	maps_winfd = dev_memfd(len);
	if (maps_winfd < 0 || iomem_window_add(WIN, len, maps_winfd, 0, "win"))
		return -1;
	return one_pci_fn_setup(len);
}

static inline int maps_group_teardown(void **state)
{
	(void)state;
	one_pci_fn_teardown();
	iomem_window_remove(WIN);
	close(maps_winfd);
	maps_winfd = -1;
	return 0;
}

/* dev_setup() for a cell: the cell's row stays its state. */
static inline int maps_cell_setup(void **state)
{
	void *row = *state;
	int ret = dev_setup(state);

	*state = row;
	return ret;
}

#endif /* DEVRES_TESTS_MAPS_FIXTURE_H */
