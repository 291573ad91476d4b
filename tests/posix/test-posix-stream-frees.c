// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The libc calls besides fclose() that free a stream or close a number:
 * pclose() and endmntent() (glibc frees whatever stream it is given with
 * its own fclose(), inside libc, a popen() or setmntent() one or not),
 * and mq_close() (a message queue descriptor is a descriptor; its close
 * is close(2)). Given a managed stream, a stream fdopen()ed over a
 * managed number, or a managed number, each is caught at the call as
 * fclose() and close() are: one WARN naming the device and the call, the
 * node dropped there, the ledger's descriptors back (the twin closed).
 *
 * Before they were interposed the managed stream's FILE was freed behind
 * the library's back and its node kept: the next fopen() of another
 * owner was given the same memory, and the device's release then
 * fclose()d that owner's stream under it (the owner's next read failed,
 * its fclose() freed the FILE twice).
 *
 * Each acquisition x each call, a cell in a child of its own under an
 * alarm: then another owner opens a stream and a descriptor (given the
 * freed FILE's memory and the freed number, as glibc and the kernel
 * hand them out), the device's release closes nothing of theirs and
 * WARNs nothing, the other owner's stream and number still read, and
 * the ledger is back where it was. And the same calls on what nobody
 * manages go through, with no WARN.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"
#include "child-check.h"

#define CELL_ALARM_S 10

enum acq {
	A_FOPEN,   /* devm_fopen(): the managed stream itself */
	A_OPEN,	   /* fdopen() of a devm_open() number */
	A_EVENTFD, /* fdopen() of a devm_eventfd() number */
	A_MQ,	   /* devm_add_fd() of an mq_open() descriptor */
	NACQ
};
enum call {
	C_PCLOSE,
	C_ENDMNTENT,
	C_MQ_CLOSE,
	NCALLS
};

static const char *const acq_name[NACQ] = { "devm_fopen", "fdopen(devm_open)",
					    "fdopen(devm_eventfd)",
					    "devm_add_fd(mq_open)" };
static const char *const call_name[NCALLS] = { "pclose", "endmntent",
					       "mq_close" };

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

static char mq_name[64];

/* A message queue of this process, unlinked at once: -1 without one. */
static int mq_make(void)
{
	struct mq_attr at = { .mq_maxmsg = 1, .mq_msgsize = 8 };
	mqd_t mq;

	snprintf(mq_name, sizeof(mq_name), "/devres-frees-%d", (int)getpid());
	mq = mq_open(mq_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &at);
	if (mq >= 0)
		(void)mq_unlink(mq_name);
	return mq;
}

static void cell(enum acq a, enum call c)
{
	struct devres_ledger l0, l;
	FILE *f = NULL, *theirs_f;
	int fd = -1, theirs, ret = -1;
	char want[96];

	CHILD_CHECK(a < NACQ && c < NCALLS);
	devres_ledger_snapshot(&l0);
	cdev.init_name = "cell-dev";
	cdev.release = cdev_release;
	device_initialize(&cdev);
	switch (a) {
	case A_FOPEN:
		f = devm_fopen(&cdev, "/dev/zero", "r");
		CHILD_CHECK(f);
		fd = fileno(f);
		break;
	case A_OPEN:
		fd = devm_open(&cdev, "/dev/zero", O_RDONLY);
		break;
	case A_EVENTFD:
		fd = devm_eventfd(&cdev, 0, EFD_CLOEXEC);
		break;
	case A_MQ:
		fd = mq_make();
		CHILD_CHECK(fd > 2);
		CHILD_CHECK(!devm_add_fd(&cdev, fd));
		break;
	case NACQ:
		break;
	}
	CHILD_CHECK(fd > 2);
	CHILD_CHECK(nodes() == 1);
	/* The program's stream over the managed number. */
	if (!f && c != C_MQ_CLOSE) {
		f = fdopen(fd, "r");
		CHILD_CHECK(f);
	}
	start_capture();
	switch (c) {
	case C_PCLOSE:
		/* Not a popen() stream: glibc's pclose() is its fclose(). */
		ret = pclose(f);
		break;
	case C_ENDMNTENT:
		ret = endmntent(f) == 1 ? 0 : -1;
		break;
	case C_MQ_CLOSE:
		ret = mq_close(fd);
		break;
	case NCALLS:
		break;
	}
	CHILD_CHECK(ret == 0);
	CHILD_CHECK(fcntl(fd, F_GETFD) < 0);
	snprintf(want, sizeof(want), "WARNING: cell-dev: %s: %s", call_name[c],
		 a == A_FOPEN ? "a stream acquired with devm_fopen()" : "fd ");
	CHILD_CHECK(count_prefix("WARNING:") == 1);
	CHILD_CHECK(count_prefix(want) == 1);
	/* Dropped at the call, its twin with it. */
	CHILD_CHECK(nodes() == 0);
	devres_ledger_snapshot(&l);
	CHILD_CHECK(l.fds == l0.fds);

	/* Another owner: a stream (the freed FILE's memory) and a number. */
	theirs_f = fopen("/dev/zero", "re");
	CHILD_CHECK(theirs_f);
	theirs = memfd_create("other-owner", MFD_CLOEXEC);
	CHILD_CHECK(theirs >= 0);
	fprintf(stderr,
		"%s x %s: the other owner's FILE %s, number %d (was %d)\n",
		acq_name[a], call_name[c],
		theirs_f == f ? "the same" : "another", theirs, fd);
	start_capture();
	CHILD_CHECK(devres_release_all(&cdev) == 0);
	CHILD_CHECK(count_prefix("WARNING:") == 0);
	CHILD_CHECK(fgetc(theirs_f) == 0 && !ferror(theirs_f));
	CHILD_CHECK(fcntl(fileno(theirs_f), F_GETFD) >= 0);
	CHILD_CHECK(!fclose(theirs_f));
	CHILD_CHECK(write(theirs, "x", 1) == 1);
	CHILD_CHECK(!close(theirs));
	put_device(&cdev);
	devres_ledger_snapshot(&l);
	CHILD_CHECK(!devres_ledger_diff(&l0, &l, stderr));
	_exit(0);
}

/* 0 when @fn(@a, @c) exited 0 in a child under an alarm. */
static int in_child(enum acq a, enum call c)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		alarm(CELL_ALARM_S);
		cell(a, c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	fprintf(stderr, "cell %s x %s: %s %d\n", acq_name[a], call_name[c],
		WIFSIGNALED(status) ? "signal" : "exit",
		WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return 1;
}

static void every_cell(void **state)
{
	int mq = mq_make(), failed = 0, ran = 0;

	(void)state;
	/* POSIX message queues may be missing (no mqueue in the kernel). */
	if (mq >= 0)
		(void)mq_close(mq);
	for (int a = 0; a < NACQ; a++)
		for (int c = 0; c < NCALLS; c++) {
			/*
			 * mq_close() of a managed stream's number would leave
			 * the program a FILE over nothing; a queue's number
			 * is closed by mq_close() only.
			 */
			if ((a == A_FOPEN && c == C_MQ_CLOSE) ||
			    (a == A_MQ && (c != C_MQ_CLOSE || mq < 0)))
				continue;
			failed += in_child((enum acq)a, (enum call)c);
			ran++;
		}
	print_message("%d cells\n", ran);
	assert_int_equal(failed, 0);
}

/*
 * The same calls on what nobody manages, with a managed number and stream
 * live in the process (so each call looks them up): a popen() stream's
 * pclose() returns its command's status, setmntent()'s stream is ended,
 * an unmanaged queue closed; no WARN, and the managed two are still the
 * device's (its release gives both back).
 */
static void plain_calls_go_through(void **state)
{
	struct device *dev = *state;
	FILE *p, *mnt;
	int mq, status;

	assert_true(devm_open(dev, "/dev/null", O_RDONLY) > 2);
	assert_non_null(devm_fopen(dev, "/dev/null", "r"));
	start_capture();
	p = popen("exit 5", "r");
	assert_non_null(p);
	status = pclose(p);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 5);
	mnt = setmntent("/proc/self/mounts", "r");
	if (mnt)
		assert_int_equal(endmntent(mnt), 1);
	mq = mq_make();
	if (mq >= 0)
		assert_int_equal(mq_close(mq), 0);
	expect_no_warn();
	assert_int_equal(devres_release_all(dev), 2);
	expect_no_warn();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
		cmocka_unit_test_setup_teardown(plain_calls_go_through,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_tests_tracked(tests, NULL, NULL);
}
