// SPDX-License-Identifier: MIT
/* ctest-labels: stress kcompat tsan */
/*
 * Attributes against unbinding: a kernel-style driver whose show() and
 * store() use its driver data (devm memory, which its remove marks dead
 * before the binding's release frees it). Reader and writer threads go
 * through its attributes (the driver's dev_groups and a group added in
 * probe) while the main thread binds and unbinds it, many rounds: every
 * call either runs on live data or finds nothing (-ENOENT), never on data
 * its remove or the release already took (the show checks a mark, ASan
 * sees a use after free, TSan a race with the remove). Then the states one
 * by one (after unbind, a store that unbinds its own device) and the
 * misuses of device_bound_get()/device_bound_put().
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <pthread.h>
#include <sched.h>
#include "kcompat/kctest.h"

#define KATTR_LIVE 0x6c697665u

struct kattr {
	unsigned int mark; /* KATTR_LIVE from probe to remove */
	unsigned int value;
};

static int dead_seen; /* a show() or store() met data not live */
static int inside;    /* show() and store() calls running */

/*
 * Looks at the mark for a while, as a show() that takes time does, and
 * says it is inside, so that the unbinding thread can start then.
 */
static bool kattr_live(struct kattr *k)
{
	bool live = true;

	__atomic_add_fetch(&inside, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 4000 && live; i++)
		live = __atomic_load_n(&k->mark, __ATOMIC_RELAXED) ==
		       KATTR_LIVE;
	__atomic_sub_fetch(&inside, 1, __ATOMIC_RELAXED);
	if (!live)
		__atomic_add_fetch(&dead_seen, 1, __ATOMIC_RELAXED);
	return live;
}

static ssize_t value_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct kattr *k = dev_get_drvdata(dev);

	(void)attr;
	if (!kattr_live(k))
		return -EIO;
	return sysfs_emit(buf, "%u\n",
			  __atomic_load_n(&k->value, __ATOMIC_RELAXED));
}

static ssize_t value_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	struct kattr *k = dev_get_drvdata(dev);
	unsigned int v;
	int ret;

	(void)attr;
	ret = kstrtouint(buf, 0, &v);
	if (ret)
		return ret;
	if (!kattr_live(k))
		return -EIO;
	/* Writers race each other, as two writes of the file would. */
	__atomic_store_n(&k->value, v, __ATOMIC_RELAXED);
	return (ssize_t)count;
}
static DEVICE_ATTR_RW(value);

/* A store that unbinds its own device, as a "remove" file would. */
static ssize_t unbind_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	(void)attr;
	(void)buf;
	device_release_driver(dev);
	return (ssize_t)count;
}
static DEVICE_ATTR_WO(unbind);

static struct attribute *kattr_attrs[] = {
	&dev_attr_value.attr,
	&dev_attr_unbind.attr,
	NULL,
};
ATTRIBUTE_GROUPS(kattr);

static ssize_t extra_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct kattr *k = dev_get_drvdata(dev);

	(void)attr;
	if (!kattr_live(k))
		return -EIO;
	return sysfs_emit(buf, "extra %u\n",
			  __atomic_load_n(&k->value, __ATOMIC_RELAXED));
}
static DEVICE_ATTR_RO(extra);

static struct attribute *kattr_more_attrs[] = {
	&dev_attr_extra.attr,
	NULL,
};

static const struct attribute_group kattr_more = {
	.name = "more",
	.attrs = kattr_more_attrs,
};

static int kattr_probe(struct platform_device *pdev)
{
	struct kattr *k = devm_kzalloc(&pdev->dev, sizeof(*k), GFP_KERNEL);

	if (!k)
		return -ENOMEM;
	k->value = 7;
	__atomic_store_n(&k->mark, KATTR_LIVE, __ATOMIC_RELAXED);
	platform_set_drvdata(pdev, k);
	return devm_device_add_group(&pdev->dev, &kattr_more);
}

static void kattr_remove(struct platform_device *pdev)
{
	struct kattr *k = platform_get_drvdata(pdev);

	__atomic_store_n(&k->mark, 0, __ATOMIC_RELAXED);
}

static struct platform_driver kattr_driver = {
	.probe = kattr_probe,
	.remove = kattr_remove,
	.driver = {
		.name = "kattr",
		.dev_groups = kattr_groups,
	},
};

static struct platform_device *pdev;
static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "kattr", &kattr_driver, true);
	dead_seen = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, &kattr_driver);
}

static bool stop;
static int odd; /* a result neither a value nor -ENOENT */

static void *reader(void *arg)
{
	char buf[PAGE_SIZE];
	long n = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		ssize_t a = kcompat_attr_show(&pdev->dev, "value", buf);
		ssize_t b = kcompat_attr_show(&pdev->dev, "more/extra", buf);
		ssize_t c = kcompat_attr_store(&pdev->dev, "value", "7\n", 2);

		if (!(a == 2 || a == -ENOENT) || !(b == 8 || b == -ENOENT) ||
		    !(c == 2 || c == -ENOENT))
			__atomic_add_fetch(&odd, 1, __ATOMIC_RELAXED);
		n++;
	}
	return (void *)n;
}

/* Three threads in the attributes, the main one unbinding and binding. */
static void attrs_race_unbind(void **state)
{
	pthread_t t[3];
	int warns = devres_warn_count();

	(void)state;
	stop = false;
	odd = 0;
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, NULL), 0);
	for (int round = 0; round < 300; round++) {
		/* Into the remove while a call is inside, when one comes. */
		for (int spin = 0; spin < 100000 &&
				   !__atomic_load_n(&inside, __ATOMIC_RELAXED);
		     spin++)
			sched_yield();
		device_release_driver(&pdev->dev);
		assert_null(pdev->dev.driver);
		assert_int_equal(device_attach(&pdev->dev), 1);
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(dead_seen, 0);
	assert_int_equal(odd, 0);
	assert_int_equal(devres_warn_count(), warns);
}

/* Unbound, the attributes are gone, the added group's too. */
static void after_unbind(void **state)
{
	char buf[PAGE_SIZE];

	(void)state;
	assert_int_equal(kcompat_attr_show(&pdev->dev, "value", buf), 2);
	assert_string_equal(buf, "7\n");
	assert_int_equal(kcompat_attr_show(&pdev->dev, "more/extra", buf), 8);
	device_release_driver(&pdev->dev);
	assert_int_equal(kcompat_attr_show(&pdev->dev, "value", buf), -ENOENT);
	assert_int_equal(kcompat_attr_show(&pdev->dev, "more/extra", buf),
			 -ENOENT);
	assert_int_equal(kcompat_attr_store(&pdev->dev, "value", "1", 1),
			 -ENOENT);
	assert_int_equal(dead_seen, 0);
	/* Bound again: there again, the data new. */
	assert_int_equal(device_attach(&pdev->dev), 1);
	assert_int_equal(kcompat_attr_store(&pdev->dev, "value", "0x10\n", 5),
			 5);
	assert_int_equal(kcompat_attr_show(&pdev->dev, "value", buf), 3);
	assert_string_equal(buf, "16\n");
}

/*
 * A store that unbinds its own device: the unbind cannot wait for the
 * store that called it; one WARN, the device unbound, the store returns.
 */
static void store_unbinds_own_device(void **state)
{
	char buf[PAGE_SIZE];
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(kcompat_attr_store(&pdev->dev, "unbind", "1", 1), 1);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_true(kc_said("device_release_driver: unbound by a call that "
			    "holds its binding"));
	assert_null(pdev->dev.driver);
	assert_int_equal(kcompat_attr_show(&pdev->dev, "value", buf), -ENOENT);
	assert_int_equal(device_attach(&pdev->dev), 1);
}

/* Bad names and buffers, and a bad device: -EINVAL, nothing called. */
static void bad_arguments(void **state)
{
	char buf[PAGE_SIZE];
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(kcompat_attr_show(&pdev->dev, NULL, buf), -EINVAL);
	assert_int_equal(kcompat_attr_show(&pdev->dev, "value", NULL), -EINVAL);
	assert_int_equal(kcompat_attr_store(&pdev->dev, ERR_PTR(-EINVAL), "1",
					    1),
			 -EINVAL);
	assert_int_equal(kcompat_attr_store(&pdev->dev, "value", (void *)16, 1),
			 -EINVAL);
	assert_int_equal(devres_warn_count(), warns);
	assert_int_equal(kcompat_attr_show(NULL, "value", buf), -EINVAL);
	assert_int_equal(kcompat_attr_show(ERR_PTR(-ENODEV), "value", buf),
			 -EINVAL);
	assert_int_equal(devres_warn_count(), warns + 2);
}

/*
 * The hold itself: unbound, put without get, past the limit.
 * limit-cell: src/base/active.c:mine
 * limit-cell: src/base/active.c:held
 */
static void bound_hold_misuse(void **state)
{
	struct device *dev = &pdev->dev;
	int warns = devres_warn_count();

	(void)state;
	device_bound_put(dev);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_true(kc_said("device_bound_put: this thread holds no binding"));
	for (int i = 0; i < DEVRES_BOUND_HELD_MAX; i++)
		assert_int_equal(device_bound_get(dev), 0);
	assert_int_equal(device_bound_get(dev), -EBUSY);
	assert_int_equal(devres_warn_count(), warns + 2);
	for (int i = 0; i < DEVRES_BOUND_HELD_MAX; i++)
		device_bound_put(dev);
	assert_int_equal(devres_warn_count(), warns + 2);
	device_release_driver(dev);
	assert_int_equal(device_bound_get(dev), -ENODEV);
	assert_int_equal(devres_warn_count(), warns + 2);
	assert_int_equal(device_attach(dev), 1);
	assert_int_equal(device_bound_get(dev), 0);
	device_bound_put(dev);
	assert_int_equal(devres_warn_count(), warns + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(attrs_race_unbind, setup,
						teardown),
		cmocka_unit_test_setup_teardown(after_unbind, setup, teardown),
		cmocka_unit_test_setup_teardown(store_unbinds_own_device, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(bound_hold_misuse, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
