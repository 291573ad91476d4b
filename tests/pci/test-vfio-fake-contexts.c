// SPDX-License-Identifier: MIT
/* ctest-labels: unit pci tsan */
/*
 * The calls of <devres/vfio.h> and <devres/uio.h> made from inside the
 * device's own devres callbacks (against the fake VFIO kernel of
 * vfiofake.h): a release callback and a managed action run by the
 * unbind, a devres_for_each_res() callback and a devres_find() match
 * (both under the device's lock), and plain, for reference. Each returns
 * what it returns outside (the device is VFIO's, not UIO's; one IOMMU
 * mapping; enabling again changes nothing), with no WARN and no hang,
 * and the unbind and removal leave nothing behind.
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
	VFIO_ENABLE,
	IS_UIO,
	UIO_ENABLE,
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"pci_dev_is_vfio()", "pci_vfio_dma_mappings()", "pci_vfio_enable()",
	"pci_dev_is_uio()",  "pci_uio_enable()",
};

enum ctx {
	PLAIN,
	RELEASE,
	ACTION,
	FOR_EACH,
	MATCH,
	NR_CTXS
};

static const char *const ctx_name[NR_CTXS] = {
	"plain",
	"release callback",
	"managed action",
	"devres_for_each_res() callback",
	"devres_find() match",
};

static enum call cur;
static struct pci_dev *bound;
static int ran, wrong;

/* The call, and whether it answered as outside any callback. */
static void call(void)
{
	uint64_t bytes = 0;
	bool ok = false;

	switch (cur) {
	case IS_VFIO:
		ok = pci_dev_is_vfio(bound);
		break;
	case MAPPINGS:
		ok = pci_vfio_dma_mappings(bound, &bytes) == 1 && bytes == 4096;
		break;
	case VFIO_ENABLE:
		ok = pci_vfio_enable() == 0;
		break;
	case IS_UIO:
		ok = !pci_dev_is_uio(bound);
		break;
	case UIO_ENABLE:
		ok = pci_uio_enable(NULL, 0) == 0;
		break;
	case NR_CALLS:
		break;
	}
	ran++;
	if (!ok)
		wrong++;
}

static void rel(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	call();
}

static void action(void *data)
{
	(void)data;
	call();
}

static void each(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	call();
}

static int match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	call();
	return 1;
}

static enum ctx ctx;

static int probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	dma_addr_t handle;
	void *node;
	int ret;

	(void)id;
	bound = pdev;
	ret = dma_set_mask_and_coherent(&pdev->dev, UINT64_MAX >> 16);
	if (ret)
		return ret;
	/* Before the node: released after it, still mapped in its call. */
	if (!dmam_alloc_coherent(&pdev->dev, 4096, &handle, GFP_KERNEL))
		return -ENOMEM;
	node = devres_alloc(rel, 8, GFP_KERNEL);
	if (!node)
		return -ENOMEM;
	devres_add(&pdev->dev, node);
	if (ctx == ACTION)
		return devm_add_action_or_reset(&pdev->dev, action, NULL);
	return 0;
}

static const struct pci_device_id ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver drv = {
	.name = "vfio-contexts",
	.id_table = ids,
	.probe = probe,
};

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s / %s: %s:%d: %s\n",                \
				call_name[cur], ctx_name[ctx], __FILE__,       \
				__LINE__, #cond);                              \
			return 1;                                              \
		}                                                              \
	} while (0)

static int one(int r, int c)
{
	struct vf_conf conf = { .vendor = VENDOR, .device = DEVICE };
	struct devres_ledger base, now;
	int warns, expect;

	alarm(20);
	cur = (enum call)r;
	ctx = (enum ctx)c;
	if (vf_conf_tree(&conf, A) || vf_start(&conf))
		return 2;
	devres_ledger_snapshot(&base);
	warns = devres_warn_count();
	CHECK(pci_register_driver(&drv) == 0);
	CHECK(pci_bus_scan() == 1 && bound && bound->dev.driver);
	if (ctx == PLAIN)
		call();
	else if (ctx == FOR_EACH)
		devres_for_each_res(&bound->dev, rel, NULL, NULL, each, NULL);
	else if (ctx == MATCH)
		CHECK(devres_find(&bound->dev, rel, match, NULL));
	/* The release callback runs in every context, at the unbind. */
	pci_unregister_driver(&drv);
	expect = ctx == RELEASE ? 1 : 2;
	CHECK(ran == expect);
	CHECK(!wrong);
	CHECK(devres_warn_count() == warns);
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

static void test_calls_in_callbacks(void **state)
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
	run_cells_in_children_wide(one, call_name, NR_CALLS, ctx_name, NR_CTXS,
				   2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_calls_in_callbacks,
						pci_setup, pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
