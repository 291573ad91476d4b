// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The twin of tests/base/test-last-put.c for the callbacks the compat
 * headers run: a work function, a delayed work's, an attribute's show()
 * and store(), a devm action added through <linux/slab.h>'s wrapper and
 * run at unbind, and a platform driver's probe (failing and succeeding)
 * and remove. Each puts the last reference of a target: the platform
 * device the callback runs on (D), its parent (P) or its child (C). Each
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
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
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
	K_NR
};

static const char *const kind_names[K_NR] = {
	"work",		 "delayed_work", "attr_show", "attr_store",
	"compat_action", "probe_fail",	 "probe_ok",  "remove",
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

/* Run by a thread of the compat layer, in no call of the library. */
static bool in_own_thread(enum kind k)
{
	return k == K_WORK || k == K_DELAYED_WORK;
}

static enum kind kind;
static enum target target;
static struct device *P, *C;
static struct platform_device *D;
static int rel_p, rel_d, rel_c;
static int drops;
static int released_at_put;
static void (*d_release)(struct device *); /* the platform device's own */

static int *count_of(const struct device *dev)
{
	return dev == P ? &rel_p : dev == &D->dev ? &rel_d : &rel_c;
}

static struct device *victim(void)
{
	return target == T_SELF ? &D->dev : target == T_PARENT ? P : C;
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

/* Counts, then frees the platform device as the library does. */
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
	if (v == &D->dev && registered(kind))
		put_device(v); /* the owner's, then the registration's */
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
	D = platform_device_alloc("klp", PLATFORM_DEVID_NONE);
	assert_non_null(D);
	d_release = D->dev.release;
	D->dev.release = release_d;
	D->dev.parent = P;
	C = new_dev("klp-child", release_c);
	C->parent = &D->dev;
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
	if (registered(kind))
		assert_int_equal(platform_driver_register(&klp_driver), 0);
	start_capture();
	trigger();
	assert_int_equal(drops, 1);
	devres_set_log_sink(NULL, NULL);
	if (count_prefix("WARNING: ") != (overput ? 1 : 0))
		kc_print_report();
	assert_int_equal(count_prefix("WARNING: "), overput ? 1 : 0);
	if (overput)
		assert_non_null(strstr(cap.line[0], "WARNING: klp: put_device: "
						    "released while still "
						    "registered"));
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

	if (registered(kind))
		platform_driver_unregister(&klp_driver);
	if (!rel_d) {
		if (registered(kind))
			platform_device_del(D);
		if (target != T_SELF)
			put_device(&D->dev);
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
	T(K_WORK),
	T(K_DELAYED_WORK),
	T(K_ATTR_SHOW),
	T(K_ATTR_STORE),
	T(K_COMPAT_ACTION),
	T(K_PROBE_FAIL),
	T(K_PROBE_OK),
	T(K_REMOVE),
	cmocka_unit_test(every_kind_is_tested),
};

/* Every kind is in the list above: a new one cannot be forgotten. */
static void every_kind_is_tested(void **state)
{
	(void)state;
	assert_int_equal(sizeof(tests) / sizeof(tests[0]), K_NR + 1);
}

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
