// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=60 */
/*
 * libc's join and detach calls by hand on a managed thread, in every
 * state the thread can be in while its device manages it: running; its
 * function returned, the thread not yet joined; its device's release
 * waiting for its function to return; that release at its join (the
 * function returned, the thread still exiting: held in a destructor of
 * the program's own thread-specific data); devm_thread_stop() at its
 * join. Each call is refused with EINVAL and one WARN naming the device
 * and, once a stop has begun, the call that is stopping it; the release
 * or the stop then joins the thread once. Before, the release took the
 * thread off the table of managed threads before its own join: a hand
 * call in that window went to libc, and the release's join was a second
 * join of the thread, which POSIX leaves undefined.
 *
 * ThreadSanitizer's join and detach interceptors take the thread out of
 * its own record before the call and put it back after a refused one:
 * after a refused pthread_join() or pthread_detach() it aborts at the
 * stop's join, and a trying or timed join made while the stop tries its
 * own aborts it the same way (two joins at once, which its record does
 * not allow). Its build has the one call it does not intercept,
 * pthread_clockjoin_np() (tests/posix/test-posix-thread-hand.c says
 * more).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "states.h"

enum state {
	RUNNING,
	RETURNED,
	RELEASE_WAITING,
	RELEASE_JOINING,
	STOP_JOINING,
	NR_STATES
};

static const char *const state_name[NR_STATES] = {
	"running",
	"function returned, not joined",
	"its release waiting for the function",
	"its release at its join",
	"devm_thread_stop() at its join",
};

enum call {
#ifndef T_TSAN
	JOIN,
	TRYJOIN,
	TIMEDJOIN,
#endif
	CLOCKJOIN,
#ifndef T_TSAN
	DETACH,
#endif
	NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
#ifndef T_TSAN
	"pthread_join",		"pthread_tryjoin_np", "pthread_timedjoin_np",
#endif
	"pthread_clockjoin_np",
#ifndef T_TSAN
	"pthread_detach",
#endif
};

#define MANAGED "started with devm_thread_run(): use devm_thread_stop()"
#define BY_RELEASE                                                             \
	"is being stopped and joined by its device's release "                 \
	"(devm_thread_run())"
#define BY_STOP "is being stopped and joined by devm_thread_stop()"

/* Every call: EINVAL, one WARN, saying @says. */
/* clang-format off */
#ifndef T_TSAN
#define ROW(says) { { EINVAL, 1, says }, { EINVAL, 1, says }, \
		    { EINVAL, 1, says }, { EINVAL, 1, says }, \
		    { EINVAL, 1, says } }
#else
#define ROW(says) { { EINVAL, 1, says } }
#endif

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	[RUNNING] = ROW(MANAGED),
	[RETURNED] = ROW(MANAGED),
	[RELEASE_WAITING] = ROW(BY_RELEASE),
	[RELEASE_JOINING] = ROW(BY_RELEASE),
	[STOP_JOINING] = ROW(BY_STOP),
};
/* clang-format on */

static unsigned int cur;
static struct devres_thread *thread;
static pthread_t self, stopper;
static bool stopping;
static int tid, stopper_tid, asked, gate, in_dtor, dtor_gate, stop_ret;
static pthread_key_t key;

static int load(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* The program's own thread-specific data: its destructor may hold. */
static void dtor(void *p)
{
	(void)p;
	store(&in_dtor, 1);
	while (load(&dtor_gate))
		poll(NULL, 0, 1);
}

static int fn(void *arg)
{
	(void)arg;
	self = pthread_self();
	store(&tid, (int)gettid());
	if (cur == RETURNED)
		return 7;
	while (!devres_thread_should_stop())
		devres_thread_sleep(60000);
	store(&asked, 1);
	/* The release waits for this. */
	while (load(&gate))
		poll(NULL, 0, 1);
	if (cur == RELEASE_JOINING || cur == STOP_JOINING)
		pthread_setspecific(key, &key);
	return 7;
}

static void *stop_it(void *arg)
{
	(void)arg;
	store(&stopper_tid, (int)gettid());
	if (cur == STOP_JOINING)
		store(&stop_ret, devm_thread_stop(&tdev, thread));
	else
		store(&stop_ret, devres_release_all(&tdev));
	return NULL;
}

static bool task_gone(int t)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/task/%d", t);
	return stat(path, &st) < 0;
}

/* Until @cond() holds once (at_join() does not stay true); 20 s at most. */
static void wait_for(bool (*cond)(void))
{
	bool held = false;

	for (int i = 0; i < 20000 && !(held = cond()); i++)
		poll(NULL, 0, 1);
	assert_true(held);
}

static bool started(void)
{
	return load(&tid) != 0;
}

static bool exited(void)
{
	return task_gone(load(&tid));
}

static bool stop_asked(void)
{
	return load(&asked) != 0;
}

/*
 * In the thread's destructor, and the stopping thread asleep (in its join
 * before, which had taken the thread off the table).
 */
static bool at_join(void)
{
	return load(&in_dtor) && tid_asleep(load(&stopper_tid));
}

static void reach(unsigned int s)
{
	cur = s;
	tid = asked = in_dtor = stopper_tid = 0;
	stop_ret = -1;
	stopping = false;
	store(&gate, s >= RELEASE_WAITING);
	store(&dtor_gate, s >= RELEASE_JOINING);
	thread = devm_thread_run(&tdev, fn, NULL, "win");
	assert_false(IS_ERR(thread));
	wait_for(started);
	if (s == RETURNED)
		wait_for(exited);
	if (s < RELEASE_WAITING)
		return;
	stopping = true;
	assert_int_equal(pthread_create(&stopper, NULL, stop_it, NULL), 0);
	wait_for(stop_asked);
	if (s == RELEASE_WAITING)
		return;
	store(&gate, 0);
	wait_for(at_join);
}

/*
 * A hand join that went to libc waits for the thread, which waits for the
 * cell, or for ever once the thread was joined twice: made on a thread
 * of its own, it is given 5 s, so that such a cell fails, not hangs
 * (-1 then), the thread let go after 3 s.
 */
static int call_done, call_ret;
static unsigned int call_c;

static int hand(unsigned int c);

static void *caller(void *arg)
{
	(void)arg;
	store(&call_ret, hand(call_c));
	store(&call_done, 1);
	return NULL;
}

static int make(unsigned int c)
{
	struct timespec ts;
	pthread_t t;

	call_c = c;
	store(&call_done, 0);
	assert_int_equal(pthread_create(&t, NULL, caller, NULL), 0);
	for (int i = 0; i < 5000 && !load(&call_done); i++) {
		if (i == 3000)
			store(&dtor_gate, 0);
		poll(NULL, 0, 1);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	if (pthread_timedjoin_np(t, NULL, &ts))
		return -1;
	return load(&call_ret);
}

static int hand(unsigned int c)
{
	struct timespec ts;
	void *ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	switch (call_name[c][8]) {
	case 'j': /* pthread_join */
		return pthread_join(self, &ret);
	case 't':
		if (call_name[c][9] == 'r')
			return pthread_tryjoin_np(self, &ret);
		return pthread_timedjoin_np(self, &ret, &ts);
	case 'c':
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		return pthread_clockjoin_np(self, &ret, CLOCK_MONOTONIC, &ts);
	default:
		return pthread_detach(self);
	}
}

/* The stop, or the release, joins the thread once; nothing is left. */
static void after(void)
{
	store(&gate, 0);
	store(&dtor_gate, 0);
	if (stopping) {
		struct timespec ts;

		/* A join of a thread joined already may wait for ever. */
		stopping = false;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 5;
		if (pthread_timedjoin_np(stopper, NULL, &ts))
			fail_msg("the stop's join of the thread did not "
				 "return");
		assert_int_equal(load(&stop_ret), cur == STOP_JOINING ? 7 : 1);
	} else {
		assert_int_equal(devres_release_all(&tdev), 1);
	}
	stopping = false;
}

static int cell_teardown(void **state)
{
	if (stopping)
		after();
	return dev_teardown(state);
}

static const struct states_table window_states =
	STATES_TABLE(table, state_name, call_name, reach, make, after,
		     dev_setup, cell_teardown);

int main(void)
{
	if (pthread_key_create(&key, dtor))
		return 1;
	return states_main("posix-thread-window", &window_states, 1);
}
