// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan white-box timeout=60 */
/*
 * A pcim_iomap() mapping unmapped by hand (pci_iounmap() naming the device
 * or not, a munmap()) on one thread while the library releases the device
 * on another, one cell each: the call takes the mapping and its node, then
 * clears the BAR's slot in pcim_iomap_table() with the device's lock; the
 * cell holds that lock, so the call is parked there, and the device's last
 * reference is put meanwhile (the bus's removal, then the test's put, or
 * the other way round).
 *
 * pci_iounmap() used to go on with the device it read under the
 * mappings' lock and no reference of its own (its caller may not even
 * name the device): the device was freed under it, and the slot cleared
 * in freed memory. The call must hold the device until it is done with
 * it: the release leaves one reference, the call's, and the call's return
 * frees the device.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/io.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/pci.h"

#define NAME "0000:00:0b.0"
#define VENDOR 0x1af4
#define DEVICE 0x1043

enum call {
	IOUNMAP_DEV,
	IOUNMAP_NULL,
	MUNMAP,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"pci_iounmap(pdev, addr)",
	"pci_iounmap(NULL, addr)",
	"munmap()",
};

enum release {
	REMOVE_THEN_PUT,
	PUT_THEN_REMOVE,
	NR_RELEASES
};

static const char *const release_name[NR_RELEASES] = {
	"pci_bus_remove_all(), then the test's put",
	"the test's put, then pci_bus_remove_all()",
};

struct cell {
	enum call call;
	enum release release;
	char name[96];
};

static const struct cell *cur;
static struct pci_dev *pdev;
static void *addr;
static bool locked;
static struct asleep_call worker;
static bool working, have_ref;

static int call(void)
{
	switch (cur->call) {
	case IOUNMAP_DEV:
		pci_iounmap(pdev, addr);
		return 0;
	case IOUNMAP_NULL:
		pci_iounmap(NULL, addr);
		return 0;
	default:
		return munmap(addr, 4096);
	}
}

static int refs(void)
{
	return __atomic_load_n(&pdev->dev.refcount, __ATOMIC_ACQUIRE);
}

static void unlock_dev(void)
{
	if (locked)
		pthread_mutex_unlock(&pdev->p->lock);
	locked = false;
}

static void run_cell(void **state)
{
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);
	int before;

	(void)state;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(pdev);
	have_ref = true;
	addr = pcim_iomap(pdev, 0, 0);
	assert_non_null(addr);
	assert_ptr_equal(pcim_iomap_table(pdev)[0], addr);
	before = refs();
	/* The call is parked where it clears the BAR's slot. */
	pthread_mutex_lock(&pdev->p->lock);
	locked = true;
	worker.fn = call;
	start_until_asleep(&worker);
	working = true;
	/* It holds the device: one reference more than before. */
	assert_int_equal(refs(), before + 1);
	/* The library's release, and the test's own put. */
	if (cur->release == REMOVE_THEN_PUT)
		pci_bus_remove_all();
	pci_dev_put(pdev);
	have_ref = false;
	if (cur->release == PUT_THEN_REMOVE)
		pci_bus_remove_all();
	/* Only the call's reference is left. */
	assert_int_equal(refs(), 1);
	unlock_dev();
	working = false;
	assert_int_equal(pthread_join(worker.t, NULL), 0);
	assert_int_equal(worker.ret, 0);
	pdev = NULL;
	/* The call's put released the device. */
	assert_null(pci_get_device(VENDOR, DEVICE, NULL));
}

static int cell_setup(void **state)
{
	cur = *state;
	pdev = NULL;
	return pci_setup(state);
}

static int cell_teardown(void **state)
{
	if (pdev)
		unlock_dev();
	if (working && pthread_join(worker.t, NULL))
		return -1;
	working = false;
	if (pdev && have_ref)
		pci_dev_put(pdev);
	have_ref = false;
	pdev = NULL;
	pci_bus_remove_all();
	if (ft)
		(void)pci_fake_remove(ft, NAME);
	return pci_teardown(state);
}

#define NR_CELLS (NR_CALLS * NR_RELEASES)

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (int c = 0; c < NR_CALLS; c++)
		for (int r = 0; r < NR_RELEASES; r++, n++) {
			cells[n] = (struct cell){ (enum call)c, (enum release)r,
						  "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 cell_teardown, "%s while %s is in progress",
				 release_name[r], call_name[c]);
		}
	alarm(50);
	return cmocka_run_group_tests_name("pci-bar-release", tests, NULL,
					   NULL);
}
