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
 * pci_free_irq_vectors() and the release of the device's managed
 * resources. Each cell starts from a fresh tree, brings the function to
 * its state, makes the call once and checks the return and the exact
 * WARN count against the table; then everything left is given back (the
 * release, the enables, each disable without a WARN, the vectors), the
 * function is disabled and has no vectors, and the fixture finds the
 * ledger at its baseline. The same calls two at a time from two threads
 * are tests/pci/test-pci-pairs.c.
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

/* pcim_iomap() returns 1 for a mapping; pcim_iounmap() 2 for none to unmap. */
static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* enable, disable, pcim enable, pin, iomap, iounmap, request,
	 * release region, alloc vectors, free vectors, release */
	[IDLE] = { OK, C(0, 1), OK, C(0, 1), C(1, 0), C(2, 0), OK, C(0, 1),
		   C(2, 0), OK, OK },
	[ENABLED] = { OK, OK, OK, C(0, 1), C(1, 0), C(2, 0), OK, C(0, 1),
		      C(2, 0), OK, OK },
	/* A BAR mapped already: NULL, silently, as the kernel's. */
	[MANAGED] = { OK, C(0, 1), OK, OK, OK, OK, C(-EBUSY, 0), OK, C(2, 0),
		      OK, C(3, 0) },
	[VECTORS] = { OK, C(0, 1), OK, C(0, 1), C(1, 0), C(2, 0), OK, C(0, 1),
		      C(-EINVAL, 1), OK, OK },
};

static void after(void)
{
	int released;

	devres_set_log_sink(states_discard, NULL);
	assert_true(give_back(&released) >= 0);
	devres_set_log_sink(NULL, NULL);
	assert_false(pci_is_enabled(pdev));
	assert_false(pdev->msix_enabled);
	assert_null(pcim_iomap_table(pdev)[0]);
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
	STATES_TABLE(table, state_name, call_name, reach, make, after,
		     cell_setup, cell_teardown);

int main(void)
{
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS];
	size_t n = states_tests(&pci_states, ids, tests);

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests("pci-states", tests, n, NULL, NULL);
}
