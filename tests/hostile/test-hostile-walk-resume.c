// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=30 */
/*
 * driver_find_next_device() given a start device that left its driver's
 * list while its caller held it: unregistered, deleted, unbound, by the
 * caller or by another thread, alone or with the device after it. As
 * the kernel's (whose walk starts again from the head when its start's
 * node has left the driver's klist), the walk starts again from the
 * driver's first device: it finds the devices before the start again,
 * then every device still bound after it, once each, and WARNs for
 * nothing: the caller held what the library gave it. For each position
 * of the device in a bus of four. Then the order: a device unbound and
 * bound again is found last, after those bound before it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"

#define NDEV 4

static int hwr_probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static struct platform_driver hwr_drv = {
	.probe = hwr_probe,
	.driver = { .name = "hwr" },
};

static struct platform_device *pdev[NDEV];

enum leave {
	UNREGISTER,	   /* platform_device_unregister() by the caller */
	DEL,		   /* platform_device_del(), the owner's put later */
	UNBIND,		   /* device_release_driver(): still on the bus */
	UNREGISTER_THREAD, /* unregistered by another thread */
	WITH_NEXT,	   /* unregistered, and the device after it too */
	NR_LEAVE
};

static const char *const leave_name[] = {
	"unregistered",
	"deleted",
	"unbound",
	"unregistered by another thread",
	"unregistered with the next one",
};

static void *unregisterer(void *arg)
{
	platform_device_unregister(arg);
	return NULL;
}

/* What leaves the bus when the caller holds device @k, by @how. */
static void leave(int k, enum leave how, bool gone[NDEV])
{
	pthread_t t;

	switch (how) {
	case UNREGISTER:
		platform_device_unregister(pdev[k]);
		gone[k] = true;
		break;
	case DEL:
		platform_device_del(pdev[k]);
		break;
	case UNBIND:
		device_release_driver(&pdev[k]->dev);
		break;
	case UNREGISTER_THREAD:
		assert_int_equal(
			pthread_create(&t, NULL, unregisterer, pdev[k]), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		gone[k] = true;
		break;
	default:
		platform_device_unregister(pdev[k]);
		gone[k] = true;
		if (k + 1 < NDEV) {
			platform_device_unregister(pdev[k + 1]);
			gone[k + 1] = true;
		}
		break;
	}
}

/* 0 when the cell holds, else the number of its checks that failed. */
static int one_cell(int k, enum leave how)
{
	bool gone[NDEV] = { false };
	int found[2 * NDEV], nfound = 0, want = 0, bad = 0;
	struct device *dev, *prev = NULL;

	for (int i = 0; i < NDEV; i++) {
		pdev[i] = platform_device_register_simple("hwr", i, NULL, 0);
		assert_false(IS_ERR_OR_NULL(pdev[i]));
		assert_true(device_is_bound(&pdev[i]->dev));
	}
	start_capture();
	while ((dev = driver_find_next_device(&hwr_drv.driver, prev))) {
		if (prev)
			put_device(prev);
		assert_true(nfound < 2 * NDEV);
		for (int i = 0; i < NDEV; i++)
			if (dev == &pdev[i]->dev)
				found[nfound++] = i;
		if (dev == &pdev[k]->dev)
			leave(k, how, gone);
		prev = dev;
	}
	if (prev)
		put_device(prev);
	devres_set_log_sink(NULL, NULL);
	bad += cap.n != 0;
	/* 0..k; k has left: 0..k-1 again, then those after k still there. */
	for (int i = 0; i < NDEV; i++) {
		if (i > k && gone[i])
			continue;
		bad += want >= nfound || found[want] != i;
		want++;
		for (int j = 0; i == k && j < k; j++, want++)
			bad += want >= nfound || found[want] != j;
	}
	bad += nfound != want;
	for (int i = 0; i < NDEV; i++) {
		if (gone[i])
			continue;
		if (how == DEL && i == k)
			platform_device_put(pdev[i]);
		else
			platform_device_unregister(pdev[i]);
	}
	return bad;
}

static void restart_after_every_leave(void **state)
{
	struct devres_ledger before, after;
	int failed = 0;

	(void)state;
	devres_ledger_snapshot(&before);
	assert_int_equal(platform_driver_register(&hwr_drv), 0);
	for (int how = 0; how < NR_LEAVE; how++)
		for (int k = 0; k < NDEV; k++) {
			int bad = one_cell(k, (enum leave)how);

			print_message("device %d of %d %s: %s\n", k, NDEV,
				      leave_name[how], bad ? "FAILED" : "ok");
			failed += bad != 0;
		}
	platform_driver_unregister(&hwr_drv);
	assert_int_equal(failed, 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/*
 * The walk is in the order the devices were bound: device 0, unbound and
 * bound again, is found after the others, as the kernel's driver list
 * has it at its tail.
 */
static void bind_order(void **state)
{
	struct device *dev, *prev = NULL;
	int found[NDEV], nfound = 0;

	(void)state;
	assert_int_equal(platform_driver_register(&hwr_drv), 0);
	for (int i = 0; i < NDEV; i++)
		pdev[i] = platform_device_register_simple("hwr", i, NULL, 0);
	device_release_driver(&pdev[0]->dev);
	assert_int_equal(device_attach(&pdev[0]->dev), 1);
	while ((dev = driver_find_next_device(&hwr_drv.driver, prev))) {
		if (prev)
			put_device(prev);
		assert_true(nfound < NDEV);
		for (int i = 0; i < NDEV; i++)
			if (dev == &pdev[i]->dev)
				found[nfound++] = i;
		prev = dev;
	}
	if (prev)
		put_device(prev);
	assert_int_equal(nfound, NDEV);
	for (int i = 0; i < NDEV; i++)
		assert_int_equal(found[i], (i + 1) % NDEV);
	for (int i = 0; i < NDEV; i++)
		platform_device_unregister(pdev[i]);
	platform_driver_unregister(&hwr_drv);
}

/* A start that was never on the driver's bus is still a misuse. */
static void foreign_start_warns(void **state)
{
	struct device *dev = heap_dev(NULL, "hwr-lone");

	(void)state;
	assert_int_equal(platform_driver_register(&hwr_drv), 0);
	start_capture();
	assert_null(driver_find_next_device(&hwr_drv.driver, dev));
	expect_warn_on("hwr-lone", "driver_find_next_device",
		       "bus platform does not have the device");
	platform_driver_unregister(&hwr_drv);
	put_device(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restart_after_every_leave),
		cmocka_unit_test(bind_order),
		cmocka_unit_test(foreign_start_warns),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
