// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * Times at the ends of their types, as drivers pass them: the kernel's
 * MAX_SCHEDULE_TIMEOUT ("wait for ever") and ULONG_MAX, MAX_JIFFY_OFFSET,
 * the conversions of a huge or "negative" time, a u64 poll timeout, and
 * jiffies that wrap.
 *
 *  - wait_for_completion_timeout() with such a timeout waits until the
 *    completion (its deadline was a signed overflow that wrapped into the
 *    past: it returned 0, timed out, at once; UBSan stopped the program);
 *  - read_poll_timeout() with such a timeout polls until the condition
 *    holds (it gave -ETIMEDOUT after one read);
 *  - usecs_to_jiffies() of a huge time is the kernel's MAX_JIFFY_OFFSET,
 *    not 0 (its round-up wrapped), msecs_to_jiffies() of a negative one
 *    too;
 *  - a delayed work due in ULONG_MAX or MAX_JIFFY_OFFSET jiffies waits,
 *    is flushed at once, cancelled, or moved to now;
 *  - time_after() and the like across the wrap of jiffies.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/completion.h>
#include <linux/iopoll.h>
#include <linux/jiffies.h>
#include <linux/workqueue.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "kcompat/kctest.h"

#define ALARM_S 30

KC_ALARM_FIXTURE(ALARM_S)

static const unsigned long forever[] = {
	MAX_SCHEDULE_TIMEOUT, ULONG_MAX, MAX_JIFFY_OFFSET,
	(unsigned long)LONG_MAX / 1000000 + 1, /* just past ktime_t's range */
};

static struct completion comp;
static unsigned long timeout, left;
static bool returned;

static void *waiter(void *arg)
{
	(void)arg;
	left = wait_for_completion_timeout(&comp, timeout);
	__atomic_store_n(&returned, true, __ATOMIC_SEQ_CST);
	return NULL;
}

static void completion_waits_for_ever(void **state)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(forever); i++) {
		pthread_t t;

		/* Completed before: at once, with time left. */
		init_completion(&comp);
		complete(&comp);
		assert_true(wait_for_completion_timeout(&comp, forever[i]) >=
			    1);
		/* Not yet: it waits, and the wait ends at the completion. */
		timeout = forever[i];
		__atomic_store_n(&returned, false, __ATOMIC_SEQ_CST);
		assert_int_equal(pthread_create(&t, NULL, waiter, NULL), 0);
		nanosleep(&pause, NULL);
		assert_false(__atomic_load_n(&returned, __ATOMIC_SEQ_CST));
		complete(&comp);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_true(left >= 1);
	}
	/* A short timeout still times out. */
	init_completion(&comp);
	assert_int_equal(wait_for_completion_timeout(&comp, 1), 0);
}

static int reads;

static int count_read(int unused)
{
	(void)unused;
	return ++reads;
}

static void poll_waits_for_ever(void **state)
{
	const u64 us[] = { U64_MAX, (u64)LLONG_MAX, (u64)LLONG_MAX / 1000 + 1,
			   ULONG_MAX };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(us); i++) {
		int val = 0;

		reads = 0;
		assert_int_equal(read_poll_timeout(count_read, val, val >= 50,
						   0, us[i], false, 0),
				 0);
		assert_int_equal(val, 50);
	}
	/* Nor does a short one stop timing out. */
	{
		int val = 0;

		reads = 0;
		assert_int_equal(read_poll_timeout(count_read, val, val < 0, 0,
						   1000, false, 0),
				 -ETIMEDOUT);
	}
}

static void conversions_saturate(void **state)
{
	(void)state;
	assert_int_equal(usecs_to_jiffies(ULLONG_MAX), MAX_JIFFY_OFFSET);
	assert_int_equal(usecs_to_jiffies((u64)MAX_JIFFY_OFFSET * 1000 + 1),
			 MAX_JIFFY_OFFSET);
	assert_int_equal(usecs_to_jiffies(0), 0);
	assert_int_equal(usecs_to_jiffies(1), 1);
	assert_int_equal(usecs_to_jiffies(1000), 1);
	assert_int_equal(usecs_to_jiffies(1001), 2);
	assert_int_equal(msecs_to_jiffies(-1), MAX_JIFFY_OFFSET);
	assert_int_equal(msecs_to_jiffies(INT_MAX), INT_MAX);
	assert_int_equal(msecs_to_jiffies(1000), 1000);
	/* Across the wrap: a is after b when b - a is "negative". */
	assert_true(time_after(5UL, ULONG_MAX - 5));
	assert_true(time_before(ULONG_MAX - 5, 5UL));
	assert_true(time_after_eq(5UL, ULONG_MAX - 5));
	assert_false(time_after(ULONG_MAX - 5, 5UL));
	assert_true(time_after_eq(7UL, 7UL));
}

static int runs;

static void count_fn(struct work_struct *work)
{
	(void)work;
	__atomic_fetch_add(&runs, 1, __ATOMIC_SEQ_CST);
}

static void delayed_for_ever(void **state)
{
	const unsigned long delays[] = { ULONG_MAX, MAX_JIFFY_OFFSET,
					 MAX_SCHEDULE_TIMEOUT };
	struct delayed_work dw;

	(void)state;
	INIT_DELAYED_WORK(&dw, count_fn);
	for (size_t i = 0; i < ARRAY_SIZE(delays); i++) {
		__atomic_store_n(&runs, 0, __ATOMIC_SEQ_CST);
		/* Flushed: runs now. */
		assert_true(schedule_delayed_work(&dw, delays[i]));
		assert_true(delayed_work_pending(&dw));
		assert_true(flush_delayed_work(&dw));
		assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 1);
		/* Cancelled: never runs. */
		assert_true(schedule_delayed_work(&dw, delays[i]));
		assert_true(cancel_delayed_work_sync(&dw));
		/* Moved to now: runs. */
		assert_true(schedule_delayed_work(&dw, delays[i]));
		assert_true(mod_delayed_work(system_wq, &dw, 0));
		flush_delayed_work(&dw);
		assert_int_equal(__atomic_load_n(&runs, __ATOMIC_SEQ_CST), 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(completion_waits_for_ever,
						setup, teardown),
		cmocka_unit_test_setup_teardown(poll_waits_for_ever, setup,
						teardown),
		cmocka_unit_test_setup_teardown(conversions_saturate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(delayed_for_ever, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
