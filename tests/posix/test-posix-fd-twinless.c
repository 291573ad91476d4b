// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A managed descriptor whose twin could not be made: RLIMIT_NOFILE
 * lowered so that the acquisition's own descriptor is the last one that
 * fits, and F_DUPFD_CLOEXEC for the twin fails with EMFILE. kcmp() works
 * in this process; the node alone falls back to st_dev, st_ino and the
 * access mode (docs/posix.md, "Without a twin"). Each row of the table
 * runs twice, with a twin and without, and checks what the release does
 * after the descriptor was left alone, closed by hand (raw system calls,
 * which the library's close() and dup3() cannot see), its number reused
 * for another file, for the same file another way, for the same file the
 * same way, by dup2(), by another eventfd, or closed by devm_close(): the
 * WARNs, and whether the number was closed under its new owner. The
 * fallback differs from the twin in exactly the two rows the document
 * names (the same file the same way, another eventfd: closed, no WARN).
 * Each acquisition is checked to hold one descriptor without a twin and
 * two with one, by the ledger and by /proc/self/fd. Then EMFILE for the
 * acquisition itself: every call that makes a descriptor gives -EMFILE,
 * adds no node and leaves the ledger as it was; devm_add_fd() of a given
 * descriptor at the limit manages it without a twin.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

#define BEHIND_BACK "was closed behind the library's back"
#define LEFT_OPEN "now is another file: left open"

static char path[64];

static long ledger_fds(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.fds;
}

static struct rlimit saved_limit;

/*
 * Lowers the soft RLIMIT_NOFILE so that @spare descriptors fit: every
 * number below the lowest free one is taken, so a limit of lowest + 1
 * leaves exactly that one.
 */
static void limit_to(int spare)
{
	int lowest = fcntl(0, F_DUPFD_CLOEXEC, 0);
	struct rlimit rl;

	assert_true(lowest >= 0);
	close(lowest);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved_limit), 0);
	rl = saved_limit;
	rl.rlim_cur = (rlim_t)(lowest + spare);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void unlimit(void)
{
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved_limit), 0);
}

enum row {
	UNTOUCHED,
	BEHIND,
	OTHER_FILE,
	SAME_OTHER_MODE,
	SAME_SAME_MODE,
	DUP2_OTHER,
	EVENTFD_REUSED,
	DEVM_CLOSED,
	NR_ROWS
};

static const char *const row_name[NR_ROWS] = {
	"left alone",
	"closed by a raw close(2)",
	"number reused for another file",
	"number reused for the same file, another mode",
	"number reused for the same file, same mode",
	"another file dup3()ed over it (raw)",
	"devm eventfd's number reused by an eventfd",
	"closed by devm_close()",
};

/*
 * What the release does, with a twin [0] and without [1]: its WARN (a
 * piece of the line, NULL for none), and whether the other owner's
 * descriptor at the number survives (rows with no other owner: true).
 */
static const struct {
	const char *warn;
	bool survives;
} expect[NR_ROWS][2] = {
	[UNTOUCHED] = { { NULL, true }, { NULL, true } },
	[BEHIND] = { { BEHIND_BACK, true }, { BEHIND_BACK, true } },
	[OTHER_FILE] = { { LEFT_OPEN, true }, { LEFT_OPEN, true } },
	[SAME_OTHER_MODE] = { { LEFT_OPEN, true }, { LEFT_OPEN, true } },
	/* The fallback's limits: taken for the original, and closed. */
	[SAME_SAME_MODE] = { { LEFT_OPEN, true }, { NULL, false } },
	[DUP2_OTHER] = { { LEFT_OPEN, true }, { LEFT_OPEN, true } },
	[EVENTFD_REUSED] = { { LEFT_OPEN, true }, { NULL, false } },
	[DEVM_CLOSED] = { { NULL, true }, { NULL, true } },
};

/* Acquires the row's descriptor, without a twin if @twinless. */
static int acquire(struct device *dev, enum row r, bool twinless)
{
	long l0 = ledger_fds();
	int n0 = count_open_fds(), fd;

	if (twinless)
		limit_to(1);
	errno = 0;
	fd = r == EVENTFD_REUSED ? devm_eventfd(dev, 0, 0)
				 : devm_open(dev, path, O_RDONLY);
	/* The twin's failure is not the caller's: errno as it was. */
	assert_int_equal(errno, 0);
	if (twinless)
		unlimit();
	assert_true(fd >= 0);
	assert_int_equal(ledger_fds() - l0, twinless ? 1 : 2);
	assert_int_equal(count_open_fds() - n0, twinless ? 1 : 2);
	return fd;
}

/* Brings @fd to the row's state: the other owner's descriptor, or -1. */
/*
 * Behind the library's back: a raw system call, which the library's
 * close()/dup3() cannot see, so that the release's check is what is tested.
 */
static void raw_close(int fd)
{
	assert_int_equal(syscall(SYS_close, fd), 0);
}

static int disturb(struct device *dev, enum row r, int fd)
{
	int theirs = -1, o;

	switch (r) {
	case UNTOUCHED:
		break;
	case BEHIND:
		raw_close(fd);
		break;
	case OTHER_FILE:
		raw_close(fd);
		theirs = open("/dev/null", O_RDONLY | O_CLOEXEC);
		break;
	case SAME_OTHER_MODE:
		raw_close(fd);
		theirs = open(path, O_RDWR | O_CLOEXEC);
		break;
	case SAME_SAME_MODE:
		raw_close(fd);
		theirs = open(path, O_RDONLY | O_CLOEXEC);
		break;
	case DUP2_OTHER:
		o = open("/dev/null", O_RDONLY | O_CLOEXEC);
		assert_true(o >= 0);
		theirs = (int)syscall(SYS_dup3, o, fd, O_CLOEXEC);
		close(o);
		break;
	case EVENTFD_REUSED:
		raw_close(fd);
		theirs = eventfd(0, EFD_CLOEXEC);
		break;
	case DEVM_CLOSED:
		devm_close(dev, fd);
		assert_int_equal(fcntl(fd, F_GETFD), -1);
		break;
	case NR_ROWS:
		break;
	}
	/* The number is the lowest free one: the other owner gets it. */
	if (theirs != -1)
		assert_int_equal(theirs, fd);
	return theirs;
}

static void run_row(struct device *dev, enum row r, bool twinless)
{
	const char *want = expect[r][twinless].warn;
	int warns, fd, theirs;
	struct stat before, after;

	print_message("%s, %s\n", row_name[r],
		      twinless ? "no twin" : "with a twin");
	fd = acquire(dev, r, twinless);
	theirs = disturb(dev, r, fd);
	if (theirs >= 0)
		assert_int_equal(fstat(theirs, &before), 0);
	warns = devres_warn_count();
	start_capture();
	devres_release_all(dev);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_warn_count() - warns, want ? 1 : 0);
	assert_int_equal(count_prefix("WARNING: "), want ? 1 : 0);
	if (want)
		assert_non_null(strstr(cap.line[0], want));
	if (theirs < 0) {
		/* Nobody else's: the number is closed, by someone. */
		assert_int_equal(fcntl(fd, F_GETFD), -1);
		return;
	}
	if (expect[r][twinless].survives) {
		assert_int_equal(fstat(theirs, &after), 0);
		assert_true(after.st_ino == before.st_ino);
		close(theirs);
	} else {
		/* The limit the document names: the other owner.s is gone. */
		assert_int_equal(fcntl(theirs, F_GETFD), -1);
		assert_int_equal(errno, EBADF);
	}
}

static void test_release_with_and_without_twin(void **state)
{
	struct device *dev = *state;

	for (enum row r = 0; r < NR_ROWS; r++) {
		run_row(dev, r, false);
		run_row(dev, r, true);
	}
}

/*
 * A twinless node and a twinned one of the same device, side by side:
 * each is released by what it has, the ledger back by three.
 */
static void test_twinless_beside_twinned(void **state)
{
	struct device *dev = *state;
	long l0 = ledger_fds();
	int a, b;

	a = acquire(dev, UNTOUCHED, true);
	b = acquire(dev, UNTOUCHED, false);
	assert_int_equal(ledger_fds() - l0, 3);
	devm_close(dev, a);
	assert_int_equal(fcntl(a, F_GETFD), -1);
	assert_int_equal(ledger_fds() - l0, 2);
	devm_close(dev, b);
	assert_int_equal(fcntl(b, F_GETFD), -1);
	assert_int_equal(ledger_fds() - l0, 0);
}

static int memfd_call(struct device *dev)
{
	return devm_memfd_create(dev, "twinless", 0);
}

static int open_call(struct device *dev)
{
	return devm_open(dev, path, O_RDONLY);
}

static int openat_call(struct device *dev)
{
	return devm_openat(dev, AT_FDCWD, path, O_RDONLY);
}

static int eventfd_call(struct device *dev)
{
	return devm_eventfd(dev, 0, 0);
}

static int timerfd_call(struct device *dev)
{
	return devm_timerfd_create(dev, CLOCK_MONOTONIC, 0);
}

/* Nothing fits: the acquisition's own descriptor fails, nothing is kept. */
static void test_acquisition_emfile(void **state)
{
	static int (*const calls[])(struct device *) = {
		open_call, openat_call, memfd_call, eventfd_call, timerfd_call,
	};
	struct device *dev = *state;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		long l0 = ledger_fds();
		int n0 = count_open_fds(), warns = devres_warn_count(), r;

		limit_to(0);
		r = calls[i](dev);
		unlimit();
		assert_int_equal(r, -EMFILE);
		assert_int_equal(ledger_fds(), l0);
		assert_int_equal(count_open_fds(), n0);
		assert_int_equal(devres_warn_count(), warns);
		assert_int_equal(devres_release_all(dev), 0);
	}
}

/* A descriptor given at the limit: managed, without a twin. */
static void test_add_fd_at_the_limit(void **state)
{
	struct device *dev = *state;
	long l0 = ledger_fds();
	int fd, n0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n0 = count_open_fds();
	limit_to(0);
	assert_int_equal(devm_add_fd(dev, fd), 0);
	unlimit();
	assert_int_equal(ledger_fds() - l0, 1);
	assert_int_equal(count_open_fds(), n0);
	/* Without a twin, the same file the same way is not told apart. */
	raw_close(fd);
	assert_int_equal(open(path, O_RDONLY | O_CLOEXEC), fd);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(ledger_fds(), l0);
}

static int setup(void **state)
{
	int fd;

	snprintf(path, sizeof(path), "%s/devres-twinless-XXXXXX", "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return dev_setup(state);
}

static int teardown(void **state)
{
	unlink(path);
	return dev_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_release_with_and_without_twin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_twinless_beside_twinned,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_acquisition_emfile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_add_fd_at_the_limit, setup,
						teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
