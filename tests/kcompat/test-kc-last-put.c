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
 * cells do not exist (21 + 6 = 30 cells). Each
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

enum target {
	T_SELF,
	T_PARENT,
	T_CHILD,
	T_NR
};

static const char *const target_names[T_NR] = { "self", "parent", "child" };

static bool registered(enum kind k)
{
	return k >= K_ATTR_SHOW;
}

static bool is_pci(enum kind k)
{
	return k >= K_PCI_PROBE_FAIL;
}

/* A PCI device of the scan has no parent device to put. */
static bool cell_exists(enum kind k, enum target t)
{
	return !(is_pci(k) && t == T_PARENT);
}

/* Run by a thread of the compat layer, in no call of the library. */
static bool in_own_thread(enum kind k)
{
	return k == K_WORK || k == K_DELAYED_WORK;
}

static enum kind kind;
static enum target target;
static struct device *P, *C;
static struct platform_device *D;
static struct pci_dev *PD;
static struct device *DD; /* D's, or PD's */
static char d_name[32];
static int rel_p, rel_d, rel_c;
static int drops;
static int released_at_put;
static void (*d_release)(struct device *); /* the platform device's own */

static int *count_of(const struct device *dev)
{
	return dev == P ? &rel_p : dev == DD ? &rel_d : &rel_c;
}

static struct device *victim(void)
{
	return target == T_SELF ? DD : target == T_PARENT ? P : C;
}

static void release_p(struct device *dev)
{
	rel_p++;
	free(dev);
}

static void release_c(struct device *dev)
{
	rel_c++;
	free(dev);
}

/* Counts, then frees the platform or PCI device as the library does. */
static void release_d(struct device *dev)
{
	rel_d++;
	d_release(dev);
}

/* The last reference of the target; of a registered D, one too many. */
static void drop(void)
{
	struct device *v = victim();
	int before = *count_of(v);

	if (drops++)
		return;
	/* Its name, for the WARN: a platform device has it once added. */
	snprintf(d_name, sizeof(d_name), "%s", dev_name(DD));
	if (v == DD && registered(kind))
		put_device(v); /* the owner's, then the registration's */
	/* And a PCI device's, the scan's (pci_bus_remove_all()'s). */
	if (v == DD && is_pci(kind))
		put_device(v);
	put_device(v);
	released_at_put = *count_of(v) - before;
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
	if (kind == K_ATTR_SHOW)
		drop();
	return sysfs_emit(buf, "1\n");
}

static ssize_t val_store(struct device *dev, struct device_attribute *attr,
			 const char *buf, size_t count)
{
	(void)dev;
	(void)attr;
	(void)buf;
	if (kind == K_ATTR_STORE)
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
	if (kind == K_PROBE_FAIL || kind == K_PROBE_OK)
		drop();
	if (kind == K_COMPAT_ACTION)
		assert_int_equal(devm_add_action(&pdev->dev, action_drop, NULL),
				 0);
	return kind == K_PROBE_FAIL ? -ENODEV : 0;
}

static void klp_remove(struct platform_device *pdev)
{
	(void)pdev;
	if (kind == K_REMOVE)
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
	if (kind == K_PCI_PROBE_FAIL || kind == K_PCI_PROBE_OK)
		drop();
	return kind == K_PCI_PROBE_FAIL ? -ENODEV : 0;
}

static void kpci_remove(struct pci_dev *pdev)
{
	(void)pdev;
	if (kind == K_PCI_REMOVE)
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
	P = new_dev("klp-parent", release_p);
	if (is_pci(kind)) {
		/* Registered by the scan, unbound: the owner's reference. */
		assert_int_equal(pci_bus_scan(), 1);
		PD = pci_get_device(0x1af4, 0x1041, NULL);
		assert_non_null(PD);
		DD = &PD->dev;
	} else {
		D = platform_device_alloc("klp", PLATFORM_DEVID_NONE);
		assert_non_null(D);
		DD = &D->dev;
		DD->parent = P;
	}
	d_release = DD->release;
	DD->release = release_d;
	C = new_dev("klp-child", release_c);
	C->parent = DD;
	rel_p = rel_d = rel_c = 0;
	drops = 0;
	released_at_put = -1;
}

static void trigger(void)
{
	char buf[PAGE_SIZE];

	switch (kind) {
	case K_WORK:
		assert_true(schedule_work(&klp_work));
		flush_work(&klp_work);
		break;
	case K_DELAYED_WORK:
		assert_true(schedule_delayed_work(&klp_dwork, 1));
		flush_delayed_work(&klp_dwork);
		break;
	case K_ATTR_SHOW:
		assert_int_equal(platform_device_add(D), 0);
		assert_int_equal(kcompat_attr_show(&D->dev, "val", buf), 2);
		break;
	case K_ATTR_STORE:
		assert_int_equal(platform_device_add(D), 0);
		assert_int_equal(kcompat_attr_store(&D->dev, "val", "1\n", 2),
				 2);
		break;
	case K_PROBE_FAIL:
	case K_PROBE_OK:
		assert_int_equal(platform_device_add(D), 0);
		break;
	case K_COMPAT_ACTION:
	case K_REMOVE:
		assert_int_equal(platform_device_add(D), 0);
		assert_ptr_equal(D->dev.driver, &klp_driver.driver);
		device_release_driver(&D->dev);
		break;
	case K_PCI_PROBE_FAIL:
	case K_PCI_PROBE_OK:
		assert_int_equal(pci_register_driver(&kpci_driver), 0);
		break;
	case K_PCI_REMOVE:
		assert_int_equal(pci_register_driver(&kpci_driver), 0);
		assert_ptr_equal(DD->driver, &kpci_driver.driver);
		device_release_driver(DD);
		break;
	case K_NR:
		break;
	}
}

static void check_cell(void)
{
	int warns = devres_warn_count();
	bool overput = target == T_SELF && registered(kind);

	print_message("cell %s x %s\n", kind_names[kind], target_names[target]);
	build();
	if (registered(kind) && !is_pci(kind))
		assert_int_equal(platform_driver_register(&klp_driver), 0);
	start_capture();
	trigger();
	assert_int_equal(drops, 1);
	devres_set_log_sink(NULL, NULL);
	if (count_prefix("WARNING: ") != (overput ? 1 : 0))
		kc_print_report();
	assert_int_equal(count_prefix("WARNING: "), overput ? 1 : 0);
	if (overput) {
		char want[96];

		snprintf(want, sizeof(want),
			 "WARNING: %s: put_device: released while still "
			 "registered",
			 d_name);
		assert_non_null(strstr(cap.line[0], want));
	}
	if (registered(kind) && target == T_PARENT) {
		/* D, registered, holds its parent: released with D. */
		assert_int_equal(released_at_put, 0);
	} else if (in_own_thread(kind)) {
		/* No call of the library around it: released at once. */
		assert_int_equal(released_at_put, 1);
		assert_int_equal(*count_of(victim()), 1);
	} else {
		assert_int_equal(released_at_put, target == T_CHILD ? 1 : 0);
		assert_int_equal(*count_of(victim()), 1);
	}

	if (is_pci(kind))
		pci_unregister_driver(&kpci_driver);
	else if (registered(kind))
		platform_driver_unregister(&klp_driver);
	if (!rel_d) {
		if (is_pci(kind))
			pci_bus_remove_all();
		else if (registered(kind))
			platform_device_del(D);
		if (target != T_SELF)
			put_device(DD);
	}
	if (target != T_CHILD)
		put_device(C);
	if (target != T_PARENT)
		put_device(P);
	assert_int_equal(rel_p, 1);
	assert_int_equal(rel_d, 1);
	assert_int_equal(rel_c, 1);
	assert_int_equal(devres_warn_count() - warns, overput ? 1 : 0);
}

static void run_kind(enum kind k)
{
	kind = k;
	for (target = T_SELF; target < T_NR; target++)
		if (cell_exists(kind, target))
			check_cell();
}

#define KIND_TEST(k)                                                           \
	static void test_##k(void **state)                                     \
	{                                                                      \
		(void)state;                                                   \
		run_kind(k);                                                   \
	}
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
