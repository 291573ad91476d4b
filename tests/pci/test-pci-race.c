// SPDX-License-Identifier: MIT
/* ctest-labels: tsan */
/*
 * Concurrency: a driver registered and unregistered while rescans add and
 * remove devices (so probes race unregistration and device removal), while
 * other threads walk the devices and read their config space. At the end
 * every device is disabled again and the ledger is back at its baseline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/io.h>
#include "testlib.h"
#include "pcitest.h"

#define ROUNDS 400
#define NDEV 4

static int live_probes;

static int race_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int ret;

	(void)id;
	ret = pcim_enable_device(pdev);
	if (!ret)
		ret = pcim_iomap_regions(pdev, 1, "race");
	if (!ret)
		writel(1, pcim_iomap_table(pdev)[0]);
	if (!ret)
		__atomic_add_fetch(&live_probes, 1, __ATOMIC_RELAXED);
	return ret;
}

static void race_remove(struct pci_dev *pdev)
{
	(void)pdev;
	__atomic_sub_fetch(&live_probes, 1, __ATOMIC_RELAXED);
}

static const struct pci_device_id race_ids[] = {
	{ PCI_DEVICE(0x1af4, PCI_ANY_ID) },
	{ 0 },
};

static struct pci_driver race_drv = {
	.name = "race",
	.id_table = race_ids,
	.probe = race_probe,
	.remove = race_remove,
};

static const char *names[NDEV] = { "0000:00:01.0", "0000:00:02.0",
				   "0000:00:03.0", "0000:00:04.0" };
static int stop;

static void *registrar(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		if (pci_register_driver(&race_drv) == 0)
			pci_unregister_driver(&race_drv);
	}
	return NULL;
}

static void *rescanner(void *arg)
{
	unsigned int seed = 1;

	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		int k = (int)(rand_r(&seed) % NDEV);
		struct pci_fake_dev d =
			fake_dev(names[k], 0x1af4, (unsigned short)k, 1);

		if (pci_fake_add(ft, &d) == -EEXIST)
			pci_fake_remove(ft, names[k]);
		pci_bus_scan();
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		struct pci_dev *p = NULL;

		while ((p = pci_get_device(PCI_ANY_ID, PCI_ANY_ID, p))) {
			uint16_t v;

			/* A device may vanish under us: an error, not a crash. */
			if (pci_read_config_word(p, PCI_VENDOR_ID, &v) == 0)
				assert_int_equal(v, 0x1af4);
			(void)pci_is_enabled(p);
		}
	}
	return NULL;
}

static void test_register_races_rescan(void **state)
{
	pthread_t a, b, c;

	(void)state;
	assert_int_equal(pci_bus_scan(), 0);
	assert_int_equal(pthread_create(&c, NULL, reader, NULL), 0);
	assert_int_equal(pthread_create(&a, NULL, registrar, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, rescanner, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(c, NULL);
	assert_int_equal(live_probes, 0);
	for (int k = 0; k < NDEV; k++) {
		char buf[8];

		if (fake_read(names[k], "enable", buf, sizeof(buf)) > 0)
			assert_int_equal(buf[0], '0');
	}
}

/* Driver registered throughout; devices come and go under it. */
static void *bound_rescanner(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS / 3; i++) {
		pci_bus_scan();
		pci_bus_remove_all();
	}
	return NULL;
}

static void test_remove_all_races_scan(void **state)
{
	pthread_t a, b;

	(void)state;
	for (int k = 0; k < NDEV; k++) {
		struct pci_fake_dev d =
			fake_dev(names[k], 0x1af4, (unsigned short)k, 1);

		assert_int_equal(pci_fake_add(ft, &d), 0);
	}
	assert_int_equal(pci_register_driver(&race_drv), 0);
	assert_int_equal(pthread_create(&a, NULL, bound_rescanner, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, bound_rescanner, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	assert_int_equal(live_probes, 0);
	pci_unregister_driver(&race_drv);
}

/* Mappings made while another thread switches to read-only. */
#define MAPS_PER_THREAD 64

static struct pci_dev *ro_dev;
static void __iomem *ro_maps[2][MAPS_PER_THREAD];
static int ro_started;

static void *ro_mapper(void *arg)
{
	void __iomem **out = arg;

	for (int i = 0; i < MAPS_PER_THREAD; i++) {
		out[i] = pci_iomap(ro_dev, 0, 0);
		__atomic_add_fetch(&ro_started, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_readonly_races_map(void **state)
{
	struct pci_fake_dev d = fake_dev(names[0], 0x1af4, 1, 1);
	pthread_t t[2];
	int mapped = 0;

	(void)state;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	ro_dev = pci_get_device(0x1af4, 1, NULL);
	assert_non_null(ro_dev);
	for (int k = 0; k < 2; k++)
		assert_int_equal(
			pthread_create(&t[k], NULL, ro_mapper, ro_maps[k]), 0);
	while (__atomic_load_n(&ro_started, __ATOMIC_RELAXED) <
	       MAPS_PER_THREAD / 2)
		sched_yield();
	pci_sysfs_set_readonly(true);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	/* Whatever was made before the switch, nothing stays writable. */
	assert_int_equal(tree_writable_maps(), 0);
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < MAPS_PER_THREAD; i++) {
			mapped += ro_maps[k][i] != NULL;
			pci_iounmap(ro_dev, ro_maps[k][i]);
		}
	}
	assert_true(mapped > 0);
	pci_dev_put(ro_dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_register_races_rescan,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_remove_all_races_scan,
						pci_setup, pci_teardown),
		cmocka_unit_test_setup_teardown(test_readonly_races_map,
						pci_setup, pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
