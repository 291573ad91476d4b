// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * An attribute group added to a device that shows it already: every
 * (first add, second add) pair of devm_device_add_group(),
 * devm_device_add_groups(), device_add_group(), device_add_groups() and
 * device_add_group() of another group of the same name. The kernel's
 * sysfs refuses the second (the group's directory or files exist, -EEXIST,
 * its "duplicate filename" WARN). Both were recorded, so a removal by
 * hand took whichever record was newest: a driver's device_remove_group()
 * of its own group took the devm_ call's record instead (a WARN for a
 * managed group given back by hand), and the unbind then WARNed that the
 * driver's own group was never removed: two WARNs, both at the wrong
 * call, for a group removed as the kernel asks. Now the second add is
 * -EEXIST with one WARN naming the device and the call, no record more;
 * the first add's own release (device_remove_group(s)() for a plain one,
 * the device's release for a managed one) is then quiet.
 *
 * Then the same group given back by hand and added again, by hand, on
 * the same device: the removal's WARN, and the new record untouched by
 * the device's release. And two threads adding one group at once, 200
 * rounds: one add wins, the other is refused, one record each round.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/err.h>
#include <linux/platform_device.h>
#include <linux/sysfs.h>
#include <pthread.h>
#include "kcompat/kctest.h"

static ssize_t twice_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	(void)dev;
	(void)attr;
	return sysfs_emit(buf, "x\n");
}
static DEVICE_ATTR_RO(twice);

static struct attribute *twice_attrs[] = {
	&dev_attr_twice.attr,
	NULL,
};

static const struct attribute_group grp = {
	.name = "g",
	.attrs = twice_attrs,
};

/* Another group, of the same name: the same directory. */
static const struct attribute_group grp_same_name = {
	.name = "g",
	.attrs = twice_attrs,
};

static const struct attribute_group *grp_list[] = {
	&grp,
	NULL,
};

static struct platform_device *pdev;

/* An add, its name in a WARN, and its own release (NULL: the device's). */
struct add {
	const char *func;
	int (*add)(struct device *dev);
	void (*remove)(struct device *dev);
};

static int devm_one(struct device *dev)
{
	return devm_device_add_group(dev, &grp);
}

static int devm_list(struct device *dev)
{
	return devm_device_add_groups(dev, grp_list);
}

static int plain_one(struct device *dev)
{
	return device_add_group(dev, &grp);
}

static void plain_one_remove(struct device *dev)
{
	device_remove_group(dev, &grp);
}

static int plain_list(struct device *dev)
{
	return device_add_groups(dev, grp_list);
}

static void plain_list_remove(struct device *dev)
{
	device_remove_groups(dev, grp_list);
}

static int plain_name(struct device *dev)
{
	return device_add_group(dev, &grp_same_name);
}

static void plain_name_remove(struct device *dev)
{
	device_remove_group(dev, &grp_same_name);
}

static const struct add adds[] = {
	{ "devm_device_add_group", devm_one, NULL },
	{ "devm_device_add_groups", devm_list, NULL },
	{ "device_add_group", plain_one, plain_one_remove },
	{ "device_add_groups", plain_list, plain_list_remove },
	{ "device_add_group", plain_name, plain_name_remove },
};

#define NR_ADDS (sizeof(adds) / sizeof(adds[0]))

static void count_one(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(*(int *)data)++;
}

/* The device's records of attribute groups. */
static int records(void)
{
	int n = 0;

	devres_for_each_res(&pdev->dev, kcompat_groups_release, NULL, NULL,
			    count_one, &n);
	return n;
}

static void second_add_refused(void **state)
{
	struct device *dev;

	(void)state;
	dev = &pdev->dev;
	for (size_t i = 0; i < NR_ADDS; i++) {
		for (size_t j = 0; j < NR_ADDS; j++) {
			const struct add *a = &adds[i], *b = &adds[j];
			char want[160];
			int w0, ret;

			assert_int_equal(a->add(dev), 0);
			w0 = devres_warn_count();
			cap.n = 0;
			ret = b->add(dev);
			if (ret != -EEXIST || devres_warn_count() != w0 + 1)
				fail_msg("%s (#%zu) after %s (#%zu): %d, %d "
					 "WARNs; want -EEXIST, 1 WARN",
					 b->func, j, a->func, i, ret,
					 devres_warn_count() - w0);
			snprintf(want, sizeof(want),
				 "WARNING: twice: %s: attribute groups ",
				 b->func);
			assert_true(kc_said(want));
			assert_true(kc_said("on the device already: refused"));
			assert_int_equal(records(), 1);
			/* The first add's own release: quiet, nothing left. */
			if (a->remove)
				a->remove(dev);
			else
				devres_release_all(dev);
			if (devres_warn_count() != w0 + 1)
				fail_msg("the release of %s (#%zu): %d WARNs",
					 a->func, i, devres_warn_count() - w0);
			assert_int_equal(records(), 0);
		}
	}
}

/* Given back by hand, added again by hand: the new record is untouched. */
static void removed_by_hand_then_added_again(void **state)
{
	struct device *dev;
	int w0;

	(void)state;
	dev = &pdev->dev;
	for (size_t i = 0; i < 2; i++) {
		w0 = devres_warn_count();
		assert_int_equal(adds[i].add(dev), 0);
		if (i == 0)
			device_remove_group(dev, &grp);
		else
			device_remove_groups(dev, grp_list);
		assert_int_equal(devres_warn_count(), w0 + 1);
		assert_int_equal(records(), 0);
		assert_int_equal(plain_one(dev), 0);
		assert_int_equal(records(), 1);
		/* No managed record of the group is left to release. */
		assert_int_equal(devres_release_all(dev), 1);
		assert_int_equal(records(), 0);
		/* The unbind's WARN: the driver's own group never removed. */
		assert_int_equal(devres_warn_count(), w0 + 2);
		assert_true(kc_said("device_add_group: attribute groups added "
				    "and never removed"));
	}
}

static pthread_barrier_t go;
static int results[2];

static void *adder(void *arg)
{
	int i = (int)(intptr_t)arg;

	pthread_barrier_wait(&go);
	results[i] = i ? plain_one(&pdev->dev) : devm_one(&pdev->dev);
	return NULL;
}

static void two_adds_at_once(void **state)
{
	pthread_t t[2];

	(void)state;
	assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
	for (int round = 0; round < 200; round++) {
		int w0 = devres_warn_count();

		for (intptr_t i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&t[i], NULL, adder,
							(void *)i),
					 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true((results[0] == 0 && results[1] == -EEXIST) ||
			    (results[0] == -EEXIST && results[1] == 0));
		assert_int_equal(devres_warn_count(), w0 + 1);
		assert_int_equal(records(), 1);
		if (results[1] == 0)
			plain_one_remove(&pdev->dev);
		else
			devres_release_all(&pdev->dev);
		assert_int_equal(devres_warn_count(), w0 + 1);
		assert_int_equal(records(), 0);
	}
	pthread_barrier_destroy(&go);
}

static int setup(void **state)
{
	(void)state;
	kc_bare_setup(&pdev, "twice", NULL, true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_bare_teardown(pdev, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(second_add_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			removed_by_hand_then_added_again, setup, teardown),
		cmocka_unit_test_setup_teardown(two_adds_at_once, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
