// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=120 */
/*
 * A managed thread's wake eventfd closed by a raw system call while the
 * thread waits, then left closed or given to another owner: each way x
 * each wait (devres_thread_sleep(), devres_thread_wait_fd() with a
 * timeout, and without one). The wait must not spin (its thread's CPU
 * time, CLOCK_THREAD_CPUTIME_ID, stays under 25 ms over a wait of
 * 400 ms; a wait that ends at every ppoll() takes what the scheduler
 * gives it), must end as it would have (at its timeout, or at the stop),
 * and the stop must still stop the thread, with at most one WARN and
 * the other owner's file untouched.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "raw-own.h"

#define KEEP_FD 900
#define WAIT_MS 400

/*
 * A spinning wait takes as much of the WAIT_MS as it is given (a quarter
 * of it, 100 ms, on two CPUs at load 8); a sleeping one a few wake-ups'
 * worth, 20 ms apart: 5.9 ms seen at load 7, where 5 ms was the bound.
 * Under valgrind each of those costs ten times more (11 ms seen), while
 * a spin still takes the wait.
 */
static double cpu_max_ms(void)
{
	return under_valgrind() ? 50.0 : 25.0;
}

/* ---- what is at the number then ---- */

static int nothing(void)
{
	return -1;
}

/* Readable at once: a ppoll() on it ends at once. */
static int readable_eventfd(void)
{
	return eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
}

/* Never readable: the stop's write would go nowhere. */
static int silent_epoll(void)
{
	return epoll_create1(EPOLL_CLOEXEC);
}

static int dev_null(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

struct way {
	const char *name;
	int (*make)(void);
};

static const struct way ways[] = {
	{ "left closed", nothing },
	{ "a readable eventfd", readable_eventfd },
	{ "a silent epoll", silent_epoll },
	{ "/dev/null", dev_null },
};

/* ---- the waits ---- */

enum wait {
	SLEEP,
	WAIT_FD,
	WAIT_FD_FOREVER
};

static const char *const wait_names[] = {
	"devres_thread_sleep",
	"devres_thread_wait_fd",
	"devres_thread_wait_fd forever",
};

struct waiter {
	enum wait wait;
	int go[2];    /* the thread starts its wait once this is written */
	int quiet[2]; /* nothing is ever written into it */
	double cpu_ms;
	int ret;
	int done; /* atomic */
};

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int waiter_fn(void *arg)
{
	struct waiter *w = arg;
	double t0;
	char c;

	if (read(w->go[0], &c, 1) != 1)
		return -EIO;
	t0 = cpu_ms();
	switch (w->wait) {
	case SLEEP:
		w->ret = devres_thread_sleep(WAIT_MS);
		break;
	case WAIT_FD:
		w->ret = devres_thread_wait_fd(w->quiet[0], POLLIN, WAIT_MS);
		break;
	case WAIT_FD_FOREVER:
		w->ret = devres_thread_wait_fd(w->quiet[0], POLLIN, -1);
		break;
	}
	w->cpu_ms = cpu_ms() - t0;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	while (!devres_thread_should_stop())
		devres_thread_sleep(50);
	return 0;
}

static bool wait_done(struct waiter *w, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
			return true;
		usleep(10000);
	}
	return false;
}

struct cell {
	const struct way *way;
	enum wait wait;
	char name[96];
};

static const struct cell *cur;

static void run_cell(void **state)
{
	struct waiter w = { .wait = cur->wait };
	struct devres_thread *t;
	bool before[MAXFD];
	int fd, theirs = -1;
	pid_t pid = getpid();
	uint64_t v;

	(void)state;
	assert_int_equal(pipe2(w.go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(w.quiet, O_CLOEXEC), 0);
	snapshot(before);
	t = devm_thread_run(&tdev, waiter_fn, &w, "wake-lost");
	assert_false(IS_ERR(t));
	fd = new_fd(before, "[eventfd]");
	assert_true(fd >= 0);

	/* The wake eventfd closed past the interposers, then the other owner's. */
	assert_int_equal(syscall(SYS_close, fd), 0);
	theirs = cur->way->make();
	if (theirs >= 0) {
		if (theirs != fd) {
			assert_int_equal(
				syscall(SYS_dup3, theirs, fd, O_CLOEXEC), fd);
			assert_int_equal(syscall(SYS_close, theirs), 0);
		}
		assert_int_equal(syscall(SYS_dup3, fd, KEEP_FD, O_CLOEXEC),
				 KEEP_FD);
	}
	start_capture();
	assert_int_equal(write(w.go[1], "g", 1), 1);
	if (cur->wait == WAIT_FD_FOREVER) {
		/* Only the stop ends it. */
		usleep(WAIT_MS * 1000);
		assert_false(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
		assert_int_equal(devm_thread_stop(&tdev, t), 0);
		assert_true(w.done);
		assert_int_equal(w.ret, -EINTR);
	} else {
		assert_true(wait_done(&w, 10000));
		assert_int_equal(w.ret, 0);
		assert_int_equal(devm_thread_stop(&tdev, t), 0);
	}
	/* Asleep, not spinning. */
	if (w.cpu_ms >= cpu_max_ms())
		fail_msg("the wait used %.1f ms of CPU", w.cpu_ms);
	assert_true(cap.n <= 1);
	if (theirs >= 0) {
		assert_int_equal(
			syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, KEEP_FD), 0);
		if (cur->way->make == readable_eventfd) {
			assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
			assert_int_equal(v, 1);
		}
		assert_int_equal(close(fd), 0);
		assert_int_equal(close(KEEP_FD), 0);
	}
	close(w.go[0]);
	close(w.go[1]);
	close(w.quiet[0]);
	close(w.quiet[1]);
}

static int cell_setup(void **state)
{
	cur = *state;
	return dev_setup(state);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define NR_CELLS (N(ways) * N(wait_names))

static struct cell cells[NR_CELLS];
static struct CMUnitTest tests[NR_CELLS];

int main(void)
{
	size_t n = 0;

	for (size_t w = 0; w < N(ways); w++)
		for (size_t k = 0; k < N(wait_names); k++, n++) {
			cells[n] = (struct cell){ &ways[w], (enum wait)k, "" };
			add_cell(&tests[n], &cells[n], run_cell, cell_setup,
				 dev_teardown, "%s #%zu / wake eventfd %s",
				 wait_names[k], n, ways[w].name);
		}
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests_name("hostile-thread-wake", tests, NULL,
					   NULL);
}
