// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * A device unregistered by another thread while its device_add() still
 * runs. Once on its bus the device is found by a walk, and the walk's
 * callback deletes it and puts the owner's reference, as bus code that
 * removes what it finds does; the add has not yet probed it, or is
 * probing it. As the kernel's, device_add() holds a reference of its own
 * until it returns, so the device is released then at the latest, never
 * under it. Before, the add went on with freed memory: its probe locked
 * a freed device (ASan: heap-use-after-free in device_add(); in the dev
 * build the poisoned device crashed or hung the cell).
 *
 * One thread adds devices (device_add(), device_register()) whose
 * driver's probe yields; another walks the bus over and over and deletes
 * each device it finds (device_unregister(), or device_del() and
 * put_device()). Each device is released once, all of them by the end,
 * with no WARN and the ledger back at its start. Each cell in a child
 * under an alarm.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"

#define NDEV 1000

enum add {
	A_DEVICE_ADD,
	A_DEVICE_REGISTER,
	NR_ADD
};

static const char *const add_names[NR_ADD] = { "device_add", "device_"
							     "register" };

enum kill {
	K_UNREGISTER,
	K_DEL_PUT,
	NR_KILL
};

static const char *const kill_names[NR_KILL] = { "device_unregister", "device_"
								      "del + "
								      "put_"
								      "devic"
								      "e" };

struct adev {
	struct device dev;
	bool taken; /* by the thread that deletes it */
};

static const struct bus_type au_bus = { .name = "au" };
static enum add cur_add;
static enum kill cur_kill;
static int released, added;
static bool adding_done;

static void au_release(struct device *dev)
{
	struct adev *a = (struct adev *)dev;

	__atomic_add_fetch(&released, 1, __ATOMIC_RELAXED);
	/* Poisoned, so that a use after the release goes wrong at once. */
	memset(a, 0x6b, sizeof(*a));
	free(a);
}

static int au_probe(struct device *dev)
{
	(void)dev;
	sched_yield();
	return 0;
}

static struct device_driver au_drv = {
	.name = "au-drv",
	.bus = &au_bus,
	.probe = au_probe,
};

static char names[NDEV][16];

static void *adder(void *arg)
{
	(void)arg;
	for (int i = 0; i < NDEV; i++) {
		struct adev *a = calloc(1, sizeof(*a));
		int ret;

		if (!a)
			return (void *)1;
		if (cur_add == A_DEVICE_ADD)
			device_initialize(&a->dev);
		a->dev.bus = &au_bus;
		a->dev.release = au_release;
		snprintf(names[i], sizeof(names[i]), "au%d", i);
		a->dev.init_name = names[i];
		ret = cur_add == A_DEVICE_ADD ? device_add(&a->dev)
					      : device_register(&a->dev);
		/* Added, the device is the deleting thread's: not touched. */
		if (ret)
			return (void *)3;
		__atomic_add_fetch(&added, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&adding_done, true, __ATOMIC_RELEASE);
	return NULL;
}

static int kill_one(struct device *dev, void *data)
{
	struct adev *a = (struct adev *)dev;

	(void)data;
	if (__atomic_exchange_n(&a->taken, true, __ATOMIC_ACQ_REL))
		return 0;
	if (cur_kill == K_UNREGISTER) {
		device_unregister(dev);
	} else {
		device_del(dev);
		put_device(dev);
	}
	return 0;
}

static int cell(int row, int col)
{
	struct devres_ledger base, now;
	pthread_t t;
	void *res;
	int w0;

	alarm(30);
	cur_add = (enum add)row;
	cur_kill = (enum kill)col;
	devres_ledger_snapshot(&base);
	if (bus_register(&au_bus) || driver_register(&au_drv))
		return 2;
	w0 = devres_warn_count();
	if (pthread_create(&t, NULL, adder, NULL))
		return 3;
	do {
		if (bus_for_each_dev(&au_bus, NULL, NULL, kill_one))
			return 4;
	} while (!__atomic_load_n(&adding_done, __ATOMIC_ACQUIRE) &&
		 __atomic_load_n(&added, __ATOMIC_RELAXED) < NDEV);
	if (pthread_join(t, &res) || res)
		return 5;
	if (bus_for_each_dev(&au_bus, NULL, NULL, kill_one))
		return 6;
	if (released != NDEV)
		return 7;
	driver_unregister(&au_drv);
	bus_unregister(&au_bus);
	if (devres_warn_count() != w0)
		return 8;
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? 9 : 0;
}

static void unregistered_while_added(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, add_names, NR_ADD, kill_names, NR_KILL,
				   2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unregistered_while_added),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
