// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Attribute groups added to a device, managed and not, given back in
 * every way: each (add, remove) pair a kernel-style driver can make, in
 * its probe and remove, with the WARN each wrong pair gets (exactly one,
 * at the culprit call when there is one, naming the device and the call to
 * use), the attributes shown while bound and gone after, and the ledger
 * back where it was. Then a hand removal racing the device's unbind, many
 * rounds: one WARN a round, the node freed once (ASan, TSan).
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/sysfs.h>
#include <pthread.h>
#include "kcompat/kctest.h"

static ssize_t extra_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	(void)dev;
	(void)attr;
	return sysfs_emit(buf, "x\n");
}
static DEVICE_ATTR_RO(extra);

static struct attribute *kgrp_attrs[] = {
	&dev_attr_extra.attr,
	NULL,
};

static const struct attribute_group kgrp_group = {
	.name = "g",
	.attrs = kgrp_attrs,
};

static const struct attribute_group *kgrp_groups[] = {
	&kgrp_group,
	NULL,
};

static const struct attribute_group kgrp_never_added = {
	.name = "never",
	.attrs = kgrp_attrs,
};

/* How the probe adds and the remove takes back. */
enum how {
	DEVM_ONE,	   /* devm_device_add_group(), nothing in remove */
	DEVM_LIST,	   /* devm_device_add_groups(), nothing in remove */
	DEVM_ONE_BY_HAND,  /* devm_device_add_group(), device_remove_group() */
	DEVM_LIST_BY_HAND, /* devm_device_add_groups(), device_remove_groups() */
	DEVM_TWICE,	   /* device_remove_group() twice of a devm group */
	PLAIN_ONE,	   /* device_add_group() and device_remove_group() */
	PLAIN_LIST,	   /* device_add_groups() and device_remove_groups() */
	PLAIN_FORGOTTEN,   /* device_add_group(), nothing in remove */
	NEVER_ADDED,	   /* device_remove_group() of a group not added */
	REMOVE_NULL,	   /* device_remove_group(dev, NULL) */
};

static enum how how;

static int kgrp_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;

	switch (how) {
	case DEVM_ONE:
	case DEVM_ONE_BY_HAND:
	case DEVM_TWICE:
		return devm_device_add_group(dev, &kgrp_group);
	case DEVM_LIST:
	case DEVM_LIST_BY_HAND:
		return devm_device_add_groups(dev, kgrp_groups);
	case PLAIN_ONE:
	case PLAIN_FORGOTTEN:
		return device_add_group(dev, &kgrp_group);
	case PLAIN_LIST:
		return device_add_groups(dev, kgrp_groups);
	default:
		return 0;
	}
}

static void kgrp_remove(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;

	switch (how) {
	case DEVM_ONE_BY_HAND:
	case PLAIN_ONE:
		device_remove_group(dev, &kgrp_group);
		break;
	case DEVM_TWICE:
		device_remove_group(dev, &kgrp_group);
		device_remove_group(dev, &kgrp_group);
		break;
	case DEVM_LIST_BY_HAND:
	case PLAIN_LIST:
		device_remove_groups(dev, kgrp_groups);
		break;
	case NEVER_ADDED:
		device_remove_group(dev, &kgrp_never_added);
		break;
	case REMOVE_NULL:
		device_remove_group(dev, NULL);
		device_remove_groups(dev, NULL);
		break;
	default:
		break;
	}
}

static struct platform_driver kgrp_driver = {
	.probe = kgrp_probe,
	.remove = kgrp_remove,
	.driver = { .name = "kgrp" },
};

static struct platform_device *pdev;
static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kgrp", NULL, true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, NULL);
}

struct pair {
	enum how how;
	bool shown;	  /* "g/extra" readable while bound */
	const char *warn; /* the one WARN of the unbind, or NULL for none */
};

static const struct pair pairs[] = {
	{ DEVM_ONE, true, NULL },
	{ DEVM_LIST, true, NULL },
	{ DEVM_ONE_BY_HAND, true,
	  "kgrp: device_remove_group: an attribute group acquired with "
	  "devm_device_add_group(): use nothing, the device's release removes "
	  "them; released now, and taken off the device" },
	{ DEVM_LIST_BY_HAND, true,
	  "kgrp: device_remove_groups: attribute groups acquired with "
	  "devm_device_add_groups(): use nothing, the device's release "
	  "removes them; released now, and taken off the device" },
	{ PLAIN_ONE, true, NULL },
	{ PLAIN_LIST, true, NULL },
	{ PLAIN_FORGOTTEN, true,
	  "kgrp: device_add_group: attribute groups added and never removed: "
	  "removed with the device's resources" },
	{ NEVER_ADDED, false, "kgrp: device_remove_group: attribute groups" },
	{ REMOVE_NULL, false, NULL },
};

/* Each pair: bound, shown or not, unbound with its WARN, nothing left. */
static void every_pair(void **state)
{
	char buf[PAGE_SIZE];

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct pair *p = &pairs[i];
		int warns;

		how = p->how;
		assert_int_equal(platform_driver_register(&kgrp_driver), 0);
		assert_ptr_equal(pdev->dev.driver, &kgrp_driver.driver);
		assert_int_equal(kcompat_attr_show(&pdev->dev, "g/extra", buf),
				 p->shown ? 2 : -ENOENT);
		cap.n = 0;
		warns = devres_warn_count();
		platform_driver_unregister(&kgrp_driver);
		if (devres_warn_count() != warns + (p->warn ? 1 : 0) ||
		    (p->warn && !kc_said(p->warn)))
			fail_msg("pair %zu: %d WARNs, expected \"%s\"", i,
				 devres_warn_count() - warns,
				 p->warn ? p->warn : "(none)");
		assert_int_equal(kcompat_attr_show(&pdev->dev, "g/extra", buf),
				 -ENOENT);
		assert_int_equal(devres_check(&pdev->dev), 0);
	}
}

/* Twice by hand: the first is the managed WARN, the second finds none. */
static void devm_removed_twice(void **state)
{
	int warns;

	(void)state;
	how = DEVM_TWICE;
	assert_int_equal(platform_driver_register(&kgrp_driver), 0);
	warns = devres_warn_count();
	platform_driver_unregister(&kgrp_driver);
	assert_int_equal(devres_warn_count(), warns + 2);
	assert_true(kc_said("device_remove_group: an attribute group acquired "
			    "with devm_device_add_group()"));
	assert_true(kc_said("were not added to the device: nothing removed"));
}

/* A bad device: -EINVAL and one WARN, no node left behind. */
static void bad_device(void **state)
{
	struct device *bad[] = { NULL, ERR_PTR(-ENODEV), (void *)16 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int warns = devres_warn_count();

		assert_int_equal(devm_device_add_group(bad[i], &kgrp_group),
				 -EINVAL);
		assert_int_equal(devm_device_add_groups(bad[i], kgrp_groups),
				 -EINVAL);
		assert_int_equal(device_add_group(bad[i], &kgrp_group),
				 -EINVAL);
		assert_int_equal(devres_warn_count(), warns + 3);
	}
}

static struct device *racing;

static void *hand_remove(void *arg)
{
	(void)arg;
	device_remove_group(racing, &kgrp_group);
	return NULL;
}

/*
 * A devm group taken by hand on one thread while the device unbinds on
 * another: whichever comes first has the node; one WARN either way (the
 * managed one, or "not added"), the node freed once.
 */
static void hand_removal_races_unbind(void **state)
{
	(void)state;
	how = DEVM_ONE;
	racing = &pdev->dev;
	assert_int_equal(platform_driver_register(&kgrp_driver), 0);
	for (int round = 0; round < 200; round++) {
		pthread_t t;
		int warns = devres_warn_count();

		kc_rebind(pdev);
		assert_int_equal(pthread_create(&t, NULL, hand_remove, NULL),
				 0);
		device_release_driver(&pdev->dev);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(devres_warn_count(), warns + 1);
	}
	platform_driver_unregister(&kgrp_driver);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_pair, setup, teardown),
		cmocka_unit_test_setup_teardown(devm_removed_twice, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_device, setup, teardown),
		cmocka_unit_test_setup_teardown(hand_removal_races_unbind,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
