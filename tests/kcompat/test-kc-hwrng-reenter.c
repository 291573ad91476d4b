// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The methods of a hwrng (<linux/hw_random.h>) calling the framework, and
 * the threads that run them ending in them. The framework called init(),
 * read() and cleanup() holding its one lock, so that each of these waited
 * for ever:
 *
 *  - a read() that reads another rng, registers or unregisters one: works;
 *  - a read() that reads its own rng: -EDEADLK, one WARN;
 *  - a read() that unregisters its own rng (the kernel deadlocks): one
 *    WARN; the read returns its bytes, then cleanup() runs, once; the name
 *    is free again;
 *  - the same two, nested in a read of another rng;
 *  - an init() that reads another rng, or its own (not registered yet:
 *    -ENODEV), or unregisters itself (one WARN, nothing done); a cleanup()
 *    that reads another rng;
 *  - a thread cancelled while its read() sleeps: the read ends, the
 *    request acts after hwrng_read() returns, nothing is left counted;
 *  - hwrng_unregister() while a read is in progress waits for it, and
 *    cleanup() runs after the read returned;
 *  - a read() that ends its thread (pthread_exit()), after unregistering
 *    its rng or not: one WARN, the read let go (the unregister waited for
 *    it for ever), cleanup() once.
 *
 * A test that hangs is ended by its alarm, and fails.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/delay.h>
#include <linux/hw_random.h>
#include <pthread.h>
#include <unistd.h>
#include "gate.h"
#include "kcompat/kctest.h"

#define ALARM_S 30

enum act {
	A_NONE,
	A_READ_OTHER,
	A_READ_SELF,
	A_UNREG_SELF,
	A_REG_OTHER,
	A_SLEEP,
	A_GATE,
	A_EXIT,	      /* pthread_exit() */
	A_UNREG_EXIT, /* unregisters its rng, then pthread_exit() */
};

/* What self's read, rng_other's read, self's init and cleanup do. */
static enum act read_act, other_act, init_act, cleanup_act;
static int inner_ret, other_ret, cleanups, init_ret, cleanup_ret;
static bool read_returned;

static int self_read(struct hwrng *rng, void *data, size_t max, bool wait);
static int other_read(struct hwrng *rng, void *data, size_t max, bool wait);
static int self_init(struct hwrng *rng);
static void self_cleanup(struct hwrng *rng);

static struct hwrng self = { .name = "self",
			     .read = self_read,
			     .init = self_init,
			     .cleanup = self_cleanup };
static struct hwrng rng_other = { .name = "other", .read = other_read };
static struct hwrng third = { .name = "third", .read = other_read };

static int act(enum act a, struct hwrng *rng)
{
	u8 b[4];

	switch (a) {
	case A_READ_OTHER:
		return hwrng_read("other", b, sizeof(b), false);
	case A_READ_SELF:
		return hwrng_read("self", b, sizeof(b), false);
	case A_UNREG_SELF:
		hwrng_unregister(&self);
		return 0;
	case A_REG_OTHER:
		inner_ret = hwrng_register(&third);
		hwrng_unregister(&third);
		return inner_ret;
	case A_SLEEP:
		msleep(20);
		return 0;
	case A_GATE:
		gate_wait();
		return 0;
	case A_EXIT:
		pthread_exit(NULL);
	case A_UNREG_EXIT:
		hwrng_unregister(&self);
		pthread_exit(NULL);
	default:
		(void)rng;
		return 0;
	}
}

static int self_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)wait;
	inner_ret = act(read_act, rng);
	memset(data, 0x5a, max < 4 ? max : 4);
	__atomic_store_n(&read_returned, true, __ATOMIC_SEQ_CST);
	return max < 4 ? (int)max : 4;
}

static int other_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)wait;
	if (rng == &rng_other)
		other_ret = act(other_act, rng);
	memset(data, 0xa5, max < 2 ? max : 2);
	return max < 2 ? (int)max : 2;
}

static int self_init(struct hwrng *rng)
{
	init_ret = act(init_act, rng);
	return 0;
}

static void self_cleanup(struct hwrng *rng)
{
	__atomic_fetch_add(&cleanups, 1, __ATOMIC_SEQ_CST);
	cleanup_ret = act(cleanup_act, rng);
	/* The read that unregistered it has returned by now. */
	if (read_act == A_UNREG_SELF || read_act == A_GATE)
		assert_true(__atomic_load_n(&read_returned, __ATOMIC_SEQ_CST));
}

static int setup(void **state)
{
	(void)state;
	kc_alarm_setup(ALARM_S);
	read_act = other_act = init_act = cleanup_act = A_NONE;
	inner_ret = other_ret = init_ret = cleanup_ret = cleanups = 0;
	read_returned = false;
	assert_int_equal(hwrng_register(&rng_other), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	/* A case that failed half-way leaves self registered: not the next. */
	read_act = other_act = init_act = cleanup_act = A_NONE;
	if (self.reg)
		hwrng_unregister(&self);
	hwrng_unregister(&rng_other);
	return kc_alarm_teardown();
}

static int read_self(void)
{
	u8 b[8];

	return hwrng_read("self", b, sizeof(b), true);
}

static void read_calls_the_framework(void **state)
{
	(void)state;
	start_capture();
	assert_int_equal(hwrng_register(&self), 0);
	read_act = A_READ_OTHER;
	assert_int_equal(read_self(), 4);
	assert_int_equal(inner_ret, 2);
	read_act = A_REG_OTHER;
	assert_int_equal(read_self(), 4);
	assert_int_equal(inner_ret, 0);
	read_act = A_NONE;
	hwrng_unregister(&self);
	assert_int_equal(cleanups, 1);
	expect_no_warn();
}

static void read_reads_itself(void **state)
{
	(void)state;
	assert_int_equal(hwrng_register(&self), 0);
	start_capture();
	read_act = A_READ_SELF;
	assert_int_equal(read_self(), 4);
	assert_int_equal(inner_ret, -EDEADLK);
	expect_warn_on("(no device)", "hwrng_read",
		       "hwrng 'self' read from its own read method: refused");
	/* Nested: self's read reads rng_other, whose read reads self. */
	start_capture();
	read_act = A_READ_OTHER;
	other_act = A_READ_SELF;
	assert_int_equal(read_self(), 4);
	assert_int_equal(inner_ret, 2);
	assert_int_equal(other_ret, -EDEADLK);
	expect_warn_on("(no device)", "hwrng_read",
		       "hwrng 'self' read from its own read method: refused");
	/* Other's read alone reads self: not nested in it, it reads. */
	start_capture();
	read_act = A_NONE;
	{
		u8 b[2];

		assert_int_equal(hwrng_read("other", b, sizeof(b), false), 2);
	}
	assert_int_equal(other_ret, 4);
	expect_no_warn();
	other_act = A_NONE;
	read_act = A_NONE;
	hwrng_unregister(&self);
}

static void read_unregisters_itself(void **state)
{
	(void)state;
	assert_int_equal(hwrng_register(&self), 0);
	start_capture();
	read_act = A_UNREG_SELF;
	assert_int_equal(read_self(), 4);
	expect_warn_on("(no device)", "hwrng_unregister",
		       "hwrng 'self' unregistered from its own read: its "
		       "cleanup runs when the read returns");
	assert_int_equal(cleanups, 1);
	assert_null(self.reg);
	assert_int_equal(read_self(), -ENODEV);
	/* The name is free: registered again, and unregistered once. */
	read_act = A_NONE;
	assert_int_equal(hwrng_register(&self), 0);
	hwrng_unregister(&self);
	hwrng_unregister(&self);
	assert_int_equal(cleanups, 2);
}

static void nested_read_unregisters_outer(void **state)
{
	(void)state;
	assert_int_equal(hwrng_register(&self), 0);
	start_capture();
	/* self's read reads rng_other, whose read unregisters self. */
	read_act = A_READ_OTHER;
	other_act = A_UNREG_SELF;
	assert_int_equal(read_self(), 4);
	assert_int_equal(inner_ret, 2);
	expect_warn_on("(no device)", "hwrng_unregister",
		       "hwrng 'self' unregistered from its own read: its "
		       "cleanup runs when the read returns");
	assert_int_equal(cleanups, 1);
	assert_null(self.reg);
	/* Other's read alone unregisters self: a plain unregister. */
	read_act = other_act = A_NONE;
	assert_int_equal(hwrng_register(&self), 0);
	start_capture();
	other_act = A_UNREG_SELF;
	{
		u8 b[2];

		assert_int_equal(hwrng_read("other", b, sizeof(b), false), 2);
	}
	expect_no_warn();
	assert_int_equal(cleanups, 2);
	other_act = A_NONE;
}

static void init_and_cleanup_call_the_framework(void **state)
{
	(void)state;
	start_capture();
	init_act = A_READ_OTHER;
	cleanup_act = A_READ_OTHER;
	assert_int_equal(hwrng_register(&self), 0);
	assert_int_equal(init_ret, 2);
	hwrng_unregister(&self);
	assert_int_equal(cleanup_ret, 2);
	init_act = A_READ_SELF;
	cleanup_act = A_NONE;
	assert_int_equal(hwrng_register(&self), 0);
	assert_int_equal(init_ret, -ENODEV);
	hwrng_unregister(&self);
	expect_no_warn();
	start_capture();
	init_act = A_UNREG_SELF;
	assert_int_equal(hwrng_register(&self), 0);
	expect_warn_on("(no device)", "hwrng_unregister",
		       "hwrng 'self' is being registered (a call of its "
		       "init()): not unregistered");
	assert_non_null(self.reg);
	init_act = A_NONE;
	hwrng_unregister(&self);
	assert_int_equal(cleanups, 3);
}

static void *reader(void *arg)
{
	int *ret = arg;

	*ret = read_self();
	pthread_testcancel();
	return NULL;
}

/*
 * The reader of cancelled_in_read(): it waits for the cancellation after
 * its read, as one that got to its end before pthread_cancel() (its
 * creator preempted for the whole read) would return as if never
 * cancelled.
 */
static void *cancelled_reader(void *arg)
{
	int *ret = arg;

	*ret = read_self();
	for (;;)
		pause();
	return NULL;
}

static void cancelled_in_read(void **state)
{
	pthread_t t;
	void *res;
	int ret = 0;

	(void)state;
	assert_int_equal(hwrng_register(&self), 0);
	read_act = A_SLEEP;
	assert_int_equal(pthread_create(&t, NULL, cancelled_reader, &ret), 0);
	assert_int_equal(pthread_cancel(t), 0);
	assert_int_equal(pthread_join(t, &res), 0);
	/* Cancelled before the read, or after it: never inside. */
	if (ret)
		assert_int_equal(ret, 4);
	assert_ptr_equal(res, PTHREAD_CANCELED);
	read_act = A_NONE;
	assert_int_equal(read_self(), 4);
	hwrng_unregister(&self);
	assert_int_equal(cleanups, 1);
}

/* Opens the gate a little later than the unregister began. */
static void *opener(void *arg)
{
	(void)arg;
	msleep(20);
	gate_release();
	return NULL;
}

static void unregister_waits_for_a_read(void **state)
{
	pthread_t t, o;
	int ret = 0;

	(void)state;
	gate_reset();
	assert_int_equal(hwrng_register(&self), 0);
	read_act = A_GATE;
	assert_int_equal(pthread_create(&t, NULL, reader, &ret), 0);
	gate_until_reached();
	assert_int_equal(pthread_create(&o, NULL, opener, NULL), 0);
	/* Waits for the read; cleanup() asserts that it returned. */
	hwrng_unregister(&self);
	assert_int_equal(cleanups, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_join(o, NULL), 0);
	assert_int_equal(ret, 4);
}

/* Lines captured since start_capture() that hold @s. */
static int said(const char *str)
{
	int n = 0;

	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += strstr(cap.line[i], str) != NULL;
	return n;
}

/*
 * A read method that ends its thread: one WARN, the read let go (the
 * unregister waited for it for ever); after unregistering its own rng
 * first, its cleanup runs once, at the thread's end.
 */
static void read_ends_its_thread(void **state)
{
	int warns = devres_warn_count(), ret = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(hwrng_register(&self), 0);
	start_capture();
	read_act = A_EXIT;
	assert_int_equal(pthread_create(&t, NULL, reader, &ret), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_int_equal(said("method ended the thread it ran in"), 1);
	read_act = A_NONE;
	assert_int_equal(read_self(), 4);
	hwrng_unregister(&self);
	assert_int_equal(cleanups, 1);
	assert_int_equal(hwrng_register(&self), 0);
	read_act = A_UNREG_EXIT;
	assert_int_equal(pthread_create(&t, NULL, reader, &ret), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(devres_warn_count(), warns + 3);
	assert_int_equal(said("unregistered from its own read"), 1);
	assert_int_equal(said("method ended the thread it ran in"), 2);
	assert_int_equal(cleanups, 2);
	assert_null(self.reg);
	read_act = A_NONE;
	assert_int_equal(read_self(), -ENODEV);
	devres_set_log_sink(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(read_calls_the_framework, setup,
						teardown),
		cmocka_unit_test_setup_teardown(read_reads_itself, setup,
						teardown),
		cmocka_unit_test_setup_teardown(read_unregisters_itself, setup,
						teardown),
		cmocka_unit_test_setup_teardown(nested_read_unregisters_outer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			init_and_cleanup_call_the_framework, setup, teardown),
		cmocka_unit_test_setup_teardown(cancelled_in_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(unregister_waits_for_a_read,
						setup, teardown),
		cmocka_unit_test_setup_teardown(read_ends_its_thread, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
