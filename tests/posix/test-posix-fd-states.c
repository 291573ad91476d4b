// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Every call on a managed descriptor in every state of it: a number never
 * opened, acquired managed (devm_open()) or unmanaged (open()), closed by
 * devm_close(), closed twice, given back by the device's release, closed
 * by hand with close(2) or replaced by dup2(2) (caught at that call: the
 * node is dropped there), or closed behind the library's back by a raw
 * syscall, which no interposer sees: then left closed, or its number
 * reused by another owner's open() of another file, of the same file
 * opened the same way, by a raw dup3 over it, or by another eventfd (all
 * eventfds share one inode). The calls are the managed ones, and the
 * plain ones the library interposes: close(2), dup2(2) and dup3(2) over
 * the number, close_range(2) of it, and close_range(2) with
 * CLOSE_RANGE_CLOEXEC, which closes nothing. Each cell starts from
 * nothing, brings the descriptor to its state, makes the call once and
 * checks the return, the exact WARN count and what the WARN says; then
 * the device holds the nodes the table says, the other owner's descriptor
 * at the reused number is still open and still its own open file (the
 * same description, by kcmp() against a copy the test kept) unless the
 * call was the other owner's own close, everything is given back and the
 * ledger is at its baseline. The release must act on the descriptor it
 * acquired, not on a number: whatever reuses the number is another
 * owner's. The table is sized by the enums. close_range(2) over several
 * managed numbers and an unmanaged one is a test of its own after the
 * cells.
 *
 * The same table runs again in a child where a seccomp filter refuses
 * kcmp() with EPERM, as some container policies do: the library falls
 * back to st_dev, st_ino and the access mode, and three rows change as
 * docs/posix.md says (the same file opened the same way, a raw dup3 of
 * such, another eventfd: taken for the original, so closed at release,
 * and their close by the other owner taken for a close by hand of the
 * device's). The child checks exactly that, with fstat() in place of
 * kcmp() for the other owner's descriptor.
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
#include "posix/posix-states.h"

/* A number far above what the test opens: never a descriptor here. */
#define NEVER_FD 900
/* Where the source of a dup2() or dup3() is put, away from the state's. */
#define SRC_FD 500

enum state {
	CLOSED = NR_POSIX_STATES,
	DUP2ED,
	CLOSED_REUSED,
	RAW,
	REUSED_OTHER,
	REUSED_SAME,
	RAW_DUP,
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
	"another open file dup2()ed over it",
	"closed by close(2), number reused for another file",
	"closed by a raw syscall",
	"closed by a raw syscall, number reused for another file",
	"closed by a raw syscall, number reused for the same file, same mode",
	"another open file put over it by a raw dup3",
	"devm eventfd closed by a raw syscall, number reused by an eventfd",
	"closed by a raw syscall, number reused by the device's devm_eventfd",
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
	/* The plain releases, interposed: caught at the call. */
	CLOSE,	     /* close(2) of the state's number */
	DUP2,	     /* dup2(2) of another file over it */
	DUP3,	     /* dup3(2) of another file over it */
	CLOSE_RANGE, /* close_range(2) of it alone */
	CLOEXEC,     /* close_range(2) of it with CLOSE_RANGE_CLOEXEC */
	NR_CALLS
};
static const char *const call_name[NR_CALLS] = {
	"devm_open",
	"devm_add_fd",
	"devm_close",
	"devres_release_all",
	"devm_openat",
	"devm_memfd_create",
	"devm_eventfd",
	"devm_timerfd_create",
	"close",
	"dup2",
	"dup3",
	"close_range",
	"close_range(CLOEXEC)",
};

/*
 * What a cell expects: the return (a new descriptor is 0; the count of
 * devres_release_all()), the WARNs, a piece of the WARN's line, and the
 * device's nodes after the call.
 */
#define NOT_MANAGED "is not managed by this device"
#define BEHIND_BACK "was closed behind the library's back"
#define LEFT_OPEN "now is another file: left open"
#define HAND "use devm_close(); released now, and taken off the device"

/* clang-format off */
#define C(r, w, s, n) { r, w, s, n, false }
#define NEW(n) C(0, 0, NULL, n), C(0, 0, NULL, n), C(0, 0, NULL, n),      \
	C(0, 0, NULL, n)
/*
 * The interposed calls: close(2) returns @r; it, dup2(2), dup3(2) and
 * close_range(2) print @w WARNs (@s) and leave @n nodes; the CLOEXEC
 * close_range(2) leaves @nx and closes nothing.
 */
#define HANDS(r, w, s, n, nx) C(r, w, s, n), C(0, w, s, n), C(0, w, s, n), \
	C(0, w, s, n), C(0, 0, NULL, nx)
#define GONE_ROW                                                            \
	{ C(0, 0, NULL, 1), C(-EBADF, 0, NULL, 0),                          \
	  C(0, 1, NOT_MANAGED, 0), C(0, 0, NULL, 0), NEW(1),                \
	  HANDS(-EBADF, 0, NULL, 0, 0) }
/* A number someone else holds, the device nothing of it. */
#define PLAIN_ROW                                                           \
	{ C(0, 0, NULL, 1), C(0, 0, NULL, 1),                               \
	  C(0, 1, NOT_MANAGED, 0), C(0, 0, NULL, 0), NEW(1),                \
	  HANDS(0, 0, NULL, 0, 0) }
/*
 * The node is stale, the number another owner's: never closed; not
 * managed either, so the owner may hand it to the device, or close it.
 */
#define REUSED_ROW                                                          \
	{ C(0, 0, NULL, 2), C(0, 0, NULL, 2),                               \
	  C(0, 1, LEFT_OPEN, 0), C(1, 1, LEFT_OPEN, 0), NEW(2),             \
	  HANDS(0, 0, NULL, 1, 1) }

static const struct states_cell table[NR_STATES][NR_CALLS] = {
	/* devm_open, devm_add_fd, devm_close, release all */
	[NEVER] = GONE_ROW,
	[MANAGED] = { C(0, 0, NULL, 2), C(-EBUSY, 1, "is already managed", 1),
		      C(0, 0, NULL, 0), C(1, 0, NULL, 0), NEW(2),
		      HANDS(0, 1, HAND, 0, 1) },
	[PLAIN] = PLAIN_ROW,
	[RELEASED] = GONE_ROW,
	[TWICE] = GONE_ROW,
	[UNBOUND] = GONE_ROW,
	/* Caught at the close: nothing left of it. */
	[CLOSED] = GONE_ROW,
	[DUP2ED] = PLAIN_ROW,
	[CLOSED_REUSED] = PLAIN_ROW,
	/* Not seen: the release finds it. */
	[RAW] = { C(0, 0, NULL, 2), C(-EBADF, 0, NULL, 1),
		  C(0, 1, BEHIND_BACK, 0), C(1, 1, BEHIND_BACK, 0), NEW(2),
		  HANDS(-EBADF, 0, NULL, 1, 1) },
	[REUSED_OTHER] = REUSED_ROW,
	[REUSED_SAME] = REUSED_ROW,
	[RAW_DUP] = REUSED_ROW,
	[EVENTFD] = REUSED_ROW,
	/* The live node of the number is the one devm_close() closes. */
	[REACQUIRED] = { C(0, 0, NULL, 3),
			 C(-EBUSY, 1, "is already managed", 2),
			 C(0, 0, NULL, 1), C(2, 1, BEHIND_BACK, 0), NEW(3),
			 HANDS(0, 1, "acquired with devm_eventfd(): " HAND, 1,
			       2) },
};

/*
 * Without kcmp(): the rows the fallback cannot tell from the original;
 * the other owner's close of the number is taken for a close by hand.
 */
#define LOST_ROW                                                            \
	{ C(0, 0, NULL, 2), C(-EBUSY, 1, "is already managed", 1),          \
	  { 0, 0, NULL, 0, true }, { 1, 0, NULL, 0, true }, NEW(2),         \
	  HANDS(0, 1, HAND, 0, 1) }
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

/* What no interposer sees: the system call itself. */
static void raw_close(int f)
{
	assert_int_equal(syscall(SYS_close, f), 0);
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
		raw_close(fd);
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
	case CLOSED:
		assert_int_equal(close(fd), 0);
		break;
	case DUP2ED:
		f = open_ok(file);
		assert_int_equal(dup2(f, fd), fd);
		close(f);
		reuse(fd, fd);
		break;
	case CLOSED_REUSED:
		assert_int_equal(close(fd), 0);
		reuse(open_ok(other_file), fd);
		break;
	case RAW:
		raw_close(fd);
		break;
	case REACQUIRED:
		raw_close(fd);
		assert_int_equal(devm_eventfd(&tdev, 0, 0), fd);
		break;
	case REUSED_OTHER:
	case REUSED_SAME:
		raw_close(fd);
		reuse(open_ok(s == REUSED_SAME ? file : other_file), fd);
		break;
	case RAW_DUP:
		f = open_ok(file);
		assert_int_equal(syscall(SYS_dup3, f, fd, 0), fd);
		close(f);
		reuse(fd, fd);
		break;
	default:
		break;
	}
}

/* Another file, at a number none of the states has. */
static int src_fd(void)
{
	int f = open_ok(other_file), g = fcntl(f, F_DUPFD_CLOEXEC, SRC_FD);

	assert_true(g >= SRC_FD);
	close(f);
	return g;
}

static int make(unsigned int c)
{
	int f, ret = 0;

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
	case CLOSE:
		ret = close(fd) ? -errno : 0;
		break;
	case DUP2:
	case DUP3:
		f = src_fd();
		ret = c == DUP2 ? dup2(f, fd) : dup3(f, fd, O_CLOEXEC);
		ret = ret == fd ? 0 : -errno;
		close(f);
		/* The number is the test's now, on its own open file. */
		if (!ret)
			plain[1] = fd;
		break;
	case CLOSE_RANGE:
		ret = close_range(fd, fd, 0) ? -errno : 0;
		break;
	case CLOEXEC:
		return close_range(fd, fd, CLOSE_RANGE_CLOEXEC) ? -errno : 0;
	default:
		fail();
	}
	/* Whoever held the number before the call holds nothing now. */
	if (plain[0] == fd)
		plain[0] = -1;
	if (theirs == fd) {
		close(theirs_copy);
		theirs = theirs_copy = -1;
	}
	return ret;
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
	memcpy(fallback[RAW_DUP], lost_row, sizeof(lost_row));
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

static int min_of(const int *v, int n)
{
	int m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static int max_of(const int *v, int n)
{
	int m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/*
 * close_range(2) over three managed numbers (devm_open, devm_eventfd,
 * devm_memfd_create) with an unmanaged one among them. With
 * CLOSE_RANGE_CLOEXEC first: no WARN, every number still open and now
 * close-on-exec, the three nodes still there. Then a plain close_range():
 * one WARN for each managed number, naming its call, none for the other,
 * every number closed, no node left, and as many descriptors open in the
 * process as before (the twins, some inside the range, closed once);
 * the teardown checks the ledger.
 */
static void close_range_several(void **state)
{
	int fds[4], lo, hi, before = count_open_fds();
	long warns;

	(void)state;
	fds[0] = devm_open(&tdev, file, O_RDWR);
	fds[1] = open(file, O_RDWR); /* not close-on-exec: the call sets it */
	fds[2] = devm_eventfd(&tdev, 0, 0);
	fds[3] = devm_memfd_create(&tdev, "range", 0);
	for (int i = 0; i < 4; i++)
		assert_true(fds[i] >= 0);
	lo = min_of(fds, 4);
	hi = max_of(fds, 4);
	warns = devres_warn_count();
	assert_int_equal(close_range(lo, hi, CLOSE_RANGE_CLOEXEC), 0);
	assert_int_equal(devres_warn_count(), warns);
	assert_int_equal(states_nodes(&tdev), 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fcntl(fds[i], F_GETFD), FD_CLOEXEC);
	devres_set_log_sink(states_discard, NULL);
	states_warned.n = 0;
	assert_int_equal(close_range(lo, hi, 0), 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(devres_warn_count() - warns, 3);
	assert_int_equal(states_warned.n, 3);
	/* The lowest number first: the devm_open() one. */
	assert_non_null(strstr(states_warned.text, "close_range: fd"));
	assert_non_null(strstr(states_warned.text, "devm_open()"));
	assert_int_equal(states_nodes(&tdev), 0);
	for (int i = 0; i < 4; i++)
		assert_true(fcntl(fds[i], F_GETFD) < 0);
	assert_int_equal(count_open_fds(), before);
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
	struct CMUnitTest tests[NR_STATES * NR_CALLS + 2];
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
	tests[n++] = (struct CMUnitTest){ .name = "close_range of several",
					  .test_func = close_range_several,
					  .setup_func = dev_setup,
					  .teardown_func = dev_teardown };
	if (!no_kcmp)
		tests[n++] = (struct CMUnitTest){ .name = "without kcmp",
						  .test_func = without_kcmp };
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return _cmocka_run_group_tests(no_kcmp ? "posix-fd-states-no-kcmp"
					       : "posix-fd-states",
				       tests, n, NULL, NULL);
}
