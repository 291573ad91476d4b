// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile white-box tsan timeout=60 */
/*
 * The process-wide count of threads with fail-nth armed
 * (devres__fail_armed, src/base/fault.c), read first by every fault point
 * so that a process that injects nothing never reads its thread's count.
 * It must count the threads that are armed now, in this process:
 *
 * - a thread that ends armed (its function returns, pthread_exit(), a
 *   cancellation) no longer counts;
 * - a child of fork() has one thread, the one that forked: other
 *   threads' arming is not the child's, its own is.
 *
 * One cell per way a thread ends armed, and per set of armed threads at
 * a fork(); each checks the count and, in a child, that fault injection
 * still fails its own thread's n-th call and no other.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include "testlib.h"
#include "base/fork-park.h"

/* White-box: the count itself (src/base/subsys.h). */
extern unsigned int devres__fail_armed;

static unsigned int armed_now(void)
{
	return __atomic_load_n(&devres__fail_armed, __ATOMIC_RELAXED);
}

/* How a thread that armed its count ends. */
enum end {
	E_RETURN,  /* its function returns */
	E_EXIT,	   /* pthread_exit() */
	E_CANCEL,  /* cancelled at a cancellation point */
	E_FIRED,   /* its count fired first (0 already) */
	E_REARMED, /* disarmed, armed again, then returns */
	NR_ENDS
};

static const char *const end_name[NR_ENDS] = { "returns", "pthread_exit",
					       "cancelled", "count fired",
					       "re-armed" };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int armed_threads; /* threads that have armed */
static bool go;		  /* they may end */

static void wait_go(void)
{
	pthread_mutex_lock(&mu);
	armed_threads++;
	pthread_cond_broadcast(&cv);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void wait_armed(int n)
{
	pthread_mutex_lock(&mu);
	while (armed_threads < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void let_go(void)
{
	pthread_mutex_lock(&mu);
	go = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void reset_gate(void)
{
	armed_threads = 0;
	go = false;
}

static void *ender(void *arg)
{
	enum end how = (enum end)(intptr_t)arg;
	struct device *dev;

	devres_fail_nth(how == E_FIRED ? 1 : 50);
	if (how == E_REARMED) {
		devres_fail_nth(0);
		devres_fail_nth(7);
	}
	if (how == E_FIRED) {
		dev = heap_dev(NULL, "fired");
		/* Its first fault point fires: the count is 0 again. */
		if (dev) {
			void *p = devm_kmalloc(dev, 16, GFP_KERNEL);

			if (p)
				devm_kfree(dev, p);
			put_device(dev);
		}
	}
	if (how == E_CANCEL) {
		pthread_mutex_lock(&mu);
		armed_threads++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		for (;;)
			pause(); /* a cancellation point */
	}
	wait_go();
	if (how == E_EXIT)
		pthread_exit(NULL);
	return NULL;
}

/* Every way a thread ends armed: the count is back where it was. */
static void test_thread_ends_armed(void **state)
{
	int failed = 0;

	(void)state;
	for (int how = 0; how < NR_ENDS; how++) {
		unsigned int before = armed_now(), during;
		pthread_t t;

		reset_gate();
		assert_int_equal(pthread_create(&t, NULL, ender,
						(void *)(intptr_t)how),
				 0);
		wait_armed(1);
		during = armed_now();
		if (how == E_CANCEL)
			assert_int_equal(pthread_cancel(t), 0);
		else
			let_go();
		assert_int_equal(pthread_join(t, NULL), 0);
		if (armed_now() != before ||
		    during != before + (how == E_FIRED ? 0u : 1u)) {
			fprintf(stderr,
				"cell '%s': armed %u before, %u while armed, "
				"%u after the thread ended\n",
				end_name[how], before, during, armed_now());
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* Who is armed at the fork. */
struct fork_row {
	const char *name;
	int others;	   /* other threads armed, parked at the fork */
	unsigned int self; /* the forking thread's count */
};

static const struct fork_row fork_rows[] = {
	{ "one other thread armed", 1, 0 },
	{ "two other threads armed", 2, 0 },
	{ "the forking thread and another armed", 1, 3 },
	{ "the forking thread alone armed", 0, 2 },
};

#define NR_FORK_ROWS (sizeof(fork_rows) / sizeof(fork_rows[0]))
#define CALLS 5

/*
 * In the child: the count is the forking thread's alone, and of CALLS
 * fault points exactly the self-th fails (none when self is 0).
 */
static int child_checks(const struct fork_row *r)
{
	struct device *dev;
	unsigned int want = r->self ? 1 : 0;
	int bad = 0;

	alarm(20);
	if (armed_now() != want) {
		fprintf(stderr,
			"cell '%s': the child counts %u armed, not %u\n",
			r->name, armed_now(), want);
		bad++;
	}
	/* The device: made before the count is armed in the child. */
	devres_fail_nth(0);
	dev = heap_dev(NULL, "child");
	if (!dev)
		return 2;
	devres_fail_nth(r->self);
	for (unsigned int i = 1; i <= CALLS; i++) {
		void *p = devm_kmalloc(dev, 16, GFP_KERNEL);
		bool should = r->self && i == r->self;

		if (!p != should) {
			fprintf(stderr, "cell '%s': call %u %s\n", r->name, i,
				p ? "succeeded" : "failed");
			bad++;
		}
	}
	devres_fail_nth(0);
	if (armed_now() != 0) {
		fprintf(stderr, "cell '%s': %u armed once disarmed\n", r->name,
			armed_now());
		bad++;
	}
	devres_release_all(dev);
	put_device(dev);
	return bad ? 1 : 0;
}

static void *parked(void *arg)
{
	(void)arg;
	devres_fail_nth(40);
	wait_go();
	devres_fail_nth(0);
	return NULL;
}

static void test_fork_inherits_counts(void **state)
{
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < NR_FORK_ROWS; i++) {
		const struct fork_row *r = &fork_rows[i];
		unsigned int before = armed_now();
		pthread_t t[2];
		int status = 0;
		pid_t pid;

		reset_gate();
		for (int k = 0; k < r->others; k++)
			assert_int_equal(
				pthread_create(&t[k], NULL, parked, NULL), 0);
		wait_armed(r->others);
		devres_fail_nth(r->self);
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_checks(r));
		devres_fail_nth(0);
		let_go();
		for (int k = 0; k < r->others; k++)
			assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "cell '%s': the child's status %#x\n",
				r->name, (unsigned int)status);
			failed++;
		}
		/* The parent's own count: back where it was. */
		if (armed_now() != before) {
			fprintf(stderr,
				"cell '%s': the parent counts %u, not %u\n",
				r->name, armed_now(), before);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_ends_armed),
		cmocka_unit_test(test_fork_inherits_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
