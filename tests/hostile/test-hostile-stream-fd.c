// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * The descriptor of a managed stream (devm_fopen()) closed or replaced by
 * hand, under the stream: close(fileno(f)), close_range() over it,
 * dup2() and dup3() onto it. Each is one WARN at the call and the
 * stream's node dropped, so that the device's release does not fclose()
 * the stream: that would close the number again, and another owner's
 * open file has it by then. Before, none was caught, and the release
 * closed the other owner's descriptor. CLOSE_RANGE_CLOEXEC closes
 * nothing: no WARN, the stream stays managed.
 *
 * And the modes devm_fopen() opens streams with (fopen_modes below).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

enum how {
	CLOSE,
	CLOSE_RANGE,
	DUP2,
	DUP3,
	CLOEXEC_ONLY
};

static const struct {
	enum how how;
	const char *func;
} cells[] = {
	{ CLOSE, "close" }, { CLOSE_RANGE, "close_range" }, { DUP2, "dup2" },
	{ DUP3, "dup3" },   { CLOEXEC_ONLY, NULL },
};

static void by_hand(enum how how, int fd)
{
	int z = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	assert_true(z >= 0);
	switch (how) {
	case CLOSE:
		assert_int_equal(close(fd), 0);
		break;
	case CLOSE_RANGE:
		assert_int_equal(
			close_range((unsigned int)fd, (unsigned int)fd, 0), 0);
		break;
	case DUP2:
		assert_int_equal(dup2(z, fd), fd);
		break;
	case DUP3:
		assert_int_equal(dup3(z, fd, O_CLOEXEC), fd);
		break;
	case CLOEXEC_ONLY:
		assert_int_equal(close_range((unsigned int)fd, (unsigned int)fd,
					     CLOSE_RANGE_CLOEXEC),
				 0);
		break;
	}
	close(z);
}

static void test_stream_fd_by_hand(void **state)
{
	struct device *dev = *state;

	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		struct devres_ledger before, after;
		FILE *f;
		int fd, owner2 = -1;
		char c;

		devres_ledger_snapshot(&before);
		f = devm_fopen(dev, "/dev/null", "r");
		assert_non_null(f);
		fd = fileno(f);
		start_capture();
		by_hand(cells[i].how, fd);
		if (!cells[i].func) {
			/* Nothing closed: still the device's, released by it. */
			expect_no_warn();
			assert_int_equal(devres_release_all(dev), 1);
			devres_ledger_snapshot(&after);
			assert_int_equal(
				devres_ledger_diff(&before, &after, stderr), 0);
			continue;
		}
		expect_warn(cells[i].func, "a stream's, acquired with "
					   "devm_fopen(): use devm_fclose()");
		/* Another owner gets the number (dup2/dup3 made it one). */
		if (cells[i].how == CLOSE || cells[i].how == CLOSE_RANGE)
			owner2 = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		else
			owner2 = fd;
		assert_int_equal(owner2, fd);
		/* The node is gone: the release leaves the number alone. */
		assert_int_equal(devres_release_all(dev), 0);
		assert_int_equal(read(owner2, &c, 1), 1);
		assert_int_equal(close(owner2), 0);
		/* The FILE is the program's: its fclose() is a plain one. */
		start_capture();
		fclose(f);
		expect_no_warn();
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
}

/* The file there for a mode that reads it, gone for one that makes it. */
static bool fresh_file(const char *path, const char *mode)
{
	int fd;

	unlink(path);
	if (strchr(mode, 'x'))
		return true;
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* One mode: NULL when devm_fopen() does as fopen(3), or what differs. */
static const char *one_mode(struct device *dev, const char *path,
			    const char *mode)
{
	FILE *want, *f;
	int w0;

	if (!fresh_file(path, mode))
		return "no file";
	want = fopen(path, mode);
	if (!want)
		return "fopen(3) fails";
	fclose(want);
	if (!fresh_file(path, mode))
		return "no file";
	w0 = devres_warn_count();
	f = devm_fopen(dev, path, mode);
	if (!f)
		return "devm_fopen() fails";
	if (devres_warn_count() != w0)
		return "a WARN";
	if (!(fcntl(fileno(f), F_GETFD) & FD_CLOEXEC))
		return "not close-on-exec";
	/* A character set makes the stream wide. */
	if (strstr(mode, ",ccs=") && fwide(f, 0) <= 0)
		return "not wide";
	if (devm_fclose(dev, f))
		return "devm_fclose() fails";
	return NULL;
}

/*
 * devm_fopen() modes of every length: each opens as fopen(3) opens with
 * it, close-on-exec, with the character set a ",ccs=" asks for. Before,
 * the "e" went at the end, into the name of the character set ("UTF-8e":
 * EINVAL), and a mode past 14 characters was refused with EINVAL. In a
 * child, on a device of its own, that leaves with _exit(): glibc keeps the conversion steps of a
 * ",ccs=" stream after its fclose(), which LeakSanitizer would count.
 */
static void test_fopen_modes(void **state)
{
	static char longest[4097];
	const char *const modes[] = {
		"r",	"rb",	 "r+", "r,ccs=UTF-8", "r,ccs=ISO-8859-15",
		"w+bx", longest,
	};
	struct device *dev = *state;
	char path[] = "/tmp/devres-modes-XXXXXX";
	int fd = mkstemp(path), status;
	pid_t pid;

	assert_true(fd >= 0);
	close(fd);
	memset(longest, 'r', sizeof(longest) - 1);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The parent's devices are not the child's: one of its own. */
		static struct device child_dev;
		int bad = init_dev(&child_dev, "modes") != 0;

		dev = &child_dev;

		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
			const char *why = one_mode(dev, path, modes[i]);

			if (why) {
				fprintf(stderr, "mode %.20s: %s\n", modes[i],
					why);
				bad = 1;
			}
		}
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(path);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stream_fd_by_hand,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(test_fopen_modes, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
