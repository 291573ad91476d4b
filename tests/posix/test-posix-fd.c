// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Managed descriptors and streams: devm_open, devm_openat, devm_add_fd,
 * devm_close, devm_memfd_create, devm_eventfd, devm_timerfd_create,
 * devm_fopen, devm_fclose. Every descriptor is checked for FD_CLOEXEC, every
 * test ends with the ledger at its baseline (the fixture's teardown).
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
#include <linux/kcmp.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void assert_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	assert_true(fl >= 0);
	assert_true(fl & FD_CLOEXEC);
}

static long ledger_fds(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.fds;
}

/*
 * The descriptors one managed descriptor holds: itself and, where kcmp()
 * works, its twin, by which the release knows it is still the same open
 * file (docs/posix.md).
 */
static long per_fd(void)
{
	pid_t pid = getpid();
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int twin = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
	long n = 1;

	if (twin >= 0 && syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, twin) == 0)
		n = 2;
	if (twin >= 0)
		close(twin);
	if (fd >= 0)
		close(fd);
	return n;
}

static int nres(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return st.allocs;
}

/* The target of /proc/self/fd/@fd, in a static buffer. */
static const char *fd_target(int fd)
{
	static char buf[256];
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void test_open_is_cloexec_and_released(void **state)
{
	struct device *dev = *state;
	long fds = ledger_fds();
	char *dump;
	int fd;

	fd = devm_open(dev, "/dev/null", O_RDWR);
	assert_true(fd >= 0);
	assert_cloexec(fd);
	assert_string_equal(fd_target(fd), "/dev/null");
	assert_int_equal(ledger_fds(), fds + per_fd());
	dump = dump_to_string(dev);
	assert_int_equal(count_substr(dump, "devm_open"), 1);
	free(dump);
	assert_int_equal(devres_release_all(dev), 1);
	assert_false(is_open(fd));
	assert_int_equal(ledger_fds(), fds);
}

static void test_openat_creates_with_mode(void **state)
{
	struct device *dev = *state;
	char dir[] = "/tmp/devres-posix-XXXXXX", file[64];
	struct stat st;
	mode_t old;
	int dfd, fd;

	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/f", dir);
	dfd = devm_open(dev, dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_cloexec(dfd);
	old = umask(0);
	fd = devm_openat(dev, dfd, "f", O_WRONLY | O_CREAT | O_EXCL, 0640);
	umask(old);
	assert_true(fd >= 0);
	assert_cloexec(fd);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	/* O_EXCL: the second one fails, and leaves nothing behind. */
	assert_int_equal(devm_openat(dev, dfd, "f", O_WRONLY | O_CREAT | O_EXCL,
				     0640),
			 -EEXIST);
	assert_int_equal(nres(dev), 2);
	/* openat's own spelling in logs and dumps. */
	{
		char *dump = dump_to_string(dev);

		assert_int_equal(count_substr(dump, "devm_openat"), 1);
		free(dump);
	}
	assert_int_equal(devres_release_all(dev), 2);
	assert_false(is_open(fd));
	assert_false(is_open(dfd));
	assert_int_equal(unlink(file), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_open_bad_input(void **state)
{
	struct device *dev = *state;

	/* Errors of the call itself: returned, not WARNed. */
	start_capture();
	assert_int_equal(devm_open(dev, "/dev/null", O_RDONLY | 0x40000000),
			 -EINVAL);
	assert_int_equal(devm_open(dev, "/dev/null", O_ACCMODE), -EINVAL);
	assert_int_equal(devm_open(dev, "/nonexistent/devres", O_RDONLY),
			 -ENOENT);
	assert_int_equal(devm_openat(dev, -1, "relative", O_RDONLY), -EBADF);
	assert_int_equal(devm_open(dev, "", O_RDONLY), -ENOENT);
	expect_no_warn();
	assert_int_equal(nres(dev), 0);

	/* Misuse: one WARN each. */
	start_capture();
	assert_int_equal(devm_open(dev, NULL, O_RDONLY), -EINVAL);
	expect_warn("devm_open", "NULL path");
	start_capture();
	assert_int_equal(devm_openat(dev, AT_FDCWD, NULL, O_RDONLY), -EINVAL);
	expect_warn("devm_openat", "NULL path");
	start_capture();
	assert_int_equal(devm_open(NULL, "/dev/null", O_RDONLY), -EINVAL);
	expect_warn_on("(no device)", "devm_open", "NULL device");
	assert_int_equal(nres(dev), 0);
}

static void test_open_fault_points(void **state)
{
	struct device *dev = *state;
	long fds = ledger_fds();

	/* The node, then the open: each fails as the real one would. */
	devres_fail_nth(1);
	assert_int_equal(devm_open(dev, "/dev/null", O_RDONLY), -ENOMEM);
	devres_fail_nth(2);
	assert_int_equal(devm_open(dev, "/dev/null", O_RDONLY), -EMFILE);
	devres_fail_nth(3);
	assert_true(devm_open(dev, "/dev/null", O_RDONLY) >= 0);
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(0);
	assert_int_equal(ledger_fds(), fds + per_fd());
	assert_int_equal(nres(dev), 1);
}

static void test_close_now(void **state)
{
	struct device *dev = *state;
	int a, b;

	a = devm_open(dev, "/dev/null", O_RDONLY);
	b = devm_eventfd(dev, 0, 0);
	assert_true(a >= 0 && b >= 0);
	start_capture();
	devm_close(dev, a);
	expect_no_warn();
	assert_false(is_open(a));
	assert_true(is_open(b));
	assert_int_equal(nres(dev), 1);

	/* Not (or no longer) this device's: WARN, nothing closed. */
	start_capture();
	devm_close(dev, a);
	expect_warn("devm_close", "is not managed by this device");
	start_capture();
	devm_close(dev, 0);
	expect_warn("devm_close", "fd 0 is not managed by this device");
	assert_true(is_open(0));
	start_capture();
	devm_close(&other, b);
	expect_warn_on("other-dev", "devm_close",
		       "is not managed by this device");
	assert_true(is_open(b));
	assert_int_equal(devres_release_all(dev), 1);
	assert_false(is_open(b));
}

static void test_add_fd(void **state)
{
	struct device *dev = *state;
	long fds = ledger_fds();
	int p[2];

	/* Adopted flags are left alone: this pipe is not close-on-exec. */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(devm_add_fd(dev, p[0]), 0);
	assert_int_equal(devm_add_fd(dev, p[1]), 0);
	assert_int_equal(fcntl(p[0], F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(ledger_fds(), fds + 2 * per_fd());

	/* Twice: WARN, -EBUSY, still managed once. */
	start_capture();
	assert_int_equal(devm_add_fd(dev, p[0]), -EBUSY);
	expect_warn("devm_add_fd", "already managed");
	assert_true(is_open(p[0]));
	assert_int_equal(nres(dev), 2);

	assert_int_equal(devres_release_all(dev), 2);
	assert_false(is_open(p[0]));
	assert_false(is_open(p[1]));
	assert_int_equal(ledger_fds(), fds);
}

static void test_add_fd_bad_input(void **state)
{
	struct device *dev = *state;
	int p[2];

	start_capture();
	assert_int_equal(devm_add_fd(dev, -1), -EBADF);
	/* A closed descriptor is refused, not adopted. */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(close(p[1]), 0);
	assert_int_equal(devm_add_fd(dev, p[1]), -EBADF);
	expect_no_warn();
	assert_int_equal(nres(dev), 0);

	/* When recording fails, the descriptor is consumed all the same. */
	devres_fail_nth(1);
	assert_int_equal(devm_add_fd(dev, p[0]), -ENOMEM);
	devres_fail_nth(0);
	assert_false(is_open(p[0]));

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	close(p[1]);
	start_capture();
	assert_int_equal(devm_add_fd(NULL, p[0]), -EINVAL);
	expect_warn_on("(no device)", "devm_add_fd", "NULL device");
	assert_false(is_open(p[0]));
}

static void test_closed_behind_back(void **state)
{
	struct device *dev = *state;
	int fd;

	fd = devm_memfd_create(dev, "behind", 0);
	assert_true(fd >= 0);
	/* A raw syscall: close() itself would be caught at the call. */
	assert_int_equal(syscall(SYS_close, fd), 0);
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_warn("devm_memfd_create", "was closed behind the library's "
					 "back");
}

static void test_reused_behind_back_is_left_open(void **state)
{
	struct device *dev = *state;
	int fd, intruder;

	fd = devm_open(dev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_close, fd), 0);
	/* The lowest free number: the one just closed. */
	intruder = memfd_create("intruder", MFD_CLOEXEC);
	assert_int_equal(intruder, fd);
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_warn("devm_open", "now is another file: left open");
	assert_true(is_open(intruder));
	assert_int_equal(close(intruder), 0);
}

static void test_memfd(void **state)
{
	struct device *dev = *state;
	int fd;

	fd = devm_memfd_create(dev, "devres-fd-test", MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_cloexec(fd);
	assert_non_null(strstr(fd_target(fd), "memfd:devres-fd-test"));
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);

	start_capture();
	assert_int_equal(devm_memfd_create(dev, "x", 0x40000000u), -EINVAL);
	expect_no_warn();
	start_capture();
	assert_int_equal(devm_memfd_create(dev, NULL, 0), -EINVAL);
	expect_warn("devm_memfd_create", "NULL name");
	devres_fail_nth(2);
	assert_int_equal(devm_memfd_create(dev, "x", 0), -EMFILE);
	devres_fail_nth(0);
	assert_int_equal(nres(dev), 1);
}

static void test_eventfd(void **state)
{
	struct device *dev = *state;
	uint64_t v = 0;
	int fd;

	fd = devm_eventfd(dev, 7, EFD_NONBLOCK);
	assert_true(fd >= 0);
	assert_cloexec(fd);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 7);
	assert_int_equal(read(fd, &v, sizeof(v)), -1);
	assert_int_equal(errno, EAGAIN);

	start_capture();
	assert_int_equal(devm_eventfd(dev, 0, 0x40000000), -EINVAL);
	expect_no_warn();
	start_capture();
	assert_int_equal(devm_eventfd(NULL, 0, 0), -EINVAL);
	expect_warn_on("(no device)", "devm_eventfd", "NULL device");
	devres_fail_nth(2);
	assert_int_equal(devm_eventfd(dev, 0, 0), -EMFILE);
	devres_fail_nth(0);
	assert_int_equal(nres(dev), 1);
}

static void test_timerfd(void **state)
{
	struct device *dev = *state;
	struct itimerspec its = { .it_value = { 0, 1000000 } };
	uint64_t ticks = 0;
	int fd;

	fd = devm_timerfd_create(dev, CLOCK_MONOTONIC, 0);
	assert_true(fd >= 0);
	assert_cloexec(fd);
	assert_int_equal(timerfd_settime(fd, 0, &its, NULL), 0);
	assert_int_equal(read(fd, &ticks, sizeof(ticks)), sizeof(ticks));
	assert_int_equal(ticks, 1);

	start_capture();
	assert_int_equal(devm_timerfd_create(dev, 12345, 0), -EINVAL);
	assert_int_equal(devm_timerfd_create(dev, CLOCK_MONOTONIC, 0x40000000),
			 -EINVAL);
	expect_no_warn();
	devres_fail_nth(1);
	assert_int_equal(devm_timerfd_create(dev, CLOCK_MONOTONIC, 0), -ENOMEM);
	devres_fail_nth(0);
	assert_int_equal(nres(dev), 1);
}

static void test_fopen(void **state)
{
	struct device *dev = *state;
	char path[] = "/tmp/devres-fopen-XXXXXX", buf[32] = "";
	long fds = ledger_fds();
	FILE *f, *g;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	f = devm_fopen(dev, path, "w");
	assert_non_null(f);
	assert_cloexec(fileno(f));
	/* A stream's descriptor has its twin too. */
	assert_int_equal(ledger_fds(), fds + per_fd());
	fputs("written", f);
	/* The release flushes what was buffered. */
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(ledger_fds(), fds);
	g = devm_fopen(dev, path, "r");
	assert_non_null(g);
	assert_non_null(fgets(buf, sizeof(buf), g));
	assert_string_equal(buf, "written");
	assert_int_equal(devm_fclose(dev, g), 0);
	assert_int_equal(nres(dev), 0);
	assert_int_equal(ledger_fds(), fds);
	assert_int_equal(unlink(path), 0);
}

static void test_fopen_bad_input(void **state)
{
	struct device *dev = *state;
	FILE *f;

	start_capture();
	errno = 0;
	assert_null(devm_fopen(dev, "/nonexistent/devres", "r"));
	assert_int_equal(errno, ENOENT);
	/* As fopen(3): glibc ignores the letters it does not know. */
	f = devm_fopen(dev, "/dev/null", "rrrrrrrrrrrrrrrrrrrr");
	assert_non_null(f);
	assert_int_equal(devm_fclose(dev, f), 0);
	expect_no_warn();

	start_capture();
	assert_null(devm_fopen(dev, NULL, "r"));
	assert_int_equal(errno, EINVAL);
	expect_warn("devm_fopen", "NULL path");
	start_capture();
	assert_null(devm_fopen(dev, "/dev/null", NULL));
	expect_warn("devm_fopen", "NULL mode");

	devres_fail_nth(1);
	assert_null(devm_fopen(dev, "/dev/null", "r"));
	assert_int_equal(errno, ENOMEM);
	devres_fail_nth(2);
	assert_null(devm_fopen(dev, "/dev/null", "r"));
	assert_int_equal(errno, EMFILE);
	devres_fail_nth(0);
	assert_int_equal(nres(dev), 0);

	/* A stream that is not this device's: WARN, left open. */
	f = fopen("/dev/null", "re");
	assert_non_null(f);
	start_capture();
	assert_int_equal(devm_fclose(dev, f), -EINVAL);
	expect_warn("devm_fclose", "is not managed by this device");
	assert_int_equal(fclose(f), 0);
}

/*
 * /dev/full takes the write into the buffer and fails the flush: fclose()
 * reports ENOSPC, to devm_fclose()'s caller, or to the log at release.
 */
static void test_fclose_error_is_reported(void **state)
{
	struct device *dev = *state;
	FILE *f;

	f = devm_fopen(dev, "/dev/full", "w");
	if (!f)
		skip();
	fputs("lost", f);
	assert_int_equal(devm_fclose(dev, f), -ENOSPC);
	assert_int_equal(nres(dev), 0);

	f = devm_fopen(dev, "/dev/full", "w");
	assert_non_null(f);
	fputs("lost", f);
	start_log_capture();
	assert_int_equal(devres_release_all(dev), 1);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(line_level("test-dev: devm_fopen: fclose: No space "
				    "left on device"),
			 DEVRES_LOG_WARNING);
	/* An I/O error, not a misuse: not counted as a WARN. */
	assert_int_equal(count_prefix("WARNING"), 0);
}

/* Records whether the descriptor in *data is still open when it runs. */
static int seen_open[4];
static int nseen;

static void note_fd(void *data)
{
	seen_open[nseen++] = is_open(*(int *)data);
}

static void test_release_order_with_other_resources(void **state)
{
	struct device *dev = *state;
	static int fd;
	char *buf;

	nseen = 0;
	assert_int_equal(devm_add_action(dev, note_fd, &fd), 0);
	buf = devm_kzalloc(dev, 64, GFP_KERNEL);
	assert_non_null(buf);
	fd = devm_open(dev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	/* Added after the open: released before it, sees it open. */
	assert_int_equal(devm_add_action(dev, note_fd, &fd), 0);
	reset_order();
	add_rec(dev, 1);
	assert_int_equal(devres_release_all(dev), 5);
	assert_int_equal(norder, 1);
	assert_int_equal(nseen, 2);
	assert_int_equal(seen_open[0], 1);
	assert_int_equal(seen_open[1], 0);
}

/* A release preserves errno, as every release path does. */
static void test_release_preserves_errno(void **state)
{
	struct device *dev = *state;
	int fd = devm_open(dev, "/dev/null", O_RDONLY);

	assert_true(fd >= 0);
	assert_non_null(devm_fopen(dev, "/dev/null", "r"));
	/* So that the release takes its WARN path too. */
	assert_int_equal(syscall(SYS_close, fd), 0);
	start_capture();
	errno = 4242;
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(errno, 4242);
	expect_warn("devm_open", "closed behind the library's back");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, two_dev_setup, dev_teardown)
		T(test_open_is_cloexec_and_released),
		T(test_openat_creates_with_mode),
		T(test_open_bad_input),
		T(test_open_fault_points),
		T(test_close_now),
		T(test_add_fd),
		T(test_add_fd_bad_input),
		T(test_closed_behind_back),
		T(test_reused_behind_back_is_left_open),
		T(test_memfd),
		T(test_eventfd),
		T(test_timerfd),
		T(test_fopen),
		T(test_fopen_bad_input),
		T(test_fclose_error_is_reported),
		T(test_release_order_with_other_resources),
		T(test_release_preserves_errno),
#undef T
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
