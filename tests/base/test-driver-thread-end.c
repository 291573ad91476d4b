// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
/*
 * A thread that ends inside a callback the driver core runs: a bus's
 * match, probe or remove, a driver's probe or remove (plain and platform),
 * a device's release function, bus_for_each_dev()'s function; each
 * reached through every call that runs it, each ended by pthread_exit()
 * and by a cancellation the callback enabled and met at a cancellation
 * point. Each cell checks one WARN naming the callback and the device, a
 * probe counted as failed (its managed resources released, the device
 * unbound), a remove as returned (the unbind done), then uses everything
 * again from the main thread: bind, unbind, unregister and register the
 * driver, delete the devices, unregister the bus, with every device
 * released and the ledger back at its start. Then the same by probes that
 * nest, a probe sweep, the release callbacks of a device's own and late
 * resources, and a match of devres_release() that puts the last
 * reference; and a cancellation a probe did not enable, which acts only
 * after the call. A hang fails the test (pthread_timedjoin_np(), and
 * alarm() for the rest).
 */
/* pthread_timedjoin_np() */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include "testlib.h"

/* The callback that ends its thread in a cell. */
enum cb {
	CB_NONE,
	CB_MATCH,
	CB_BUS_PROBE,
	CB_BUS_REMOVE,
	CB_PROBE,
	CB_REMOVE,
	CB_RELEASE,
	CB_FOR_EACH,
};

enum ending {
	BY_EXIT,
	BY_CANCEL,
	NR_ENDING
};

static const char *const ending_name[] = { "pthread_exit", "cancellation" };

/* Armed by a cell, disarmed by the callback that ends its thread. */
static enum cb end_in;
static enum ending ending;
/* The first probe of a cell returns -EPROBE_DEFER (the retry cell). */
static bool defer_once;

static int probes, removes, actions_added, actions_run, released;

/* The device the callback that ended ran on, and its name. */
static struct device *ended_dev;
static char ended_name[32];

/*
 * Ends after the first, each by pthread_exit() from a callback the library
 * runs while the thread unwinds from the one before.
 */
static int ends_left;
static __thread bool unwinding;

static void maybe_end(enum cb cb, struct device *dev)
{
	if (__atomic_load_n(&end_in, __ATOMIC_ACQUIRE) != cb)
		return;
	if (ends_left > 0)
		ends_left--;
	else
		__atomic_store_n(&end_in, CB_NONE, __ATOMIC_RELEASE);
	if (unwinding)
		pthread_exit((void *)8);
	unwinding = true;
	ended_dev = dev;
	/* A released device has no name to ask for: its release named it. */
	if (cb != CB_RELEASE)
		snprintf(ended_name, sizeof(ended_name), "%s", dev_name(dev));
	if (ending == BY_EXIT)
		pthread_exit((void *)7);
	/* The driver core runs callbacks with cancellation off. */
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_cancel(pthread_self());
	pthread_testcancel();
	fail_msg("the cancellation did not act");
}

static void count_action(void *data)
{
	(void)data;
	__atomic_add_fetch(&actions_run, 1, __ATOMIC_RELAXED);
}

/* A probe that takes managed resources before it may end its thread. */
static int any_probe(struct device *dev)
{
	probes++;
	if (defer_once) {
		defer_once = false;
		return -EPROBE_DEFER;
	}
	if (!devm_kzalloc(dev, 64, GFP_KERNEL))
		return -ENOMEM;
	if (devm_add_action(dev, count_action, NULL))
		return -ENOMEM;
	actions_added++;
	maybe_end(CB_PROBE, dev);
	return 0;
}

static void any_remove(struct device *dev)
{
	(void)dev;
	removes++;
	maybe_end(CB_REMOVE, dev);
}

static int dte_match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	maybe_end(CB_MATCH, dev);
	return 1;
}

static int dte_bus_probe(struct device *dev)
{
	maybe_end(CB_BUS_PROBE, dev);
	return dev->driver->probe(dev);
}

static void dte_bus_remove(struct device *dev)
{
	maybe_end(CB_BUS_REMOVE, dev);
	dev->driver->remove(dev);
}

/* A bus that only matches, and one that wraps probe and remove too. */
static const struct bus_type plain_bus = {
	.name = "dte",
	.match = dte_match,
};

static const struct bus_type wrap_bus = {
	.name = "dtw",
	.match = dte_match,
	.probe = dte_bus_probe,
	.remove = dte_bus_remove,
};

static struct device_driver drv = {
	.name = "dte-drv",
	.probe = any_probe,
	.remove = any_remove,
};

/* A device of the test's buses, with the number in its name. */
struct tdev {
	struct device dev;
	int i;
};

/* What a release that ended its thread did not free. */
static struct tdev *orphan;

static void dev_release(struct device *dev)
{
	struct tdev *td = container_of(dev, struct tdev, dev);

	released++;
	if (__atomic_load_n(&end_in, __ATOMIC_ACQUIRE) == CB_RELEASE) {
		orphan = td;
		snprintf(ended_name, sizeof(ended_name), "dte%d", td->i);
	}
	maybe_end(CB_RELEASE, dev);
	free(td);
}

#define NDEV 2
static struct device *devs[NDEV];

static struct device *new_dev(const struct bus_type *bus, int i)
{
	struct tdev *td = calloc(1, sizeof(*td));
	struct device *dev = &td->dev;

	assert_non_null(td);
	td->i = i;
	dev->bus = bus;
	dev->release = dev_release;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "dte%d", i), 0);
	return dev;
}

static int for_each_fn(struct device *dev, void *data)
{
	(void)dev;
	(void)data;
	maybe_end(CB_FOR_EACH, dev);
	return 0;
}

static int pdrv_probe(struct platform_device *pdev)
{
	return any_probe(&pdev->dev);
}

static void pdrv_remove(struct platform_device *pdev)
{
	any_remove(&pdev->dev);
}

static struct platform_driver pdrv = {
	.probe = pdrv_probe,
	.remove = pdrv_remove,
	.driver = { .name = "dte-pdev" },
};

static struct platform_device *pdevs[NDEV];

/* What the ending thread does. */
enum act {
	ADD,		 /* device_add() of devs[0] */
	DRV_REGISTER,	 /* driver_register(), devs[] added */
	ATTACH,		 /* device_attach(devs[0]) */
	DRIVER_ATTACH,	 /* device_driver_attach() */
	TRIGGER,	 /* driver_deferred_probe_trigger(), devs[0] parked */
	RELEASE_DRIVER,	 /* device_release_driver(devs[0]), bound */
	DRV_UNREGISTER,	 /* driver_unregister(), devs[] bound */
	DEV_UNREGISTER,	 /* device_unregister(devs[0]), bound */
	PUT,		 /* the last put_device() of devs[0], deleted */
	FOR_EACH,	 /* bus_for_each_dev() */
	PDEV_ADD,	 /* platform_device_add() */
	PDRV_REGISTER,	 /* platform_driver_register(), pdevs[] added */
	PDEV_UNREGISTER, /* platform_device_unregister(pdevs[0]), bound */
	PDRV_UNREGISTER, /* platform_driver_unregister(), pdevs[] bound */
};

struct cell {
	const char *name;
	enum cb cb;
	enum act act;
	const struct bus_type *bus; /* NULL: the platform bus */
	const char *func;	    /* the WARN's function */
	const char *why;	    /* in its reason */
	bool bound;		    /* devs[0] bound after (if still added) */
};

#define PROBE_WHY "probe: the probe failed, the device is left unbound"
#define REMOVE_WHY "remove: the unbind completes as if it returned"

static const struct cell cells[] = {
	{ "probe from device_add", CB_PROBE, ADD, &plain_bus, "probe",
	  "driver dte-drv's " PROBE_WHY, false },
	{ "probe from driver_register", CB_PROBE, DRV_REGISTER, &plain_bus,
	  "probe", "driver dte-drv's " PROBE_WHY, false },
	{ "probe from device_attach", CB_PROBE, ATTACH, &plain_bus, "probe",
	  "driver dte-drv's " PROBE_WHY, false },
	{ "probe from device_driver_attach", CB_PROBE, DRIVER_ATTACH,
	  &plain_bus, "probe", "driver dte-drv's " PROBE_WHY, false },
	{ "probe from a deferred-probe retry", CB_PROBE, TRIGGER, &plain_bus,
	  "probe", "driver dte-drv's " PROBE_WHY, false },
	{ "bus match from device_add", CB_MATCH, ADD, &plain_bus, "match",
	  "bus dte's match for driver dte-drv: no driver is bound", false },
	{ "bus match from driver_register", CB_MATCH, DRV_REGISTER, &plain_bus,
	  "match", "bus dte's match for driver dte-drv: no driver is bound",
	  false },
	{ "bus probe from device_attach", CB_BUS_PROBE, ATTACH, &wrap_bus,
	  "probe", "bus dtw's probe for driver dte-drv: the probe failed",
	  false },
	{ "driver probe under a bus probe", CB_PROBE, ADD, &wrap_bus, "probe",
	  "bus dtw's probe for driver dte-drv: the probe failed", false },
	{ "remove from device_release_driver", CB_REMOVE, RELEASE_DRIVER,
	  &plain_bus, "remove", "driver dte-drv's " REMOVE_WHY, false },
	{ "remove from driver_unregister", CB_REMOVE, DRV_UNREGISTER,
	  &plain_bus, "remove", "driver dte-drv's " REMOVE_WHY, false },
	{ "remove from device_unregister", CB_REMOVE, DEV_UNREGISTER,
	  &plain_bus, "remove", "driver dte-drv's " REMOVE_WHY, false },
	{ "bus remove from device_release_driver", CB_BUS_REMOVE,
	  RELEASE_DRIVER, &wrap_bus, "remove",
	  "bus dtw's remove for driver dte-drv: the unbind completes", false },
	{ "bus remove from driver_unregister", CB_BUS_REMOVE, DRV_UNREGISTER,
	  &wrap_bus, "remove",
	  "bus dtw's remove for driver dte-drv: the unbind completes", false },
	{ "release from device_unregister", CB_RELEASE, DEV_UNREGISTER,
	  &plain_bus, "release",
	  "the thread ended inside the device's release function", false },
	{ "release from the last put_device", CB_RELEASE, PUT, &plain_bus,
	  "release", "the thread ended inside the device's release function",
	  false },
	{ "bus_for_each_dev's function", CB_FOR_EACH, FOR_EACH, &plain_bus,
	  "bus_for_each_dev", "the thread ended inside the walk's function",
	  true },
	{ "platform probe from platform_device_add", CB_PROBE, PDEV_ADD, NULL,
	  "probe", "bus platform's probe for driver dte-pdev: the probe failed",
	  false },
	{ "platform probe from platform_driver_register", CB_PROBE,
	  PDRV_REGISTER, NULL, "probe",
	  "bus platform's probe for driver dte-pdev: the probe failed", false },
	{ "platform remove from platform_device_unregister", CB_REMOVE,
	  PDEV_UNREGISTER, NULL, "remove",
	  "bus platform's remove for driver dte-pdev: the unbind completes",
	  false },
	{ "platform remove from platform_driver_unregister", CB_REMOVE,
	  PDRV_UNREGISTER, NULL, "remove",
	  "bus platform's remove for driver dte-pdev: the unbind completes",
	  false },
};

static const struct cell *cell;

static void *ender(void *arg)
{
	(void)arg;
	switch (cell->act) {
	case ADD:
		device_add(devs[0]);
		break;
	case DRV_REGISTER:
		driver_register(&drv);
		break;
	case ATTACH:
		device_attach(devs[0]);
		break;
	case DRIVER_ATTACH:
		device_driver_attach(&drv, devs[0]);
		break;
	case TRIGGER:
		driver_deferred_probe_trigger();
		break;
	case RELEASE_DRIVER:
		device_release_driver(devs[0]);
		break;
	case DRV_UNREGISTER:
		driver_unregister(&drv);
		break;
	case DEV_UNREGISTER:
		device_unregister(devs[0]);
		break;
	case PUT:
		put_device(devs[0]);
		break;
	case FOR_EACH:
		bus_for_each_dev(cell->bus, NULL, NULL, for_each_fn);
		break;
	case PDEV_ADD:
		platform_device_add(pdevs[0]);
		break;
	case PDRV_REGISTER:
		platform_driver_register(&pdrv);
		break;
	case PDEV_UNREGISTER:
		platform_device_unregister(pdevs[0]);
		break;
	case PDRV_UNREGISTER:
		platform_driver_unregister(&pdrv);
		break;
	}
	return (void *)1; /* the callback did not end the thread */
}

/* Joins @t, failing (not hanging) when it has not ended within 2 s. */
static void *join_within(pthread_t t)
{
	struct timespec when;
	void *ret = NULL;

	clock_gettime(CLOCK_REALTIME, &when);
	when.tv_sec += 2;
	if (pthread_timedjoin_np(t, &ret, &when))
		fail_msg("the thread is still inside the driver core");
	return ret;
}

/* The state each act starts from, built with no callback armed. */
static void set_up_plain(void)
{
	if (cell->act != DRV_REGISTER)
		assert_int_equal(driver_register(&drv), 0);
	for (int i = 0; i < NDEV; i++)
		devs[i] = new_dev(cell->bus, i);
	/* devs[0] last: a bind after its deferral would retry it. */
	assert_int_equal(device_add(devs[1]), 0);
	switch (cell->act) {
	case ADD:
		break;
	case TRIGGER:
		defer_once = true;
		assert_int_equal(device_add(devs[0]), 0);
		assert_false(defer_once);
		assert_false(device_is_bound(devs[0]));
		break;
	case ATTACH:
	case DRIVER_ATTACH:
		assert_int_equal(device_add(devs[0]), 0);
		device_release_driver(devs[0]);
		break;
	case PUT:
		assert_int_equal(device_add(devs[0]), 0);
		get_device(devs[0]);
		device_unregister(devs[0]);
		break;
	default:
		assert_int_equal(device_add(devs[0]), 0);
	}
}

static void set_up_platform(void)
{
	if (cell->act != PDRV_REGISTER)
		assert_int_equal(platform_driver_register(&pdrv), 0);
	for (int i = 0; i < NDEV; i++) {
		pdevs[i] = platform_device_alloc("dte-pdev", i);
		assert_non_null(pdevs[i]);
		if (i == 0 && cell->act == PDEV_ADD)
			continue;
		assert_int_equal(platform_device_add(pdevs[i]), 0);
	}
}

/* Everything usable again, then all of it taken down, from this thread. */
static void use_plain_again(void)
{
	bool gone0 = cell->act == DEV_UNREGISTER || cell->act == PUT;

	/* Registered still, or again: its unregister completed. */
	if (cell->act == DRV_UNREGISTER)
		assert_int_equal(driver_register(&drv), 0);
	for (int i = gone0; i < NDEV; i++) {
		assert_int_equal(device_attach(devs[i]), 1);
		assert_true(device_is_bound(devs[i]));
		device_release_driver(devs[i]);
		assert_false(device_is_bound(devs[i]));
	}
	/* Unregistered and registered again: it binds them all. */
	driver_unregister(&drv);
	assert_int_equal(driver_register(&drv), 0);
	for (int i = gone0; i < NDEV; i++)
		assert_true(device_is_bound(devs[i]));
	for (int i = gone0; i < NDEV; i++)
		device_unregister(devs[i]);
	driver_unregister(&drv);
}

static void use_platform_again(void)
{
	bool gone0 = cell->act == PDEV_UNREGISTER;

	if (cell->act == PDRV_UNREGISTER)
		assert_int_equal(platform_driver_register(&pdrv), 0);
	for (int i = gone0; i < NDEV; i++) {
		assert_int_equal(device_attach(&pdevs[i]->dev), 1);
		device_release_driver(&pdevs[i]->dev);
		assert_false(device_is_bound(&pdevs[i]->dev));
	}
	platform_driver_unregister(&pdrv);
	assert_int_equal(platform_driver_register(&pdrv), 0);
	for (int i = gone0; i < NDEV; i++) {
		assert_true(device_is_bound(&pdevs[i]->dev));
		platform_device_unregister(pdevs[i]);
	}
	platform_driver_unregister(&pdrv);
}

static bool platform(void)
{
	return cell->bus == NULL;
}

static void one_cell(const struct cell *c, enum ending e)
{
	bool probe_cell = c->cb == CB_PROBE || c->cb == CB_BUS_PROBE;
	pthread_t t;
	void *ret;

	cell = c;
	ending = e;
	released = 0;
	orphan = NULL;
	drv.bus = c->bus;
	if (!platform())
		assert_int_equal(bus_register(c->bus), 0);
	if (platform())
		set_up_platform();
	else
		set_up_plain();
	probes = removes = actions_added = actions_run = 0;

	start_capture();
	__atomic_store_n(&end_in, c->cb, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, ender, NULL), 0);
	ret = join_within(t);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(end_in, CB_NONE);
	assert_ptr_equal(ret, e == BY_EXIT ? (void *)7 : PTHREAD_CANCELED);
	assert_int_equal(cap.n, 1);
	assert_non_null(strstr(cap.line[0], c->why));
	{
		char func[64];

		snprintf(func, sizeof(func), ": %s: ", c->func);
		assert_non_null(strstr(cap.line[0], func));
	}
	assert_non_null(strstr(cap.line[0], ended_name));
	/*
	 * What the probe that ended took was released, and so was what each
	 * unbound device's probe took (a bus remove that ended did not call
	 * the driver's).
	 */
	assert_int_equal(actions_run,
			 actions_added + removes + (c->cb == CB_BUS_REMOVE));
	if (probe_cell) {
		/* A bus probe ended before the driver's ran. */
		assert_int_equal(actions_added, c->cb == CB_PROBE);
		assert_false(device_is_bound(ended_dev));
	}
	if (c->act == DRV_UNREGISTER || c->act == PDRV_UNREGISTER) {
		/* The unbind of the other device completed too. */
		assert_int_equal(removes, NDEV - (c->cb == CB_BUS_REMOVE));
		for (int i = 0; i < NDEV; i++)
			assert_false(device_is_bound(platform() ? &pdevs[i]->dev
								: devs[i]));
	}
	if (c->cb == CB_RELEASE) {
		assert_int_equal(released, 1);
		assert_non_null(orphan);
		free(orphan);
	}
	if (c->bound)
		assert_true(device_is_bound(ended_dev));

	start_capture();
	if (platform())
		use_platform_again();
	else
		use_plain_again();
	if (!platform()) {
		bus_unregister(c->bus);
		assert_int_equal(released, NDEV);
	}
	expect_no_warn();
}

static void every_callback_every_end(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	for (size_t c = 0; c < sizeof(cells) / sizeof(cells[0]); c++)
		for (int e = 0; e < NR_ENDING; e++) {
			print_message("%s, %s\n", cells[c].name,
				      ending_name[e]);
			one_cell(&cells[c], (enum ending)e);
		}
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/*
 * A probe inside a probe: the parent's probe adds a child, managed, whose
 * own probe ends the thread. Both probes fail, innermost first, each with
 * its WARN: the child's unbinds it, the parent's releases the parent's
 * binding, which deletes the child; both devices' locks are let go.
 */
static struct device *nest_parent;

static void unregister_child(void *child)
{
	device_unregister(child);
}

static int nest_probe(struct device *dev)
{
	struct device *child;

	if (dev != nest_parent) {
		maybe_end(CB_PROBE, dev);
		return 0;
	}
	child = new_dev(dev->bus, 9);
	child->parent = dev;
	/* Recorded first: the add below does not return when it ends. */
	if (devm_add_action(dev, unregister_child, child)) {
		put_device(child);
		return -ENOMEM;
	}
	if (device_add(child)) {
		devm_remove_action(dev, unregister_child, child);
		put_device(child);
		return -ENODEV;
	}
	return 0;
}

static struct device_driver nest_drv = {
	.name = "dte-nest",
	.bus = &plain_bus,
	.probe = nest_probe,
};

static void *adder(void *arg)
{
	device_add(arg);
	return (void *)1;
}

static void probe_inside_a_probe(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	for (int e = 0; e < NR_ENDING; e++) {
		pthread_t t;

		print_message("%s\n", ending_name[e]);
		released = 0;
		ending = (enum ending)e;
		assert_int_equal(bus_register(&plain_bus), 0);
		assert_int_equal(driver_register(&nest_drv), 0);
		nest_parent = new_dev(&plain_bus, 0);
		start_capture();
		__atomic_store_n(&end_in, CB_PROBE, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, adder, nest_parent),
				 0);
		assert_ptr_equal(join_within(t),
				 e == BY_EXIT ? (void *)7 : PTHREAD_CANCELED);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(cap.n, 2);
		assert_non_null(strstr(cap.line[0], "dte9"));
		assert_non_null(strstr(cap.line[0], "the probe failed"));
		assert_non_null(strstr(cap.line[1], "dte0"));
		assert_non_null(strstr(cap.line[1], "the probe failed"));
		/* The child went with the parent's binding. */
		assert_int_equal(released, 1);
		assert_false(device_is_bound(nest_parent));

		start_capture();
		assert_int_equal(device_attach(nest_parent), 1);
		device_release_driver(nest_parent);
		assert_int_equal(released, 2);
		assert_int_equal(device_attach(nest_parent), 1);
		device_unregister(nest_parent);
		driver_unregister(&nest_drv);
		bus_unregister(&plain_bus);
		assert_int_equal(released, 4);
		expect_no_warn();
	}
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/*
 * driver_probe_sweep() whose probe ends the thread in its first run: the
 * sweep is over (another may start: it was refused for good), and the
 * bus it lent the unregistered driver is taken back.
 */
static int ending_probe(struct device *dev)
{
	maybe_end(CB_PROBE, dev);
	return 0;
}

static struct device_driver sweep_drv = {
	.name = "dte-sweep",
	.probe = ending_probe,
};

static void *sweeper(void *arg)
{
	struct devres_sweep_result r;

	driver_probe_sweep(&sweep_drv, arg, &r);
	return (void *)1;
}

static void probe_sweep_whose_probe_ends(void **state)
{
	struct devres_sweep_result r;
	struct device *dev;

	(void)state;
	assert_int_equal(bus_register(&plain_bus), 0);
	dev = new_dev(&plain_bus, 0);
	assert_int_equal(device_add(dev), 0);
	for (int e = 0; e < NR_ENDING; e++) {
		pthread_t t;

		print_message("%s\n", ending_name[e]);
		ending = (enum ending)e;
		start_capture();
		__atomic_store_n(&end_in, CB_PROBE, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, sweeper, dev), 0);
		assert_ptr_equal(join_within(t),
				 e == BY_EXIT ? (void *)7 : PTHREAD_CANCELED);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(count_prefix("WARNING: "), 1);
		assert_non_null(strstr(cap.line[0], "dte-sweep's probe: the "
						    "probe failed"));
		assert_null(sweep_drv.bus);
		assert_false(device_is_bound(dev));
		/* A sweep runs again, to its end, and finds nothing. */
		assert_int_equal(driver_probe_sweep(&sweep_drv, dev, &r), 0);
		assert_null(sweep_drv.bus);
		assert_false(device_is_bound(dev));
	}
	device_unregister(dev);
	bus_unregister(&plain_bus);
}

/*
 * A release callback of the device's own resources (acquired unbound) that
 * ends the thread inside device_unregister(), and one of a late resource
 * (acquired after the deletion) inside the last put_device(): the devres
 * core finishes the chain with its WARN, and the deletion and the release
 * of the device complete as the thread unwinds: the device is released,
 * the bus can go.
 */
static void ending_release(struct device *dev, void *res)
{
	(void)res;
	maybe_end(CB_RELEASE, dev);
}

static void *unregisterer(void *arg)
{
	device_unregister(arg);
	return (void *)1;
}

static void *putter(void *arg)
{
	put_device(arg);
	return (void *)1;
}

static void device_resources_whose_release_ends(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	devres_ledger_snapshot(&before);
	for (int late = 0; late < 2; late++)
		for (int e = 0; e < NR_ENDING; e++) {
			struct device *dev;
			pthread_t t;

			print_message("%s resource, %s\n",
				      late ? "late" : "unbound",
				      ending_name[e]);
			released = 0;
			ending = (enum ending)e;
			assert_int_equal(bus_register(&plain_bus), 0);
			dev = new_dev(&plain_bus, 0);
			assert_int_equal(device_add(dev), 0);
			if (late)
				device_del(dev);
			assert_non_null(devm_kzalloc(dev, 16, GFP_KERNEL));
			devres_add(dev,
				   devres_alloc(ending_release, 8, GFP_KERNEL));
			assert_non_null(devm_kzalloc(dev, 16, GFP_KERNEL));
			start_capture();
			__atomic_store_n(&end_in, CB_RELEASE, __ATOMIC_RELEASE);
			assert_int_equal(pthread_create(&t, NULL,
							late ? putter
							     : unregisterer,
							dev),
					 0);
			assert_ptr_equal(join_within(t),
					 e == BY_EXIT ? (void *)7
						      : PTHREAD_CANCELED);
			devres_set_log_sink(NULL, NULL);
			assert_int_equal(cap.n, 1);
			assert_non_null(strstr(cap.line[0], "the thread ended "
							    "inside the "
							    "release of "
							    "ending_release"));
			/* Deleted and released: its release function ran. */
			assert_int_equal(released, 1);
			start_capture();
			bus_unregister(&plain_bus);
			expect_no_warn();
		}
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/*
 * A cancellation requested inside a probe that does not enable it: the
 * probe runs to its end (cancellation is off under the device's lock), the
 * device binds, the add returns 0, and the request acts at the thread's
 * next cancellation point, after the call: no WARN.
 */
static int add_ret;

static int cancelled_probe(struct device *dev)
{
	(void)dev;
	pthread_cancel(pthread_self());
	pthread_testcancel(); /* not acted on here */
	probes++;
	return 0;
}

static struct device_driver cancel_drv = {
	.name = "dte-cancel",
	.bus = &plain_bus,
	.probe = cancelled_probe,
};

static void *cancelled_adder(void *arg)
{
	add_ret = device_add(arg);
	pthread_testcancel();
	return (void *)1;
}

static void cancellation_not_enabled_acts_after_the_call(void **state)
{
	struct device *dev;
	pthread_t t;

	(void)state;
	assert_int_equal(bus_register(&plain_bus), 0);
	assert_int_equal(driver_register(&cancel_drv), 0);
	dev = new_dev(&plain_bus, 0);
	probes = 0;
	add_ret = -1;
	start_capture();
	assert_int_equal(pthread_create(&t, NULL, cancelled_adder, dev), 0);
	assert_ptr_equal(join_within(t), PTHREAD_CANCELED);
	expect_no_warn();
	assert_int_equal(add_ret, 0);
	assert_int_equal(probes, 1);
	assert_true(device_is_bound(dev));
	device_unregister(dev);
	driver_unregister(&cancel_drv);
	bus_unregister(&plain_bus);
}

/*
 * driver_unregister() of a driver bound to three devices whose removes all
 * end the thread: the first by either end, the next two by pthread_exit()
 * from inside the unwinding of the one before (the handler that finishes
 * the unregister runs them). Each unbind completes with its WARN, and the
 * unregister with the last: the driver registers again and binds all three.
 */
static void *unregister_drv(void *arg)
{
	driver_unregister(arg);
	return (void *)1;
}

static void removes_that_end_again_and_again(void **state)
{
	struct devres_ledger before, after;
	struct device *d[3];

	(void)state;
	devres_ledger_snapshot(&before);
	drv.bus = &plain_bus;
	for (int e = 0; e < NR_ENDING; e++) {
		pthread_t t;

		print_message("%s, then pthread_exit twice\n", ending_name[e]);
		ending = (enum ending)e;
		released = 0;
		assert_int_equal(bus_register(&plain_bus), 0);
		assert_int_equal(driver_register(&drv), 0);
		for (int i = 0; i < 3; i++) {
			d[i] = new_dev(&plain_bus, i);
			assert_int_equal(device_add(d[i]), 0);
			assert_true(device_is_bound(d[i]));
		}
		removes = actions_run = 0;
		ends_left = 2;
		start_capture();
		__atomic_store_n(&end_in, CB_REMOVE, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, unregister_drv, &drv),
				 0);
		assert_ptr_equal(join_within(t), (void *)8);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(end_in, CB_NONE);
		assert_int_equal(cap.n, 3);
		for (int i = 0; i < 3; i++) {
			assert_non_null(strstr(cap.line[i], "remove: the "
							    "unbind "
							    "completes"));
			assert_false(device_is_bound(d[i]));
		}
		assert_int_equal(removes, 3);
		assert_int_equal(actions_run, 3);

		start_capture();
		assert_int_equal(driver_register(&drv), 0);
		for (int i = 0; i < 3; i++) {
			assert_true(device_is_bound(d[i]));
			device_unregister(d[i]);
		}
		driver_unregister(&drv);
		bus_unregister(&plain_bus);
		assert_int_equal(released, 3);
		expect_no_warn();
	}
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

/*
 * A match of devres_release() that puts the last reference of its device
 * then ends the thread: the put waited in devres_release()'s frame, which
 * must be left as the thread unwinds, or the device is never released.
 */
static bool match_rel_ran;

static void match_rel(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	match_rel_ran = true;
}

static int putting_match(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	put_device(dev);
	maybe_end(CB_MATCH, dev);
	return 1;
}

static void *releaser(void *arg)
{
	devres_release(arg, match_rel, putting_match, NULL);
	return (void *)1;
}

static void last_put_in_match_of_devres_release(void **state)
{
	(void)state;
	for (int e = 0; e < NR_ENDING; e++) {
		struct tdev *td = calloc(1, sizeof(*td));
		struct device *dev = &td->dev;
		pthread_t t;

		print_message("%s\n", ending_name[e]);
		assert_non_null(td);
		dev->release = dev_release;
		device_initialize(dev);
		assert_int_equal(dev_set_name(dev, "dtm"), 0);
		{
			void *res = devres_alloc(match_rel, 8, GFP_KERNEL);

			devres_add(dev, res);
		}
		released = 0;
		match_rel_ran = false;
		ending = (enum ending)e;
		start_capture();
		__atomic_store_n(&end_in, CB_MATCH, __ATOMIC_RELEASE);
		assert_int_equal(pthread_create(&t, NULL, releaser, dev), 0);
		assert_ptr_equal(join_within(t),
				 e == BY_EXIT ? (void *)7 : PTHREAD_CANCELED);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(cap.n, 1);
		assert_non_null(strstr(cap.line[0], ": devres_release: the "
						    "thread ended inside a "
						    "match"));
		/* The deferred put was carried out: released, and freed. */
		assert_int_equal(released, 1);
		assert_true(match_rel_ran);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_callback_every_end),
		cmocka_unit_test(probe_inside_a_probe),
		cmocka_unit_test(removes_that_end_again_and_again),
		cmocka_unit_test(probe_sweep_whose_probe_ends),
		cmocka_unit_test(device_resources_whose_release_ends),
		cmocka_unit_test(cancellation_not_enabled_acts_after_the_call),
		cmocka_unit_test(last_put_in_match_of_devres_release),
	};

	/* A hang anywhere fails the test instead of blocking its run. */
	alarm(50);
	/* One line a WARN: the capture counts the lines. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
