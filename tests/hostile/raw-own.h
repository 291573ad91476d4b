/* SPDX-License-Identifier: MIT */
/*
 * The library's own descriptors as the raw-release tables find and use
 * them: a number the library opened, found by what /proc/self/fd links
 * it to; an irq line's eventfd and a managed thread's wake eventfd, made
 * and then used (a raise, a handler requested and freed, the line
 * destroyed; the thread stopped).
 */
#ifndef DEVRES_TESTS_RAW_OWN_H
#define DEVRES_TESTS_RAW_OWN_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <devres/irq.h>
#include <devres/posix.h>

#define MAXFD 1024

static inline bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static inline void snapshot(bool open[MAXFD])
{
	for (int fd = 0; fd < MAXFD; fd++)
		open[fd] = is_open(fd);
}

/* The lowest new number whose link names @what, or -1. */
static inline int new_fd(const bool before[MAXFD], const char *what)
{
	char link[64], target[4096];

	for (int fd = 3; fd < MAXFD; fd++) {
		ssize_t n;

		if (before[fd] || !is_open(fd))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strstr(target, what))
			return fd;
	}
	return -1;
}

static int line_irq, line_count;

static inline irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	__atomic_add_fetch((int *)dev_id, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

/* An irq line's eventfd. */
static inline int make_line(void)
{
	bool before[MAXFD];

	snapshot(before);
	line_irq = irq_line_create("raw-line");
	assert_true(line_irq > 0);
	return new_fd(before, "[eventfd]");
}

static inline void use_line(void)
{
	/*
	 * May fail; must not write into the other owner's file. The checked
	 * raise: irq_line_raise() leaves the check out (its cost).
	 */
	(void)irq_line_raise_wait(line_irq);
	if (request_irq((unsigned int)line_irq, count_irq, 0, "raw",
			&line_count) == 0) {
		(void)irq_line_raise_wait(line_irq);
		free_irq((unsigned int)line_irq, &line_count);
	}
	(void)irq_line_destroy(line_irq);
}

static struct devres_thread *row_thread;

/* Waits on its wake eventfd, for at most 100 ms at a time. */
static inline int sleeper(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(100);
	return 0;
}

/* A managed thread's wake eventfd. */
static inline int make_thread(void)
{
	bool before[MAXFD];

	snapshot(before);
	row_thread = devm_thread_run(&tdev, sleeper, NULL, "raw-thread");
	assert_false(IS_ERR(row_thread));
	return new_fd(before, "[eventfd]");
}

/* The stop writes the wake eventfd: the thread still stops. */
static inline void use_thread(void)
{
	assert_int_equal(devm_thread_stop(&tdev, row_thread), 0);
}

#endif /* DEVRES_TESTS_RAW_OWN_H */
