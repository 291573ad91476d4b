// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * fork() while a thread of the parent has been woken from a wait on one
 * of the library's process-wide condition variables, and has not run
 * since: glibc counts such a waiter in the variable until it runs (its
 * group's references), and a child's broadcast that switches groups
 * waits for that count, which no thread of the child ever drops. Each
 * such variable is made new in the child (docs/fork.md, "Locks across
 * fork()").
 *
 * The waiter is kept from running by a signal handler that it runs in
 * the middle of its wait (it sleeps there until the fork is over): the
 * woken waiter is then certain at the fork, not a race.
 *
 * Rows: the driver model's variable (device_release_driver() waiting for
 * a binding hold, device_bound_get()), the one wait on it that a child
 * can reach with a thread of its own. Each child, under an alarm (a hang
 * fails the cell), binds a device of its own, holds its binding, unbinds
 * it on a thread of its own (which waits for the hold), lets the hold go
 * and joins the thread. Under ThreadSanitizer a child of a threaded
 * parent starts no thread: there it unbinds on its one thread, with no
 * waiter, and the cell only checks that nothing is left held.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/platform.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "base/fork-park.h"

#define WAIT_MS 5000
#define CHILD_ALARM_S 5

static int probe(struct platform_device *pdev)
{
	(void)pdev;
	return 0;
}

static struct platform_driver pdrv = {
	.probe = probe,
	.driver = { .name = "woken" },
};

static struct platform_driver cdrv = {
	.probe = probe,
	.driver = { .name = "woken-child" },
};

static sem_t in_handler, leave_handler;
static int w_tid;

static void handler(int sig)
{
	int err = errno;

	(void)sig;
	sem_post(&in_handler);
	while (sem_wait(&leave_handler) < 0)
		;
	errno = err;
}

static void *unbinder(void *arg)
{
	struct device *dev = arg;

	__atomic_store_n(&w_tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	device_release_driver(dev);
	return dev->driver ? (void *)1 : NULL;
}

/* @dev's unbind on thread *@t, asleep waiting for this thread's hold. */
static int unbind_waiting(struct device *dev, pthread_t *t)
{
	int waited = 0;

	__atomic_store_n(&w_tid, 0, __ATOMIC_SEQ_CST);
	if (device_bound_get(dev) || pthread_create(t, NULL, unbinder, dev))
		return -1;
	while (!tid_asleep(__atomic_load_n(&w_tid, __ATOMIC_SEQ_CST)))
		if (waited++ > WAIT_MS)
			return -1;
		else
			poll(NULL, 0, 1);
	poll(NULL, 0, 5);
	return 0;
}

static void child(void)
{
	struct platform_device *c;
	void *ret = NULL;
	pthread_t t;

	alarm(CHILD_ALARM_S);
	CHILD_CHECK(platform_driver_register(&cdrv) == 0);
	c = platform_device_alloc("woken-child", PLATFORM_DEVID_NONE);
	CHILD_CHECK(c && platform_device_add(c) == 0 && c->dev.driver);
#ifndef T_TSAN
	/* Woken by the put's broadcast: the one that waited for ever. */
	CHILD_CHECK(unbind_waiting(&c->dev, &t) == 0);
	device_bound_put(&c->dev);
	CHILD_CHECK(pthread_join(t, &ret) == 0 && !ret);
#else
	(void)t;
	(void)ret;
	CHILD_CHECK(device_bound_get(&c->dev) == 0);
	device_bound_put(&c->dev);
	device_release_driver(&c->dev);
	CHILD_CHECK(!c->dev.driver);
#endif
	platform_device_unregister(c);
	platform_driver_unregister(&cdrv);
	_exit(0);
}

static int one_cell(int row, int col)
{
	struct sigaction sa = { .sa_handler = handler };
	struct platform_device *p;
	int bad = 0;
	void *ret = NULL;
	pthread_t t;
	pid_t pid;

	(void)row;
	(void)col;
	alarm(30);
	sigemptyset(&sa.sa_mask);
	if (sem_init(&in_handler, 0, 0) || sem_init(&leave_handler, 0, 0) ||
	    sigaction(SIGUSR1, &sa, NULL))
		return 100;
	if (platform_driver_register(&pdrv))
		return 101;
	p = platform_device_alloc("woken", PLATFORM_DEVID_NONE);
	if (!p || platform_device_add(p) || !p->dev.driver)
		return 102;
	if (unbind_waiting(&p->dev, &t))
		return 103;
	/* In the middle of its wait, in the handler until after the fork. */
	if (pthread_kill(t, SIGUSR1))
		return 104;
	while (sem_wait(&in_handler) < 0)
		;
	/* Woken: it runs again only after the fork. */
	device_bound_put(&p->dev);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 105;
	if (pid == 0)
		child();
	sem_post(&leave_handler);
	bad += child_failed(pid, "the child");
	if (pthread_join(t, &ret) || ret)
		bad++;
	platform_device_unregister(p);
	platform_driver_unregister(&pdrv);
	return bad;
}

static void fork_with_a_waiter_woken(void **state)
{
	static const char *const rows[] = {
		"device_release_driver() waiting for a binding hold",
	};
	static const char *const cols[] = { "woken, not yet run" };

	(void)state;
	run_cells_in_children(one_cell, rows, 1, cols, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_with_a_waiter_woken),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
