// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * The releases of a PCI function's BAR claims, pci_release_region(),
 * pci_release_regions() and pcim_release_region(), x the BAR's state
 * (never claimed, claimed by pcim_request_region(), claimed by
 * pci_request_region()) x its kind (memory, I/O): 18 cells. A misuse
 * (a release of what was never claimed, pci_release_*() of a managed
 * claim, pcim_release_region() of an unmanaged one) prints one WARN naming
 * the call made and the function; a release of the right kind prints
 * none. A managed claim released by hand goes now and off the device;
 * an unmanaged one pcim_release_region() cannot take stays claimed. After
 * each cell the BAR can be claimed again and the ledger is back at its
 * baseline. Before, the WARNs named the io layer's calls the PCI ones go
 * through (release_mem_region, release_region, devm_release_mem_region,
 * devm_release_region), with no device for the first two.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "pcitest.h"

#define A "0000:00:04.0"

enum call {
	C_PCI_RELEASE,
	C_PCI_RELEASE_ALL,
	C_PCIM_RELEASE,
	NR_CALLS
};
enum state {
	S_NONE,
	S_PCIM,
	S_PCI,
	NR_STATES
};

static const char *const calls[NR_CALLS] = {
	"pci_release_region",
	"pci_release_regions",
	"pcim_release_region",
};

static const char *const states[NR_STATES] = { "unclaimed", "pcim", "pci" };

/* The reason of the one WARN the cell prints, or NULL for none. */
static const char *reason(int call, int state)
{
	bool managed_call = call == C_PCIM_RELEASE;

	if (state == S_NONE)
		return managed_call ? "no managed region" : "no busy region";
	if (state == S_PCIM)
		return managed_call ? NULL
				    : "acquired with pcim_request_region(): "
				      "use pcim_release_region()";
	return managed_call ? "no managed region" : NULL;
}

static struct pci_dev *scan(bool io)
{
	struct pci_fake_dev d = fake_dev(A, 0x1af4, 0x10, 1);
	struct pci_dev *p;

	if (io) {
		d.bar_size[0] = 256;
		d.bar_flags[0] = IORESOURCE_IO;
	}
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(0x1af4, 0x10, NULL);
	assert_non_null(p);
	return p;
}

static void release(struct pci_dev *p, int call)
{
	if (call == C_PCI_RELEASE)
		pci_release_region(p, 0);
	else if (call == C_PCI_RELEASE_ALL)
		pci_release_regions(p);
	else
		pcim_release_region(p, 0);
}

static void one(int call, int state, bool io)
{
	const char *why = reason(call, state);
	struct pci_dev *p = scan(io);

	print_message("%s / %s / %s\n", calls[call], states[state],
		      io ? "io" : "mem");
	if (state == S_PCIM)
		assert_int_equal(pcim_request_region(p, 0, "names"), 0);
	else if (state == S_PCI)
		assert_int_equal(pci_request_region(p, 0, "names"), 0);
	start_capture();
	release(p, call);
	if (why)
		expect_warn_on(A, calls[call], why);
	else
		expect_no_warn();
	/* What pcim_release_region() could not take is still claimed. */
	if (state == S_PCI && call == C_PCIM_RELEASE) {
		assert_int_not_equal(pci_request_region(p, 0, "again"), 0);
		pci_release_region(p, 0);
	}
	/* Given back, and nothing left on the device. */
	start_capture();
	assert_int_equal(pci_request_region(p, 0, "again"), 0);
	pci_release_region(p, 0);
	expect_no_warn();
	assert_int_equal(devres_release_all(&p->dev), 0);
	pci_dev_put(p);
	pci_bus_remove_all();
	assert_int_equal(pci_fake_remove(ft, A), 0);
}

static void table(bool io)
{
	alarm(20);
	for (int c = 0; c < NR_CALLS; c++)
		for (int s = 0; s < NR_STATES; s++)
			one(c, s, io);
	alarm(0);
}

static void memory_bar(void **state)
{
	(void)state;
	table(false);
}

static void io_bar(void **state)
{
	(void)state;
	table(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(memory_bar, pci_setup,
						pci_teardown),
		cmocka_unit_test_setup_teardown(io_bar, pci_setup,
						pci_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
