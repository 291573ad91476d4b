// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Every call of a PCI driver's life, of the scan and of the removal, in
 * every state a function of a fake tree and its driver can be in
 * (docs/pci.md): the function not scanned yet, with and without the
 * driver registered; scanned, no driver; bound; unbound by
 * device_release_driver(); unbound by the driver's unregistration;
 * removed by pci_bus_remove_all(); removed and scanned again (bound
 * again); gone from the tree and found gone by a scan. The calls:
 * pci_register_driver(), pci_unregister_driver(), pci_bus_scan(),
 * pci_bus_scan_device(), pci_bus_remove_all(), device_attach(),
 * device_driver_attach() and device_release_driver() of the function
 * (the one the test holds a reference to since its first scan: deleted
 * in the states where it was removed, also once a scan has registered
 * the function anew; NULL where it was never scanned).
 * Each cell checks the call's return, the exact WARN count, whether the
 * bus then has the function, whether it is bound, and that the driver's
 * probes and removes agree with that; then the driver is unregistered,
 * every function removed, and the fixture finds the ledger at its
 * baseline and the function disabled in the tree.
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
#include "states.h"

enum state {
	NOT_SCANNED,
	DRIVER_ONLY,
	SCANNED,
	BOUND,
	RELEASED,
	UNREGISTERED,
	REMOVED,
	RESCANNED,
	VANISHED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"not scanned, no driver",
	"not scanned, driver registered",
	"scanned, no driver",
	"bound",
	"unbound by device_release_driver",
	"unbound by pci_unregister_driver",
	"removed by pci_bus_remove_all",
	"removed and scanned again",
	"gone from the tree, scanned",
};

enum call {
	REGISTER,
	UNREGISTER,
	SCAN,
	SCAN_DEVICE,
	REMOVE_ALL,
	ATTACH,
	DRIVER_ATTACH,
	RELEASE_DRIVER,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"pci_register_driver",	"pci_unregister_driver", "pci_bus_scan",
	"pci_bus_scan_device",	"pci_bus_remove_all",	 "device_attach",
	"device_driver_attach", "device_release_driver",
};

/*
 * A cell: the call's return @r, whether the bus has the function after it
 * (@on) and whether it is bound (@b), compared as one number
 * (r * 100 + on * 10 + b), and @w WARNs.
 */
#define E(r, on, b, w) STATES_CELL((r)*100 + (on)*10 + (b), w)

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* register, unregister, scan, scan device, remove all, attach,
	 * driver attach, release driver */
	[NOT_SCANNED] = { E(0, 0, 0, 0), E(0, 0, 0, 1), E(1, 1, 0, 0),
			  E(0, 1, 0, 0), E(0, 0, 0, 0), E(-EINVAL, 0, 0, 1),
			  E(-EINVAL, 0, 0, 1), E(0, 0, 0, 1) },
	[DRIVER_ONLY] = { E(-EBUSY, 0, 0, 1), E(0, 0, 0, 0), E(1, 1, 1, 0),
			  E(0, 1, 1, 0), E(0, 0, 0, 0), E(-EINVAL, 0, 0, 1),
			  E(-EINVAL, 0, 0, 1), E(0, 0, 0, 1) },
	[SCANNED] = { E(0, 1, 1, 0), E(0, 1, 0, 1), E(1, 1, 0, 0),
		      E(-EEXIST, 1, 0, 0), E(0, 0, 0, 0), E(0, 1, 0, 0),
		      E(0, 1, 1, 0), E(0, 1, 0, 0) },
	[BOUND] = { E(-EBUSY, 1, 1, 1), E(0, 1, 0, 0), E(1, 1, 1, 0),
		    E(-EEXIST, 1, 1, 0), E(0, 0, 0, 0), E(1, 1, 1, 0),
		    E(-EBUSY, 1, 1, 0), E(0, 1, 0, 0) },
	[RELEASED] = { E(-EBUSY, 1, 0, 1), E(0, 1, 0, 0), E(1, 1, 0, 0),
		       E(-EEXIST, 1, 0, 0), E(0, 0, 0, 0), E(1, 1, 1, 0),
		       E(0, 1, 1, 0), E(0, 1, 0, 0) },
	[UNREGISTERED] = { E(0, 1, 1, 0), E(0, 1, 0, 1), E(1, 1, 0, 0),
			   E(-EEXIST, 1, 0, 0), E(0, 0, 0, 0), E(0, 1, 0, 0),
			   E(0, 1, 1, 0), E(0, 1, 0, 0) },
	[REMOVED] = { E(-EBUSY, 0, 0, 1), E(0, 0, 0, 0), E(1, 1, 1, 0),
		      E(0, 1, 1, 0), E(0, 0, 0, 0), E(-ENODEV, 0, 0, 0),
		      E(-ENODEV, 0, 0, 0), E(0, 0, 0, 0) },
	/* The calls on the function take the first scan's: deleted. */
	[RESCANNED] = { E(-EBUSY, 1, 1, 1), E(0, 1, 0, 0), E(1, 1, 1, 0),
			E(-EEXIST, 1, 1, 0), E(0, 0, 0, 0), E(-ENODEV, 1, 1, 0),
			E(-ENODEV, 1, 1, 0), E(0, 1, 1, 0) },
	[VANISHED] = { E(-EBUSY, 0, 0, 1), E(0, 0, 0, 0), E(0, 0, 0, 0),
		       E(-ENOENT, 0, 0, 0), E(0, 0, 0, 0), E(-ENODEV, 0, 0, 0),
		       E(-ENODEV, 0, 0, 0), E(0, 0, 0, 0) },
};

/* The function since its first scan, a reference held. */
static struct pci_dev *held;
static bool registered;

static void scan_and_hold(void)
{
	assert_int_equal(pci_bus_scan(), 1);
	held = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(held);
}

static void reach(unsigned int s)
{
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);

	probes = removes = 0;
	held = NULL;
	registered = false;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	if (s == DRIVER_ONLY || s >= BOUND) {
		assert_int_equal(pci_register_driver(&drv), 0);
		registered = true;
	}
	if (s == NOT_SCANNED || s == DRIVER_ONLY)
		return;
	scan_and_hold();
	assert_int_equal(device_is_bound(&held->dev), s >= BOUND);
	switch (s) {
	case RELEASED:
		device_release_driver(&held->dev);
		break;
	case UNREGISTERED:
		pci_unregister_driver(&drv);
		registered = false;
		break;
	case REMOVED:
	case RESCANNED:
		pci_bus_remove_all();
		break;
	case VANISHED:
		assert_int_equal(pci_fake_remove(ft, NAME), 0);
		assert_int_equal(pci_bus_scan(), 0);
		break;
	default:
		break;
	}
	if (s == RESCANNED)
		assert_int_equal(pci_bus_scan(), 1);
}

static int make(unsigned int c)
{
	struct device *dev = held ? &held->dev : NULL;
	struct pci_dev *p;
	int r = 0;

	switch (c) {
	case REGISTER:
		r = pci_register_driver(&drv);
		registered = registered || !r;
		break;
	case UNREGISTER:
		pci_unregister_driver(&drv);
		registered = false;
		break;
	case SCAN:
		r = pci_bus_scan();
		break;
	case SCAN_DEVICE:
		r = pci_bus_scan_device(NAME);
		break;
	case REMOVE_ALL:
		pci_bus_remove_all();
		break;
	case ATTACH:
		r = device_attach(dev);
		break;
	case DRIVER_ATTACH:
		r = device_driver_attach(&drv.driver, dev);
		break;
	case RELEASE_DRIVER:
		device_release_driver(dev);
		break;
	default:
		fail();
	}
	p = on_bus();
	return r * 100 + (p != NULL) * 10 + (p && device_is_bound(&p->dev));
}

/*
 * The driver unregistered (when it is), every function removed, the
 * reference dropped; also after a cell that failed.
 */
static void give_back(void)
{
	if (registered)
		pci_unregister_driver(&drv);
	registered = false;
	pci_bus_remove_all();
	pci_dev_put(held);
	held = NULL;
}

/*
 * Only a binding has a probe without its remove; once all is given back,
 * every probe has had its remove and the function is disabled.
 */
static void after(void)
{
	struct pci_dev *p = on_bus();
	char buf[16];

	assert_int_equal(probes - removes, p && device_is_bound(&p->dev));
	give_back();
	assert_int_equal(probes, removes);
	if (fake_read(NAME, "enable", buf, sizeof(buf)) > 0)
		assert_int_equal(buf[0], '0');
}

static int cell_teardown(void **state)
{
	give_back();
	return pci_teardown(state);
}

static const struct states_table driver_states =
	STATES_TABLE(table, state_name, call_name, reach, make, after,
		     pci_setup, cell_teardown);

int main(void)
{
	return states_main("pci-driver-states", &driver_states, 1);
}
