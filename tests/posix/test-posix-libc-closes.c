// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Descriptors closed inside libc's own calls, behind devres's back:
 * closefrom() (one close_range() inside libc) over a managed number, and
 * freopen() and freopen64() (glibc puts the new file on the stream's
 * number with a dup3() inside) of a stream fdopen() made over a managed
 * descriptor or a managed stream's; and closedir() of a stream of entries
 * fdopendir() made of a managed directory's descriptor.
 *
 * Each acquisition x each call, a cell in a child of its own (closefrom()
 * closes everything above the number): exactly one WARN, naming the
 * device and the call; the node dropped there, the ledger's descriptors
 * back (the twin closed); then another owner has a number (closefrom():
 * a memfd, on the freed number; freopen(): the stream's new file) and the
 * device's release closes nothing of it and WARNs nothing; the other
 * owner's file still works; the ledger back where it was.
 *
 * freopen() of the managed stream itself: the same WARN, naming it a
 * stream's, the node dropped there (before, the release met the stream's
 * new file on its number, WARNed that it was closed behind its back and
 * left it open); the FILE is the program's, its fclose() a plain one.
 *
 * Then closefrom() over the library's own number (an irq line's
 * eventfd): kept open, one WARN, and the line still delivers; the
 * numbers around it closed.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "child-check.h"

#define CELL_ALARM_S 10

enum acq {
	A_OPEN,
	A_EVENTFD,
	A_FOPEN,
	A_DIR,
	NACQ
};
enum call {
	C_CLOSEFROM,
	C_FREOPEN,
	C_FREOPEN_NULL,
	C_FREOPEN64,
	C_CLOSEDIR,
	NCALLS
};

static const char *const acq_name[NACQ] = { "devm_open", "devm_eventfd",
					    "devm_fopen",
					    "devm_open(O_DIRECTORY)" };
static const char *const call_name[NCALLS] = { "closefrom", "freopen",
					       "freopen", "freopen64",
					       "closedir" };

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

static bool own_stream; /* freopen() of the managed stream itself */

/* The WARN the call gave: one, naming the device and the call. */
static void one_warn_naming(const char *func)
{
	char want[64];

	snprintf(want, sizeof(want), "WARNING: cell-dev: %s: %s", func,
		 own_stream ? "a stream acquired with devm_fopen()" : "fd ");
	CHILD_CHECK(count_prefix("WARNING:") == 1);
	CHILD_CHECK(count_prefix(want) == 1);
}

static void cell(enum acq a, enum call c)
{
	struct devres_ledger l0, l;
	FILE *f = NULL;
	DIR *d;
	int fd = -1, theirs;

	CHILD_CHECK(a < NACQ && c < NCALLS);
	devres_ledger_snapshot(&l0);
	cdev.init_name = "cell-dev";
	cdev.release = cdev_release;
	device_initialize(&cdev);
	switch (a) {
	case A_OPEN:
		fd = devm_open(&cdev, "/dev/null", O_RDONLY);
		break;
	case A_EVENTFD:
		fd = devm_eventfd(&cdev, 0, EFD_CLOEXEC);
		break;
	case A_FOPEN:
		f = devm_fopen(&cdev, "/dev/null", "r");
		CHILD_CHECK(f);
		fd = fileno(f);
		break;
	case A_DIR:
		fd = devm_open(&cdev, "/", O_RDONLY | O_DIRECTORY);
		break;
	case NACQ:
		break;
	}
	CHILD_CHECK(fd > 2);
	CHILD_CHECK(nodes() == 1);
	if (c != C_CLOSEFROM && c != C_CLOSEDIR && !own_stream) {
		/* The program's stream over the managed number. */
		f = fdopen(fd, "r");
		CHILD_CHECK(f);
	}
	start_capture();
	switch (c) {
	case C_CLOSEFROM:
		closefrom(fd);
		CHILD_CHECK(fcntl(fd, F_GETFD) < 0);
		break;
	case C_FREOPEN:
		f = freopen("/dev/null", "r", f);
		break;
	case C_FREOPEN_NULL:
		f = freopen(NULL, "r", f);
		break;
	case C_FREOPEN64:
		f = freopen64("/dev/null", "r", f);
		break;
	case C_CLOSEDIR:
		/* A stream of entries of the managed directory. */
		d = fdopendir(fd);
		CHILD_CHECK(d);
		CHILD_CHECK(!closedir(d));
		CHILD_CHECK(fcntl(fd, F_GETFD) < 0);
		break;
	case NCALLS:
		break;
	}
	one_warn_naming(call_name[c]);
	/* Dropped at the call, its twin with it. */
	CHILD_CHECK(nodes() == 0);
	devres_ledger_snapshot(&l);
	CHILD_CHECK(l.fds == l0.fds);

	/* Another owner's file where the number was. */
	if (c == C_CLOSEFROM || c == C_CLOSEDIR) {
		theirs = memfd_create("other-owner", MFD_CLOEXEC);
		CHILD_CHECK(theirs >= 0);
	} else {
		CHILD_CHECK(f);
		theirs = fileno(f);
	}
	fprintf(stderr, "%s x %s: the other owner's number %d, was %d\n",
		acq_name[a], call_name[c], theirs, fd);
	start_capture();
	CHILD_CHECK(devres_release_all(&cdev) == 0);
	CHILD_CHECK(count_prefix("WARNING:") == 0);
	CHILD_CHECK(fcntl(theirs, F_GETFD) >= 0);
	if (c == C_CLOSEFROM || c == C_CLOSEDIR) {
		CHILD_CHECK(write(theirs, "x", 1) == 1);
		CHILD_CHECK(!close(theirs));
	} else {
		CHILD_CHECK(fgetc(f) == EOF && !ferror(f));
		CHILD_CHECK(!fclose(f));
	}
	put_device(&cdev);
	devres_ledger_snapshot(&l);
	CHILD_CHECK(!devres_ledger_diff(&l0, &l, stderr));
	_exit(0);
}

/* 0 when @fn(@a, @b) exited 0 in a child under an alarm. */
static int in_child(void (*fn)(enum acq, enum call), enum acq a, enum call c)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		alarm(CELL_ALARM_S);
		fn(a, c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	fprintf(stderr, "cell %s x %s (%d): %s %d\n", acq_name[a], call_name[c],
		(int)c, WIFSIGNALED(status) ? "signal" : "exit",
		WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return 1;
}

static void every_cell(void **state)
{
	int failed = 0;

	(void)state;
	for (int a = 0; a < NACQ; a++)
		for (int c = 0; c < NCALLS; c++) {
			/* An eventfd has no path to reopen. */
			if (a == A_EVENTFD && c == C_FREOPEN_NULL)
				continue;
			/* fdopendir() takes a directory; fdopen() none. */
			if ((a == A_DIR) != (c == C_CLOSEDIR) &&
			    c != C_CLOSEFROM)
				continue;
			failed += in_child(cell, (enum acq)a, (enum call)c);
		}
	own_stream = true;
	for (int c = C_FREOPEN; c <= C_FREOPEN64; c++)
		failed += in_child(cell, A_FOPEN, (enum call)c);
	own_stream = false;
	assert_int_equal(failed, 0);
}

static int hits;

static irqreturn_t count_irq(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

/*
 * closefrom() below an irq line's numbers (its eventfd, the dispatcher's
 * epoll and wake eventfd), all the library's own: kept, one WARN each,
 * naming closefrom(); the program's numbers below and above them closed;
 * the line still delivers.
 */
#define SCAN_FDS 1024

static void own_kept(enum acq a, enum call c)
{
	bool before[SCAN_FDS];
	int irq, below, above, own[8], nown = 0, top = 0;

	(void)a;
	(void)c;
	below = eventfd(0, EFD_CLOEXEC);
	CHILD_CHECK(below > 2);
	for (int fd = 0; fd < SCAN_FDS; fd++)
		before[fd] = fcntl(fd, F_GETFD) >= 0;
	cdev.init_name = "cell-dev";
	cdev.release = cdev_release;
	device_initialize(&cdev);
	irq = irq_line_create("own");
	CHILD_CHECK(irq > 0);
	CHILD_CHECK(!devm_request_irq(&cdev, irq, count_irq, 0, "own", &hits));
	for (int fd = 0; fd < SCAN_FDS; fd++)
		if (!before[fd] && fcntl(fd, F_GETFD) >= 0) {
			CHILD_CHECK(fd > below && nown < 8);
			own[nown++] = fd;
			top = fd;
		}
	CHILD_CHECK(nown >= 1);
	above = fcntl(below, F_DUPFD_CLOEXEC, top + 1);
	CHILD_CHECK(above > top);
	start_capture();
	closefrom(below);
	CHILD_CHECK(count_prefix("WARNING:") == nown);
	CHILD_CHECK(count_prefix("WARNING: (no device): closefrom: ") == nown);
	CHILD_CHECK(fcntl(below, F_GETFD) < 0);
	CHILD_CHECK(fcntl(above, F_GETFD) < 0);
	for (int i = 0; i < nown; i++)
		CHILD_CHECK(fcntl(own[i], F_GETFD) >= 0);
	CHILD_CHECK(!irq_line_raise(irq));
	for (int i = 0; i < 5000 && !__atomic_load_n(&hits, __ATOMIC_RELAXED);
	     i++)
		usleep(1000);
	CHILD_CHECK(__atomic_load_n(&hits, __ATOMIC_RELAXED) == 1);
	CHILD_CHECK(devres_release_all(&cdev) == 1);
	put_device(&cdev);
	irq_line_destroy(irq);
	_exit(0);
}

static void closefrom_keeps_the_librarys_own(void **state)
{
	(void)state;
	assert_int_equal(in_child(own_kept, A_OPEN, C_CLOSEFROM), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_cell),
		cmocka_unit_test(closefrom_keeps_the_librarys_own),
	};

	return run_tests_tracked(tests, NULL, NULL);
}
