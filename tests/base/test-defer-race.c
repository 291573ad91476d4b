// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan timeout=300 */
/*
 * The skip of a deferred-probe retry when nothing is parked, raced. Each
 * round, thread A adds a consumer device whose probe defers until the
 * supplier is bound, and thread B registers the supplier's driver, which
 * binds the supplier device, at once. The retry that must bind the
 * consumer is made by one of the two: B, after its bind, unless it reads
 * "nothing parked"; then A, which parks the consumer and reads the bind
 * count after, having read it before its probe (src/base/dd.c,
 * retry_deferred()). Whatever the interleaving, when both calls have
 * returned the consumer is bound, with no trigger of its own: a round
 * that ends with it parked is a retry both threads skipped. The
 * consumer's probe yields between its look at the supplier and its
 * return in half the rounds until the supplier's probe ran, so that the
 * supplier's bind, and B's read of the count of parked devices, fall in
 * the window.
 */
#define _GNU_SOURCE
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
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include "testlib.h"

#define ROUNDS 2000

static int first_letter_match(struct device *dev,
			      const struct device_driver *drv)
{
	return dev_name(dev)[0] == drv->name[0];
}

static const struct bus_type bus = { .name = "drbus",
				     .match = first_letter_match };

static int supplier_ready;
static int round_no;
static int defers; /* rounds whose consumer deferred at least once */
static int deferred_this_round;
static int add_failed;

/*
 * Defers while the supplier is not bound. In odd rounds, having looked,
 * it waits for the supplier's probe before it returns (bounded), so that
 * the supplier's bind and B's look at the parked count fall between this
 * look and the park.
 */
static int consumer_probe(struct device *dev)
{
	(void)dev;
	if (__atomic_load_n(&supplier_ready, __ATOMIC_ACQUIRE))
		return 0;
	if (!__atomic_exchange_n(&deferred_this_round, 1, __ATOMIC_RELAXED))
		__atomic_add_fetch(&defers, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&round_no, __ATOMIC_RELAXED) & 1) {
		for (int i = 0;
		     i < 100000 &&
		     !__atomic_load_n(&supplier_ready, __ATOMIC_ACQUIRE);
		     i++)
			sched_yield();
		for (int i = 0; i < 3; i++)
			sched_yield();
	}
	return -EPROBE_DEFER;
}

static int supplier_probe(struct device *dev)
{
	(void)dev;
	__atomic_store_n(&supplier_ready, 1, __ATOMIC_RELEASE);
	return 0;
}

static void supplier_remove(struct device *dev)
{
	(void)dev;
	__atomic_store_n(&supplier_ready, 0, __ATOMIC_RELEASE);
}

static struct device_driver consumer_drv = {
	.name = "consumer",
	.bus = &bus,
	.probe = consumer_probe,
};

static struct device_driver supplier_drv = {
	.name = "supplier",
	.bus = &bus,
	.probe = supplier_probe,
	.remove = supplier_remove,
};

static pthread_barrier_t start, done;
static struct device *cons, *supp;
static bool stop;

static void *adder(void *arg)
{
	bool consumer = arg != NULL;

	for (;;) {
		pthread_barrier_wait(&start);
		if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
			return NULL;
		/* The supplier lets the consumer start first in most rounds. */
		if (!consumer &&
		    __atomic_load_n(&round_no, __ATOMIC_RELAXED) % 4)
			sched_yield();
		/* cmocka's asserts belong to the main thread: counted. */
		if (consumer ? device_add(cons)
			     : driver_register(&supplier_drv))
			__atomic_add_fetch(&add_failed, 1, __ATOMIC_RELAXED);
		pthread_barrier_wait(&done);
	}
}

static void test_nothing_parked_skip_races_a_park(void **state)
{
	pthread_t a, b;
	int stuck = 0;

	(void)state;
	assert_int_equal(t_driver_register(&consumer_drv), 0);
	assert_int_equal(pthread_barrier_init(&start, NULL, 3), 0);
	assert_int_equal(pthread_barrier_init(&done, NULL, 3), 0);
	assert_int_equal(pthread_create(&a, NULL, adder, (void *)1), 0);
	assert_int_equal(pthread_create(&b, NULL, adder, NULL), 0);
	for (int i = 0; i < ROUNDS; i++) {
		__atomic_store_n(&round_no, i, __ATOMIC_RELAXED);
		__atomic_store_n(&deferred_this_round, 0, __ATOMIC_RELAXED);
		cons = heap_dev(&bus, "c%d", i);
		supp = heap_dev(&bus, "s%d", i);
		assert_int_equal(device_add(supp), 0);
		assert_false(device_is_bound(supp));
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
		/* Both calls returned: every retry they owed is made. */
		if (!device_is_bound(cons))
			stuck++;
		assert_true(device_is_bound(supp));
		driver_unregister(&supplier_drv);
		device_unregister(supp);
		device_unregister(cons);
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	pthread_barrier_wait(&start);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&done);
	t_driver_unregister(&consumer_drv);
	fprintf(stderr,
		"%d rounds, the consumer deferred in %d, left parked in %d\n",
		ROUNDS, defers, stuck);
	assert_int_equal(add_failed, 0);
	assert_int_equal(stuck, 0);
	/* The race was run: the consumer came first in some rounds. */
	assert_true(defers > 0);
	assert_int_equal(heap_released, 2 * ROUNDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_nothing_parked_skip_races_a_park, NULL,
			reg_teardown),
	};

	return run_tests_on_bus(tests, &bus);
}
