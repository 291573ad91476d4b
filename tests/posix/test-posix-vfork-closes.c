// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A child of vfork() closes its parent's managed numbers before it execs
 * or exits, as such children do: each acquisition (devm_open(),
 * devm_eventfd(), devm_fopen()'s number) times each call that closes a
 * number (close(), dup2() and dup3() onto it, close_range() and
 * closefrom() from it, mq_close()): 18 cells, each in a process of its
 * own under an alarm.
 *
 * The child has a table of descriptors of its own: its call closes its
 * copy alone, and the parent's number stays open and managed. So the
 * child writes nothing (no WARN: the number is not the child's to give
 * back), and the parent finds its device as it was: the node there, the
 * number open, and the device's release closes it, the ledger back where
 * it was before the acquisition. Before, the child took the parent's
 * record of the number away (its WARN said "released now, and taken off
 * the device", though the node stayed), and the parent's release then
 * left the number open for good.
 *
 * Under ThreadSanitizer vfork() is a fork(): the child's memory is its
 * own, and the same holds.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"
#include "child-check.h"
#include "hostile/cell-child.h"

#define CELL_ALARM_S 10

enum acq {
	A_OPEN,
	A_EVENTFD,
	A_FOPEN,
	NR_ACQS
};
enum call {
	C_CLOSE,
	C_DUP2,
	C_DUP3,
	C_RANGE,
	C_FROM,
	C_MQ,
	NR_CALLS
};

static const char *const acqs[NR_ACQS] = { "devm_open", "devm_eventfd",
					   "devm_fopen" };
static const char *const calls[NR_CALLS] = { "close",	  "dup2",
					     "dup3",	  "close_range",
					     "closefrom", "mq_close" };

static struct device cdev;

static void cdev_release(struct device *dev)
{
	(void)dev;
}

static int nodes(void)
{
	struct devres_stats st;

	devres_get_stats(&cdev, &st);
	return (int)st.allocs;
}

/* The child's call; it closes nothing of the parent's. */
static void child_call(int call, int fd)
{
	switch (call) {
	case C_CLOSE:
		(void)close(fd);
		break;
	case C_DUP2:
		(void)dup2(0, fd);
		break;
	case C_DUP3:
		(void)dup3(0, fd, O_CLOEXEC);
		break;
	case C_RANGE:
		(void)close_range((unsigned int)fd, (unsigned int)fd, 0);
		break;
	case C_FROM:
		closefrom(fd);
		break;
	default:
		(void)mq_close(fd);
		break;
	}
}

/* A child of vfork() that makes @call on @fd, then exits. */
static pid_t spawn(int call, int fd)
{
	pid_t pid;

	/* What is tested: a child of vfork() calling past what POSIX allows. */
	/* NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.vfork) */
	pid = vfork();
	if (pid == 0) {
		/* NOLINTNEXTLINE(clang-analyzer-unix.Vfork) */
		child_call(call, fd);
		_exit(0);
	}
	return pid;
}

static int cell(int acq, int call)
{
	struct devres_ledger l0, l;
	struct stat st;
	FILE *f = NULL;
	int fd = -1, err, saved, status = 0;
	pid_t pid;

	alarm(CELL_ALARM_S);
	cdev.init_name = "cell-dev";
	cdev.release = cdev_release;
	device_initialize(&cdev);
	devres_ledger_snapshot(&l0);
	if (acq == A_OPEN) {
		fd = devm_open(&cdev, "/dev/null", O_RDONLY);
	} else if (acq == A_EVENTFD) {
		fd = devm_eventfd(&cdev, 0, EFD_CLOEXEC);
	} else {
		f = devm_fopen(&cdev, "/dev/null", "r");
		CHILD_CHECK(f);
		fd = fileno(f);
	}
	CHILD_CHECK(fd > 2 && nodes() == 1);
	/* What the child writes, WARNs included, goes to a file of its own. */
	err = memfd_create("child-stderr", MFD_CLOEXEC);
	saved = dup(2);
	CHILD_CHECK(err >= 0 && saved >= 0 && dup2(err, 2) == 2);
	pid = spawn(call, fd);
	CHILD_CHECK(dup2(saved, 2) == 2);
	CHILD_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHILD_CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	CHILD_CHECK(!fstat(err, &st));
	if (st.st_size)
		fprintf(stderr, "the child wrote %lld bytes\n",
			(long long)st.st_size);
	CHILD_CHECK(st.st_size == 0);
	close(err);
	close(saved);

	/* The parent's number: open, still managed, closed by the release. */
	CHILD_CHECK(fcntl(fd, F_GETFD) >= 0);
	CHILD_CHECK(nodes() == 1);
	start_capture();
	CHILD_CHECK(devres_release_all(&cdev) == 1);
	CHILD_CHECK(count_prefix("WARNING:") == 0);
	CHILD_CHECK(fcntl(fd, F_GETFD) < 0);
	devres_ledger_snapshot(&l);
	CHILD_CHECK(!devres_ledger_diff(&l0, &l, stderr));
	return 0;
}

static void vfork_closes(void **state)
{
	(void)state;
	run_cells_in_children(cell, acqs, NR_ACQS, calls, NR_CALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vfork_closes),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
