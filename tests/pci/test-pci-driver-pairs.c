// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every pair of calls of a PCI driver's life, of the scan and of the
 * removal, made at once from two threads, many rounds
 * (DEVRES_PAIRS_ROUNDS), in each state of a function of a fake tree and
 * its driver: not scanned with the driver registered; scanned, no driver;
 * bound; removed by pci_bus_remove_all() with the driver registered. The
 * calls: pci_register_driver(), pci_unregister_driver(), pci_bus_scan(),
 * pci_bus_remove_all(), and device_attach() and device_release_driver()
 * of the function (the first scan's, a reference held: deleted once
 * removed; NULL where it was never scanned). Each pair must end as one of
 * its two serial orders does (tests/pairs.h): the same returns, the same
 * WARNs, and the same after: whether the bus has the function, whether
 * it is bound, the driver's probes less its removes, whether the driver
 * was still registered (the WARNs of unregistering it). Every probe has
 * had its remove once all is given back, and the ledger is at its
 * baseline after each state. The calls one at a time in more states:
 * tests/pci/test-pci-driver-states.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci-driver-fn.h"
#include "pairs.h"
#include "rounds.h"

enum state {
	DRIVER_ONLY,
	SCANNED,
	BOUND,
	REMOVED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"not scanned, driver registered",
	"scanned, no driver",
	"bound",
	"removed, driver registered",
};

enum call {
	REGISTER,
	UNREGISTER,
	SCAN,
	REMOVE_ALL,
	ATTACH,
	RELEASE_DRIVER,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"pci_register_driver", "pci_unregister_driver", "pci_bus_scan",
	"pci_bus_remove_all",  "device_attach",		"device_release_driver",
};

static struct pci_dev *held;
static bool in_tree;

static void reach(unsigned int s)
{
	probes = removes = 0;
	held = NULL;
	if (!in_tree) {
		struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);

		assert_int_equal(pci_fake_add(ft, &d), 0);
		in_tree = true;
	}
	if (s != SCANNED)
		assert_int_equal(pci_register_driver(&drv), 0);
	if (s == DRIVER_ONLY)
		return;
	assert_int_equal(pci_bus_scan(), 1);
	held = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(held);
	if (s == REMOVED)
		pci_bus_remove_all();
}

static int make(unsigned int c)
{
	struct device *dev = held ? &held->dev : NULL;

	switch (c) {
	case REGISTER:
		return pci_register_driver(&drv);
	case UNREGISTER:
		pci_unregister_driver(&drv);
		return 0;
	case SCAN:
		return pci_bus_scan();
	case REMOVE_ALL:
		pci_bus_remove_all();
		return 0;
	case ATTACH:
		return device_attach(dev);
	case RELEASE_DRIVER:
		device_release_driver(dev);
		return 0;
	default:
		fail();
	}
	return 0;
}

/*
 * What the pair left: the function on the bus, bound, the probes less
 * the removes, the WARNs of unregistering the driver (one when it was
 * not registered); then every function removed and the reference
 * dropped, every probe with its remove.
 */
static void undo(struct pairs_outcome *o)
{
	struct pci_dev *p = on_bus();
	int w0;

	o->after[0] = p != NULL;
	o->after[1] = p && device_is_bound(&p->dev);
	o->after[2] = probes - removes;
	w0 = devres_warn_count();
	pci_unregister_driver(&drv);
	o->after[3] = devres_warn_count() - w0;
	pci_bus_remove_all();
	pci_dev_put(held);
	held = NULL;
	assert_int_equal(probes, removes);
}

/* Spins one thread may start late: about a scan of the fake tree. */
#define SPREAD 65536

/* valgrind runs one thread at a time: its rounds would only repeat. */
#ifdef T_TSAN
#define ROUNDS 10
#else
#define ROUNDS (test_under_valgrind() ? 2 : 50)
#endif

PAIRS_TEST(every_pair_in_every_state, ROUNDS,
	   PAIRS_NAMES(state_name, call_name), .reach = reach, .call = make,
	   .undo = undo, .spread = SPREAD)

static int teardown(void **state)
{
	in_tree = false;
	return pci_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair_in_every_state,
						pci_setup, teardown),
	};

	return pairs_group("pci-driver-pairs", tests,
			   sizeof(tests) / sizeof(tests[0]));
}
