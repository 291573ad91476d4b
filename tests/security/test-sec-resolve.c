// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * devres__open_beneath() against a hostile fake sysfs tree: absolute
 * symlinks, '..' climbing out, loops, a resourceN pointing at /etc/shadow, a
 * symlinked directory in the middle, magic links, a writer creating through
 * a dangling symlink, and a thread swapping a directory for a symlink while
 * we walk. Every case runs through both paths, openat2() and the walk used
 * where the kernel has none, which must give the same answer; the fallback
 * is also forced for real with a seccomp filter that makes openat2 ENOSYS.
 *
 * The resolver is hidden in the library, so its source is compiled in
 * here; the fault point's counter is renamed to this file's own, so that
 * it does not clash with the library's (in a static link).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <setjmp.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "testlib.h"

#define devres__fail_nth test_fail_nth
#define devres__fail_armed test_fail_armed
#define devres__fail_now test_fail_now
#define devres__open_beneath test_open_beneath
#define devres__own_fd_opening test_own_fd_opening
#define devres__own_fd_opened test_own_fd_opened
#define devres__own_fd_close test_own_fd_close
#include "../../src/base/resolve.c"

TLS_FAST unsigned int test_fail_nth;
/* The stand-in count is read whenever it is set: always armed. */
unsigned int test_fail_armed = 1;

bool test_fail_now(const char *what, int err)
{
	(void)what;
	(void)err;
	return --test_fail_nth == 0;
}

/* The walk's record of the fds it opens: the library's, not here. */
void test_own_fd_opening(void)
{
}

void test_own_fd_opened(int fd, enum devres__own_kind kind, const char *name)
{
	(void)fd;
	(void)kind;
	(void)name;
}

int test_own_fd_close(int fd)
{
	return close(fd);
}

/*
 * openat2() where the kernel has it; where it has not (before 5.6, or
 * under valgrind 3.19, which does not know the call) the walk stands in
 * and is checked on its own.
 */
static bool have_openat2;

static int kernel_beneath(int root, const char *path, int flags,
			  unsigned int mode)
{
	if (!have_openat2)
		return walk_beneath(root, path, flags, mode);
	return openat2_beneath(root, path, flags, mode);
}

static char base[] = "/tmp/devres-sec-resolve-XXXXXX";
static int rootfd = -1;
#define PCI "devices/pci0000:00/0000:00:01.0"

static void mk(const char *fmt, ...) DEVRES_PRINTF(1, 2);
static void mk(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void ln(const char *target, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(symlink(target, path), 0);
}

/*
 * base/root is the fake sysfs root; base/outside holds a secret that a
 * '..' symlink reaches if nothing stops it.
 */
static int tree_setup(void **state)
{
	char name[PATH_MAX];
	int fd;

	(void)state;
	if (!mkdtemp(base))
		return -1;
	mk("%s/outside", base);
	put("outside/secret", "secret");
	mk("%s/root", base);
	mk("%s/root/devices", base);
	mk("%s/root/devices/pci0000:00", base);
	mk("%s/root/" PCI, base);
	put("root/" PCI "/resource0", "BAR0");
	put("root/" PCI "/vendor", "0x8086\n");
	mk("%s/root/bus", base);
	mk("%s/root/bus/pci", base);
	mk("%s/root/bus/pci/devices", base);
	/* What real sysfs looks like: relative links that stay inside. */
	ln("../../../" PCI, "root/bus/pci/devices/0000:00:01.0");
	ln("devices/pci0000:00", "root/okmid");
	/* What an attacker plants. */
	ln("/etc/shadow", "root/" PCI "/resource1");
	ln("../../../../outside/secret", "root/" PCI "/resource2");
	ln("../../../../../../../../../etc/passwd", "root/" PCI "/resource3");
	ln("/etc", "root/" PCI "/etc");
	ln("../outside", "root/mid");
	ln("loop", "root/loop");
	ln("loopb", "root/loopa");
	ln("loopa", "root/loopb");
	ln("/tmp/devres-sec-resolve-created", "root/dangling");
	ln("../outside/new", "root/dangling-up");
	/* c39 is a chain of 40 links: it resolves, as in the kernel. */
	put("root/end", "end");
	ln("end", "root/c0");
	for (int i = 1; i < 40; i++) {
		char target[16];

		snprintf(target, sizeof(target), "c%d", i - 1);
		snprintf(name, sizeof(name), "root/c%d", i);
		ln(target, name);
	}
	mk("%s/root/race", base);
	mk("%s/root/race/d", base);
	put("root/race/d/passwd", "decoy");
	ln("/etc", "root/race/l");
	snprintf(name, sizeof(name), "%s/root", base);
	rootfd = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	fd = openat2_beneath(rootfd, ".", O_RDONLY, 0);
	have_openat2 = fd != -ENOSYS;
	if (fd >= 0)
		close(fd);
	if (!have_openat2)
		print_message("no openat2(): the walk is checked alone\n");
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static int tree_teardown(void **state)
{
	(void)state;
	close(rootfd);
	unlink("/tmp/devres-sec-resolve-created");
	return nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Both paths; the same answer from each, and no fd left behind. */
static int both(const char *path, int flags, unsigned int mode)
{
	int before = count_open_fds();
	int a = kernel_beneath(rootfd, path, flags, mode);
	int b = walk_beneath(rootfd, path, flags, mode);

	if (a >= 0 && b >= 0) {
		struct stat sa, sb;

		assert_int_equal(fstat(a, &sa), 0);
		assert_int_equal(fstat(b, &sb), 0);
		assert_true(sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev);
		assert_true(fcntl(a, F_GETFD) & FD_CLOEXEC);
		assert_true(fcntl(b, F_GETFD) & FD_CLOEXEC);
		close(b);
		assert_int_equal(count_open_fds(), before + 1);
		return a;
	}
	if (a != b)
		fail_msg("%s: openat2 %d, walk %d", path, a, b);
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	assert_int_equal(count_open_fds(), before);
	return a;
}

static void expect_text(const char *path, const char *text)
{
	int fd = both(path, O_RDONLY, 0);
	char buf[64] = "";

	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) >= 0);
	close(fd);
	assert_string_equal(buf, text);
}

static void expect_err(const char *path, int flags, int err)
{
	int ret = both(path, flags, 0600);

	if (ret != -err)
		fail_msg("%s: %d (%s), expected -%s", path, ret,
			 ret < 0 ? strerror(-ret) : "an fd", strerror(err));
}

static void inside_links_resolve(void **state)
{
	(void)state;
	expect_text(PCI "/resource0", "BAR0");
	expect_text("bus/pci/devices/0000:00:01.0/resource0", "BAR0");
	expect_text("okmid/0000:00:01.0/vendor", "0x8086\n");
	expect_text("devices/../" PCI "/./resource0", "BAR0");
	expect_text("./bus//pci/devices/0000:00:01.0/../0000:00:01.0/resource0",
		    "BAR0");
	expect_text("c39", "end");
	/* ".." after a symlink is the parent of its target, as in the kernel. */
	expect_text("okmid/../../end", "end");
	expect_err("okmid/../end", O_RDONLY, ENOENT);
	/* Directories, with and without a trailing slash or a final "..". */
	for (const char *p = "devices\0devices/\0" PCI "/..\0.\0"; *p;
	     p += strlen(p) + 1) {
		int fd = both(p, O_RDONLY | O_DIRECTORY, 0);

		assert_true(fd >= 0);
		close(fd);
	}
}

static void absolute_is_refused(void **state)
{
	(void)state;
	/* resourceN pointing at /etc/shadow: the read a driver would map. */
	expect_err(PCI "/resource1", O_RDONLY, EXDEV);
	expect_err(PCI "/resource1", O_RDWR, EXDEV);
	expect_err("/etc/passwd", O_RDONLY, EXDEV);
	expect_err(PCI "/etc/passwd", O_RDONLY, EXDEV);
}

static void dotdot_cannot_climb(void **state)
{
	(void)state;
	expect_err(PCI "/resource2", O_RDONLY, EXDEV);
	expect_err(PCI "/resource3", O_RDONLY, EXDEV);
	expect_err("..", O_RDONLY, EXDEV);
	expect_err("../outside/secret", O_RDONLY, EXDEV);
	expect_err("devices/../../outside/secret", O_RDONLY, EXDEV);
	expect_err("mid/secret", O_RDONLY, EXDEV);
}

static void loops_end(void **state)
{
	(void)state;
	expect_err("loop", O_RDONLY, ELOOP);
	expect_err("loopa", O_RDONLY, ELOOP);
	expect_err("loopa/x", O_RDONLY, ELOOP);
	expect_err("c39/x", O_RDONLY, ENOTDIR);
	/* The 41st link: one more than the kernel follows. */
	ln("c39", "root/c40");
	expect_err("c40", O_RDONLY, ELOOP);
	expect_err("c40/x", O_RDONLY, ELOOP);
}

static void odd_names(void **state)
{
	int fd;

	(void)state;
	expect_err("", O_RDONLY, ENOENT);
	expect_err("nothing/here", O_RDONLY, ENOENT);
	expect_err(PCI "/resource0/", O_RDONLY, ENOTDIR);
	expect_err(PCI "/resource0/x", O_RDONLY, ENOTDIR);
	/* O_PATH follows a final symlink too, unless told not to. */
	fd = both("bus/pci/devices/0000:00:01.0", O_PATH | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	close(fd);
	expect_err(PCI "/resource1", O_PATH, EXDEV);
	fd = both(PCI "/resource1", O_PATH | O_NOFOLLOW, 0);
	assert_true(fd >= 0);
	close(fd);
	/* The caller's own O_NOFOLLOW keeps its meaning. */
	expect_err("bus/pci/devices/0000:00:01.0", O_RDONLY | O_NOFOLLOW,
		   ELOOP);
}

/* A result that is fd 0 or 1 (stdio closed) is still a result. */
static void low_fd_results(void **state)
{
	int saved = dup(1), in = dup(0), fd[2];
	struct stat st, end;

	(void)state;
	assert_true(saved > 2 && in > 2);
	assert_int_equal(fstatat(rootfd, "end", &end, 0), 0);
	close(0);
	close(1);
	fd[0] = walk_beneath(rootfd, "end", O_RDONLY, 0);
	fd[1] = walk_beneath(rootfd, "okmid/../../end", O_RDONLY, 0);
	dup2(in, 0);
	fstat(1, &st);
	dup2(saved, 1);
	close(saved);
	close(in);
	assert_int_equal(fd[0], 0);
	assert_int_equal(fd[1], 1);
	assert_true(st.st_ino == end.st_ino && st.st_dev == end.st_dev);
}

/* A write that would create a file outside through a dangling link. */
static void create_stays_inside(void **state)
{
	mode_t mask = umask(0);
	struct stat st;
	char path[PATH_MAX];
	int fd;

	(void)state;
	umask(mask);
	expect_err("dangling", O_WRONLY | O_CREAT, EXDEV);
	assert_int_equal(stat("/tmp/devres-sec-resolve-created", &st), -1);
	expect_err("dangling-up", O_WRONLY | O_CREAT, EXDEV);
	snprintf(path, sizeof(path), "%s/outside/new", base);
	assert_int_equal(stat(path, &st), -1);
	/* O_EXCL never follows a link: the name is taken. */
	expect_err("dangling", O_WRONLY | O_CREAT | O_EXCL, EEXIST);
	fd = walk_beneath(rootfd, "devices/new", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	fd = kernel_beneath(rootfd, "devices/new2", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/root/devices/new", base);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600 & ~mask);
}

/*
 * With /proc/self as the root, "root" and "fd/N" are magic links: openat2
 * refuses them (RESOLVE_NO_MAGICLINKS), the walk sees absolute text.
 */
static void magic_links_refused(void **state)
{
	int proc = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int etc = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char path[32];
	int a, b;

	(void)state;
	assert_true(proc >= 0 && etc >= 0);
	snprintf(path, sizeof(path), "fd/%d/passwd", etc);
	for (int i = 0; i < 2; i++) {
		const char *p = i ? path : "root/etc/passwd";

		a = kernel_beneath(proc, p, O_RDONLY, 0);
		b = walk_beneath(proc, p, O_RDONLY, 0);
		assert_true(a == -ELOOP || a == -EXDEV);
		assert_int_equal(b, -EXDEV);
	}
	close(etc);
	close(proc);
}

/* The one fault point of every open under a root. */
static void fault_point(void **state)
{
	int fd;

	(void)state;
	test_fail_nth = 2;
	fd = test_open_beneath(rootfd, PCI "/resource0", O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(test_open_beneath(rootfd, PCI "/resource0", O_RDONLY,
					   0),
			 -EMFILE);
	assert_int_equal(test_fail_nth, 0);
	assert_int_equal(test_open_beneath(rootfd, NULL, O_RDONLY, 0), -EINVAL);
}

/*
 * An attacker swapping race/d (a directory) with race/l (a link to /etc)
 * as fast as it can, while we open race/d/passwd: we may get the decoy or
 * an error, never /etc/passwd.
 */
static volatile int racing;

static void *swapper(void *arg)
{
	char d[PATH_MAX], l[PATH_MAX];

	(void)arg;
	snprintf(d, sizeof(d), "%s/root/race/d", base);
	snprintf(l, sizeof(l), "%s/root/race/l", base);
	/* The yield lets the opener in under valgrind's one-thread scheduler. */
	while (__atomic_load_n(&racing, __ATOMIC_RELAXED)) {
		renameat2(AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE);
		sched_yield();
	}
	return NULL;
}

static void swap_race(void **state)
{
	struct stat etc, st;
	struct timespec t0, now;
	int got[2] = { 0, 0 };
	pthread_t t;

	(void)state;
	assert_int_equal(stat("/etc/passwd", &etc), 0);
	racing = 1;
	assert_int_equal(pthread_create(&t, NULL, swapper, NULL), 0);
	/*
	 * 4000 tries, or two seconds (valgrind runs one thread at a time), and
	 * until each path has opened the decoy at least once.
	 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0;; i++) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((i >= 4000 || now.tv_sec - t0.tv_sec >= 2) && got[0] &&
		    got[1])
			break;
		if (now.tv_sec - t0.tv_sec >= 30)
			break;
		const char *p = "race/d/passwd";
		int fd = i & 1 ? walk_beneath(rootfd, p, O_RDONLY, 0)
			       : kernel_beneath(rootfd, p, O_RDONLY, 0);

		if (fd < 0)
			continue;
		assert_int_equal(fstat(fd, &st), 0);
		close(fd);
		assert_false(st.st_ino == etc.st_ino &&
			     st.st_dev == etc.st_dev);
		got[i & 1]++;
	}
	__atomic_store_n(&racing, 0, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	/* Both paths were really exercised, not refused throughout. */
	assert_true(got[0] > 0 && got[1] > 0);
}

/*
 * The fallback for real: a seccomp filter makes openat2 ENOSYS, as on a
 * kernel before 5.6 or in an old container; the resolver must notice and
 * walk, with the same answers. In a child, since a filter cannot be undone.
 */
static int child_without_openat2(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	struct open_how how = { .flags = O_RDONLY };
	char buf[8] = "";
	int fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 77;
	if (syscall(SYS_openat2, rootfd, ".", &how, sizeof(how)) != -1 ||
	    errno != ENOSYS)
		return 10;
	no_openat2 = false;
	if (test_open_beneath(rootfd, PCI "/resource1", O_RDONLY, 0) != -EXDEV)
		return 11;
	if (!no_openat2)
		return 12;
	if (test_open_beneath(rootfd, PCI "/resource2", O_RDONLY, 0) != -EXDEV)
		return 13;
	if (test_open_beneath(rootfd, "loop", O_RDONLY, 0) != -ELOOP)
		return 14;
	fd = test_open_beneath(rootfd, "bus/pci/devices/0000:00:01.0/resource0",
			       O_RDONLY, 0);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) != 4 ||
	    strcmp(buf, "BAR0") != 0 || !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
		return 15;
	close(fd);
	return 0;
}

static void fallback_when_enosys(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_without_openat2());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(inside_links_resolve),
		cmocka_unit_test(absolute_is_refused),
		cmocka_unit_test(dotdot_cannot_climb),
		cmocka_unit_test(loops_end),
		cmocka_unit_test(odd_names),
		cmocka_unit_test(low_fd_results),
		cmocka_unit_test(create_stays_inside),
		cmocka_unit_test(magic_links_refused),
		cmocka_unit_test(fault_point),
		cmocka_unit_test(swap_race),
		cmocka_unit_test(fallback_when_enosys),
	};

	return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
