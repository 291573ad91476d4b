// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile pci tsan timeout=60 */
/*
 * A scan's removal of a PCI function racing a deletion of the same
 * function through its struct device: pci_bus_remove_all() on one
 * thread, device_unregister() of the function (with the reference its
 * lookup took) on another, started together, many rounds on the fake
 * tree. Either way the function is deleted once: its driver removed
 * once, the lookup no longer finds it, its BAR free again, the same name
 * scanned and bound again, and the ledger back where it started. The
 * scan never WARNs: a deletion through the struct device begun before
 * the scan's claim completes the bus's part. The program's
 * device_unregister() that comes second WARNs once, its own misuse (a
 * device deleted already), refused as a whole: its reference is its own
 * to put then.
 *
 * Before, the scan claimed a function whose deletion through its struct
 * device had begun (it leaves the PCI list only at its end) and deleted
 * it a second time: a WARN in the scan's name, "device_del: device is
 * already deleted".
 * HOSTILE_BUS_DEL_RACE_ROUNDS sets a longer run.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/ioport.h>
#include <devres/pci.h>
#include "testlib.h"
#include "rounds.h"
#include "pci/pcitest.h"

#define NAME "0000:00:08.0"
#define VENDOR 0x1234
#define DEVICE 0x11e9

static int probes, removes;

static int race_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	(void)pdev;
	(void)id;
	__atomic_add_fetch(&probes, 1, __ATOMIC_RELAXED);
	return 0;
}

static void race_remove(struct pci_dev *pdev)
{
	(void)pdev;
	__atomic_add_fetch(&removes, 1, __ATOMIC_RELAXED);
}

static const struct pci_device_id race_ids[] = {
	{ PCI_DEVICE(VENDOR, DEVICE) },
	{ 0 },
};

static struct pci_driver race_drv = {
	.name = "hbd-race",
	.id_table = race_ids,
	.probe = race_probe,
	.remove = race_remove,
};

static pthread_barrier_t start;

/* The WARN lines of each racing thread: its own counters. */
struct lines {
	int warns;
	int refused; /* device_unregister() refused as a whole */
};
static _Thread_local struct lines *mine;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (!mine || !strstr(line, "WARNING"))
		return;
	mine->warns++;
	mine->refused += strstr(line, "device_unregister:") != NULL;
}

static struct lines user, scan;

static void *unregisterer(void *arg)
{
	mine = &user;
	pthread_barrier_wait(&start);
	device_unregister(arg);
	mine = NULL;
	return NULL;
}

static void *scan_remover(void *arg)
{
	(void)arg;
	mine = &scan;
	pthread_barrier_wait(&start);
	pci_bus_remove_all();
	mine = NULL;
	return NULL;
}

/* One round: 0 when it holds, else the number of its checks that failed. */
static int one_round(void)
{
	struct pci_dev *pdev, *again;
	resource_size_t bar, len;
	struct resource *r;
	pthread_t a, b;
	int bad = 0, p0 = probes, r0 = removes;

	if (pci_bus_scan_device(NAME))
		return 1;
	/* The lookup's reference goes with device_unregister(). */
	pdev = pci_get_device(VENDOR, DEVICE, NULL);
	if (!pdev)
		return 1;
	bar = pdev->resource[0].start;
	len = resource_size(&pdev->resource[0]);
	bad += probes != p0 + 1;
	user = (struct lines){ 0, 0 };
	scan = (struct lines){ 0, 0 };
	pthread_barrier_init(&start, NULL, 2);
	assert_int_equal(pthread_create(&a, NULL, unregisterer, &pdev->dev), 0);
	assert_int_equal(pthread_create(&b, NULL, scan_remover, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_barrier_destroy(&start);
	if (scan.warns || user.warns > 1)
		print_error("%d WARNs of the scan, %d of device_unregister()\n",
			    scan.warns, user.warns);
	bad += scan.warns != 0 || user.warns > 1;
	/* Refused as a whole: the lookup's reference is still the caller's. */
	if (user.refused)
		pci_dev_put(pdev);
	/* Deleted once: removed once. */
	bad += __atomic_load_n(&removes, __ATOMIC_RELAXED) != r0 + 1;
	again = pci_get_device(VENDOR, DEVICE, NULL);
	bad += again != NULL;
	pci_dev_put(again);
	r = request_mem_region(bar, len, "hbd-race-check");
	bad += r == NULL;
	if (r)
		release_mem_region(bar, len);
	return bad;
}

static void scan_removal_vs_unregister(void **state)
{
	long rounds = test_rounds("HOSTILE_BUS_DEL_RACE_ROUNDS", 200);
	struct pci_fake_dev d = fake_dev(NAME, VENDOR, DEVICE, 1);
	struct devres_ledger before, after;
	int bad = 0, warns, user_warns = 0;
	struct pci_dev *again;

	(void)state;
	devres_set_log_sink(sink, NULL);
	devres_ledger_snapshot(&before);
	assert_int_equal(pci_setup(NULL), 0);
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_register_driver(&race_drv), 0);
	warns = devres_warn_count();
	for (long i = 0; i < rounds; i++) {
		int b = one_round();

		if (b)
			print_error("round %ld: %d checks failed\n", i, b);
		bad += b;
		user_warns += user.warns;
	}
	/* Every WARN is one of the program's calls that came second. */
	assert_int_equal(devres_warn_count() - warns, user_warns);
	/* The same name again, bound again. */
	assert_int_equal(pci_bus_scan_device(NAME), 0);
	again = pci_get_device(VENDOR, DEVICE, NULL);
	assert_non_null(again);
	assert_true(device_is_bound(&again->dev));
	pci_dev_put(again);
	pci_bus_remove_all();
	pci_unregister_driver(&race_drv);
	assert_int_equal(pci_teardown(NULL), 0);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
	devres_set_log_sink(NULL, NULL);
	print_message("%ld rounds, %d won by the scan\n", rounds, user_warns);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scan_removal_vs_unregister),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
