// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault */
/*
 * driver_probe_sweep(): every failure point of a driver's probe, through
 * the driver core's real bind and unbind, with the leaks found named by
 * their failure point.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"

static const struct bus_type sweep_bus = { .name = "sweepbus" };
static const struct bus_type other_bus = { .name = "otherbus" };

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static struct device the_dev;
static struct devres_ledger start;
static int probes, removes, actions_run;

static int group_setup(void **state)
{
	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	assert_int_equal(bus_register(&sweep_bus), 0);
	assert_int_equal(bus_register(&other_bus), 0);
	the_dev = (struct device){ .bus = &sweep_bus, .release = dev_release };
	device_initialize(&the_dev);
	assert_int_equal(dev_set_name(&the_dev, "sweep.0"), 0);
	/* No driver on the bus: added and unbound. */
	assert_int_equal(device_add(&the_dev), 0);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	device_del(&the_dev);
	put_device(&the_dev);
	bus_unregister(&other_bus);
	bus_unregister(&sweep_bus);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	probes = removes = actions_run = 0;
	start_log_capture();
	devres_ledger_snapshot(&start);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	/* What the test registered goes first, even after a failure. */
	t_undo_all();
	devres_set_log_sink(NULL, NULL);
	assert_null(the_dev.driver);
	assert_false(device_is_bound(&the_dev));
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&start, &now, stderr), 0);
	assert_int_equal(devres_fail_nth_get(), 0);
	return 0;
}

/* How many fault-injectable calls a successful bind of @drv makes. */
static unsigned int calls_of_bind(struct device_driver *drv, struct device *dev)
{
	unsigned int n;

	devres_fail_nth(UINT_MAX);
	assert_int_equal(device_driver_attach(drv, dev), 0);
	n = UINT_MAX - devres_fail_nth_get();
	devres_fail_nth(0);
	device_release_driver(dev);
	return n;
}

static void count_action(void *data)
{
	(void)data;
	actions_run++;
}

struct priv {
	char *buf;
	void *ports;
	const char *name;
	void *fallback;
};

/*
 * libata-style: the driver's own resources, then a mid-layer that opens a
 * group and, on failure, rolls back only what it acquired.
 */
static bool close_instead_of_remove;

static int host_init(struct device *dev, struct priv *priv)
{
	void *grp = devres_open_group(dev, NULL, GFP_KERNEL);

	if (!grp)
		return -ENOMEM;
	priv->ports = devm_kcalloc(dev, 4, 64, GFP_KERNEL);
	if (!priv->ports)
		goto fail;
	priv->name = devm_kasprintf(dev, GFP_KERNEL, "%s-host", dev_name(dev));
	if (!priv->name)
		goto fail;
	if (devm_add_action(dev, count_action, priv))
		goto fail;
	if (close_instead_of_remove)
		devres_close_group(dev, grp);
	else
		devres_remove_group(dev, grp);
	return 0;
fail:
	devres_release_group(dev, grp);
	return -ENOMEM;
}

static int good_probe(struct device *dev)
{
	struct priv *priv = devm_kzalloc(dev, sizeof(*priv), GFP_KERNEL);
	int ret;

	probes++;
	if (!priv)
		return -ENOMEM;
	dev_set_drvdata(dev, priv);
	priv->buf = devm_kmalloc(dev, 256, GFP_KERNEL);
	if (!priv->buf)
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, count_action, priv);
	if (ret)
		return ret;
	return host_init(dev, priv);
}

static void good_remove(struct device *dev)
{
	struct priv *priv = dev_get_drvdata(dev);

	assert_non_null(priv);
	assert_non_null(priv->buf);
	removes++;
}

static struct device_driver good_drv = {
	.name = "good",
	.bus = &sweep_bus,
	.probe = good_probe,
	.remove = good_remove,
};

static void good_driver_sweeps_clean(void **state)
{
	struct devres_sweep_result r = { 99, 99, 99, 99, 99, 99 };
	unsigned int points;
	char want[256];

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		close_instead_of_remove = pass;
		points = calls_of_bind(&good_drv, &the_dev);
		/* kzalloc, kmalloc, action, group, kcalloc, kasprintf, action */
		assert_true(points >= 7);
		cap.n = 0;
		removes = 0;
		assert_int_equal(driver_probe_sweep(&good_drv, &the_dev, &r),
				 0);
		assert_int_equal(r.points, points);
		assert_int_equal(r.leaks, 0);
		/* Only the run that reached no fault bound the driver. */
		assert_int_equal(removes, 1);
		snprintf(want, sizeof(want),
			 "probe sweep of good on sweep.0: %u failure points, 0 "
			 "leaks",
			 points);
		assert_int_equal(line_level(want), DEVRES_LOG_INFO);
		assert_int_equal(cap.n, 1);
	}
	close_instead_of_remove = false;
}

/* Forgets devres_free() of a node when the allocation after it fails. */
static void *leaked_node;
static unsigned int left_at_leak;

static int leaky_probe(struct device *dev)
{
	void *res;

	probes++;
	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	res = devres_alloc(node_release, 40, GFP_KERNEL);
	if (!res)
		return -ENOMEM;
	left_at_leak = devres_fail_nth_get();
	if (!devm_kmalloc(dev, 64, GFP_KERNEL)) {
		leaked_node = res;
		return -ENOMEM;
	}
	devres_add(dev, res);
	if (!devm_kmalloc(dev, 64, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

static struct device_driver leaky_drv = {
	.name = "leaky",
	.bus = &sweep_bus,
	.probe = leaky_probe,
};

static void leak_caught_at_its_point(void **state)
{
	struct devres_sweep_result r;
	unsigned int points, leak_point;
	struct devres_ledger l;
	char want[256];

	(void)state;
	points = calls_of_bind(&leaky_drv, &the_dev);
	/* The failure point of the devm_kmalloc after devres_alloc. */
	leak_point = UINT_MAX - left_at_leak + 1;
	assert_in_range(leak_point, 3, points - 1);
	devres_ledger_snapshot(&l);
	cap.n = 0;
	assert_int_equal(driver_probe_sweep(&leaky_drv, &the_dev, &r), 1);
	assert_int_equal(r.points, points);
	assert_int_equal(r.leaks, 1);
	assert_non_null(leaked_node);

	snprintf(want, sizeof(want),
		 "probe sweep of leaky on sweep.0: leak at failure point %u "
		 "(probe returned -ENOMEM); reproduce with "
		 "driver_probe_fail_nth(<leaky>, <sweep.0>, %u)",
		 leak_point, leak_point);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	assert_int_equal(count_prefix("probe sweep of leaky on sweep.0: leak"),
			 1);
	snprintf(want, sizeof(want),
		 "probe sweep of leaky on sweep.0:   nodes: %ld -> %ld (+1)",
		 l.nodes, l.nodes + 1);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	snprintf(want, sizeof(want),
		 "probe sweep of leaky on sweep.0:   node_bytes: %ld -> %ld "
		 "(+40)",
		 l.node_bytes, l.node_bytes + 40);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	assert_int_equal(count_prefix("probe sweep of leaky on sweep.0:   "),
			 2);
	snprintf(want, sizeof(want),
		 "probe sweep of leaky on sweep.0: %u failure points, 1 leaks",
		 points);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);

	/* The point reproduces on its own, as the report says. */
	devres_free(leaked_node);
	leaked_node = NULL;
	devres_fail_nth(leak_point);
	assert_int_equal(device_driver_attach(&leaky_drv, &the_dev), -ENOMEM);
	devres_fail_nth(0);
	assert_non_null(leaked_node);
	devres_free(leaked_node);
	leaked_node = NULL;
	/* And with the call the report names, whatever came before. */
	for (int i = 0; i < 5; i++)
		devres_free(devres_alloc(node_release, 8, GFP_KERNEL));
	devres_ledger_snapshot(&l);
	assert_int_equal(driver_probe_fail_nth(&leaky_drv, &the_dev,
					       leak_point),
			 -ENOMEM);
	assert_int_equal(devres_fail_nth_get(), 0);
	assert_non_null(leaked_node);
	assert_null(the_dev.driver);
	devres_free(leaked_node);
	leaked_node = NULL;
	/* Past the last point: binds, and is unbound again. */
	assert_int_equal(
		driver_probe_fail_nth(&leaky_drv, &the_dev, points + 1), 0);
	assert_null(the_dev.driver);
	assert_null(leaked_node);
}

/* A probe that never succeeds, though it acquires something first. */
static int broken_ret;

static int broken_probe(struct device *dev)
{
	probes++;
	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	return broken_ret;
}

static struct device_driver broken_drv = {
	.name = "broken",
	.bus = &sweep_bus,
	.probe = broken_probe,
};

static void broken_probe_fails_the_sweep(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	broken_ret = -ENODEV;
	assert_int_equal(driver_probe_sweep(&broken_drv, &the_dev, &r),
			 -ECANCELED);
	assert_int_equal(r.points, 1);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(line_level("probe sweep of broken on sweep.0: FAILED: "
				    "probe returned -ENODEV with no fault "
				    "injected"),
			 DEVRES_LOG_WARNING);
	assert_int_equal(line_level("probe sweep of broken on sweep.0: 1 "
				    "failure points, 0 leaks, and the run "
				    "with no fault failed"),
			 DEVRES_LOG_WARNING);
}

static void deferring_probe_fails_the_sweep(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	broken_ret = -EPROBE_DEFER;
	assert_int_equal(driver_probe_sweep(&broken_drv, &the_dev, &r),
			 -ECANCELED);
	assert_int_equal(line_level("probe sweep of broken on sweep.0: FAILED: "
				    "probe returned -EPROBE_DEFER with no "
				    "fault injected"),
			 DEVRES_LOG_WARNING);
	/* The reproducer reports the deferral as the probe said it. */
	assert_int_equal(driver_probe_fail_nth(&broken_drv, &the_dev, 0),
			 -EPROBE_DEFER);
}

/* With the log on, each run starts with a line of its own. */
static void runs_marked_in_log(void **state)
{
	struct devres_sweep_result r;
	unsigned int points;
	char want[160];

	(void)state;
	points = calls_of_bind(&good_drv, &the_dev);
	cap.n = 0;
	devres_set_log(true);
	assert_int_equal(driver_probe_sweep(&good_drv, &the_dev, &r), 0);
	devres_set_log(false);
	assert_in_range(cap.n, (int)points + 1, CAP_LINES);
	assert_int_equal(r.points, points);
	snprintf(want, sizeof(want),
		 "probe sweep of good on sweep.0: ---- run 1: call 1 of the "
		 "probe fails ----");
	assert_int_equal(line_level(want), DEVRES_LOG_DEBUG);
	assert_int_equal(count_prefix("probe sweep of good on sweep.0: ---- "
				      "run "),
			 (int)points + 1);
}

/* Does without an optional buffer when it cannot have it. */
static int optional_probe(struct device *dev)
{
	probes++;
	if (!devm_kmalloc(dev, 8, GFP_KERNEL))
		return -ENOMEM;
	(void)devm_kmalloc(dev, 1 << 16, GFP_KERNEL); /* DMA ring, optional */
	if (devm_add_action(dev, count_action, NULL))
		return -ENOMEM;
	return 0;
}

static void optional_remove(struct device *dev)
{
	(void)dev;
	removes++;
}

static struct device_driver optional_drv = {
	.name = "optional",
	.bus = &sweep_bus,
	.probe = optional_probe,
	.remove = optional_remove,
};

static void swallowed_failure_is_no_leak(void **state)
{
	struct devres_sweep_result r;
	unsigned int points;

	(void)state;
	points = calls_of_bind(&optional_drv, &the_dev);
	removes = 0;
	assert_int_equal(driver_probe_sweep(&optional_drv, &the_dev, &r), 0);
	assert_int_equal(r.points, points);
	assert_int_equal(r.leaks, 0);
	/* Bound twice: with the optional buffer failed, and with no fault. */
	assert_int_equal(removes, 2);
	assert_int_equal(count_prefix("probe sweep of optional on sweep.0: "
				      "leak"),
			 0);
}

/*
 * Falls back to a buffer outside the device's resources when the optional
 * one fails, and its remove forgets it: succeeds, then leaks at unbind.
 */
static void *fallback_node;

static int fallback_probe(struct device *dev)
{
	struct priv *priv = devm_kzalloc(dev, sizeof(*priv), GFP_KERNEL);

	probes++;
	if (!priv)
		return -ENOMEM;
	dev_set_drvdata(dev, priv);
	if (!devm_kmalloc(dev, 1 << 16, GFP_KERNEL)) {
		priv->fallback = devres_alloc(node_release, 512, GFP_KERNEL);
		if (!priv->fallback)
			return -ENOMEM;
		fallback_node = priv->fallback;
	}
	return 0;
}

static struct device_driver fallback_drv = {
	.name = "fallback",
	.bus = &sweep_bus,
	.probe = fallback_probe,
};

static void success_with_fault_then_leak_at_unbind(void **state)
{
	struct devres_sweep_result r;
	unsigned int points;
	char want[256];

	(void)state;
	points = calls_of_bind(&fallback_drv, &the_dev);
	assert_int_equal(driver_probe_sweep(&fallback_drv, &the_dev, &r), 1);
	/* The fallback's call comes after the fault: not a point of its own. */
	assert_int_equal(r.points, points);
	assert_int_equal(r.leaks, 1);
	snprintf(want, sizeof(want),
		 "probe sweep of fallback on sweep.0: leak at failure point %u "
		 "(probe returned 0, then undone); reproduce with "
		 "driver_probe_fail_nth(<fallback>, <sweep.0>, %u)",
		 points, points);
	assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	assert_non_null(fallback_node);
	devres_free(fallback_node);
	fallback_node = NULL;
}

/* An unregistered platform driver probes through the platform bus. */
static int pprobe(struct platform_device *pdev)
{
	probes++;
	if (!devm_kzalloc(&pdev->dev, 16, GFP_KERNEL))
		return -ENOMEM;
	if (!devm_kstrdup(&pdev->dev, pdev->name, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

static void premove(struct platform_device *pdev)
{
	(void)pdev;
	removes++;
}

static struct platform_driver pdrv = {
	.probe = pprobe,
	.remove = premove,
	.driver = { .name = "psweep" },
};

static void platform_driver_unregistered(void **state)
{
	struct platform_device *pdev;
	struct devres_ledger base, now;
	struct devres_sweep_result r;

	(void)state;
	pdev = platform_device_register_simple("psweep", 3, NULL, 0);
	assert_false(IS_ERR(pdev));
	devres_ledger_snapshot(&base);
	probes = removes = 0;
	assert_int_equal(driver_probe_sweep(&pdrv.driver, &pdev->dev, &r), 0);
	/* The platform bus called our probe: 2 failing runs, 1 good one. */
	assert_int_equal(probes, 3);
	assert_int_equal(removes, 1);
	assert_int_equal(r.points, 2);
	assert_int_equal(r.leaks, 0);
	assert_null(pdrv.driver.bus);
	assert_null(pdev->dev.driver);
	assert_int_equal(line_level("probe sweep of psweep on psweep.3: 2 "
				    "failure points, 0 leaks"),
			 DEVRES_LOG_INFO);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&base, &now, stderr), 0);
	platform_device_unregister(pdev);
}

/* The swept driver registers and binds as usual afterwards. */
static void driver_usable_after(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	assert_int_equal(driver_probe_sweep(&good_drv, &the_dev, &r), 0);
	assert_ptr_equal(good_drv.bus, &sweep_bus);
	assert_int_equal(t_driver_register(&good_drv), 0);
	assert_ptr_equal(the_dev.driver, &good_drv);
	assert_true(device_is_bound(&the_dev));
	t_driver_unregister(&good_drv);
	assert_null(the_dev.driver);
}

static int sweep_ret;

static int probe_that_sweeps(struct device *dev)
{
	struct devres_sweep_result r;

	sweep_ret = driver_probe_sweep(&good_drv, dev, &r);
	return 0;
}

static struct device_driver selfsweep_drv = {
	.name = "selfsweep",
	.bus = &sweep_bus,
	.probe = probe_that_sweeps,
};

static int nested_op(void *ctx)
{
	struct devres_sweep_result r;

	(void)ctx;
	sweep_ret = driver_probe_sweep(&good_drv, &the_dev, &r);
	return 0;
}

static void refused(void **state)
{
	struct device_driver stranger = { .name = "stranger",
					  .bus = &other_bus };
	struct device lonely = { .bus = &sweep_bus, .release = dev_release };
	struct devres_sweep_result r;
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(driver_probe_sweep(NULL, &the_dev, &r), -EINVAL);
	assert_int_equal(driver_probe_sweep(&good_drv, NULL, &r), -EINVAL);
	assert_int_equal(driver_probe_sweep(&good_drv, &the_dev, NULL),
			 -EINVAL);
	assert_int_equal(driver_probe_sweep(&stranger, &the_dev, &r), -EINVAL);
	assert_int_equal(devres_warn_count() - warns, 4);

	/* Initialized but never added. */
	device_initialize(&lonely);
	assert_int_equal(driver_probe_sweep(&good_drv, &lonely, &r), -ENODEV);
	put_device(&lonely);

	/* Bound: refused, and still bound to its driver. */
	warns = devres_warn_count();
	assert_int_equal(device_driver_attach(&optional_drv, &the_dev), 0);
	assert_int_equal(driver_probe_sweep(&good_drv, &the_dev, &r), -EBUSY);
	assert_ptr_equal(the_dev.driver, &optional_drv);
	assert_int_equal(devres_warn_count() - warns, 1);
	device_release_driver(&the_dev);

	/* From the device's own probe. */
	warns = devres_warn_count();
	sweep_ret = 0;
	assert_int_equal(device_driver_attach(&selfsweep_drv, &the_dev), 0);
	assert_int_equal(sweep_ret, -EDEADLK);
	assert_int_equal(devres_warn_count() - warns, 1);
	device_release_driver(&the_dev);

	/* Inside another sweep. */
	sweep_ret = 0;
	probes = 0;
	assert_int_equal(devres_sweep(nested_op, NULL, NULL, &r), 0);
	assert_int_equal(sweep_ret, -EBUSY);
	assert_int_equal(probes, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(good_driver_sweeps_clean),
		T(leak_caught_at_its_point),
		T(swallowed_failure_is_no_leak),
		T(success_with_fault_then_leak_at_unbind),
		T(platform_driver_unregistered),
		T(driver_usable_after),
		T(refused),
		T(broken_probe_fails_the_sweep),
		T(deferring_probe_fails_the_sweep),
		T(runs_marked_in_log),
	};
#undef T

	return run_tests_tracked(tests, group_setup, group_teardown);
}
