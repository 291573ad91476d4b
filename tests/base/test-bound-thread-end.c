// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=30 */
/*
 * A thread that ends while it holds bindings (device_bound_get() without
 * the put), by every end a thread has: it returns, calls pthread_exit(),
 * or is cancelled; holding one binding of one device, two of one device,
 * or one of each of two. Its holds are put at its end, with one WARN a
 * device: an unbind of each device then returns (it waited for ever),
 * the driver's remove runs once, and the device binds again.
 */
/* pthread_timedjoin_np() */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"
#include "base/thread-end.h"

static int removes;

static int bte_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static void bte_remove(struct platform_device *pdev)
{
	(void)pdev;
	removes++;
}

static struct platform_driver bte_drv = {
	.probe = bte_probe,
	.remove = bte_remove,
	.driver = { .name = "bte" },
};

static struct platform_device *pdev[2];

struct holds {
	const char *name;
	int of[2]; /* holds of pdev[0], pdev[1] */
};

static const struct holds holds[] = {
	{ "one of one device", { 1, 0 } },
	{ "two of one device", { 2, 0 } },
	{ "one of each of two", { 1, 1 } },
};

static enum ending ending;
static const struct holds *held;

static void *holder(void *arg)
{
	(void)arg;
	for (int d = 0; d < 2; d++)
		for (int i = 0; i < held->of[d]; i++)
			if (device_bound_get(&pdev[d]->dev))
				return (void *)2;
	end_thread_by(ending);
	return NULL;
}

static void *unbinder(void *arg)
{
	device_release_driver(arg);
	return (void *)1;
}

/* Joins @t, failing (not hanging) when it has not ended within 2 s. */
static void *joined(pthread_t t)
{
	return join_within(t, "the unbind still waits for the ended thread's "
			      "holds");
}

static void one_cell(const struct holds *h, enum ending e)
{
	int devices = (h->of[0] > 0) + (h->of[1] > 0);
	pthread_t t;
	void *ret;

	held = h;
	ending = e;
	removes = 0;
	start_capture();
	assert_int_equal(pthread_create(&t, NULL, holder, NULL), 0);
	ret = joined(t);
	assert_true(ret == NULL || ret == PTHREAD_CANCELED);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(cap.n, devices);
	assert_int_equal(count_prefix("WARNING: bte."), devices);
	for (int i = 0; i < cap.n && i < 2; i++)
		assert_non_null(strstr(cap.line[i], ": device_bound_get: a "
						    "thread ended holding"));

	for (int d = 0; d < 2; d++) {
		assert_int_equal(
			pthread_create(&t, NULL, unbinder, &pdev[d]->dev), 0);
		assert_ptr_equal(joined(t), (void *)1);
		assert_false(device_is_bound(&pdev[d]->dev));
	}
	assert_int_equal(removes, 2);
	for (int d = 0; d < 2; d++)
		assert_int_equal(device_attach(&pdev[d]->dev), 1);
}

static void every_hold_every_end(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	assert_int_equal(platform_driver_register(&bte_drv), 0);
	for (int d = 0; d < 2; d++) {
		pdev[d] = platform_device_register_simple("bte", d, NULL, 0);
		assert_false(IS_ERR_OR_NULL(pdev[d]));
		assert_true(device_is_bound(&pdev[d]->dev));
	}
	for (size_t h = 0; h < sizeof(holds) / sizeof(holds[0]); h++)
		for (int e = 0; e < NR_ENDING; e++) {
			print_message("%s, %s\n", holds[h].name,
				      ending_name[e]);
			one_cell(&holds[h], (enum ending)e);
		}
	for (int d = 0; d < 2; d++)
		platform_device_unregister(pdev[d]);
	platform_driver_unregister(&bte_drv);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/* A thread that put what it took ends with no WARN. */
static void balanced_holder_is_quiet(void **state)
{
	struct platform_device *p;
	pthread_t t;

	(void)state;
	assert_int_equal(platform_driver_register(&bte_drv), 0);
	p = platform_device_register_simple("bte", 7, NULL, 0);
	assert_false(IS_ERR_OR_NULL(p));
	pdev[0] = p;
	held = &holds[0];
	ending = BY_RETURN;
	start_capture();
	assert_int_equal(device_bound_get(&p->dev), 0);
	device_bound_put(&p->dev);
	assert_int_equal(pthread_create(&t, NULL, unbinder, &p->dev), 0);
	assert_ptr_equal(joined(t), (void *)1);
	expect_no_warn();
	platform_device_unregister(p);
	platform_driver_unregister(&bte_drv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_hold_every_end),
		cmocka_unit_test(balanced_holder_is_quiet),
	};

	/* One line a WARN: the capture counts the lines. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
