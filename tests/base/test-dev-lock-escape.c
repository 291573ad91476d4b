// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A wait for a device's lock that has a way out is no edge of the record
 * of waits: driver_register()'s attach waits for a busy device's lock
 * until it gets it or its driver is being unregistered. When the lock's
 * holder is a probe that unregisters that very driver, the unregister
 * waits for the registration's walk (the driver's pin) and the walk gives
 * up as the driver dies: no loop, no WARN, the driver unregistered.
 * Recorded as a plain wait, the walk's wait made the unregister a loop
 * and refused it (one WARN, the driver left registered). In a child
 * under an alarm.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"
#include "../hostile/cell-child.h"

static const struct bus_type ebus = { .name = "lockesc" };
static struct device *dev;
static int reg_tid, reg_ret = 1000;

static int x_probe(struct device *d)
{
	(void)d;
	return -ENODEV;
}

static struct device_driver xdrv = {
	.name = "lockesc-x",
	.bus = &ebus,
	.probe = x_probe,
};

static void *registrar(void *arg)
{
	(void)arg;
	__atomic_store_n(&reg_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	reg_ret = driver_register(&xdrv);
	return NULL;
}

/* Holds the device's lock while the registration waits for it. */
static int a_probe(struct device *d)
{
	pthread_t t;

	(void)d;
	if (pthread_create(&t, NULL, registrar, NULL))
		return -EAGAIN;
	/* Its attach asleep in its polls of this device's lock. */
	while (!__atomic_load_n(&reg_tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(50000);
	driver_unregister(&xdrv);
	pthread_join(t, NULL);
	return 0;
}

static struct device_driver adrv = {
	.name = "lockesc-a",
	.bus = &ebus,
	.probe = a_probe,
};

#define CHECK(cond, code)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			return (code);                                         \
		}                                                              \
	} while (0)

static int cell(int row, int col)
{
	int w;

	(void)row;
	(void)col;
	alarm(10);
	CHECK(!bus_register(&ebus), 1);
	dev = heap_dev(&ebus, "lockesc.0");
	CHECK(!device_add(dev), 2);
	w = devres_warn_count();
	CHECK(device_driver_attach(&adrv, dev) == 0, 3);
	CHECK(reg_ret == 0, 4);
	CHECK(devres_warn_count() == w, 5);
	/* Unregistered: a second unregister is a WARN of its own. */
	driver_unregister(&xdrv);
	CHECK(devres_warn_count() == w + 1, 6);
	device_unregister(dev);
	return 0;
}

static void probe_unregisters_waiting_registration(void **state)
{
	static const char *const rows[] = { "probe unregisters" };
	static const char *const cols[] = { "registration waits" };

	(void)state;
	run_cells_in_children(cell, rows, 1, cols, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(probe_unregisters_waiting_registration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
