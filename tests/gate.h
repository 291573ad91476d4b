/* SPDX-License-Identifier: MIT */
/*
 * A gate a callback waits at until the test opens it: gate_wait() in the
 * callback says it got there and blocks; the test waits for that with
 * gate_until_reached(), does what it tests meanwhile, then
 * gate_release(). One gate a test program; gate_reset() before each use.
 */
#ifndef DEVRES_TESTS_GATE_H
#define DEVRES_TESTS_GATE_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <devres/devres.h>

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_reached;

static inline void gate_reset(void)
{
	gate_open = gate_reached = false;
}

static inline void gate_wait(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_reached = true;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static inline void gate_until_reached(void)
{
	pthread_mutex_lock(&gate_lock);
	while (!gate_reached)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static inline void gate_release(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

/* A release that does nothing: a node there only to be walked, or held. */
static inline void gate_held(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static inline void gate_wait_each(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	gate_wait();
}

/*
 * Holds @dev's devres lock until the gate opens: devres_for_each_res()
 * with a callback that waits at the gate, over the nodes whose release
 * is gate_held() (put one on @dev first: a walk with none to visit takes
 * the lock and lets it go at once). Returns once the lock is let go.
 */
static inline void gate_hold_devres(struct device *dev)
{
	devres_for_each_res(dev, gate_held, NULL, NULL, gate_wait_each, NULL);
}

/*
 * Pins the calling thread to @cpu, at SCHED_IDLE if @idle: it then runs
 * there only while nothing else does (the tests of the devres lock's
 * sleepers and due waiters). Its thread id, or -1 if either fails.
 */
static inline pid_t pin_to_cpu(int cpu, bool idle)
{
	struct sched_param sp = { 0 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) ||
	    (idle && pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)))
		return -1;
	return (pid_t)syscall(SYS_gettid);
}

#endif /* DEVRES_TESTS_GATE_H */
