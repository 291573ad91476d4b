// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=300 */
/*
 * The driver core under threads: drivers registered while devices are
 * added, one device bound, unbound and deleted from several threads, a
 * driver unregistered while its probe runs, deferral chains completed from
 * several threads, and probes that add child devices in parallel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static const struct bus_type bus = { .name = "race" };

static int probes, removes;

static int counting_probe(struct device *dev)
{
	if (!devm_kzalloc(dev, 48, GFP_KERNEL))
		return -ENOMEM;
	__atomic_add_fetch(&probes, 1, __ATOMIC_RELAXED);
	return 0;
}

static void counting_remove(struct device *dev)
{
	(void)dev;
	__atomic_add_fetch(&removes, 1, __ATOMIC_RELAXED);
}

static struct device_driver counting_drv = {
	.name = "counting",
	.bus = &bus,
	.probe = counting_probe,
	.remove = counting_remove,
};

/* Threads count what went wrong: cmocka's asserts belong to main. */
static int thread_errors;

static void check(bool ok)
{
	if (!ok)
		__atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
}

static struct devres_ledger baseline;

static int setup(void **state)
{
	(void)state;
	probes = removes = heap_released = thread_errors = 0;
	devres_ledger_snapshot(&baseline);
	return 0;
}

static int teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	/* What the test registered goes first, even after a failure. */
	t_undo_all();
	assert_int_equal(thread_errors, 0);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&baseline, &now, stderr), 0);
	return 0;
}

#define NDEV 40

static struct device *devs[NDEV];

static void *add_all(void *arg)
{
	(void)arg;
	for (int i = 0; i < NDEV; i++)
		t_device_add(devs[i]);
	return NULL;
}

static void *register_driver(void *arg)
{
	(void)arg;
	t_driver_register(&counting_drv);
	return NULL;
}

static void register_vs_add(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		pthread_t t1, t2;

		probes = 0;
		for (int i = 0; i < NDEV; i++)
			devs[i] = heap_dev(&bus, "dev%d", i);
		assert_int_equal(pthread_create(&t1, NULL, add_all, NULL), 0);
		assert_int_equal(
			pthread_create(&t2, NULL, register_driver, NULL), 0);
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		/* Each device bound exactly once, whoever got there first. */
		assert_int_equal(probes, NDEV);
		for (int i = 0; i < NDEV; i++)
			assert_ptr_equal(devs[i]->driver, &counting_drv);
		t_driver_unregister(&counting_drv);
		assert_int_equal(removes, (round + 1) * NDEV);
		for (int i = 0; i < NDEV; i++)
			t_device_unregister(devs[i]);
	}
	assert_int_equal(heap_released, 20 * NDEV);
}

static struct device *victim;

static void *bind_unbind(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300; i++) {
		int ret = device_attach(victim);

		if (ret == -ENODEV)
			break;
		check(ret == 1 || ret == 0);
		device_release_driver(victim);
	}
	return NULL;
}

static void *delete_later(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		device_attach(victim);
	t_device_del(victim);
	return NULL;
}

static void one_device_many_threads(void **state)
{
	pthread_t t[3];

	(void)state;
	assert_int_equal(t_driver_register(&counting_drv), 0);
	victim = heap_dev(&bus, "victim%d", 0);
	assert_int_equal(t_device_add(victim), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, bind_unbind, NULL),
				 0);
	assert_int_equal(pthread_create(&t[2], NULL, delete_later, NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* Every bind was undone exactly once, and the device is gone. */
	assert_null(victim->driver);
	assert_int_equal(probes, removes);
	assert_int_equal(device_attach(victim), -ENODEV);
	put_device(victim);
	t_driver_unregister(&counting_drv);
	assert_int_equal(heap_released, 1);
}

/* A probe that waits to be let go, to unregister its driver meanwhile. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int in_probe, gate_open, unregistered;

static int slow_probe(struct device *dev)
{
	pthread_mutex_lock(&gate_lock);
	in_probe = 1;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	return counting_probe(dev);
}

static struct device_driver slow_drv = {
	.name = "slow",
	.bus = &bus,
	.probe = slow_probe,
	.remove = counting_remove,
};

static void *add_victim(void *arg)
{
	(void)arg;
	t_device_add(victim);
	return NULL;
}

static void *unregister_slow(void *arg)
{
	(void)arg;
	t_driver_unregister(&slow_drv);
	__atomic_store_n(&unregistered, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void unregister_waits_for_probe(void **state)
{
	struct timespec ms = { 0, 20 * 1000 * 1000 };
	pthread_t adder, remover;

	(void)state;
	in_probe = gate_open = unregistered = 0;
	assert_int_equal(t_driver_register(&slow_drv), 0);
	victim = heap_dev(&bus, "slow%d", 0);
	assert_int_equal(pthread_create(&adder, NULL, add_victim, NULL), 0);
	pthread_mutex_lock(&gate_lock);
	while (!in_probe)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);

	assert_int_equal(pthread_create(&remover, NULL, unregister_slow, NULL),
			 0);
	/* Give the unregistration time to (wrongly) finish early. */
	nanosleep(&ms, NULL);
	assert_int_equal(__atomic_load_n(&unregistered, __ATOMIC_ACQUIRE), 0);
	pthread_mutex_lock(&gate_lock);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	pthread_join(adder, NULL);
	pthread_join(remover, NULL);
	/* The probe finished, then the unregistration unbound it. */
	assert_int_equal(probes, 1);
	assert_int_equal(removes, 1);
	assert_null(victim->driver);
	t_device_unregister(victim);
}

/* Device i needs device i - 1 bound; added from two threads, in reverse. */
#define NCHAIN 24

static struct device *chain[NCHAIN];

static int chain_index(struct device *dev)
{
	int i;

	sscanf(dev_name(dev), "chain%d", &i);
	return i;
}

static int chain_probe(struct device *dev)
{
	int i = chain_index(dev);

	if (i > 0 && !device_is_bound(chain[i - 1]))
		return -EPROBE_DEFER;
	return counting_probe(dev);
}

static struct device_driver chain_drv = {
	.name = "chain",
	.bus = &bus,
	.probe = chain_probe,
	.remove = counting_remove,
};

static void *add_odd_or_even(void *arg)
{
	int parity = *(int *)arg;

	for (int i = NCHAIN - 1; i >= 0; i--)
		if (i % 2 == parity)
			t_device_add(chain[i]);
	return NULL;
}

static void deferral_from_two_threads(void **state)
{
	static int even = 0, odd = 1;

	(void)state;
	assert_int_equal(t_driver_register(&chain_drv), 0);
	for (int round = 0; round < 10; round++) {
		pthread_t t1, t2;

		for (int i = 0; i < NCHAIN; i++)
			chain[i] = heap_dev(&bus, "chain%d", i);
		assert_int_equal(
			pthread_create(&t1, NULL, add_odd_or_even, &even), 0);
		assert_int_equal(
			pthread_create(&t2, NULL, add_odd_or_even, &odd), 0);
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		/* No deferral missed a bind of another thread. */
		for (int i = 0; i < NCHAIN; i++)
			assert_true(device_is_bound(chain[i]));
		for (int i = NCHAIN - 1; i >= 0; i--)
			t_device_unregister(chain[i]);
	}
	t_driver_unregister(&chain_drv);
	assert_int_equal(probes, 10 * NCHAIN);
	assert_int_equal(removes, 10 * NCHAIN);
}

/* Parents whose probe adds two children, bound from other threads. */
static void child_action(void *child)
{
	t_device_unregister(child);
}

static int family_probe(struct device *dev)
{
	for (int i = 0; i < 2; i++) {
		struct device *child = calloc(1, sizeof(*child));
		int ret;

		if (!child)
			return -ENOMEM;
		child->bus = dev->bus;
		child->parent = dev;
		child->release = heap_release;
		device_initialize(child);
		ret = dev_set_name(child, "%s.child%d", dev_name(dev), i);
		if (!ret)
			ret = t_device_add(child);
		if (ret) {
			put_device(child);
			return ret;
		}
		ret = devm_add_action_or_reset(dev, child_action, child);
		if (ret)
			return ret;
	}
	return counting_probe(dev);
}

static int family_match(struct device *dev, const struct device_driver *drv)
{
	bool is_child = strstr(dev_name(dev), "child") != NULL;

	return is_child == (strcmp(drv->name, "kid") == 0);
}

static const struct bus_type family_bus = { .name = "family",
					    .match = family_match };

static struct device_driver parent_drv = {
	.name = "parent",
	.bus = &family_bus,
	.probe = family_probe,
	.remove = counting_remove,
};

static struct device_driver kid_drv = {
	.name = "kid",
	.bus = &family_bus,
	.probe = counting_probe,
	.remove = counting_remove,
};

static void *family_thread(void *arg)
{
	int base = *(int *)arg;

	for (int i = 0; i < 20; i++) {
		struct device *dev =
			heap_dev(&family_bus, "parent%d", base + i);

		check(t_device_add(dev) == 0);
		check(device_is_bound(dev));
		t_device_unregister(dev);
	}
	return NULL;
}

static void children_from_parallel_probes(void **state)
{
	static int base0 = 0, base1 = 1000;
	pthread_t t1, t2;

	(void)state;
	assert_int_equal(t_bus_register(&family_bus), 0);
	assert_int_equal(t_driver_register(&kid_drv), 0);
	assert_int_equal(t_driver_register(&parent_drv), 0);
	assert_int_equal(pthread_create(&t1, NULL, family_thread, &base0), 0);
	assert_int_equal(pthread_create(&t2, NULL, family_thread, &base1), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	t_driver_unregister(&parent_drv);
	t_driver_unregister(&kid_drv);
	t_bus_unregister(&family_bus);
	/* 40 parents and 80 children, each bound, unbound and released. */
	assert_int_equal(probes, 120);
	assert_int_equal(removes, 120);
	assert_int_equal(heap_released, 120);
}

static void *register_unregister_loop(void *arg)
{
	struct device_driver drv = { .name = arg,
				     .bus = &bus,
				     .probe = counting_probe,
				     .remove = counting_remove };

	for (int i = 0; i < 50; i++) {
		check(t_driver_register(&drv) == 0);
		t_driver_unregister(&drv);
	}
	return NULL;
}

static void *attach_loop(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		for (int j = 0; j < 4; j++) {
			device_attach(devs[j]);
			if (i % 3 == 0)
				device_release_driver(devs[j]);
		}
	}
	return NULL;
}

static void drivers_come_and_go(void **state)
{
	pthread_t t[3];

	(void)state;
	for (int j = 0; j < 4; j++) {
		devs[j] = heap_dev(&bus, "cg%d", j);
		assert_int_equal(t_device_add(devs[j]), 0);
	}
	assert_int_equal(
		pthread_create(&t[0], NULL, register_unregister_loop, "d1"), 0);
	assert_int_equal(
		pthread_create(&t[1], NULL, register_unregister_loop, "d2"), 0);
	assert_int_equal(pthread_create(&t[2], NULL, attach_loop, NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* Every driver is gone, so nothing may be left bound. */
	for (int j = 0; j < 4; j++) {
		assert_null(devs[j]->driver);
		t_device_unregister(devs[j]);
	}
	assert_int_equal(probes, removes);
}

/*
 * Two probes running at once, each registering a driver: neither
 * registration may wait for the other's device, or both wait forever.
 */
static pthread_barrier_t both_in_probe;
static struct device_driver extra_drv[2] = {
	{ .name = "extra0", .bus = &bus },
	{ .name = "extra1", .bus = &bus },
};

static int registering_probe(struct device *dev)
{
	int i = dev_name(dev)[3] - '0';

	pthread_barrier_wait(&both_in_probe);
	check(t_driver_register(&extra_drv[i]) == 0);
	return counting_probe(dev);
}

static int reg_match(struct device *dev, const struct device_driver *drv)
{
	return strncmp(dev_name(dev), "reg", 3) == 0 &&
	       strcmp(drv->name, "registering") == 0;
}

static const struct bus_type reg_bus = { .name = "regbus", .match = reg_match };

static struct device_driver registering_drv = {
	.name = "registering",
	.bus = &reg_bus,
	.probe = registering_probe,
	.remove = counting_remove,
};

static void *add_one(void *arg)
{
	t_device_add(arg);
	return NULL;
}

static void drivers_registered_from_parallel_probes(void **state)
{
	pthread_t t[2];

	(void)state;
	extra_drv[0].bus = extra_drv[1].bus = &reg_bus;
	assert_int_equal(pthread_barrier_init(&both_in_probe, NULL, 2), 0);
	assert_int_equal(t_bus_register(&reg_bus), 0);
	assert_int_equal(t_driver_register(&registering_drv), 0);
	for (int i = 0; i < 2; i++)
		devs[i] = heap_dev(&reg_bus, "reg%d", i);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, add_one, devs[i]),
				 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&both_in_probe);
	for (int i = 0; i < 2; i++) {
		assert_true(device_is_bound(devs[i]));
		t_device_unregister(devs[i]);
		t_driver_unregister(&extra_drv[i]);
	}
	t_driver_unregister(&registering_drv);
	t_bus_unregister(&reg_bus);
	assert_int_equal(probes, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(register_vs_add, setup,
						teardown),
		cmocka_unit_test_setup_teardown(one_device_many_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(unregister_waits_for_probe,
						setup, teardown),
		cmocka_unit_test_setup_teardown(deferral_from_two_threads,
						setup, teardown),
		cmocka_unit_test_setup_teardown(children_from_parallel_probes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(drivers_come_and_go, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			drivers_registered_from_parallel_probes, setup,
			teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &bus);
}
