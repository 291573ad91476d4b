// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The twin of tests/base/test-last-put.c for the callbacks the compat
 * headers run: a work function, a delayed work's, an attribute's show()
 * and store(), a devm action added through <linux/slab.h>'s wrapper and
 * run at unbind, a platform driver's probe (failing and succeeding) and
 * remove, and a PCI driver's probe (failing and succeeding) and remove,
 * on a device of a fake PCI tree (<linux/pci.h>'s struct pci_driver has
 * no shutdown, SR-IOV or error callbacks). Each puts the last reference
 * of a target: the device the callback runs on (D), its parent (P) or its
 * child (C). A PCI device of the scan has no parent device: its parent
 * cells do not exist (24 + 6 = 30 cells). The runner is
 * tests/base/last-put.h, shared with test-last-put. Each
 * cell asserts that the target is released exactly once; that a release
 * which would free what the call that ran the callback still uses (D, or
 * its parent) waits until that call is over, and a child's does not; the
 * WARN of a registered device put once too often, and no other; and, at
 * the fixture's teardown, the ledger at its baseline. ASan proves that
 * nothing is used after it is freed (kcompat_attr_show() puts the binding
 * of D after show() returns; a work's thread takes its item's lock after
 * the function).
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
#include <devres/pci_fake.h>
#include "kcompat/kctest.h"
#include "base/last-put.h"

enum kind {
	/* D initialized, never added. */
	K_WORK,		/* a work function */
	K_DELAYED_WORK, /* a delayed work's function */
	/* D added and bound to the compat platform driver. */
	K_ATTR_SHOW,	 /* show(), by kcompat_attr_show() */
	K_ATTR_STORE,	 /* store(), by kcompat_attr_store() */
	K_COMPAT_ACTION, /* devm_add_action() of <linux/slab.h>, at unbind */
	K_PROBE_FAIL,	 /* the platform driver's probe, failing */
	K_PROBE_OK,	 /* the platform driver's probe, succeeding */
	K_REMOVE,	 /* the platform driver's remove, at unbind */
	/* D a device of a fake PCI tree, bound to the PCI driver. */
	K_PCI_PROBE_FAIL, /* the PCI driver's probe, failing */
	K_PCI_PROBE_OK,	  /* the PCI driver's probe, succeeding */
	K_PCI_REMOVE,	  /* the PCI driver's remove, at unbind */
	K_NR
};

static const char *const kind_names[K_NR] = {
	"work",		  "delayed_work", "attr_show",	"attr_store",
	"compat_action",  "probe_fail",	  "probe_ok",	"remove",
	"pci_probe_fail", "pci_probe_ok", "pci_remove",
};

static bool registered(enum kind k)
{
	return k >= K_ATTR_SHOW;
}

static bool is_pci(enum kind k)
{
	return k >= K_PCI_PROBE_FAIL;
}

/* A PCI device of the scan has no parent device to put. */
static bool cell_exists(int k, enum target t)
{
	return !(is_pci(k) && t == T_PARENT);
}

/* Run by a thread of the compat layer, in no call of the library. */
static bool in_own_thread(enum kind k)
{
	return k == K_WORK || k == K_DELAYED_WORK;
}

/* lp (last-put.h) holds the cell; its D is PD's, or plat's. */
static struct platform_device *plat;
static struct pci_dev *PD;
static char d_name[32];
static void (*d_release)(struct device *); /* the device's own */

/* Counts, then frees the platform or PCI device as the library does. */
static void release_d(struct device *dev)
{
	lp.rel_d++;
	d_release(dev);
}

/*
 * The last reference of the target; of a registered D, one too many: the
 * owner's, then the registration's; and a PCI device's, the scan's
 * (pci_bus_remove_all()'s) too.
 */
static void drop(void)
{
	/* Its name, for the WARN: a platform device has it once added. */
	snprintf(d_name, sizeof(d_name), "%s", dev_name(lp.D));
	lp_drop(registered(lp.kind) + is_pci(lp.kind));
}

static void work_fn(struct work_struct *work)
{
	(void)work;
	drop();
}
static DECLARE_WORK(klp_work, work_fn);
static DECLARE_DELAYED_WORK(klp_dwork, work_fn);

static ssize_t val_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	(void)dev;
	(void)attr;
	if (lp.kind == K_ATTR_SHOW)
		drop();
	return sysfs_emit(buf, "1\n");
}

static ssize_t val_store(struct device *dev, struct device_attribute *attr,
			 const char *buf, size_t count)
{
	(void)dev;
	(void)attr;
	(void)buf;
	if (lp.kind == K_ATTR_STORE)
		drop();
	return (ssize_t)count;
}
static DEVICE_ATTR_RW(val);

static struct attribute *klp_attrs[] = {
	&dev_attr_val.attr,
	NULL,
};
ATTRIBUTE_GROUPS(klp);

static void action_drop(void *data)
{
	(void)data;
	drop();
}

static int klp_probe(struct platform_device *pdev)
{
	if (lp.kind == K_PROBE_FAIL || lp.kind == K_PROBE_OK)
		drop();
	if (lp.kind == K_COMPAT_ACTION)
		assert_int_equal(devm_add_action(&pdev->dev, action_drop, NULL),
				 0);
	return lp.kind == K_PROBE_FAIL ? -ENODEV : 0;
}

static void klp_remove(struct platform_device *pdev)
{
	(void)pdev;
	if (lp.kind == K_REMOVE)
		drop();
}

static struct platform_driver klp_driver = {
	.probe = klp_probe,
	.remove = klp_remove,
	.driver = {
		.name = "klp",
		.dev_groups = klp_groups,
	},
};

static int kpci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)pdev;
	(void)id;
	if (lp.kind == K_PCI_PROBE_FAIL || lp.kind == K_PCI_PROBE_OK)
		drop();
	return lp.kind == K_PCI_PROBE_FAIL ? -ENODEV : 0;
}

static void kpci_remove(struct pci_dev *pdev)
{
	(void)pdev;
	if (lp.kind == K_PCI_REMOVE)
		drop();
}

static const struct pci_device_id kpci_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1041) },
	{},
};

static struct pci_driver kpci_driver = {
	.name = "klp-pci",
	.id_table = kpci_ids,
	.probe = kpci_probe,
	.remove = kpci_remove,
};

static struct pci_fake *tree;

static struct device *new_dev(const char *name,
			      void (*release)(struct device *))
{
	struct device *dev = calloc(1, sizeof(*dev));

	assert_non_null(dev);
	dev->release = release;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "%s", name), 0);
	return dev;
}

static void build(void)
{
	lp.P = new_dev("klp-parent", lp_release_p);
	if (is_pci(lp.kind)) {
		/* Registered by the scan, unbound: the owner's reference. */
		assert_int_equal(pci_bus_scan(), 1);
		PD = pci_get_device(0x1af4, 0x1041, NULL);
		assert_non_null(PD);
		lp.D = &PD->dev;
	} else {
		plat = platform_device_alloc("klp", PLATFORM_DEVID_NONE);
		assert_non_null(plat);
		lp.D = &plat->dev;
		lp.D->parent = lp.P;
	}
	d_release = lp.D->release;
	lp.D->release = release_d;
	lp.C = new_dev("klp-child", lp_release_c);
	lp.C->parent = lp.D;
}

static void trigger(void)
{
	char buf[PAGE_SIZE];

	switch (lp.kind) {
	case K_WORK:
		assert_true(schedule_work(&klp_work));
		flush_work(&klp_work);
		break;
	case K_DELAYED_WORK:
		assert_true(schedule_delayed_work(&klp_dwork, 1));
		flush_delayed_work(&klp_dwork);
		break;
	case K_ATTR_SHOW:
		assert_int_equal(platform_device_add(plat), 0);
		assert_int_equal(kcompat_attr_show(&plat->dev, "val", buf), 2);
		break;
	case K_ATTR_STORE:
		assert_int_equal(platform_device_add(plat), 0);
		assert_int_equal(
			kcompat_attr_store(&plat->dev, "val", "1\n", 2), 2);
		break;
	case K_PROBE_FAIL:
	case K_PROBE_OK:
		assert_int_equal(platform_device_add(plat), 0);
		break;
	case K_COMPAT_ACTION:
	case K_REMOVE:
		assert_int_equal(platform_device_add(plat), 0);
		assert_ptr_equal(plat->dev.driver, &klp_driver.driver);
		device_release_driver(&plat->dev);
		break;
	case K_PCI_PROBE_FAIL:
	case K_PCI_PROBE_OK:
		assert_int_equal(pci_register_driver(&kpci_driver), 0);
		break;
	case K_PCI_REMOVE:
		assert_int_equal(pci_register_driver(&kpci_driver), 0);
		assert_ptr_equal(lp.D->driver, &kpci_driver.driver);
		device_release_driver(lp.D);
		break;
	case K_NR:
		break;
	}
}

static void arm(void)
{
	if (registered(lp.kind) && !is_pci(lp.kind))
		assert_int_equal(platform_driver_register(&klp_driver), 0);
}

static bool overput(void)
{
	return lp.target == T_SELF && registered(lp.kind);
}

static const char *overput_line(void)
{
	static char want[96];

	snprintf(want, sizeof(want),
		 "WARNING: %s: put_device: released while still registered",
		 d_name);
	return want;
}

/* D, registered, holds its parent: released with D. */
static bool parent_held(void)
{
	return registered(lp.kind) && lp.target == T_PARENT;
}

/* No call of the library around a work: released at once; a child too. */
static bool at_once(void)
{
	return in_own_thread(lp.kind) || lp.target == T_CHILD;
}

static void finish(void)
{
	if (is_pci(lp.kind))
		pci_unregister_driver(&kpci_driver);
	else if (registered(lp.kind))
		platform_driver_unregister(&klp_driver);
	if (!lp.rel_d) {
		if (is_pci(lp.kind))
			pci_bus_remove_all();
		else if (registered(lp.kind))
			platform_device_del(plat);
		if (lp.target != T_SELF)
			put_device(lp.D);
	}
	lp_put_rest();
}

static const struct lp_matrix matrix = {
	.kind_names = kind_names,
	.cell_exists = cell_exists,
	.build = build,
	.arm = arm,
	.trigger = trigger,
	.overput = overput,
	.overput_line = overput_line,
	.parent_held = parent_held,
	.at_once = at_once,
	.finish = finish,
	.report = kc_print_report,
};

#define KIND_TEST(k) LP_KIND_TEST(matrix, k)
KIND_TEST(K_WORK)
KIND_TEST(K_DELAYED_WORK)
KIND_TEST(K_ATTR_SHOW)
KIND_TEST(K_ATTR_STORE)
KIND_TEST(K_COMPAT_ACTION)
KIND_TEST(K_PROBE_FAIL)
KIND_TEST(K_PROBE_OK)
KIND_TEST(K_REMOVE)
KIND_TEST(K_PCI_PROBE_FAIL)
KIND_TEST(K_PCI_PROBE_OK)
KIND_TEST(K_PCI_REMOVE)

static struct devres_ledger base;

static int setup(void **state)
{
	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	devres_ledger_snapshot(&base);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? -1 : 0;
}

static void every_kind_is_tested(void **state);

#define T(k) cmocka_unit_test_setup_teardown(test_##k, setup, teardown)
static const struct CMUnitTest tests[] = {
	T(K_WORK),	     T(K_DELAYED_WORK),
	T(K_ATTR_SHOW),	     T(K_ATTR_STORE),
	T(K_COMPAT_ACTION),  T(K_PROBE_FAIL),
	T(K_PROBE_OK),	     T(K_REMOVE),
	T(K_PCI_PROBE_FAIL), T(K_PCI_PROBE_OK),
	T(K_PCI_REMOVE),     cmocka_unit_test(every_kind_is_tested),
};

/* Every kind is in the list above: a new one cannot be forgotten. */
static void every_kind_is_tested(void **state)
{
	(void)state;
	assert_int_equal(sizeof(tests) / sizeof(tests[0]), K_NR + 1);
}

/* The fake PCI tree: one device, scanned afresh by each PCI cell. */
static int group_setup(void **state)
{
	struct pci_fake_dev d = {
		.name = "0000:00:01.0",
		.vendor = 0x1af4,
		.device = 0x1041,
		.class = 0x020000,
		.irq = 11,
	};

	(void)state;
	d.bar_size[0] = 4096;
	d.bar_flags[0] = IORESOURCE_MEM;
	tree = pci_fake_create();
	if (!tree || pci_fake_add(tree, &d) ||
	    pci_sysfs_set_root(pci_fake_root(tree)))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	pci_bus_remove_all();
	pci_fake_destroy(tree);
	return 0;
}

int main(void)
{
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
