// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Every lifecycle call on a PCI function of a fake tree in every state a
 * driver puts it in (tests/pci/pci-lifecycle.h): idle; enabled
 * (pci_enable_device()); enabled managed with BAR 0 mapped and claimed
 * (pcim_enable_device(), pcim_iomap(), pcim_request_region()); MSI-X
 * vectors allocated. The calls: pci_enable_device(),
 * pci_disable_device(), pcim_enable_device(), pcim_pin_device(),
 * pcim_iomap() and pcim_iounmap() of BAR 0, pcim_request_region() and
 * pcim_release_region() of BAR 0, pci_alloc_irq_vectors(),
 * pci_free_irq_vectors(), the release of the device's managed
 * resources, pcim_iomap_regions() of BAR 0, pcim_request_all_regions()
 * and pcim_iomap_table(): every pcim_* call (the PCI calls that are not
 * pcim_* are never managed); and devm_request_irq() of the function's
 * line (pdev->irq). Two states more than the pairs have:
 * read-only mode on (pci_sysfs_set_readonly()), and the function removed
 * from the bus (pci_bus_remove_all()) while its driver still holds it.
 * Each cell starts from a fresh tree, brings the function to its state,
 * makes the call once and checks the return and the exact WARN count
 * against the table; then everything left is given back (the release,
 * the enables, each disable without a WARN, the vectors), the function
 * is disabled, has no vectors and nothing in its table, BAR 0 is not
 * left claimed, and the fixture finds the ledger at its baseline. The
 * same calls two at a time from two threads are
 * tests/pci/test-pci-pairs.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"
#include "pci/pci-lifecycle.h"
#include "states.h"

#define C(r, w) STATES_CELL(r, w)
#define OK STATES_OK

/* The states of the pairs, and two of a function's more. */
enum {
	READ_ONLY = NR_STATES,
	REMOVED,
	NR_ALL_STATES
};
static const char *const all_state_name[NR_ALL_STATES] = {
	"idle",	   "enabled",	     "managed, BAR 0 mapped and claimed",
	"vectors", "read-only mode", "removed from the bus",
};

/*
 * pcim_iomap() returns 1 for a mapping, else -errno; pcim_iounmap() 2 for
 * none to unmap; pcim_iomap_table() 1 when BAR 0 is in the table, 0 when not.
 */
static const struct states_cell table[NR_ALL_STATES][NR_CALLS] = {
	/* enable, disable, pcim enable, pin, iomap, iounmap, request,
	 * release region, alloc vectors, free vectors, release,
	 * iomap regions, request all regions, iomap table, request irq */
	[IDLE] = { OK, C(0, 1), OK, C(0, 1), C(1, 0), C(2, 0), OK, C(0, 1),
		   C(2, 0), OK, OK, OK, OK, OK, OK },
	[ENABLED] = { OK, OK, OK, C(0, 1), C(1, 0), C(2, 0), OK, C(0, 1),
		      C(2, 0), OK, OK, OK, OK, OK, OK },
	/* A BAR mapped already: NULL, silently, as the kernel's. */
	[MANAGED] = { OK, C(0, 1), OK, OK, C(-EBUSY, 0), OK, C(-EBUSY, 0), OK,
		      C(2, 0), OK, C(3, 0), C(-EBUSY, 0), C(-EBUSY, 0), C(1, 0),
		      OK },
	[VECTORS] = { OK, C(0, 1), OK, C(0, 1), C(1, 0), C(2, 0), OK, C(0, 1),
		      C(-EINVAL, 1), OK, OK, OK, OK, OK, OK },
	/*
	 * Nothing written, nothing mapped; a claim writes nothing, and the
	 * claim pcim_iomap_regions() made is given back with its refusal.
	 */
	[READ_ONLY] = { C(-EROFS, 0), C(0, 1), C(-EROFS, 0), C(0, 1),
			C(-EROFS, 0), C(2, 0), OK, C(0, 1), C(2, 0), OK, OK,
			C(-EROFS, 0), OK, OK, OK },
	/* Its BARs out of the tree: nothing enabled, mapped or claimed. */
	[REMOVED] = { C(-ENODEV, 0), C(0, 1), C(-ENODEV, 0), C(0, 1),
		      C(-ENODEV, 0), C(2, 0), C(-EBUSY, 0), C(0, 1), C(2, 0),
		      OK, OK, C(-EBUSY, 0), C(-EBUSY, 0), OK, OK },
};

static void reach_all(unsigned int s)
{
	switch (s) {
	case READ_ONLY:
		bar0 = NULL;
		pci_sysfs_set_readonly(true);
		break;
	case REMOVED:
		bar0 = NULL;
		pci_bus_remove_all();
		break;
	default:
		reach(s);
	}
}

static void after(void)
{
	int released;

	pci_sysfs_set_readonly(false);
	devres_set_log_sink(states_discard, NULL);
	assert_true(give_back(&released) >= 0);
	devres_set_log_sink(NULL, NULL);
	assert_false(pci_is_enabled(pdev));
	assert_false(pdev->msix_enabled);
	assert_null(pcim_iomap_table(pdev)[0]);
	assert_int_equal(iomem_busy(), 0);
}

static int cell_setup(void **state)
{
	if (pci_setup(state))
		return -1;
	function_up();
	return 0;
}

static int cell_teardown(void **state)
{
	function_down();
	return pci_teardown(state);
}

static const struct states_table pci_states =
	STATES_TABLE(table, all_state_name, call_name, reach_all, make, after,
		     cell_setup, cell_teardown);

int main(void)
{
	static struct states_id ids[NR_ALL_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_ALL_STATES * NR_CALLS];
	size_t n = states_tests(&pci_states, ids, tests);

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("pci-states", tests, n, NULL, NULL);
}
