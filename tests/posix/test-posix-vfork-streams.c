// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A child of vfork() gives back its parent's streams before it execs or
 * exits, as it gives back numbers (test-posix-vfork-closes): each stream
 * (devm_fopen()'s, a program's fdopen() over devm_open()'s number or over
 * devm_eventfd()'s) times each call that closes or replaces a stream
 * (fclose(), pclose(), endmntent(), freopen() of /dev/null), and a DIR
 * fdopendir() made of devm_open()'s number given to closedir(): 13 cells,
 * each in a process of its own under an alarm.
 *
 * The child has a table of descriptors of its own and its parent's
 * memory. So it writes nothing (no WARN: nothing is the child's to give
 * back), and the parent finds its device as it was: the node there, the
 * number open and managed, a managed stream still whole (the child's
 * call closed its own copy of the number and left the parent's FILE),
 * and the device's release gives it all back with no WARN, the ledger
 * back where it was. Before, the child's call WARNed, took the parent's
 * record away, and freed a managed stream's FILE under the parent.
 *
 * Under ThreadSanitizer vfork() is a fork(): the child's memory is its
 * own, and the same holds.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <dirent.h>
#include <fcntl.h>
#include <mntent.h>
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
	A_FOPEN,
	A_FDOPEN,
	A_EVENTFD,
	A_DIR,
	NR_ACQS
};
enum call {
	C_FCLOSE,
	C_PCLOSE,
	C_ENDMNTENT,
	C_FREOPEN,
	C_CLOSEDIR,
	NR_CALLS
};

static const char *const acqs[NR_ACQS] = { "devm_fopen", "fdopen(devm_open)",
					   "fdopen(devm_eventfd)",
					   "fdopendir(devm_open)" };
static const char *const calls[NR_CALLS] = { "fclose", "pclose", "endmntent",
					     "freopen", "closedir" };

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

/* The child's call, on the stream @f or the DIR @d; then it exits. */
static pid_t spawn(int call, FILE *f, DIR *d)
{
	pid_t pid;

	/* What is tested: a child of vfork() calling past what POSIX allows. */
	/* NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.vfork) */
	pid = vfork();
	if (pid == 0) {
		/* NOLINTBEGIN(clang-analyzer-unix.Vfork) */
		if (call == C_FCLOSE)
			(void)fclose(f);
		else if (call == C_PCLOSE)
			(void)pclose(f);
		else if (call == C_ENDMNTENT)
			(void)endmntent(f);
		else if (call == C_FREOPEN)
			(void)freopen("/dev/null", "r", f);
		else
			(void)closedir(d);
		_exit(0);
		/* NOLINTEND(clang-analyzer-unix.Vfork) */
	}
	return pid;
}

/* The stream or DIR of @acq, *@ret_fd its managed number. */
static void acquire(int acq, FILE **ret_f, DIR **ret_d, int *ret_fd)
{
	int fd;

	*ret_f = NULL;
	*ret_d = NULL;
	if (acq == A_FOPEN) {
		*ret_f = devm_fopen(&cdev, "/dev/null", "r");
		CHILD_CHECK(*ret_f);
		*ret_fd = fileno(*ret_f);
		return;
	}
	if (acq == A_EVENTFD)
		fd = devm_eventfd(&cdev, 0, EFD_CLOEXEC);
	else if (acq == A_DIR)
		fd = devm_open(&cdev, "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = devm_open(&cdev, "/dev/null", O_RDONLY | O_CLOEXEC);
	CHILD_CHECK(fd > 2);
	if (acq == A_DIR) {
		*ret_d = fdopendir(fd);
		CHILD_CHECK(*ret_d);
	} else {
		*ret_f = fdopen(fd, "r");
		CHILD_CHECK(*ret_f);
	}
	*ret_fd = fd;
}

static int cell(int acq, int call)
{
	struct devres_ledger l0, l;
	struct stat st;
	FILE *f;
	DIR *d;
	int fd, err, saved, status = 0;
	pid_t pid;

	/* closedir() takes a DIR, the others a stream. */
	if ((acq == A_DIR) != (call == C_CLOSEDIR))
		return 0;
	alarm(CELL_ALARM_S);
	cdev.init_name = "cell-dev";
	cdev.release = cdev_release;
	device_initialize(&cdev);
	devres_ledger_snapshot(&l0);
	acquire(acq, &f, &d, &fd);
	CHILD_CHECK(nodes() == 1);
	/* What the child writes, WARNs included, goes to a file of its own. */
	err = memfd_create("child-stderr", MFD_CLOEXEC);
	saved = dup(2);
	CHILD_CHECK(err >= 0 && saved >= 0 && dup2(err, 2) == 2);
	pid = spawn(call, f, d);
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

	/* The parent's number: open, still managed. */
	CHILD_CHECK(fcntl(fd, F_GETFD) >= 0);
	CHILD_CHECK(nodes() == 1);
	/* A managed stream: still whole, still reading its own file. */
	if (acq == A_FOPEN) {
		CHILD_CHECK(fileno(f) == fd);
		CHILD_CHECK(fgetc(f) == EOF && feof(f) && !ferror(f));
	}
	/* Released: nothing said, everything given back. */
	start_capture();
	CHILD_CHECK(devres_release_all(&cdev) == 1);
	CHILD_CHECK(count_prefix("WARNING:") == 0);
	CHILD_CHECK(fcntl(fd, F_GETFD) < 0);
	devres_ledger_snapshot(&l);
	CHILD_CHECK(!devres_ledger_diff(&l0, &l, stderr));
	return 0;
}

static void vfork_streams(void **state)
{
	(void)state;
	run_cells_in_children(cell, acqs, NR_ACQS, calls, NR_CALLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vfork_streams),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
