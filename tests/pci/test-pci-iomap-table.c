// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * pcim_iomap_table() is the device's, not a resource of whatever devres
 * group is open at its first use: a group rolled back takes its own
 * mappings (and clears their slots) and nothing else. Each way a mapping
 * goes clears its slot: pcim_iounmap(), pci_iounmap() with or without the
 * device, the group's release, the binding's release; and the table is
 * the same pointer, readable, through all of it. Then the table's slots
 * under two threads mapping the same BAR and releasing the device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/io.h>
#include "testlib.h"
#include "pcitest.h"

#define NAME "0000:00:07.0"

static struct pci_dev *scan_two(void)
{
	struct pci_fake_dev d = fake_dev(NAME, 0x1af4, 0x1041, 2);
	struct pci_dev *p;

	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, NULL);
	assert_non_null(p);
	pci_dev_put(p);
	return p;
}

static int nodes(struct pci_dev *p)
{
	struct devres_stats st;

	devres_get_stats(&p->dev, &st);
	return st.allocs;
}

/* First used inside a group, mapped outside it: the rollback keeps both. */
static void table_first_used_in_group(void **state)
{
	struct pci_dev *p = scan_two();
	void __iomem *const *t;
	void *g, *m;

	(void)state;
	g = devres_open_group(&p->dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	t = pcim_iomap_table(p);
	assert_non_null(t);
	devres_close_group(&p->dev, g);
	m = pcim_iomap(p, 0, 0);
	assert_non_null(m);
	start_capture();
	/* Nothing of the group's: the table is not a node. */
	assert_int_equal(devres_release_group(&p->dev, g), 0);
	expect_no_warn();
	assert_ptr_equal(pcim_iomap_table(p), t);
	assert_ptr_equal(t[0], m);
	/* Still the one mapping of BAR 0, and still a pcim_iomap() one. */
	assert_null(pcim_iomap(p, 0, 0));
	writel(0xfeedf00d, m);
	assert_int_equal(readl(m), 0xfeedf00d);
	assert_int_equal(nodes(p), 1);
	start_capture();
	pcim_iounmap(p, m);
	expect_no_warn();
	assert_null(t[0]);
	assert_int_equal(nodes(p), 0);
}

/* Mapped inside a group: the rollback unmaps it and clears its slot. */
static void mapping_in_group(void **state)
{
	struct pci_dev *p = scan_two();
	void __iomem *const *t = pcim_iomap_table(p);
	void *g, *m0, *m1;

	(void)state;
	m0 = pcim_iomap(p, 0, 0);
	assert_non_null(m0);
	g = devres_open_group(&p->dev, NULL, GFP_KERNEL);
	assert_non_null(g);
	m1 = pcim_iomap(p, 1, 0);
	assert_non_null(m1);
	devres_close_group(&p->dev, g);
	assert_ptr_equal(t[1], m1);
	start_capture();
	/* Its one node: the mapping. */
	assert_int_equal(devres_release_group(&p->dev, g), 1);
	expect_no_warn();
	assert_ptr_equal(t[0], m0);
	assert_null(t[1]);
	/* The BAR can be mapped again: the slot is free. */
	m1 = pcim_iomap(p, 1, 0);
	assert_non_null(m1);
	assert_ptr_equal(t[1], m1);
	devres_release_all(&p->dev);
	assert_null(t[0]);
	assert_null(t[1]);
	assert_ptr_equal(pcim_iomap_table(p), t);
}

/* pci_iounmap() without the device still clears the slot. */
static void plain_unmap_without_device(void **state)
{
	struct pci_dev *p = scan_two();
	void __iomem *const *t = pcim_iomap_table(p);
	void *m;

	(void)state;
	m = pcim_iomap(p, 0, 0);
	assert_non_null(m);
	start_capture();
	pci_iounmap(NULL, m);
	expect_warn_on(NAME, "pci_iounmap", "acquired with pcim_iomap()");
	assert_null(t[0]);
	assert_int_equal(nodes(p), 0);
	/* A second binding maps it again. */
	m = pcim_iomap(p, 0, 0);
	assert_non_null(m);
	assert_ptr_equal(t[0], m);
	devres_release_all(&p->dev);
	assert_null(t[0]);
}

static struct pci_dev *race_dev;
static void *race_got[2];
static int race_go;

static void *map_bar0(void *arg)
{
	while (!__atomic_load_n(&race_go, __ATOMIC_ACQUIRE))
		;
	race_got[(intptr_t)arg] = pcim_iomap(race_dev, 0, 0);
	return NULL;
}

/* Two threads map one BAR: one wins, the other gets EBUSY, nothing leaks. */
static void two_threads_one_bar(void **state)
{
	void __iomem *const *t;

	(void)state;
	race_dev = scan_two();
	t = pcim_iomap_table(race_dev);
	for (int i = 0; i < 200; i++) {
		pthread_t a, b;

		__atomic_store_n(&race_go, 0, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&a, NULL, map_bar0, (void *)0),
				 0);
		assert_int_equal(pthread_create(&b, NULL, map_bar0, (void *)1),
				 0);
		__atomic_store_n(&race_go, 1, __ATOMIC_RELEASE);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		assert_true(!race_got[0] != !race_got[1]);
		assert_ptr_equal(t[0], race_got[0] ? race_got[0] : race_got[1]);
		assert_int_equal(nodes(race_dev), 1);
		devres_release_all(&race_dev->dev);
		assert_null(t[0]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(table_first_used_in_group,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(mapping_in_group, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(plain_unmap_without_device,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(two_threads_one_bar, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
