// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * What a managed thread's function does on its own resources, by every
 * way the function ends (it returns, calls pthread_exit(), cancels itself,
 * or is cancelled by another thread). Each cell runs in a child under an alarm, so that a hang
 * fails the cell: the exact WARN count, what devm_thread_stop() returns,
 * and the ledger back at its start once every thread is gone.
 *
 * Among the rows, threads that stop each other: a thread that stops (or
 * releases the device of) a thread that is waiting for it to stop would
 * wait for ever; it is refused (devm_thread_stop(): -EDEADLK) or lets the
 * other go unjoined (a release), with one WARN.
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
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"
#include "cell-child.h"

#define CELL_ALARM_S 10
#define RET 7
#define NTHREADS 3

enum end {
	END_RETURN,
	END_EXIT,
	END_CANCEL,
	END_CANCELLED,
	NR_ENDS
};

static const char *const ends[NR_ENDS] = { "return", "pthread_exit", "cancel",
					   "cancelled" };

static struct device devs[NTHREADS];
static struct devres_thread *handles[NTHREADS];
static int go;		    /* the handles are stored: the threads may start */
static int end_how;	    /* enum end */
static int nthreads;	    /* started in this cell */
static int inner[NTHREADS]; /* what a thread's own call returned */
static int reached[NTHREADS]; /* the thread got past its own call */

static void dev_release(struct device *dev)
{
	(void)dev;
}

static void wait_go(void)
{
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void *canceller(void *arg)
{
	pthread_t *victim = arg;

	pthread_cancel(*victim);
	free(victim);
	return NULL;
}

/*
 * Ends the calling thread as the column says (cancelled by itself, or by
 * another thread); returns RET otherwise.
 */
static int end_now(void)
{
	pthread_t *victim, helper;

	switch (end_how) {
	case END_EXIT:
		pthread_exit(NULL);
	case END_CANCEL:
		pthread_cancel(pthread_self());
		pthread_testcancel();
		return -1; /* not reached */
	case END_CANCELLED:
		victim = malloc(sizeof(*victim));
		if (!victim)
			return -2;
		*victim = pthread_self();
		if (pthread_create(&helper, NULL, canceller, victim)) {
			free(victim);
			return -3;
		}
		pthread_detach(helper);
		/*
		 * Acted on at pthread_testcancel(): ThreadSanitizer loses
		 * track of a thread cancelled inside one of its interceptors
		 * (pause(), ppoll()) and reports races that are not there.
		 */
		for (;;) {
			pthread_testcancel();
			sched_yield();
		}
	default:
		return RET;
	}
}

static int expected_ret(void)
{
	return end_how == END_RETURN ? RET : -ECANCELED;
}

/* Waits, up to 3 s, for the stop asked by the release. */
static void wait_stop(void)
{
	while (!devres_thread_should_stop())
		devres_thread_sleep(10);
}

static int index_of(void *arg)
{
	return (int)(intptr_t)arg;
}

static void note(int i, int v)
{
	__atomic_store_n(&inner[i], v, __ATOMIC_RELEASE);
	__atomic_store_n(&reached[i], 1, __ATOMIC_RELEASE);
}

/* ---- the rows: what the function does before it ends ---- */

static int fn_nothing(void *arg)
{
	(void)arg;
	wait_go();
	wait_stop();
	return end_now();
}

static int fn_release_own(void *arg)
{
	int i = index_of(arg);

	wait_go();
	note(i, devres_release_all(&devs[i]));
	return end_now();
}

static int fn_stop_self(void *arg)
{
	int i = index_of(arg);

	wait_go();
	note(i, devm_thread_stop(&devs[i], handles[i]));
	wait_stop();
	return end_now();
}

static int fn_unregister_own(void *arg)
{
	int i = index_of(arg);

	wait_go();
	device_unregister(&devs[i]);
	note(i, 0);
	return end_now();
}

/* Thread i stops thread i + 1 (the last one, thread 0): a cycle. */
static int fn_stop_next(void *arg)
{
	int i = index_of(arg), n = (i + 1) % nthreads;

	wait_go();
	note(i, devm_thread_stop(&devs[n], handles[n]));
	wait_stop();
	return end_now();
}

/* Thread 0 stops thread 1, which releases thread 0's device. */
static int fn_stop_or_release(void *arg)
{
	int i = index_of(arg);

	wait_go();
	if (i == 0) {
		note(i, devm_thread_stop(&devs[1], handles[1]));
		wait_stop();
		return end_now();
	}
	/* Once thread 0 waits for this one: it asked it to stop. */
	wait_stop();
	note(i, devres_release_all(&devs[0]));
	return end_now();
}

static int fn_fork(void *arg)
{
	int i = index_of(arg), status = -1;
	pid_t pid;

	wait_go();
	pid = fork();
	if (pid == 0) {
		struct device d;

		alarm(CELL_ALARM_S);
		memset(&d, 0, sizeof(d));
		device_initialize(&d);
		d.release = dev_release;
		if (dev_set_name(&d, "forked") || !devm_kmalloc(&d, 8, 0) ||
		    devres_release_all(&d) != 1)
			_exit(2);
		put_device(&d);
		_exit(0);
	}
	if (pid > 0 && waitpid(pid, &status, 0) != pid)
		status = -1;
	note(i, status);
	wait_stop();
	return end_now();
}

static int fn_block_signals(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	wait_go();
	wait_stop();
	return end_now();
}

static int fn_spin(void *arg)
{
	(void)arg;
	wait_stop();
	return RET;
}

/* Starts a thread of its own device, then releases the device. */
static int fn_start_then_release(void *arg)
{
	int i = index_of(arg);
	struct devres_thread *h;

	wait_go();
	h = devm_thread_run(&devs[i], fn_spin, NULL, "child");
	if (IS_ERR(h))
		return -100;
	note(i, devres_release_all(&devs[i]));
	return end_now();
}

struct row {
	const char *name;
	int (*fn)(void *arg);
	/* After the threads ran: checks what they saw; 0 when right. */
	int (*check)(void);
	int threads; /* started, one a device */
	int warns;
	/* Which threads the cell stops with devm_thread_stop() at its end. */
	unsigned int stop_mask;
	bool registered; /* devs[] added with device_add() */
};

static int check_none(void)
{
	return 0;
}

static int check_release_own(void)
{
	/* Its own node, released inside: one node. */
	return inner[0] == 1 ? 0 : 30;
}

static int check_stop_self(void)
{
	return inner[0] == -EDEADLK ? 0 : 31;
}

/* Of a cycle of stops, exactly one is refused; the others stopped. */
static int check_cycle(void)
{
	int refused = 0, stopped = 0;

	for (int i = 0; i < nthreads; i++) {
		if (inner[i] == -EDEADLK)
			refused++;
		else if (inner[i] == expected_ret())
			stopped++;
	}
	return refused == 1 && stopped == nthreads - 1 ? 0 : 32;
}

static int check_stop_or_release(void)
{
	if (inner[1] != 1) /* thread 0's node */
		return 33;
	return inner[0] == expected_ret() ? 0 : 34;
}

static int check_fork(void)
{
	return WIFEXITED(inner[0]) && WEXITSTATUS(inner[0]) == 0 ? 0 : 35;
}

static int check_start_then_release(void)
{
	/* The child thread's node and its own. */
	return inner[0] == 2 ? 0 : 36;
}

static const struct row rows[] = {
	{ .name = "nothing",
	  .fn = fn_nothing,
	  .check = check_none,
	  .threads = 1,
	  .warns = 0,
	  .stop_mask = 1 },
	{ .name = "release_own_device",
	  .fn = fn_release_own,
	  .check = check_release_own,
	  .threads = 1,
	  .warns = 1,
	  .stop_mask = 0 },
	{ .name = "stop_itself",
	  .fn = fn_stop_self,
	  .check = check_stop_self,
	  .threads = 1,
	  .warns = 1,
	  .stop_mask = 1 },
	{ .name = "unregister_own_device",
	  .fn = fn_unregister_own,
	  .check = check_none,
	  .threads = 1,
	  .warns = 1,
	  .stop_mask = 0,
	  .registered = true },
	{ .name = "stop_each_other",
	  .fn = fn_stop_next,
	  .check = check_cycle,
	  .threads = 2,
	  .warns = 1,
	  .stop_mask = 0 },
	{ .name = "stop_in_a_ring_of_three",
	  .fn = fn_stop_next,
	  .check = check_cycle,
	  .threads = 3,
	  .warns = 1,
	  .stop_mask = 0 },
	{ .name = "release_device_of_its_stopper",
	  .fn = fn_stop_or_release,
	  .check = check_stop_or_release,
	  .threads = 2,
	  .warns = 1,
	  .stop_mask = 0 },
	{ .name = "fork",
	  .fn = fn_fork,
	  .check = check_fork,
	  .threads = 1,
	  .warns = 0,
	  .stop_mask = 1 },
	{ .name = "block_every_signal",
	  .fn = fn_block_signals,
	  .check = check_none,
	  .threads = 1,
	  .warns = 0,
	  .stop_mask = 1 },
	{ .name = "start_a_thread_then_release",
	  .fn = fn_start_then_release,
	  .check = check_start_then_release,
	  .threads = 1,
	  .warns = 1,
	  .stop_mask = 0 },
};

#define NR_ROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static bool ledger_equal(const struct devres_ledger *a)
{
	struct devres_ledger b;

	devres_ledger_snapshot(&b);
	return devres_ledger_diff(a, &b, NULL) == 0;
}

/* Waits up to 3 s for the threads left unjoined to end. */
static bool ledger_back(const struct devres_ledger *a)
{
	for (int n = 0; n < 3000; n++) {
		if (ledger_equal(a))
			return true;
		usleep(1000);
	}
	struct devres_ledger b;

	devres_ledger_snapshot(&b);
	devres_ledger_diff(a, &b, stderr);
	return false;
}

static bool all_reached(const struct row *r)
{
	for (int i = 0; i < r->threads; i++)
		if (r->check != check_none &&
		    !__atomic_load_n(&reached[i], __ATOMIC_ACQUIRE))
			return false;
	return true;
}

static int one_cell(int row, int col)
{
	const struct row *r = &rows[row];
	struct devres_ledger start;
	int w0, rc;

	alarm(CELL_ALARM_S);
	end_how = col;
	nthreads = r->threads;
	devres_ledger_snapshot(&start);
	w0 = devres_warn_count();
	for (int i = 0; i < r->threads; i++) {
		device_initialize(&devs[i]);
		devs[i].release = dev_release;
		if (dev_set_name(&devs[i], "cb-thread%d", i))
			return 2;
		if (r->registered && device_add(&devs[i]))
			return 3;
	}
	for (int i = 0; i < r->threads; i++) {
		handles[i] = devm_thread_run(&devs[i], r->fn,
					     (void *)(intptr_t)i, "cb");
		if (IS_ERR(handles[i]))
			return 4;
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	/* The rows that stop by themselves; the others are stopped below. */
	for (int n = 0; n < 3000 && !all_reached(r); n++)
		usleep(1000);
	if (!all_reached(r))
		return 5;
	for (int i = 0; i < r->threads; i++) {
		if (!(r->stop_mask & (1u << i)))
			continue;
		rc = devm_thread_stop(&devs[i], handles[i]);
		if (rc != expected_ret()) {
			fprintf(stderr, "stop: %d, not %d\n", rc,
				expected_ret());
			return 6;
		}
	}
	/* A registered device was unregistered by its own thread. */
	for (int i = 0; i < r->threads && !r->registered; i++) {
		devres_release_all(&devs[i]);
		put_device(&devs[i]);
	}
	if (!ledger_back(&start))
		return 7;
	rc = r->check();
	if (rc)
		return rc;
	if (devres_warn_count() - w0 != r->warns) {
		fprintf(stderr, "%d WARNs, not %d\n", devres_warn_count() - w0,
			r->warns);
		return 8;
	}
	return 0;
}

static void callbacks_threads(void **state)
{
	const char *names[NR_ROWS];

	(void)state;
	for (int i = 0; i < NR_ROWS; i++)
		names[i] = rows[i].name;
	run_cells_in_children(one_cell, names, NR_ROWS, ends, NR_ENDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(callbacks_threads),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 0);
	return cmocka_run_group_tests_name("hostile-callbacks-threads", tests,
					   NULL, NULL);
}
