// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=300 */
/*
 * The driver model torn down from several threads at once, as a hostile
 * program would: a driver unregistered while it is bound by hand, a driver
 * and its bus unregistered together, a driver registered while a search
 * defers, buses, drivers and devices unregistered in every pairing, one
 * device deleted twice at once, walks racing teardown, fork() while other
 * threads use the driver model. Run under TSan (label tsan) and ASan.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

static const struct bus_type bus = { .name = "hrace" };

/* Threads count what went wrong: cmocka's asserts belong to main. */
static int thread_errors;

static void check(bool ok)
{
	if (!ok)
		__atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
}

static int ld(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void wait_for(const int *p, int v)
{
	while (ld(p) != v)
		sched_yield();
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
	return t;
}

/* WARNs from threads, counted; the test asserts how many it expects. */
static int warns_seen;

static void counting_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)line;
	if (level == DEVRES_LOG_WARNING)
		__atomic_add_fetch(&warns_seen, 1, __ATOMIC_RELAXED);
}

static int probes, removes, removes_after_unregister;
static int unregistered;

static int counting_probe(struct device *dev)
{
	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	__atomic_add_fetch(&probes, 1, __ATOMIC_RELAXED);
	return 0;
}

static void counting_remove(struct device *dev)
{
	(void)dev;
	__atomic_add_fetch(&removes, 1, __ATOMIC_RELAXED);
	if (ld(&unregistered))
		__atomic_add_fetch(&removes_after_unregister, 1,
				   __ATOMIC_RELAXED);
}

static int setup(void **state)
{
	probes = removes = removes_after_unregister = unregistered = 0;
	thread_errors = warns_seen = 0;
	heap_released = 0;
	return dev_setup(state);
}

static int teardown(void **state)
{
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(ld(&thread_errors), 0);
	return dev_teardown(state);
}

/* ---- defect 5: driver_unregister waits for a probe bound by hand ---- */

static int in_probe, go;

static int slow_probe(struct device *dev)
{
	st(&in_probe, 1);
	wait_for(&go, 1);
	return counting_probe(dev);
}

/* Matches nothing: only a bind by hand uses the driver. */
static int match_none(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	return 0;
}

static const struct bus_type shy_bus = {
	.name = "hshy",
	.match = match_none,
};

static struct device_driver slow_drv = {
	.name = "slow",
	.bus = &shy_bus,
	.probe = slow_probe,
	.remove = counting_remove,
};

static struct device *d5_dev;
static int d5_ret, d5_unregistered;

static void *hand_bind(void *arg)
{
	(void)arg;
	d5_ret = device_driver_attach(&slow_drv, d5_dev);
	return NULL;
}

static void *unregister_slow(void *arg)
{
	(void)arg;
	driver_unregister(&slow_drv);
	st(&unregistered, 1);
	st(&d5_unregistered, 1);
	return NULL;
}

static void unregister_waits_for_hand_bind(void **state)
{
	pthread_t a, u;
	int early;

	(void)state;
	in_probe = go = d5_unregistered = 0;
	assert_int_equal(t_bus_register(&shy_bus), 0);
	d5_dev = heap_dev(&shy_bus, "d5");
	assert_int_equal(t_device_add(d5_dev), 0);
	assert_int_equal(driver_register(&slow_drv), 0);
	a = spawn(hand_bind, NULL);
	wait_for(&in_probe, 1);
	u = spawn(unregister_slow, NULL);
	nap_ms(100);
	early = ld(&d5_unregistered);
	st(&go, 1);
	pthread_join(a, NULL);
	pthread_join(u, NULL);
	/* It was still waiting for the probe that uses the driver. */
	assert_int_equal(early, 0);
	assert_int_equal(d5_ret, 0);
	/* The probe bound, and the unregister unbound it: remove ran. */
	assert_int_equal(probes, 1);
	assert_int_equal(removes, 1);
	assert_null(d5_dev->driver);
	/* Nothing uses the driver after driver_unregister() returned. */
	t_device_unregister(d5_dev);
	assert_int_equal(removes_after_unregister, 0);
	assert_int_equal(heap_released, 1);
	t_bus_unregister(&shy_bus);
}

/* ---- defect 6: a driver and its bus unregistered at once ---- */

static const struct bus_type pair_bus = { .name = "hpair" };
static struct device_driver pair_drv = { .name = "pair", .bus = &pair_bus };
static int bus_gone;

static void *unregister_pair_drv(void *arg)
{
	(void)arg;
	driver_unregister(&pair_drv);
	return NULL;
}

/*
 * Unregisters the bus, retrying while the driver is still on it, for up
 * to 10 s: a count of retries would end before a driver thread that a
 * loaded machine did not run got the lock the retries keep taking.
 */
static void *unregister_pair_bus(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		bus_unregister(&pair_bus);
		if (bus_register(&pair_bus) == 0) {
			bus_unregister(&pair_bus);
			st(&bus_gone, 1);
			return NULL;
		}
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 10);
	return NULL;
}

static void driver_and_bus_unregistered_together(void **state)
{
	(void)state;
	devres_set_log_sink(counting_sink, NULL);
	for (int i = 0; i < 300; i++) {
		pthread_t a, b;

		bus_gone = 0;
		assert_int_equal(bus_register(&pair_bus), 0);
		assert_int_equal(driver_register(&pair_drv), 0);
		a = spawn(unregister_pair_drv, NULL);
		b = spawn(unregister_pair_bus, NULL);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		assert_int_equal(ld(&bus_gone), 1);
	}
}

/* ---- defect 8: a driver registered while a search defers ---- */

static int d8_in_probe, d8_go;

static int deferring_probe(struct device *dev)
{
	(void)dev;
	st(&d8_in_probe, 1);
	wait_for(&d8_go, 1);
	return -EPROBE_DEFER;
}

static struct device_driver deferring_drv = {
	.name = "deferring",
	.bus = &bus,
	.probe = deferring_probe,
};

static struct device_driver late_drv = {
	.name = "late",
	.bus = &bus,
	.probe = counting_probe,
	.remove = counting_remove,
};

static struct device *d8_dev;

static void *add_d8(void *arg)
{
	(void)arg;
	check(t_device_add(d8_dev) == 0);
	return NULL;
}

static void registered_while_search_defers(void **state)
{
	pthread_t a;

	(void)state;
	d8_in_probe = d8_go = 0;
	assert_int_equal(t_driver_register(&deferring_drv), 0);
	d8_dev = heap_dev(&bus, "d8");
	a = spawn(add_d8, NULL);
	wait_for(&d8_in_probe, 1);
	assert_int_equal(t_driver_register(&late_drv), 0);
	st(&d8_go, 1);
	pthread_join(a, NULL);
	assert_ptr_equal(d8_dev->driver, &late_drv);
	assert_int_equal(probes, 1);
	t_device_unregister(d8_dev);
	assert_int_equal(heap_released, 1);
}

/* ---- R4: bus, driver and device unregistered in every pairing ---- */

static const struct bus_type trio_bus = { .name = "htrio" };
static struct device_driver trio_drv = {
	.name = "trio",
	.bus = &trio_bus,
	.probe = counting_probe,
	.remove = counting_remove,
};
static struct device *trio_dev;

static void *trio_device(void *arg)
{
	(void)arg;
	device_unregister(trio_dev);
	return NULL;
}

static void *trio_driver(void *arg)
{
	(void)arg;
	driver_unregister(&trio_drv);
	return NULL;
}

/* Retries until the bus could go, as its owner would. */
static void *trio_bus_fn(void *arg)
{
	(void)arg;
	for (;;) {
		bus_unregister(&trio_bus);
		if (bus_register(&trio_bus) == 0) {
			bus_unregister(&trio_bus);
			return NULL;
		}
		sched_yield();
	}
}

static void unregister_every_pairing(void **state)
{
	void *(*fns[3])(void *) = { trio_device, trio_driver, trio_bus_fn };

	(void)state;
	devres_set_log_sink(counting_sink, NULL);
	for (int i = 0; i < 150; i++) {
		int first = i % 3, second = (i / 3) % 3;
		pthread_t t[3];

		assert_int_equal(bus_register(&trio_bus), 0);
		assert_int_equal(driver_register(&trio_drv), 0);
		trio_dev = heap_dev(&trio_bus, "trio%d", i);
		assert_int_equal(device_add(trio_dev), 0);
		assert_ptr_equal(trio_dev->driver, &trio_drv);
		/* Two start together, the third right after. */
		t[0] = spawn(fns[first], NULL);
		t[1] = spawn(fns[(first + 1 + second % 2) % 3], NULL);
		t[2] = spawn(fns[(first + 2 - second % 2) % 3], NULL);
		for (int j = 0; j < 3; j++)
			pthread_join(t[j], NULL);
		assert_int_equal(heap_released, i + 1);
		assert_int_equal(probes, i + 1);
		assert_int_equal(removes, i + 1);
	}
}

/* ---- R5: one device deleted by two threads at once ---- */

static struct device *twice_dev;

static void *del_twice(void *arg)
{
	(void)arg;
	device_del(twice_dev);
	return NULL;
}

static void deleted_twice_at_once(void **state)
{
	(void)state;
	assert_int_equal(t_driver_register(&late_drv), 0);
	for (int i = 0; i < 200; i++) {
		pthread_t a, b;
		int w;

		twice_dev = heap_dev(&bus, "twice%d", i);
		assert_int_equal(device_add(twice_dev), 0);
		w = ld(&warns_seen);
		devres_set_log_sink(counting_sink, NULL);
		a = spawn(del_twice, NULL);
		b = spawn(del_twice, NULL);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(ld(&warns_seen) - w, 1);
		assert_int_equal(removes, i + 1);
		assert_int_equal(heap_released, i);
		put_device(twice_dev);
		assert_int_equal(heap_released, i + 1);
	}
}

/* ---- R6: walks racing the teardown of their bus ---- */

static const struct bus_type walk_bus = { .name = "hwalk" };
static int walking;

static int touch_fn(struct device *dev, void *data)
{
	(void)data;
	check(dev_name(dev)[0] == 'w');
	(void)device_is_bound(dev);
	return 0;
}

static void *walker(void *arg)
{
	(void)arg;
	while (ld(&walking))
		(void)bus_for_each_dev(&walk_bus, NULL, NULL, touch_fn);
	return NULL;
}

static void walks_race_teardown(void **state)
{
	pthread_t w[2];

	(void)state;
	devres_set_log_sink(counting_sink, NULL);
	st(&walking, 1);
	w[0] = spawn(walker, NULL);
	w[1] = spawn(walker, NULL);
	for (int i = 0; i < 200; i++) {
		struct device *d[3];

		assert_int_equal(bus_register(&walk_bus), 0);
		for (int j = 0; j < 3; j++) {
			d[j] = heap_dev(&walk_bus, "w%d.%d", i, j);
			assert_int_equal(device_add(d[j]), 0);
		}
		for (int j = 0; j < 3; j++)
			device_unregister(d[j]);
		bus_unregister(&walk_bus);
	}
	st(&walking, 0);
	pthread_join(w[0], NULL);
	pthread_join(w[1], NULL);
	assert_int_equal(heap_released, 600);
}

/* ---- R7: binds, unbinds and driver (un)registration all at once ---- */

static struct device *storm_dev;
static int storming;

static void *attach_storm(void *arg)
{
	(void)arg;
	while (ld(&storming)) {
		int ret = device_attach(storm_dev);

		check(ret == 0 || ret == 1);
		device_release_driver(storm_dev);
	}
	return NULL;
}

static void bind_storm(void **state)
{
	pthread_t t[2];

	(void)state;
	storm_dev = heap_dev(&bus, "storm");
	assert_int_equal(t_device_add(storm_dev), 0);
	st(&storming, 1);
	t[0] = spawn(attach_storm, NULL);
	t[1] = spawn(attach_storm, NULL);
	for (int i = 0; i < 300; i++) {
		st(&unregistered, 0);
		assert_int_equal(driver_register(&late_drv), 0);
		driver_unregister(&late_drv);
		/* From here until the next register, no remove of it. */
		st(&unregistered, 1);
	}
	st(&storming, 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	assert_int_equal(removes_after_unregister, 0);
	assert_int_equal(probes, removes);
	assert_null(storm_dev->driver);
	t_device_unregister(storm_dev);
}

/* ---- R8: fork() while other threads use the driver model ---- */

static const struct bus_type fork_bus = { .name = "hfork" };
static struct device_driver fork_drv = { .name = "fork", .bus = &fork_bus };

/* In the child: only async-signal-safe habits, no cmocka. */
static int child_cycle(void)
{
	struct device *dev = calloc(1, sizeof(*dev));

	if (!dev || bus_register(&fork_bus) || driver_register(&fork_drv))
		return 1;
	dev->bus = &fork_bus;
	dev->release = heap_release;
	device_initialize(dev);
	if (dev_set_name(dev, "child") || device_add(dev))
		return 2;
	if (dev->driver != &fork_drv)
		return 3;
	device_unregister(dev);
	driver_unregister(&fork_drv);
	bus_unregister(&fork_bus);
	return 0;
}

static void fork_with_threads(void **state)
{
	pthread_t t[2];

	(void)state;
	assert_int_equal(t_driver_register(&late_drv), 0);
	storm_dev = heap_dev(&bus, "forkstorm");
	assert_int_equal(t_device_add(storm_dev), 0);
	st(&storming, 1);
	t[0] = spawn(attach_storm, NULL);
	t[1] = spawn(attach_storm, NULL);
	for (int i = 0; i < 40; i++) {
		int status = -1;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_cycle());
		/* A child stuck on a lock held at fork() is a failure. */
		for (int ms = 0; ms < 10000; ms += 5) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			nap_ms(5);
		}
		if (status == -1) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("fork child %d hung", i);
		}
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	st(&storming, 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	t_device_unregister(storm_dev);
	assert_int_equal(probes, removes);
}

/* ---- R9: the last put on one thread while another deletes ---- */

static struct device *lp_dev;
static int lp_in_remove;

static void napping_remove(struct device *dev)
{
	(void)dev;
	st(&lp_in_remove, 1);
	nap_ms(2);
	__atomic_add_fetch(&removes, 1, __ATOMIC_RELAXED);
}

static struct device_driver napping_drv = {
	.name = "napping",
	.bus = &bus,
	.probe = counting_probe,
	.remove = napping_remove,
};

static void *lp_delete(void *arg)
{
	(void)arg;
	device_del(lp_dev);
	return NULL;
}

static void last_put_while_deleting(void **state)
{
	(void)state;
	assert_int_equal(t_driver_register(&napping_drv), 0);
	for (int i = 0; i < 50; i++) {
		pthread_t a;

		lp_in_remove = 0;
		lp_dev = heap_dev(&bus, "lp%d", i);
		assert_int_equal(device_add(lp_dev), 0);
		a = spawn(lp_delete, NULL);
		wait_for(&lp_in_remove, 1);
		put_device(lp_dev); /* the creator's, mid-delete */
		pthread_join(a, NULL);
		assert_int_equal(heap_released, i + 1);
	}
	assert_int_equal(removes, 50);
}

/* ---- R10: driver_unregister while another thread runs its remove ---- */

static int r10_in_remove, r10_go, r10_returned;

static void blocking_remove(struct device *dev)
{
	(void)dev;
	st(&r10_in_remove, 1);
	wait_for(&r10_go, 1);
	__atomic_add_fetch(&removes, 1, __ATOMIC_RELAXED);
	if (ld(&r10_returned))
		__atomic_add_fetch(&removes_after_unregister, 1,
				   __ATOMIC_RELAXED);
}

static struct device_driver blocking_drv = {
	.name = "blocking",
	.bus = &bus,
	.probe = counting_probe,
	.remove = blocking_remove,
};

static struct device *r10_dev;

static void *r10_unbind(void *arg)
{
	(void)arg;
	device_release_driver(r10_dev);
	return NULL;
}

static void *r10_unregister(void *arg)
{
	(void)arg;
	driver_unregister(&blocking_drv);
	st(&r10_returned, 1);
	return NULL;
}

static void unregister_waits_for_remove(void **state)
{
	pthread_t a, u;
	int early;

	(void)state;
	r10_in_remove = r10_go = r10_returned = 0;
	assert_int_equal(driver_register(&blocking_drv), 0);
	r10_dev = heap_dev(&bus, "r10");
	assert_int_equal(t_device_add(r10_dev), 0);
	assert_ptr_equal(r10_dev->driver, &blocking_drv);
	a = spawn(r10_unbind, NULL);
	wait_for(&r10_in_remove, 1);
	u = spawn(r10_unregister, NULL);
	nap_ms(100);
	early = ld(&r10_returned);
	st(&r10_go, 1);
	pthread_join(a, NULL);
	pthread_join(u, NULL);
	/* It waited for the remove that was still using the driver. */
	assert_int_equal(early, 0);
	assert_int_equal(removes, 1);
	assert_int_equal(removes_after_unregister, 0);
	t_device_unregister(r10_dev);
	assert_int_equal(heap_released, 1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(unregister_waits_for_hand_bind),
		T(driver_and_bus_unregistered_together),
		T(registered_while_search_defers),
		T(unregister_every_pairing),
		T(deleted_twice_at_once),
		T(walks_race_teardown),
		T(bind_storm),
		T(fork_with_threads),
		T(last_put_while_deleting),
		T(unregister_waits_for_remove),
	};
#undef T

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_on_bus(tests, &bus);
}
