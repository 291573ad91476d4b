// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * daemon(3) puts /dev/null on 0, 1 and 2 with dup2() inside libc, past
 * the library's dup2(). That is not a managed number replaced behind the
 * library's back, and daemon() is not interposed: libc makes those calls
 * in the child it forks (the caller exits there, with its managed
 * numbers as they were), and in a child of fork() the parent's devices
 * and managed numbers are the parent's (docs/fork.md): the child's copy
 * of the table is empty, and a dup2() over its copy of a number is its
 * own, with no WARN, as one by hand would be.
 *
 * What a program sees, a cell each, each in a child of its own that
 * daemon() forks again and leaves (the daemon reports through a pipe, its
 * standard output and error being /dev/null by then):
 * - a managed number on 0: no WARN at daemon(); 0..2 are /dev/null in
 *   the daemon, not close-on-exec; the device is the exited parent's, so
 *   its release in the daemon is refused (-ENODEV, its one WARN) and
 *   closes nothing, /dev/null stays on 0; a device the daemon makes is
 *   its own, and a dup2() by hand over its managed number is caught;
 * - the same with @noclose: nothing replaced, 0 still the file opened.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

/* The daemon's failed check, as its line number, through the pipe. */
static int report_fd = -1;

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			int line_ = __LINE__;                                  \
			(void)!write(report_fd, &line_, sizeof(line_));        \
			_exit(1);                                              \
		}                                                              \
	} while (0)

/* The first WARN line since the sink was set; how many WARN lines. */
static char first[256];
static int warn_lines;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (level != DEVRES_LOG_WARNING || strncmp(line, "WARNING:", 8) != 0)
		return;
	if (!warn_lines++)
		snprintf(first, sizeof(first), "%s", line);
}

static bool is_null_dev(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode) &&
	       st.st_rdev == makedev(1, 3);
}

enum cell {
	MANAGED_0,
	MANAGED_0_NOCLOSE
};

/* In the cell's child: everything up to and after daemon(). */
static void cell_child(enum cell cell)
{
	/* The cell's child is a child of fork(): a device of its own. */
	struct device *dev = heap_dev(NULL, "daemon-parent"), *own;
	int fd, warns, ok = 0;

	CHECK(close(0) == 0);
	fd = devm_open(dev, "/dev/zero", O_RDONLY);
	CHECK(fd == 0);
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	CHECK(daemon(1, cell == MANAGED_0_NOCLOSE) == 0);
	/* The daemon, the cell's child gone: nothing said at the call. */
	CHECK(devres_warn_count() == warns);
	if (cell == MANAGED_0) {
		for (int n = 0; n <= 2; n++)
			CHECK(is_null_dev(n) && fcntl(n, F_GETFD) == 0);
	} else {
		CHECK(!is_null_dev(0) && fcntl(0, F_GETFD) == FD_CLOEXEC);
	}
	/* The device is the parent's: its release is refused here. */
	CHECK(devres_release_all(dev) == -ENODEV);
	CHECK(devres_warn_count() == warns + 1);
	CHECK(strstr(first, "device belongs to process"));
	CHECK(cell == MANAGED_0 ? is_null_dev(0) : !is_null_dev(0));
	/* A device of the daemon's own is managed as any. */
	own = heap_dev(NULL, "daemon-own");
	fd = devm_open(own, "/dev/zero", O_RDONLY);
	CHECK(fd > 2);
	CHECK(dup2(1, fd) == fd);
	CHECK(devres_warn_count() == warns + 2);
	CHECK(devres_release_all(own) == 0);
	CHECK(devres_warn_count() == warns + 2);
	put_device(own);
	CHECK(write(report_fd, &ok, sizeof(ok)) == sizeof(ok));
	_exit(0);
}

static void run_cell(enum cell cell)
{
	int p[2], status, line = -1;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[0]);
		report_fd = p[1];
		alarm(10);
		cell_child(cell);
	}
	close(p[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Until the daemon's report, or its end without one. */
	do
		n = read(p[0], &line, sizeof(line));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n != sizeof(line))
		fail_msg("the daemon ended with no report");
	if (line)
		fail_msg("the daemon's check at line %d failed", line);
}

static void managed_0(void **state)
{
	(void)state;
	run_cell(MANAGED_0);
}

static void managed_0_noclose(void **state)
{
	(void)state;
	run_cell(MANAGED_0_NOCLOSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(managed_0),
		cmocka_unit_test(managed_0_noclose),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
