// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The compat headers' waits under pthread_cancel(): a thread with a
 * cancellation requested waits in wait_for_completion() for a completion
 * another thread signals later, and in flush_work() for a work function
 * that is still running. Neither wait is a cancellation point: each
 * returns once what it waits for is over, the thread ends at its next
 * cancellation point, and the completion and the work item work again
 * afterwards (a lock left held would hang them: the alarm fails the test).
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/io.h>
#include <linux/completion.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include "kcompat/kctest.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct victim {
	void (*call)(void);
	int go;
	bool returned, after;
};

static void *victim_main(void *arg)
{
	struct victim *v = arg;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	while (!__atomic_load_n(&v->go, __ATOMIC_ACQUIRE))
		sched_yield();
	v->call();
	__atomic_store_n(&v->returned, true, __ATOMIC_RELEASE);
	pthread_testcancel();
	v->after = true;
	return NULL;
}

/*
 * @call runs with a cancellation requested before it; @finish, after
 * WAIT_MS, ends what it waits for.
 */
static void cancelled_wait(void (*call)(void), void (*finish)(void))
{
	struct victim v = { call, 0, false, false };
	void *ret;
	pthread_t t;

	alarm(30);
	assert_int_equal(pthread_create(&t, NULL, victim_main, &v), 0);
	assert_int_equal(pthread_cancel(t), 0);
	__atomic_store_n(&v.go, 1, __ATOMIC_RELEASE);
	sleep_ms(100);
	assert_false(__atomic_load_n(&v.returned, __ATOMIC_ACQUIRE));
	finish();
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	assert_true(v.returned);
	assert_false(v.after);
	alarm(0);
}

static struct completion done;

static void wait_done(void)
{
	wait_for_completion(&done);
}

static void complete_done(void)
{
	complete(&done);
}

static void completion_wait(void **state)
{
	(void)state;
	init_completion(&done);
	cancelled_wait(wait_done, complete_done);
	alarm(10);
	complete(&done);
	wait_for_completion(&done);
	alarm(0);
}

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int runs;

static void gated_fn(struct work_struct *w)
{
	(void)w;
	pthread_mutex_lock(&gate_lock);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	__atomic_add_fetch(&runs, 1, __ATOMIC_RELEASE);
}

static struct work_struct item;

static void flush_item(void)
{
	flush_work(&item);
}

static void open_gate(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static void work_flush(void **state)
{
	(void)state;
	gate_open = false;
	runs = 0;
	INIT_WORK(&item, gated_fn);
	assert_true(schedule_work(&item));
	cancelled_wait(flush_item, open_gate);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_ACQUIRE), 1);
	alarm(10);
	assert_true(schedule_work(&item));
	flush_work(&item);
	assert_int_equal(__atomic_load_n(&runs, __ATOMIC_ACQUIRE), 2);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(completion_wait),
		cmocka_unit_test(work_flush),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
