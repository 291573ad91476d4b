// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * pci_dev_is_vfio(), pci_vfio_dma_mappings() and pci_dev_is_uio() on a
 * VFIO device (against the fake VFIO kernel of vfiofake.h) in each state
 * of its life: a struct pci_dev never initialized, scanned, bound with a
 * coherent buffer, unbound, removed with a reference still held. A live
 * device answers (a removed one still is VFIO's, its mappings gone); one
 * never initialized is a misuse, as for every other PCI call: one WARN
 * naming the call, false or -EINVAL. Before, the three answered false or
 * -ENODEV, silently, for a device no PCI call takes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/dma.h>
#include <devres/uio.h>
#include <devres/vfio.h>
#include "testlib.h"
#include "pcitest.h"
#include "vfiofake.h"
#include "hostile/cell-child.h"

#define A "0000:00:05.0"
#define VENDOR 0x1234
#define DEVICE 0x11e8

enum call {
	IS_VFIO,
	MAPPINGS,
	IS_UIO,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"pci_dev_is_vfio",
	"pci_vfio_dma_mappings",
	"pci_dev_is_uio",
};

enum state {
	ZEROED,
	SCANNED,
	BOUND,
	UNBOUND,
	REMOVED,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"never initialized", "scanned",	      "bound, one buffer",
	"unbound",	     "removed, held",
};

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	dma_addr_t handle;

	(void)id;
	if (dma_set_mask_and_coherent(&pdev->dev, UINT64_MAX >> 16) ||
	    !dmam_alloc_coherent(&pdev->dev, 4096, &handle, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "vfio-states",
	.id_table = ids,
	.probe = probe,
};

static char said[512];

static void sink(void *ctx, int level, const char *text)
{
	(void)ctx;
	if (level <= DEVRES_LOG_WARNING && !said[0])
		snprintf(said, sizeof(said), "%s", text);
}

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s / %s: %s:%d: %s\n", call_name[r],  \
				state_name[c], __FILE__, __LINE__, #cond);     \
			return 1;                                              \
		}                                                              \
	} while (0)

static int one(int r, int c)
{
	struct vf_conf conf = { .vendor = VENDOR, .device = DEVICE };
	static struct pci_dev zeroed;
	struct devres_ledger base, now;
	uint64_t bytes = 7;
	struct pci_dev *p = &zeroed;
	bool bad = c == ZEROED;
	int warns, ret;

	alarm(20);
	if (vf_conf_tree(&conf, A) || vf_start(&conf))
		return 2;
	devres_set_log_sink(sink, NULL);
	devres_ledger_snapshot(&base);
	if (c >= BOUND)
		CHECK(pci_register_driver(&drv) == 0);
	if (c >= SCANNED) {
		CHECK(pci_bus_scan() == 1);
		p = pci_get_device(VENDOR, DEVICE, NULL);
		CHECK(p);
	}
	if (c >= UNBOUND)
		pci_unregister_driver(&drv);
	if (c >= REMOVED)
		pci_bus_remove_all();
	warns = devres_warn_count();
	switch (r) {
	case IS_VFIO:
		CHECK(pci_dev_is_vfio(p) == !bad);
		break;
	case MAPPINGS:
		ret = pci_vfio_dma_mappings(p, &bytes);
		CHECK(ret == (bad ? -EINVAL : c == BOUND ? 1 : 0));
		CHECK(bytes == (bad ? 7 : c == BOUND ? 4096 : 0));
		break;
	case IS_UIO:
		CHECK(!pci_dev_is_uio(p));
		break;
	}
	CHECK(devres_warn_count() - warns == bad);
	if (bad)
		CHECK(strstr(said, call_name[r]));
	if (!bad)
		pci_dev_put(p);
	if (c == BOUND)
		pci_unregister_driver(&drv);
	pci_bus_remove_all();
	CHECK(!vf_read(maps));
	devres_ledger_snapshot(&now);
	CHECK(!devres_ledger_diff(&base, &now, stderr));
	return 0;
}

static int try_start(int r, int c)
{
	const struct vf_conf conf = { .vendor = VENDOR };

	(void)r;
	(void)c;
	return vf_start(&conf) ? 77 : 0;
}

static void test_calls_in_states(void **state)
{
	struct pci_fake_dev a = fake_dev(A, VENDOR, DEVICE, 1);
	int st;

	(void)state;
	st = run_cell_in_child(try_start, 0, 0);
	if (under_valgrind() || !WIFEXITED(st) || WEXITSTATUS(st))
		skip();
	assert_int_equal(pci_fake_add(ft, &a), 0);
	assert_int_equal(vf_fake_device(A), 0);
	assert_int_equal(pci_vfio_enable(), 0);
	run_cells_in_children_wide(one, call_name, NR_CALLS, state_name,
				   NR_STATES, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_calls_in_states, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
