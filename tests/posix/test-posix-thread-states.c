// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every public call on a managed thread in every state the thread can be
 * in (docs/posix.md, "Threads"), one call a cell: running; its function
 * returned, or ended by pthread_exit(), not yet stopped; stopped by
 * devm_thread_stop(), by the device's release, and stopped with a newer
 * thread since in its handle's slot (its handle stale); managed by another
 * device; being stopped (another thread's devm_thread_stop() waits for
 * it); detached by releasing its own device from its function and still
 * running; and the calls made from inside its own function. The
 * calls: devm_thread_run() of another thread, devm_thread_stop() on its
 * device and on another, devres_thread_set_stop_timeout(),
 * devres_thread_should_stop(), devres_thread_sleep(),
 * devres_thread_wait_fd() and the release of the device's resources.
 * Each cell checks the return, the exact WARN count and the device's
 * nodes after the call; then every thread is stopped and gone, and the
 * fixture finds the ledger (threads, descriptors, nodes) at its baseline.
 * The same calls two at a time from two threads are the thread_pairs of
 * tests/posix/test-posix-pairs.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"
#include "states.h"

enum state {
	RUNNING,
	RETURNED,
	EXITED,
	STOPPED,
	RELEASED,
	STALE,
	OTHER_DEV,
	STOPPING,
	SELF_RELEASED,
	INSIDE,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"running",
	"its function returned",
	"ended by pthread_exit",
	"stopped",
	"stopped by the release",
	"stopped, a newer thread in its slot",
	"running, managed by another device",
	"being stopped (a stop waits for it)",
	"released its own device, still running",
	"from inside its own function",
};

enum call {
	RUN,
	STOP,
	STOP_OTHER,
	TIMEOUT,
	SHOULD_STOP,
	SLEEP,
	WAIT_FD,
	RELEASE,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"devm_thread_run",
	"devm_thread_stop",
	"devm_thread_stop(other device)",
	"devres_thread_set_stop_timeout",
	"devres_thread_should_stop",
	"devres_thread_sleep",
	"devres_thread_wait_fd",
	"devres_release_all",
};

/* Return @r, @w WARNs, @n nodes on the device after the call. */
#define C(r, w, n) STATES_LEFT(r, w, NULL, n)

/* What its function returns when stopped, or at once. */
#define STOPPED_RET 5
#define QUICK_RET 7

/* A thread of the device, alive or its function ended, not stopped. */
#define MANAGED(stop_ret)                                                      \
	{                                                                      \
		C(1, 0, 2), C(stop_ret, 0, 0), C(-EINVAL, 1, 1), C(0, 0, 1),   \
			C(0, 0, 1), C(0, 0, 1), C(0, 0, 1), C(1, 0, 0)         \
	}
/*
 * A handle the device no longer manages: a stop WARNs (-EINVAL); a stale
 * handle's timeout WARNs (@tw).
 */
#define UNMANAGED(tw)                                                          \
	{                                                                      \
		C(1, 0, 1), C(-EINVAL, 1, 0), C(-EINVAL, 1, 0), C(0, tw, 0),   \
			C(0, 0, 0), C(0, 0, 0), C(0, 0, 0), C(0, 0, 0)         \
	}

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* run, stop, stop (other device), timeout, should stop, sleep,
	 * wait fd, release */
	[RUNNING] = MANAGED(STOPPED_RET),
	[RETURNED] = MANAGED(QUICK_RET),
	[EXITED] = MANAGED(-ECANCELED),
	[STOPPED] = UNMANAGED(1),
	[RELEASED] = UNMANAGED(1),
	[STALE] = UNMANAGED(1),
	/* The other device's: found there by a stop on it. */
	[OTHER_DEV] = { C(1, 0, 1), C(-EINVAL, 1, 0), C(STOPPED_RET, 0, 0),
			C(0, 0, 0), C(0, 0, 0), C(0, 0, 0), C(0, 0, 0),
			C(0, 0, 0) },
	/* Asked to stop, still running: let go, a timeout of it WARNs. */
	[STOPPING] = UNMANAGED(1),
	[SELF_RELEASED] = UNMANAGED(1),
	/*
	 * A stop of itself is refused; its release of its own device WARNs
	 * and detaches it.
	 */
	[INSIDE] = { C(1, 0, 2), C(-EDEADLK, 1, 1), C(-EDEADLK, 1, 1),
		     C(0, 0, 1), C(0, 0, 1), C(0, 0, 1), C(0, 0, 1),
		     C(1, 1, 0) },
};

static struct devres_thread *thread, *newer;
static unsigned int cur_state;
static int ended, pipe_fds[2] = { -1, -1 };

static int sleeper(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		(void)devres_thread_sleep(10000);
	return STOPPED_RET;
}

static int quick(void *arg)
{
	(void)arg;
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
	return QUICK_RET;
}

static int exits(void *arg)
{
	(void)arg;
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
	pthread_exit(NULL);
}

/* Runs on after it is asked to stop, until told to return. */
static int go, seen;

static int stubborn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) {
		if (devres_thread_should_stop())
			__atomic_store_n(&seen, 1, __ATOMIC_RELEASE);
		usleep(100);
	}
	return STOPPED_RET;
}

static pthread_t stopper;
static bool stopping;
static int stopper_ret;

static void *stop_it(void *arg)
{
	(void)arg;
	stopper_ret = devm_thread_stop(&tdev, thread);
	return NULL;
}

static int make(unsigned int c);

/*
 * A thread that makes the calls it is given, from inside its function,
 * until it is told to return (QUIT); its waits are its own (a condition
 * variable), so it returns when told, not when asked to stop.
 */
#define QUIT NR_CALLS

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int cmd; /* -1: none */
	int ret;
	bool done;
} srv = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, 0, false };

static __thread bool in_servant;
static bool servant_up;

static int servant(void *arg)
{
	(void)arg;
	in_servant = true;
	pthread_mutex_lock(&srv.lock);
	for (;;) {
		int c;

		while (srv.cmd < 0)
			pthread_cond_wait(&srv.cond, &srv.lock);
		c = srv.cmd;
		if (c == QUIT)
			break;
		pthread_mutex_unlock(&srv.lock);
		srv.ret = make((unsigned int)c);
		pthread_mutex_lock(&srv.lock);
		srv.cmd = -1;
		srv.done = true;
		pthread_cond_broadcast(&srv.cond);
	}
	srv.cmd = -1;
	pthread_mutex_unlock(&srv.lock);
	__atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
	return STOPPED_RET;
}

/* Has the servant make @c; what it returned (QUIT: nothing to wait for). */
static int by_servant(int c)
{
	int ret;

	pthread_mutex_lock(&srv.lock);
	srv.cmd = c;
	srv.done = false;
	pthread_cond_broadcast(&srv.cond);
	while (c != QUIT && !srv.done)
		pthread_cond_wait(&srv.cond, &srv.lock);
	ret = srv.ret;
	pthread_mutex_unlock(&srv.lock);
	return ret;
}

static void until_ended(void)
{
	while (!__atomic_load_n(&ended, __ATOMIC_ACQUIRE))
		usleep(100);
}

static struct devres_thread *run(struct device *dev, int (*fn)(void *))
{
	struct devres_thread *t = devm_thread_run(dev, fn, NULL, "states");

	assert_false(IS_ERR_OR_NULL(t));
	return t;
}

static void reach(unsigned int s)
{
	cur_state = s;
	ended = 0;
	newer = NULL;
	assert_int_equal(pipe(pipe_fds), 0);
	switch (s) {
	case RUNNING:
	case STOPPED:
	case RELEASED:
	case STALE:
		thread = run(&tdev, sleeper);
		break;
	case RETURNED:
		thread = run(&tdev, quick);
		until_ended();
		break;
	case EXITED:
		thread = run(&tdev, exits);
		until_ended();
		break;
	case OTHER_DEV:
		thread = run(&other, sleeper);
		break;
	case STOPPING:
		go = seen = 0;
		thread = run(&tdev, stubborn);
		assert_int_equal(pthread_create(&stopper, NULL, stop_it, NULL),
				 0);
		stopping = true;
		while (!__atomic_load_n(&seen, __ATOMIC_ACQUIRE))
			usleep(100);
		break;
	case SELF_RELEASED:
	case INSIDE:
		thread = run(&tdev, servant);
		servant_up = true;
		break;
	default:
		fail();
	}
	if (s == STOPPED || s == STALE)
		assert_int_equal(devm_thread_stop(&tdev, thread), STOPPED_RET);
	if (s == RELEASED)
		assert_int_equal(devres_release_all(&tdev), 1);
	/* Most likely in the stopped one's slot, of a newer generation. */
	if (s == STALE)
		newer = run(&other, sleeper);
	if (s == SELF_RELEASED)
		assert_int_equal(by_servant(RELEASE), 1);
}

static int make(unsigned int c)
{
	struct devres_thread *t;

	if (cur_state == INSIDE && !in_servant)
		return by_servant((int)c);
	switch (c) {
	case RUN:
		t = devm_thread_run(&tdev, sleeper, NULL, "another");
		return !IS_ERR_OR_NULL(t);
	case STOP:
		return devm_thread_stop(&tdev, thread);
	case STOP_OTHER:
		return devm_thread_stop(&other, thread);
	case TIMEOUT:
		devres_thread_set_stop_timeout(thread, 4000);
		return 0;
	case SHOULD_STOP:
		return devres_thread_should_stop();
	case SLEEP:
		return devres_thread_sleep(1);
	case WAIT_FD:
		return devres_thread_wait_fd(pipe_fds[0], POLLIN, 0);
	case RELEASE:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

/*
 * The servant told to return, the stop waiting for the stubborn one let
 * finish, every thread of both devices stopped, a detached one waited for
 * until the ledger counts it gone. Also after a cell that failed.
 */
static void end_all(void)
{
	struct devres_ledger now;

	if (servant_up)
		by_servant(QUIT);
	servant_up = false;
	if (stopping) {
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		pthread_join(stopper, NULL);
		assert_int_equal(stopper_ret, STOPPED_RET);
	}
	stopping = false;
	devres_release_all(&tdev);
	devres_release_all(&other);
	if (pipe_fds[0] >= 0) {
		close(pipe_fds[0]);
		close(pipe_fds[1]);
	}
	pipe_fds[0] = pipe_fds[1] = -1;
	for (int i = 0; i < 10000; i++) {
		devres_ledger_snapshot(&now);
		if (now.threads == ledger_base.threads)
			break;
		usleep(1000);
	}
	assert_int_equal(now.threads, ledger_base.threads);
}

static void undo(unsigned int s, const struct states_cell *want)
{
	(void)s;
	(void)want;
	end_all();
}

static int cell_teardown(void **state)
{
	end_all();
	return dev_teardown(state);
}

static const struct states_table thread_states =
	STATES_TABLE_LEFT(table, state_name, call_name, reach, make, &tdev,
			  undo, two_dev_setup, cell_teardown);

int main(void)
{
	return states_main("posix-thread-states", &thread_states, 1);
}
