// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault tsan */
/*
 * devres_sweep(): a fault at every point of an operation, the ledger
 * checked after each run, leaks reported at the exact failure point.
 * The operations here play a driver and its driver core on a bare device:
 * on failure the "core" releases everything, undo releases everything.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void node_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int actions_run;

static void count_action(void *data)
{
	(void)data;
	actions_run++;
}

static struct device the_dev;
static struct devres_ledger start;

static int setup(void **state)
{
	(void)state;
	actions_run = 0;
	devres_ledger_snapshot(&start);
	the_dev = (struct device){ .release = dev_release };
	device_initialize(&the_dev);
	start_log_capture();
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	devres_release_all(&the_dev);
	put_device(&the_dev);
	/* Every test leaves the process as it found it, and disarmed. */
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&start, &now, stderr), 0);
	assert_int_equal(devres_fail_nth_get(), 0);
	return 0;
}

/* The driver core's part: a failed probe leaves nothing behind. */
static int bind(int (*probe)(struct device *), struct device *dev)
{
	int ret = probe(dev);

	if (ret)
		devres_release_all(dev);
	return ret;
}

static void unbind(void *ctx)
{
	devres_release_all(ctx);
}

/*
 * A correct driver with a libata-style mid-layer: its own resources, then
 * a group the mid-layer rolls back by itself on failure.
 * Points: 1 kzalloc, 2 action, 3 group, 4 kmalloc, 5 kstrdup, 6 action.
 */
static int midlayer_init(struct device *dev)
{
	void *grp = devres_open_group(dev, NULL, GFP_KERNEL);

	if (!grp)
		return -ENOMEM;
	if (!devm_kmalloc(dev, 64, GFP_KERNEL) ||
	    !devm_kstrdup(dev, "port0", GFP_KERNEL) ||
	    devm_add_action(dev, count_action, NULL)) {
		devres_release_group(dev, grp);
		return -ENOMEM;
	}
	devres_remove_group(dev, grp);
	return 0;
}

static int good_probe(struct device *dev)
{
	void *priv = devm_kzalloc(dev, 128, GFP_KERNEL);
	int ret;

	if (!priv)
		return -ENOMEM;
	ret = devm_add_action_or_reset(dev, count_action, priv);
	if (ret)
		return ret;
	return midlayer_init(dev);
}

static int good_op(void *ctx)
{
	return bind(good_probe, ctx);
}

static void good_driver_sweeps_clean(void **state)
{
	struct devres_sweep_result r = { 99, 99, 99, 99, 99, 99 };

	(void)state;
	assert_int_equal(devres_sweep(good_op, unbind, &the_dev, &r), 0);
	assert_int_equal(r.points, 6);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(line_level("sweep: 6 failure points, 0 leaks"),
			 DEVRES_LOG_INFO);
	assert_int_equal(cap.n, 1);
	assert_null(devres_find(&the_dev, node_release, NULL, NULL));
}

/*
 * Leaks the node it allocated when the next allocation fails: point 2.
 * Points: 1 devres_alloc, 2 kmalloc, 3 kmalloc.
 */
static void *leaked_node;

static int leaky_probe(struct device *dev)
{
	void *res = devres_alloc(node_release, 40, GFP_KERNEL);

	if (!res)
		return -ENOMEM;
	if (!devm_kmalloc(dev, 8, GFP_KERNEL)) {
		leaked_node = res; /* forgot devres_free(res) */
		return -ENOMEM;
	}
	devres_add(dev, res);
	if (!devm_kmalloc(dev, 8, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

static int leaky_op(void *ctx)
{
	return bind(leaky_probe, ctx);
}

static void leak_caught_at_its_point(void **state)
{
	struct devres_sweep_result r;
	struct devres_ledger l;
	char nodes[64];

	(void)state;
	devres_ledger_snapshot(&l);
	assert_int_equal(devres_sweep(leaky_op, unbind, &the_dev, &r), 1);
	assert_int_equal(r.points, 3);
	assert_int_equal(r.leaks, 1);
	assert_non_null(leaked_node);
	assert_int_equal(line_level("sweep: leak at failure point 2 (op "
				    "returned -ENOMEM); reproduce with "
				    "devres_fail_nth(2) before the operation"),
			 DEVRES_LOG_WARNING);
	snprintf(nodes, sizeof(nodes), "sweep:   nodes: %ld -> %ld (+1)",
		 l.nodes, l.nodes + 1);
	assert_int_equal(line_level(nodes), DEVRES_LOG_WARNING);
	snprintf(nodes, sizeof(nodes), "sweep:   node_bytes: %ld -> %ld (+40)",
		 l.node_bytes, l.node_bytes + 40);
	assert_int_equal(line_level(nodes), DEVRES_LOG_WARNING);
	/* One leak, one report: later runs are measured from after it. */
	assert_int_equal(count_prefix("sweep: leak"), 1);
	assert_int_equal(line_level("sweep: 3 failure points, 1 leaks"),
			 DEVRES_LOG_WARNING);
	devres_free(leaked_node);
	leaked_node = NULL;
}

/*
 * Tolerates the failure of an optional buffer and succeeds without it.
 * Points: 1 kmalloc, 2 optional kmalloc, 3 kmalloc.
 */
static int optional_probe(struct device *dev)
{
	if (!devm_kmalloc(dev, 8, GFP_KERNEL))
		return -ENOMEM;
	(void)devm_kmalloc(dev, 4096, GFP_KERNEL); /* nice to have */
	if (!devm_kmalloc(dev, 8, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

static int optional_op(void *ctx)
{
	return bind(optional_probe, ctx);
}

static int undos;

static void counting_unbind(void *ctx)
{
	/* Disarmed before undo: its own allocations cannot fail. */
	assert_int_equal(devres_fail_nth_get(), 0);
	undos++;
	unbind(ctx);
}

static void swallowed_failure_is_no_leak(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	undos = 0;
	assert_int_equal(
		devres_sweep(optional_op, counting_unbind, &the_dev, &r), 0);
	assert_int_equal(r.points, 3);
	assert_int_equal(r.leaks, 0);
	/* Undone after the run that swallowed point 2 and the final run. */
	assert_int_equal(undos, 2);
	/* Not a failure, but a reviewer wants to know: a finding. */
	assert_int_equal(r.findings, 1);
	assert_int_equal(line_level("sweep: failure point 2: devm_kmalloc "
				    "fails, op returned 0"),
			 DEVRES_LOG_WARNING);
	assert_int_equal(line_level("sweep: 3 failure points, 0 leaks, "
				    "1 findings"),
			 DEVRES_LOG_WARNING);
	/* A strict sweep fails on it. */
	devres_sweep_set_strict(true);
	assert_int_equal(
		devres_sweep(optional_op, counting_unbind, &the_dev, &r), 1);
	devres_sweep_set_strict(false);
	assert_int_equal(line_level("sweep: 3 failure points, 0 leaks, "
				    "1 findings (strict)"),
			 DEVRES_LOG_WARNING);
}

/*
 * Succeeds although its fault was injected, by a fallback that holds a
 * node outside the device: undo cannot give it back.
 * Points: 1 kmalloc, 2 optional kmalloc (fallback: 3 devres_alloc).
 */
static void *fallback_node;

static int fallback_probe(struct device *dev)
{
	if (!devm_kmalloc(dev, 8, GFP_KERNEL))
		return -ENOMEM;
	if (!devm_kmalloc(dev, 4096, GFP_KERNEL)) {
		fallback_node = devres_alloc(node_release, 16, GFP_KERNEL);
		if (!fallback_node)
			return -ENOMEM;
	}
	return 0;
}

static int fallback_op(void *ctx)
{
	return bind(fallback_probe, ctx);
}

static void success_with_fault_then_leak(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	assert_int_equal(devres_sweep(fallback_op, unbind, &the_dev, &r), 1);
	assert_int_equal(r.points, 2);
	assert_int_equal(r.leaks, 1);
	assert_int_equal(line_level("sweep: leak at failure point 2 (op "
				    "returned 0, then undone); reproduce "
				    "with devres_fail_nth(2) before the "
				    "operation"),
			 DEVRES_LOG_WARNING);
	devres_free(fallback_node);
	fallback_node = NULL;
}

/* Leaks a node on every run that gets past its first call. */
static void *kept[8];
static int nkept;

static int always_leaks(void *ctx)
{
	void *res = devres_alloc(node_release, 8, GFP_KERNEL);

	if (!res)
		return -ENOMEM;
	kept[nkept++] = res;
	return bind(optional_probe, ctx);
}

static void every_leak_counted_once(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	nkept = 0;
	assert_int_equal(devres_sweep(always_leaks, unbind, &the_dev, &r), 4);
	assert_int_equal(r.points, 4);
	assert_int_equal(r.leaks, 4);
	assert_int_equal(nkept, 4);
	for (int p = 2; p <= 4; p++) {
		char want[160];

		snprintf(want, sizeof(want),
			 "sweep: leak at failure point %d (op returned %s%s); "
			 "reproduce with devres_fail_nth(%d) before the "
			 "operation",
			 p, p == 3 ? "0" : "-ENOMEM",
			 p == 3 ? ", then undone" : "", p);
		assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	}
	assert_int_equal(line_level("sweep: leak after the run with no fault "
				    "injected (op returned 0, then undone)"),
			 DEVRES_LOG_WARNING);
	/* Each leak shows its own delta, not the sum so far. */
	assert_int_equal(count_prefix("sweep:   nodes:"), 4);
	for (int i = 0; i < 4; i++) {
		char want[64];

		snprintf(want, sizeof(want), "sweep:   nodes: %ld -> %ld (+1)",
			 start.nodes + i, start.nodes + i + 1);
		assert_int_equal(line_level(want), DEVRES_LOG_WARNING);
	}
	for (int i = 0; i < nkept; i++)
		devres_free(kept[i]);
}

static int nested_ret;

static int noop(void *ctx)
{
	(void)ctx;
	return 0;
}

/* Points: 1 kmalloc, 2 kmalloc; sweeps again in between. */
static int nesting_op(void *ctx)
{
	struct devres_sweep_result r = { 7, 7, 7, 7, 7, 7 };
	struct device *dev = ctx;

	if (!devm_kmalloc(dev, 8, GFP_KERNEL)) {
		devres_release_all(dev);
		return -ENOMEM;
	}
	nested_ret = devres_sweep(noop, NULL, NULL, &r);
	/* Refused before it touched anything. */
	assert_int_equal(r.points, 7);
	return bind(optional_probe, dev) ? -ENOMEM : 0;
}

static void nested_sweep_refused(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	nested_ret = 0;
	assert_int_equal(devres_sweep(nesting_op, unbind, &the_dev, &r), 0);
	assert_int_equal(nested_ret, -EBUSY);
	/* The refused sweep did not disturb the outer one's counting. */
	assert_int_equal(r.points, 4);
	assert_int_equal(r.leaks, 0);
	/* The summary and the optional buffer's finding (two lines). */
	assert_int_equal(count_prefix("sweep:"), 3);
	assert_int_equal(count_prefix("sweep: finding:"), 1);
	/* Once done, a sweep can run again. */
	assert_int_equal(devres_sweep(noop, NULL, NULL, &r), 0);
	assert_int_equal(r.points, 0);
}

static void *other_sweeper(void *p)
{
	struct devres_sweep_result r;

	*(int *)p = devres_sweep(noop, NULL, NULL, &r);
	return NULL;
}

static int other_thread_ret;

/* Points: 1..3 of optional_probe; sweeps from another thread on run 1. */
static int op_with_rival(void *ctx)
{
	pthread_t t;

	if (!other_thread_ret) {
		assert_int_equal(pthread_create(&t, NULL, other_sweeper,
						&other_thread_ret),
				 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	return bind(optional_probe, ctx);
}

/* The ledger is the process's: a second sweep anywhere would see ours. */
static void concurrent_sweep_refused(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	other_thread_ret = 0;
	assert_int_equal(devres_sweep(op_with_rival, unbind, &the_dev, &r), 0);
	assert_int_equal(other_thread_ret, -EBUSY);
	assert_int_equal(r.points, 3);
	assert_int_equal(r.leaks, 0);
}

/* Always reaches its fault: it arms the very next call itself. */
static int never_ends(void *ctx)
{
	devres_fail_nth(1);
	if (!devm_kmalloc(ctx, 8, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

static void gives_up_after_the_cap(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	assert_int_equal(devres_sweep(never_ends, unbind, &the_dev, &r),
			 -ELOOP);
	assert_int_equal(r.points, DEVRES_SWEEP_MAX_POINTS);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(line_level("sweep: 100000 failure points, 0 leaks "
				    "(gave up: it never ran to its end)"),
			 DEVRES_LOG_WARNING);
	assert_int_equal(cap.n, 1);
}

/* Fails on its own, after its one point. */
static int unsupported(void *ctx)
{
	if (!devm_kmalloc(ctx, 8, GFP_KERNEL))
		return -ENOMEM;
	devres_release_all(ctx);
	return -ENODEV;
}

static void op_failing_without_fault(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	undos = 0;
	/* Failing with nothing injected is a failed sweep, not a pass. */
	assert_int_equal(devres_sweep(unsupported, counting_unbind, &the_dev,
				      &r),
			 -ECANCELED);
	assert_int_equal(r.points, 1);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(undos, 0);
	assert_int_equal(line_level("sweep: FAILED: op returned -ENODEV with "
				    "no fault injected"),
			 DEVRES_LOG_WARNING);
	assert_int_equal(line_level("sweep: 1 failure points, 0 leaks, and "
				    "the run with no fault failed"),
			 DEVRES_LOG_WARNING);
}

static void previous_arming_ignored(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	devres_fail_nth(2);
	assert_int_equal(devres_sweep(good_op, unbind, &the_dev, &r), 0);
	assert_int_equal(r.points, 6);
}

static void misuse(void **state)
{
	struct devres_sweep_result r;
	int warns = devres_warn_count();

	(void)state;
	assert_int_equal(devres_sweep(NULL, NULL, NULL, &r), -EINVAL);
	assert_int_equal(devres_sweep(noop, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(devres_warn_count() - warns, 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(good_driver_sweeps_clean),
		T(leak_caught_at_its_point),
		T(swallowed_failure_is_no_leak),
		T(success_with_fault_then_leak),
		T(every_leak_counted_once),
		T(nested_sweep_refused),
		T(concurrent_sweep_refused),
		T(gives_up_after_the_cap),
		T(op_failing_without_fault),
		T(previous_arming_ignored),
		T(misuse),
	};
#undef T

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
