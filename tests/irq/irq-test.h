/* SPDX-License-Identifier: MIT */
/*
 * Helpers the interrupt tests share (header only: every tests/<area>/
 * test-*.c is its own binary). Waits are bounded: a test that would hang
 * fails after WAIT_MS instead.
 */
#ifndef DEVRES_TESTS_IRQ_TEST_H
#define DEVRES_TESTS_IRQ_TEST_H

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <devres/irq.h>
#include "testlib.h"

#define WAIT_MS 20000

static inline long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static inline int load_int(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void add_int(int *p, int v)
{
	__atomic_add_fetch(p, v, __ATOMIC_ACQ_REL);
}

/* Waits until *@p >= @n; false after WAIT_MS. */
static inline bool wait_at_least(const int *p, int n)
{
	long end = now_ms() + WAIT_MS;

	while (load_int(p) < n) {
		if (now_ms() > end)
			return false;
		poll(NULL, 0, 1);
	}
	return true;
}

/*
 * A line on our own eventfd: the test can see (poll) whether the
 * dispatcher has taken an interrupt. *@ret_efd is the test's fd.
 */
static inline int attached_line(int *ret_efd, const char *name)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int irq;

	assert_true(efd >= 0);
	irq = irq_line_attach_fd(efd, name);
	assert_true(irq > 0);
	*ret_efd = efd;
	return irq;
}

/* Waits until the dispatcher has read what was raised on @fd. */
static inline bool wait_consumed(int fd)
{
	long end = now_ms() + WAIT_MS;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (poll(&p, 1, 0) > 0) {
		if (now_ms() > end)
			return false;
		poll(NULL, 0, 1);
	}
	return true;
}

/* Threads of this process. */
static inline int nr_threads(void)
{
	return count_entries("/proc/self/task");
}

static inline void *no_op(void *arg)
{
	return arg;
}

/*
 * A sanitizer's runtime starts a thread of its own with the first
 * pthread_create(): have it before the tests count threads.
 */
static inline void start_runtime_threads(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, no_op, NULL) == 0)
		pthread_join(t, NULL);
}

/*
 * Waits until the process has @n threads: a detached one may be exiting,
 * and one joined may still be listed, as the kernel wakes its joiner
 * before it takes the thread off /proc/self/task.
 */
static inline bool wait_threads(int n)
{
	long end = now_ms() + WAIT_MS;

	while (nr_threads() != n) {
		if (now_ms() > end)
			return false;
		poll(NULL, 0, 1);
	}
	return true;
}

/*
 * The fixture of the tests on tdev: the process's thread count at setup,
 * and a teardown that waits for it to come back (a dispatcher or an irq
 * thread may still be exiting) before dev_teardown() checks the ledger.
 */
static int irq_threads_base;

/*
 * The process's threads before any test's: a count taken at a later
 * setup may still list a thread the test before joined (wait_threads()).
 */
static int irq_threads_start = -1;

static inline int irq_threads_settle(void)
{
	if (irq_threads_start < 0)
		irq_threads_start = nr_threads();
	else if (!wait_threads(irq_threads_start))
		return -1;
	irq_threads_base = irq_threads_start;
	return 0;
}

static inline int irq_setup(void **state)
{
	if (irq_threads_settle())
		return -1;
	return dev_setup(state);
}

/* Names the threads left, for a teardown that waited in vain. */
static inline void print_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], name[64] = "?";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(name, sizeof(name), f))
				name[0] = 0;
			fclose(f);
		}
		fprintf(stderr, "  thread %s: %s", e->d_name, name);
	}
	closedir(d);
}

static inline int irq_teardown(void **state)
{
	if (!wait_threads(irq_threads_base)) {
		fprintf(stderr, "%d threads, not %d, after %d ms:\n",
			nr_threads(), irq_threads_base, WAIT_MS);
		print_threads();
		return -1;
	}
	return dev_teardown(state);
}

#endif /* DEVRES_TESTS_IRQ_TEST_H */
