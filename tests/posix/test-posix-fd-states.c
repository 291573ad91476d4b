// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a managed descriptor in every state of it: a number never
 * opened, acquired managed (devm_open()) or unmanaged (open()), closed by
 * devm_close(), closed twice, given back by the device's release, and
 * closed behind the library's back with close(2): then left closed, or
 * its number reused by another owner's open() of another file, of the
 * same file opened the same way, by dup2() over it, or by another
 * eventfd (all eventfds share one inode). Each cell starts from nothing,
 * brings the descriptor to its state, makes the call once and checks the
 * return, the exact WARN count and what the WARN says; then the device
 * holds the nodes the table says, the other owner's descriptor at the
 * reused number is still open and still its own open file (the same
 * description, by kcmp() against a copy the test kept), everything is
 * given back and the ledger is at its baseline. The release must act on
 * the descriptor it acquired, not on a number: whatever reuses the number
 * is another owner's. The table is sized by the enums.
 *
 * The same table runs again in a child where a seccomp filter refuses
 * kcmp() with EPERM, as some container policies do: the library falls
 * back to st_dev, st_ino and the access mode, and three rows change as
 * docs/posix.md says (the same file opened the same way, a dup2() of such,
 * another eventfd: taken for the original and closed, the other owner's
 * descriptor lost). The child checks exactly that, with fstat() in place
 * of kcmp() for the other owner's descriptor.
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
#include <linux/filter.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"
#include "states.h"

/* A number far above what the test opens: never a descriptor here. */
#define NEVER_FD 900

enum state {
	NEVER,
	MANAGED,
	PLAIN,
	RELEASED,
	TWICE,
	UNBOUND,
	BEHIND,
	REUSED_OTHER,
	REUSED_SAME,
	DUP2,
	EVENTFD,
	REACQUIRED,
	NR_STATES
};
static const char *const state_name[NR_STATES] = {
	"never opened",
	"devm opened",
	"opened",
	"closed by devm_close",
	"closed twice by devm_close",
	"device released",
	"closed by close(2)",
	"closed by close(2), number reused for another file",
	"closed by close(2), number reused for the same file, same mode",
	"another open file dup2()ed over it",
	"devm eventfd closed by close(2), number reused by an eventfd",
	"closed by close(2), number reused by the device's devm_eventfd",
};

enum call {
	DEVM_OPEN,   /* devm_open() of the file: a new descriptor */
	DEVM_ADD_FD, /* devm_add_fd() of the state's number */
	DEVM_CLOSE,  /* devm_close() of the state's number */
	RELEASE_ALL, /* devres_release_all() of the device (unbind) */
	/* The other acquisitions: a new descriptor, whatever the state. */
	DEVM_OPENAT,
	DEVM_MEMFD,
	DEVM_EVENTFD,
	DEVM_TIMERFD,
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"devm_open",	      "devm_add_fd",	     "devm_close",
	"devres_release_all", "devm_openat",	     "devm_memfd_create",
	"devm_eventfd",	      "devm_timerfd_create",
};

/*
 * What a cell expects: the return (a new descriptor is 0; the count of
 * devres_release_all()), the WARNs, a piece of the WARN's line, and the
 * device's nodes after the call.
 */
#define NOT_MANAGED "is not managed by this device"
#define BEHIND_BACK "was closed behind the library's back"
#define LEFT_OPEN "now is another file: left open"

/* clang-format off */
#define C(r, w, s, n) { r, w, s, n, false }
#define NEW(n) C(0, 0, NULL, n), C(0, 0, NULL, n), C(0, 0, NULL, n),      \
	C(0, 0, NULL, n)
#define GONE_ROW                                                            \
	{ C(0, 0, NULL, 1), C(-EBADF, 0, NULL, 0),                          \
	  C(0, 1, NOT_MANAGED, 0), C(0, 0, NULL, 0), NEW(1) }
/*
 * The node is stale, the number another owner's: never closed; not
 * managed either, so the owner may hand it to the device.
 */
#define REUSED_ROW                                                          \
	{ C(0, 0, NULL, 2), C(0, 0, NULL, 2),                               \
	  C(0, 1, LEFT_OPEN, 0), C(1, 1, LEFT_OPEN, 0), NEW(2) }

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* devm_open, devm_add_fd, devm_close, release all */
	[NEVER] = GONE_ROW,
	[MANAGED] = { C(0, 0, NULL, 2), C(-EBUSY, 1, "is already managed", 1),
		      C(0, 0, NULL, 0), C(1, 0, NULL, 0), NEW(2) },
	[PLAIN] = { C(0, 0, NULL, 1), C(0, 0, NULL, 1),
		    C(0, 1, NOT_MANAGED, 0), C(0, 0, NULL, 0), NEW(1) },
	[RELEASED] = GONE_ROW,
	[TWICE] = GONE_ROW,
	[UNBOUND] = GONE_ROW,
	[BEHIND] = { C(0, 0, NULL, 2), C(-EBADF, 0, NULL, 1),
		     C(0, 1, BEHIND_BACK, 0), C(1, 1, BEHIND_BACK, 0), NEW(2) },
	[REUSED_OTHER] = REUSED_ROW,
	[REUSED_SAME] = REUSED_ROW,
	[DUP2] = REUSED_ROW,
	[EVENTFD] = REUSED_ROW,
	/* The live node of the number is the one devm_close() closes. */
	[REACQUIRED] = { C(0, 0, NULL, 3),
			 C(-EBUSY, 1, "is already managed", 2),
			 C(0, 0, NULL, 1), C(2, 1, BEHIND_BACK, 0), NEW(3) },
};

/* Without kcmp(): the rows the fallback cannot tell from the original. */
#define LOST_ROW                                                            \
	{ C(0, 0, NULL, 2), C(-EBUSY, 1, "is already managed", 1),          \
	  { 0, 0, NULL, 0, true }, { 1, 0, NULL, 0, true }, NEW(2) }
static const struct states_cell lost_row[NR_CALLS] = LOST_ROW;
static bool no_kcmp;
/* clang-format on */

static const char *const file = "/dev/null";
static const char *const other_file = "/dev/zero";

/*
 * The state's number; the other owner's descriptor there (or -1) and the
 * test's own copy of it, to tell its open file from any other; the plain
 * descriptors undo() closes.
 */
static int fd, theirs = -1, theirs_copy = -1;
static bool adopted; /* the other owner's handed to the device */
static int plain[2];

static int open_ok(const char *path)
{
	int f = open(path, O_RDWR | O_CLOEXEC);

	assert_true(f >= 0);
	return f;
}

/* Another owner's descriptor, at @want: the number the device had. */
static void reuse(int f, int want)
{
	if (f != want) {
		/* Lower numbers were free: take them all, keep @want. */
		assert_true(f < want);
		assert_int_equal(dup2(f, want), want);
		close(f);
	}
	theirs = want;
	theirs_copy = fcntl(want, F_DUPFD_CLOEXEC, 0);
	assert_true(theirs_copy >= 0);
}

static void reach(unsigned int s)
{
	int f;

	theirs = theirs_copy = -1;
	adopted = false;
	plain[0] = plain[1] = -1;
	switch (s) {
	case NEVER:
		fd = NEVER_FD;
		assert_true(fcntl(fd, F_GETFD) < 0);
		return;
	case PLAIN:
		fd = plain[0] = open_ok(file);
		return;
	case EVENTFD:
		fd = devm_eventfd(&tdev, 0, 0);
		assert_true(fd >= 0);
		close(fd);
		f = eventfd(1, EFD_CLOEXEC);
		assert_true(f >= 0);
		reuse(f, fd);
		return;
	default:
		break;
	}
	fd = devm_open(&tdev, file, O_RDWR);
	assert_true(fd >= 0);
	switch (s) {
	case RELEASED:
		devm_close(&tdev, fd);
		break;
	case TWICE:
		devm_close(&tdev, fd);
		devm_close(&tdev, fd);
		break;
	case UNBOUND:
		assert_int_equal(devres_release_all(&tdev), 1);
		break;
	case BEHIND:
		close(fd);
		break;
	case REACQUIRED:
		close(fd);
		assert_int_equal(devm_eventfd(&tdev, 0, 0), fd);
		break;
	case REUSED_OTHER:
	case REUSED_SAME:
		close(fd);
		reuse(open_ok(s == REUSED_SAME ? file : other_file), fd);
		break;
	case DUP2:
		f = open_ok(file);
		assert_int_equal(dup2(f, fd), fd);
		close(f);
		reuse(fd, fd);
		break;
	default:
		break;
	}
}

static int make(unsigned int c)
{
	int f, ret;

	switch (c) {
	case DEVM_OPEN:
		f = devm_open(&tdev, file, O_RDWR);
		return f < 0 ? f : 0;
	case DEVM_OPENAT:
		f = devm_openat(&tdev, AT_FDCWD, file, O_RDWR);
		return f < 0 ? f : 0;
	case DEVM_MEMFD:
		f = devm_memfd_create(&tdev, "states", 0);
		return f < 0 ? f : 0;
	case DEVM_EVENTFD:
		f = devm_eventfd(&tdev, 0, 0);
		return f < 0 ? f : 0;
	case DEVM_TIMERFD:
		f = devm_timerfd_create(&tdev, CLOCK_MONOTONIC, 0);
		return f < 0 ? f : 0;
	case DEVM_ADD_FD:
		ret = devm_add_fd(&tdev, fd);
		/* Adopted, the plain one is the device's now. */
		if (ret == 0 && plain[0] == fd)
			plain[0] = -1;
		adopted = ret == 0 && fd == theirs;
		return ret;
	case DEVM_CLOSE:
		devm_close(&tdev, fd);
		return 0;
	case RELEASE_ALL:
		return devres_release_all(&tdev);
	default:
		fail();
	}
	return 0;
}

static bool same_file(int a, int b)
{
	pid_t pid = getpid();
	struct stat sa, sb;

	if (!no_kcmp)
		return syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b) == 0;
	/* Refused here too: the file, at least. */
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The table with the rows the fallback cannot tell from the original. */
static struct states_cell fallback[NR_STATES][NR_CALLS];

static void fill_fallback(void)
{
	memcpy(fallback, table, sizeof(fallback));
	memcpy(fallback[REUSED_SAME], lost_row, sizeof(lost_row));
	memcpy(fallback[DUP2], lost_row, sizeof(lost_row));
	memcpy(fallback[EVENTFD], lost_row, sizeof(lost_row));
}

/*
 * The other owner's descriptor is open and is its own open file still;
 * then everything goes: what the device holds, the plain descriptors,
 * the other owner's.
 */
static void undo(unsigned int s, const struct states_cell *want)
{
	(void)s;
	if (theirs >= 0 && want->other) {
		/* Closed by the library: the copy is all that is left. */
		assert_true(fcntl(theirs, F_GETFD) < 0);
		close(theirs_copy);
		theirs = -1;
	} else if (theirs >= 0) {
		assert_true(fcntl(theirs, F_GETFD) >= 0);
		assert_true(same_file(theirs, theirs_copy));
		close(theirs_copy);
	}
	devres_release_all(&tdev);
	for (int i = 0; i < 2; i++)
		if (plain[i] >= 0)
			close(plain[i]);
	/* Handed over, it was the device's to close. */
	if (adopted)
		assert_true(fcntl(theirs, F_GETFD) < 0);
	else if (theirs >= 0)
		close(theirs);
}

/* Whether this process may compare two descriptors with kcmp(). */
static bool kcmp_works(void)
{
	pid_t pid = getpid();
	int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int twin = probe < 0 ? -1 : fcntl(probe, F_DUPFD_CLOEXEC, 0);
	bool ok = twin >= 0 &&
		  syscall(SYS_kcmp, pid, pid, KCMP_FILE, probe, twin) == 0;

	if (twin >= 0)
		close(twin);
	if (probe >= 0)
		close(probe);
	return ok;
}

/* Makes kcmp() fail with EPERM in this process from now on. */
static int refuse_kcmp(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	pid_t pid = getpid();

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	/* Refused indeed, or the child would test the twin again. */
	if (syscall(SYS_kcmp, pid, pid, KCMP_FILE, 0, 0) != -1 ||
	    errno != EPERM)
		return -EINVAL;
	return 0;
}

/* The table again in a child that may not use kcmp(). */
static void without_kcmp(void **state)
{
	char *err = NULL;
	int status;

	(void)state;
	status = run_self(NULL, &err, "--no-kcmp", NULL);
	if (status)
		print_error("%s", err);
	free(err);
	assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
	static struct states_table fd_states =
		STATES_TABLE_LEFT(table, state_name, call_name, reach, make,
				  &tdev, undo, dev_setup, dev_teardown);
	static struct states_id ids[NR_STATES * NR_CALLS];
	struct CMUnitTest tests[NR_STATES * NR_CALLS + 1];
	size_t n;

	no_kcmp = argc > 1 && strcmp(argv[1], "--no-kcmp") == 0;
	if (no_kcmp && refuse_kcmp()) {
		perror("seccomp");
		return 1;
	}
	/* Where kcmp() is refused already (a container's policy), so is it
	 * to the library: the table is the fallback's. */
	if (!no_kcmp && !kcmp_works()) {
		print_message("kcmp() is refused here: the fallback's table\n");
		no_kcmp = true;
	}
	if (no_kcmp) {
		fill_fallback();
		fd_states.cells = &fallback[0][0];
	}
	n = states_tests(&fd_states, ids, tests);
	if (!no_kcmp)
		tests[n++] = (struct CMUnitTest){ .name = "without kcmp",
						  .test_func = without_kcmp };
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests(no_kcmp ? "posix-fd-states-no-kcmp"
					       : "posix-fd-states",
				       tests, n, NULL, NULL);
}
