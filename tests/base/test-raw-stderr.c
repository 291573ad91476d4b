// SPDX-License-Identifier: MIT
/* ctest-labels: unit white-box tsan timeout=60 */
/*
 * The library's own output to stderr takes no lock of stdio's: a WARN, a
 * log line and a BUG line are each one writev() to stderr's descriptor.
 * Through fprintf() they waited for the stream's lock, which another
 * thread may hold for as long as it likes (flockfile(), a long line to a
 * full pipe), a thread of the parent may have held at a fork(), or the
 * thread a signal handler interrupted may hold. Each cell, in a child
 * process under an alarm, has another thread hold stderr's lock across
 * the library's output and reads what reached the descriptor: the line,
 * whole and once; a BUG line is followed by abort(), not by the alarm.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"
#include "hostile/cell-child.h"
#include "../../src/base/node.h"

#define CELL_ALARM_S 5

enum {
	R_WARN,
	R_LOG,
	R_BUG,
	R_NR
};

static const char *const rows[R_NR] = { "WARN", "log line", "BUG line" };
static const char *const want[R_NR] = {
	"WARNING: (no device): devres_release_all: NULL device",
	"raw-dev: a line of the log",
	"BUG: raw-dev: raw_cell: the list is broken",
};

static struct device rdev;
static int out[2];
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static int held;

/*
 * Takes stderr's lock and keeps it until the process ends; but for
 * ThreadSanitizer's abort(), which flushes stdio's streams before it
 * aborts: there the BUG cell's lock is let go after a second, and the
 * line is checked as in the other builds (it reached the pipe), not the
 * wait.
 */
static void *hold_stderr(void *arg)
{
	(void)arg;
	flockfile(stderr);
	pthread_mutex_lock(&held_lock);
	held = 1;
	pthread_cond_signal(&held_cond);
	pthread_mutex_unlock(&held_lock);
#ifdef T_TSAN
	if (*(int *)arg == R_BUG) {
		sleep(1);
		funlockfile(stderr);
	}
#endif
	for (;;)
		pause();
	return NULL;
}

static int raw_cell(int row, int col)
{
	pthread_t thr;

	(void)col;
	alarm(CELL_ALARM_S);
	if (dup2(out[1], STDERR_FILENO) < 0 || init_dev(&rdev, "raw-dev"))
		return 2;
	if (pthread_create(&thr, NULL, hold_stderr, &row))
		return 3;
	pthread_mutex_lock(&held_lock);
	while (!held)
		pthread_cond_wait(&held_cond, &held_lock);
	pthread_mutex_unlock(&held_lock);
	switch (row) {
	case R_WARN:
		setenv("DEVRES_WARN_BACKTRACE", "0", 1);
		devres_release_all(NULL);
		break;
	case R_LOG:
		dev_info(&rdev, "a line of the log");
		break;
	default:
		devres__bug(&rdev, __func__, "the list is broken");
	}
	/*
	 * Not put_device(): its release may log, and the thread lives on.
	 * Not _exit() either: ThreadSanitizer's flushes stdio's streams
	 * there, and would wait for the lock held.
	 */
	syscall(SYS_exit_group, 0);
	return 0;
}

/* The cell's status, and whether its line reached the pipe once. */
static void run_row(int row, int *ret_status, int *ret_lines)
{
	char buf[4096];
	ssize_t n;

	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	*ret_status = run_cell_in_child(raw_cell, row, 0);
	close(out[1]);
	n = read(out[0], buf, sizeof(buf) - 1);
	close(out[0]);
	buf[n > 0 ? n : 0] = '\0';
	*ret_lines = count_substr(buf, want[row]);
	if (*ret_lines != 1)
		fprintf(stderr, "%s: got \"%s\"\n", rows[row], buf);
}

static void test_output_without_stdio_lock(void **state)
{
	int status, lines;

	(void)state;
	for (int row = 0; row < R_NR; row++) {
		run_row(row, &status, &lines);
		if (row == R_BUG)
			assert_true(WIFSIGNALED(status) &&
				    WTERMSIG(status) == SIGABRT);
		else
			assert_true(WIFEXITED(status) &&
				    WEXITSTATUS(status) == 0);
		assert_int_equal(lines, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_without_stdio_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
