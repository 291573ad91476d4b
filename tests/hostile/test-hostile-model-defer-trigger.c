// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=60 */
/*
 * A trigger that lands while the probe it is for runs. A device's probe
 * (or its bus's match) finds what it needs missing; before it returns
 * -EPROBE_DEFER, another thread makes it available and calls
 * driver_deferred_probe_trigger(). That retry finds the device being
 * probed, not parked, and skips it; the device is parked after. As the
 * kernel's (which re-triggers when a trigger came during the probe),
 * the park must ask for a retry of its own, made before the call that
 * probed returns: the device ends bound. Before, it stayed parked until
 * some later bind or trigger, for ever in a program that waits for it.
 *
 * For a probe and for a match that defer, under each call that probes:
 * device_add(), driver_register(), device_attach(),
 * device_driver_attach() (a probe only: it asks no match), the retry of
 * this thread's own trigger, and a child added by another device's
 * probe, which then fails (the retry is left to the outermost call). The other thread's
 * trigger runs whole inside the callback's window (the callback waits
 * for it), so every cell meets the race. Each cell in a child of its
 * own under an alarm; no WARN, and the ledger back at its start.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "hostile/cell-child.h"

enum who {
	W_PROBE,
	W_MATCH
};

enum how {
	H_DEVICE_ADD,
	H_DRIVER_REGISTER,
	H_DEVICE_ATTACH,
	H_DRIVER_ATTACH,
	H_OWN_TRIGGER,
	H_CHILD,
};

static const struct {
	enum who who;
	enum how how;
} cells[] = {
	{ W_PROBE, H_DEVICE_ADD },    { W_PROBE, H_DRIVER_REGISTER },
	{ W_PROBE, H_DEVICE_ATTACH }, { W_PROBE, H_DRIVER_ATTACH },
	{ W_PROBE, H_OWN_TRIGGER },   { W_PROBE, H_CHILD },
	{ W_MATCH, H_DEVICE_ADD },    { W_MATCH, H_DRIVER_REGISTER },
	{ W_MATCH, H_DEVICE_ATTACH }, { W_MATCH, H_OWN_TRIGGER },
	{ W_MATCH, H_CHILD },
};

#define NR_CELLS ((int)(sizeof(cells) / sizeof(cells[0])))

static const char *const cell_names[NR_CELLS] = {
	"probe / device_add",
	"probe / driver_register",
	"probe / device_attach",
	"probe / device_driver_attach",
	"probe / retry of its own trigger",
	"probe / child added by a probe",
	"match / device_add",
	"match / driver_register",
	"match / device_attach",
	"match / retry of its own trigger",
	"match / child added by a probe",
};

static const char *const one_col[] = { "" };

static enum who cur_who;
static bool gate;  /* the bus matches the device once it is open */
static bool armed; /* the next deferral waits for the other thread */
static bool ready; /* what the callback waits for; set by that thread */
static int calls;  /* of the callback that defers */
static sem_t in_cb, triggered;
static struct device dev, par, pp[2];

static void nop_release(struct device *d)
{
	(void)d;
}

/* The deferring callback's decision; the first armed one waits. */
static int wait_or_defer(void)
{
	calls++;
	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
		return 0;
	if (armed) {
		armed = false;
		sem_post(&in_cb);
		while (sem_wait(&triggered))
			;
	}
	return -EPROBE_DEFER;
}

static int dt_match(struct device *d, const struct device_driver *drv)
{
	if (strcmp(drv->name, "dt-pdrv") == 0)
		return d == &par;
	if (strcmp(drv->name, "dt-pp") == 0)
		return d == &pp[0] || d == &pp[1];
	if (d != &dev || !gate)
		return 0;
	if (cur_who == W_MATCH) {
		int ret = wait_or_defer();

		return ret ? ret : 1;
	}
	return 1;
}

static const struct bus_type dt_bus = { .name = "dt", .match = dt_match };

static int dev_probe(struct device *d)
{
	(void)d;
	return cur_who == W_PROBE ? wait_or_defer() : 0;
}

static struct device_driver dev_drv = {
	.name = "dt-drv",
	.bus = &dt_bus,
	.probe = dev_probe,
};

static int reg(struct device *d, const char *name)
{
	device_initialize(d);
	d->bus = &dt_bus;
	d->release = nop_release;
	if (dev_set_name(d, "%s", name))
		return -ENOMEM;
	return device_add(d);
}

/*
 * The parent's probe adds the device, whose probe runs nested, then
 * fails: no bind of the parent's starts a retry that would hide a
 * missed one.
 */
static int par_probe(struct device *d)
{
	(void)d;
	return reg(&dev, "dt-dev") ?: -ENXIO;
}

static struct device_driver par_drv = {
	.name = "dt-pdrv",
	.bus = &dt_bus,
	.probe = par_probe,
};

/* The other thread: makes the resource available, and triggers. */
static void *other(void *arg)
{
	(void)arg;
	while (sem_wait(&in_cb))
		;
	__atomic_store_n(&ready, true, __ATOMIC_RELEASE);
	driver_deferred_probe_trigger();
	sem_post(&triggered);
	return NULL;
}

/* Runs the cell's call; 0 when it returned what it should. */
static int run(enum how how)
{
	switch (how) {
	case H_DEVICE_ADD:
		gate = armed = true;
		if (driver_register(&dev_drv))
			return 10;
		return reg(&dev, "dt-dev") ? 11 : 0;
	case H_DRIVER_REGISTER:
		gate = true;
		if (reg(&dev, "dt-dev"))
			return 12;
		armed = true;
		return driver_register(&dev_drv) ? 13 : 0;
	case H_DEVICE_ATTACH:
	case H_DRIVER_ATTACH:
		if (driver_register(&dev_drv) || reg(&dev, "dt-dev"))
			return 14;
		gate = armed = true;
		if (how == H_DEVICE_ATTACH)
			return device_attach(&dev) < 0 ? 15 : 0;
		return device_driver_attach(&dev_drv, &dev) != -EAGAIN ? 16 : 0;
	case H_OWN_TRIGGER:
		gate = true;
		if (driver_register(&dev_drv) || reg(&dev, "dt-dev"))
			return 17;
		if (calls != 1 || device_is_bound(&dev))
			return 18;
		armed = true;
		driver_deferred_probe_trigger();
		return 0;
	case H_CHILD:
		gate = armed = true;
		if (driver_register(&dev_drv) || driver_register(&par_drv))
			return 19;
		return reg(&par, "dt-par") ? 20 : 0;
	}
	return 21;
}

static int cell(int row, int col)
{
	struct devres_ledger base, now;
	pthread_t t;
	int w0, ret;

	(void)col;
	alarm(10);
	cur_who = cells[row].who;
	if (sem_init(&in_cb, 0, 0) || sem_init(&triggered, 0, 0))
		return 2;
	devres_ledger_snapshot(&base);
	if (bus_register(&dt_bus))
		return 3;
	w0 = devres_warn_count();
	if (pthread_create(&t, NULL, other, NULL))
		return 4;
	ret = run(cells[row].how);
	if (ret)
		return ret;
	if (pthread_join(t, NULL))
		return 5;
	/* Deferred once in the window, then bound by the park's retry. */
	if (!device_is_bound(&dev))
		return 30;
	if (calls != (cells[row].how == H_OWN_TRIGGER ? 3 : 2))
		return 31;
	if (cells[row].how == H_CHILD && device_is_bound(&par))
		return 32;
	device_unregister(&dev);
	if (cells[row].how == H_CHILD) {
		device_unregister(&par);
		driver_unregister(&par_drv);
	}
	driver_unregister(&dev_drv);
	bus_unregister(&dt_bus);
	if (devres_warn_count() != w0)
		return 33;
	devres_ledger_snapshot(&now);
	return devres_ledger_diff(&base, &now, stderr) ? 34 : 0;
}

static void trigger_during_callback(void **state)
{
	(void)state;
	run_cells_in_children_wide(cell, cell_names, NR_CELLS, one_col, 1, 2);
}

/*
 * Two threads whose probes trigger and defer, at once: a retry that a
 * callback asks for is not a trigger another thread's park answers, or
 * the two would retry each other's device for ever.
 */
#define PP_ROUNDS 200

static int pp_probes;
static pthread_barrier_t pp_start;

static int pp_probe(struct device *d)
{
	(void)d;
	if (__atomic_add_fetch(&pp_probes, 1, __ATOMIC_RELAXED) >
	    64 * PP_ROUNDS)
		_exit(99); /* the retries would never end */
	driver_deferred_probe_trigger();
	sched_yield();
	return -EPROBE_DEFER;
}

static struct device_driver pp_drv = {
	.name = "dt-pp",
	.bus = &dt_bus,
	.probe = pp_probe,
};

static void *pp_add(void *arg)
{
	struct device *d = arg;

	pthread_barrier_wait(&pp_start);
	if (reg(d, d == &pp[0] ? "dt-pp0" : "dt-pp1"))
		return arg;
	return NULL;
}

static int ping_pong(int row, int col)
{
	pthread_t t;
	void *res;

	(void)row;
	(void)col;
	alarm(20);
	gate = true;
	if (bus_register(&dt_bus) || driver_register(&pp_drv) ||
	    pthread_barrier_init(&pp_start, NULL, 2))
		return 2;
	for (int i = 0; i < PP_ROUNDS; i++) {
		if (pthread_create(&t, NULL, pp_add, &pp[1]))
			return 3;
		if (pp_add(&pp[0]) || pthread_join(t, &res) || res)
			return 4;
		device_unregister(&pp[0]);
		device_unregister(&pp[1]);
	}
	driver_unregister(&pp_drv);
	bus_unregister(&dt_bus);
	return devres_warn_count() ? 5 : 0;
}

static void probes_that_trigger_on_two_threads(void **state)
{
	static const char *const name[] = { "two threads" };

	(void)state;
	run_cells_in_children(ping_pong, name, 1, one_col, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(trigger_during_callback),
		cmocka_unit_test(probes_that_trigger_on_two_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
