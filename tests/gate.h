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
#include <stdbool.h>

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

#endif /* DEVRES_TESTS_GATE_H */
