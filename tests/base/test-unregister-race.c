// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=300 */
/*
 * Unregistration racing probe and remove. Each round registers a driver
 * and a few devices whose probes sleep, defer once or return at once, and
 * whose remove sleeps; then four threads start at once: one unregisters
 * the driver, one unregisters the devices, one unbinds them by hand and
 * attaches them again, one triggers the deferred probes. The same again
 * with platform devices and a platform driver (three threads). Then the
 * bus itself goes while its devices probe: one thread unregisters the
 * driver, deletes the devices and unregisters the bus at once, while one
 * attaches the devices by hand (a probe running, sleeping), one triggers
 * the deferred probes (one parked), and one walks the bus with a callback
 * that sleeps; the only WARNs allowed are those of walks that began after
 * the bus was gone, counted exactly. Every call is legal in every order,
 * so no other WARN may come. After each round: every
 * probe that bound was undone by exactly one remove, no device is bound,
 * each device is released exactly once (at the test's last put), and the
 * fixture's ledger check finds nothing left. 400 rounds of each. The
 * library has no asynchronous probing: an attach from another thread is
 * the nearest thing, and is what the bus rounds race.
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
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/platform.h>
#include "testlib.h"

#define NDEV 4
#define ROUNDS 400

static const struct bus_type bus = { .name = "unregrace" };

struct rdev {
	struct device dev;
	int idx;
};

static int binds[NDEV], unbinds[NDEV], defers[NDEV], released[NDEV];
static struct device *devs[NDEV];

static int idx_of(struct device *dev)
{
	return ((struct rdev *)dev)->idx;
}

static void rdev_release(struct device *dev)
{
	__atomic_add_fetch(&released[idx_of(dev)], 1, __ATOMIC_RELAXED);
	free(dev);
}

static int race_probe(struct device *dev)
{
	int i = idx_of(dev);

	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	switch (i % 3) {
	case 0:
		usleep(200); /* a probe that sleeps */
		break;
	case 1:
		/* Defers the first time: parked, retried by a trigger. */
		if (__atomic_fetch_add(&defers[i], 1, __ATOMIC_RELAXED) == 0)
			return -EPROBE_DEFER;
		break;
	default:
		break;
	}
	__atomic_add_fetch(&binds[i], 1, __ATOMIC_RELAXED);
	return 0;
}

static void race_remove(struct device *dev)
{
	usleep(200); /* a remove in progress */
	__atomic_add_fetch(&unbinds[idx_of(dev)], 1, __ATOMIC_RELAXED);
}

static struct device_driver drv = {
	.name = "unregrace",
	.bus = &bus,
	.probe = race_probe,
	.remove = race_remove,
};

static pthread_barrier_t start;

static void *unregister_driver(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	usleep((unsigned int)(rand() % 300));
	driver_unregister(&drv);
	return NULL;
}

static void *unregister_devices(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < NDEV; i++) {
		usleep((unsigned int)(rand() % 150));
		device_unregister(devs[i]);
	}
	return NULL;
}

/* Unbinds and rebinds by hand, with its own references. */
static void *unbind_rebind(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int n = 0; n < 3; n++)
		for (int i = 0; i < NDEV; i++) {
			device_release_driver(devs[i]);
			(void)device_attach(devs[i]);
		}
	return NULL;
}

static void *trigger(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int n = 0; n < 5; n++) {
		driver_deferred_probe_trigger();
		usleep(100);
	}
	return NULL;
}

/* Starts @n threads of @fns at once, and waits for them all. */
static void race_threads(void *(*const *fns)(void *), int n)
{
	pthread_t t[4];

	assert_int_equal(pthread_barrier_init(&start, NULL, (unsigned int)n),
			 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fns[i], NULL), 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
}

/*
 * A race of the driver model's rounds: the bus its devices and driver are
 * on, whether the round registers that bus itself (one of its threads
 * unregisters it), the devices' name prefix, and the four threads.
 */
struct race {
	const struct bus_type *bus;
	struct device_driver *drv;
	bool own_bus;
	const char *prefix;
	void *(*threads[4])(void *);
};

static void one_round(const struct race *race, int round)
{
	memset(binds, 0, sizeof(binds));
	memset(unbinds, 0, sizeof(unbinds));
	memset(defers, 0, sizeof(defers));
	memset(released, 0, sizeof(released));
	/* Registered again each round: the last one's is gone. */
	if (race->own_bus)
		assert_int_equal(bus_register(race->bus), 0);
	/* Half the rounds register the driver first, half the devices. */
	if (round & 1)
		assert_int_equal(driver_register(race->drv), 0);
	for (int i = 0; i < NDEV; i++) {
		struct rdev *r = calloc(1, sizeof(*r));

		assert_non_null(r);
		r->idx = i;
		r->dev.bus = race->bus;
		r->dev.release = rdev_release;
		device_initialize(&r->dev);
		assert_int_equal(dev_set_name(&r->dev, "%s%d", race->prefix, i),
				 0);
		devs[i] = &r->dev;
		assert_int_equal(device_add(devs[i]), 0);
		/* The racing threads' reference: the device outlives them. */
		get_device(devs[i]);
	}
	if (!(round & 1))
		assert_int_equal(driver_register(race->drv), 0);
	race_threads(race->threads, 4);
	for (int i = 0; i < NDEV; i++) {
		/* Deleted, unbound: each bind undone by exactly one remove. */
		assert_null(devs[i]->driver);
		assert_false(device_is_bound(devs[i]));
		assert_int_equal(binds[i], unbinds[i]);
		assert_int_equal(released[i], 0);
		put_device(devs[i]);
		assert_int_equal(released[i], 1);
	}
}

/* ROUNDS rounds of @race from seed @seed; returns the binds they made. */
static int run_rounds(const struct race *race, unsigned int seed)
{
	int total = 0;

	srand(seed);
	for (int round = 0; round < ROUNDS; round++) {
		one_round(race, round);
		for (int i = 0; i < NDEV; i++)
			total += binds[i];
	}
	return total;
}

static const struct race device_race = {
	.bus = &bus,
	.drv = &drv,
	.prefix = "ur",
	.threads = { unregister_driver, unregister_devices, unbind_rebind,
		     trigger },
};

static void unregister_races_probe_and_remove(void **state)
{
	int warns = devres_warn_count();
	int total;

	(void)state;
	total = run_rounds(&device_race, 1);
	/* Every call made is legal in every order. */
	assert_int_equal(devres_warn_count() - warns, 0);
	/* The race did bind: it was not all unregistered before probing. */
	assert_true(total > 0);
	print_message("%d rounds, %d binds, each undone once\n", ROUNDS, total);
}

/* ---- The same on the platform bus ---- */

static struct platform_device *pdevs[NDEV];
static int pbinds[NDEV], punbinds[NDEV];

static int pidx(struct platform_device *pdev)
{
	return pdev->id;
}

static int plat_probe(struct platform_device *pdev)
{
	if (!devm_kzalloc(&pdev->dev, 32, GFP_KERNEL))
		return -ENOMEM;
	if (pidx(pdev) % 2)
		usleep(200);
	__atomic_add_fetch(&pbinds[pidx(pdev)], 1, __ATOMIC_RELAXED);
	return 0;
}

static void plat_remove(struct platform_device *pdev)
{
	usleep(200);
	__atomic_add_fetch(&punbinds[pidx(pdev)], 1, __ATOMIC_RELAXED);
}

static struct platform_driver pdrv = {
	.probe = plat_probe,
	.remove = plat_remove,
	.driver = { .name = "urplat" },
};

static void *punregister_driver(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	usleep((unsigned int)(rand() % 300));
	platform_driver_unregister(&pdrv);
	return NULL;
}

static void *punregister_devices(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < NDEV; i++) {
		usleep((unsigned int)(rand() % 150));
		platform_device_unregister(pdevs[i]);
	}
	return NULL;
}

static void platform_unregister_races(void **state)
{
	/* unbind_rebind() works on devs[]: the platform devices' here. */
	void *(*const fns[])(void *) = { punregister_driver,
					 punregister_devices, unbind_rebind };
	int warns = devres_warn_count(), total = 0;

	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		memset(pbinds, 0, sizeof(pbinds));
		memset(punbinds, 0, sizeof(punbinds));
		assert_int_equal(platform_driver_register(&pdrv), 0);
		for (int i = 0; i < NDEV; i++) {
			pdevs[i] = platform_device_alloc("urplat", i);
			assert_non_null(pdevs[i]);
			assert_int_equal(platform_device_add(pdevs[i]), 0);
			get_device(&pdevs[i]->dev);
			devs[i] = &pdevs[i]->dev;
		}
		race_threads(fns, 3);
		for (int i = 0; i < NDEV; i++) {
			assert_null(pdevs[i]->dev.driver);
			assert_int_equal(pbinds[i], punbinds[i]);
			total += pbinds[i];
			platform_device_put(pdevs[i]);
		}
	}
	assert_int_equal(devres_warn_count() - warns, 0);
	assert_true(total > 0);
	print_message("%d rounds, %d binds, each undone once\n", ROUNDS, total);
}

/*
 * The bus goes while its devices probe. Its own bus, driver and devices,
 * so that the group's bus stays registered.
 */
static const struct bus_type gone_bus = { .name = "unregrace-bus" };

static struct device_driver gone_drv = {
	.name = "unregrace-bus",
	.bus = &gone_bus,
	.probe = race_probe,
	.remove = race_remove,
};

static int walk_warns; /* walks refused: the bus was gone already */

static void *unregister_bus(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	usleep((unsigned int)(rand() % 300));
	driver_unregister(&gone_drv);
	for (int i = 0; i < NDEV; i++)
		device_unregister(devs[i]);
	/* Empty now, whatever the other threads are doing on it. */
	bus_unregister(&gone_bus);
	return NULL;
}

static int slow_walk(struct device *dev, void *data)
{
	(void)dev;
	(void)data;
	usleep(50);
	return 0;
}

static void *walk_bus(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int n = 0; n < 4; n++) {
		if (bus_for_each_dev(&gone_bus, NULL, NULL, slow_walk) ==
		    -EINVAL)
			walk_warns++;
		usleep(100);
	}
	return NULL;
}

static const struct race bus_race = {
	.bus = &gone_bus,
	.drv = &gone_drv,
	.own_bus = true,
	.prefix = "ub",
	.threads = { unregister_bus, unbind_rebind, trigger, walk_bus },
};

/* Shows every line but the WARNs the walks are allowed. */
static void quiet_walks(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (!strstr(line, "bus_for_each_dev: bus unregrace-bus is not "
			  "registered"))
		fprintf(stderr, "%s\n", line);
	(void)level;
}

static void bus_unregister_races_probe(void **state)
{
	int warns = devres_warn_count(), total;

	(void)state;
	walk_warns = 0;
	devres_set_log_sink(quiet_walks, NULL);
	total = run_rounds(&bus_race, 11);
	devres_set_log_sink(NULL, NULL);
	/* Gone, then registered again, the bus is not left registered. */
	assert_int_equal(bus_register(&gone_bus), 0);
	bus_unregister(&gone_bus);
	assert_int_equal(devres_warn_count() - warns, walk_warns);
	assert_true(total > 0);
	print_message("%d rounds, %d binds, %d walks after the bus went\n",
		      ROUNDS, total, walk_warns);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup_teardown(unregister_races_probe_and_remove,
					dev_setup, dev_teardown),
	cmocka_unit_test_setup_teardown(platform_unregister_races, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(bus_unregister_races_probe, dev_setup,
					dev_teardown),
};

int main(void)
{
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &bus);
}
