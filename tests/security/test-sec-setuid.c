// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * A privileged program cannot be steered through the environment: a
 * setuid-root copy of setuid-child.c, run by uid 65534 with DEVRES_FAIL_NTH,
 * DEVRES_LOG, DEVRES_DEBUG and DEVRES_WARN_BACKTRACE set, ignores them all
 * and prints nothing of its own until the program turns logging on; a
 * plain copy run the same way, by the same user, with the same
 * environment, honours them. Both runs go through setpriv (util-linux), so
 * the setuid bit is the only difference.
 *
 * Needs root (to make a setuid-root file), setpriv, a directory on a
 * filesystem mounted without nosuid/noexec that uid 65534 can reach, and
 * no no_new_privs on this process; otherwise exits 77 saying which.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "testlib.h"

#ifndef SETUID_CHILD
#error "tests/CMakeLists.txt passes the path of sec-setuid-child"
#endif

#define NOBODY 65534

extern char **environ;

static char dir[PATH_MAX];
static char suid_copy[PATH_MAX + 8], plain_copy[PATH_MAX + 8];

struct run {
	char out[4096];
	char err[16384];
	int status;
};

static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	char buf[65536];
	ssize_t n = 0;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	if (out < 0 || n < 0 || close(out) || chown(to, 0, 0) ||
	    chmod(to, mode))
		return -1;
	return 0;
}

/* Can uid 65534 run @path? Asked in a child that becomes that user. */
static bool nobody_can_exec(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		      setresuid(NOBODY, NOBODY, NOBODY) || access(path, X_OK));
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);
		if (access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/*
 * A directory for the two copies: the first candidate on a filesystem
 * that honours setuid bits and lets uid 65534 in. Returns why not, or NULL.
 */
static const char *make_copies(void)
{
	const char *cand[] = { getenv("TMPDIR"), "/tmp", "/var/tmp" };
	const char *why = "no candidate directory";

	if (geteuid() != 0)
		return "needs root to make a setuid-root copy";
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return "no_new_privs is set here: setuid bits would be ignored";
	if (!in_path("setpriv"))
		return "no setpriv (util-linux) in PATH";
	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		struct statvfs vfs;

		if (!cand[i] || !*cand[i])
			continue;
		if (statvfs(cand[i], &vfs) != 0)
			continue;
		if (vfs.f_flag & (ST_NOSUID | ST_RDONLY)) {
			why = "every candidate directory is on a nosuid or "
			      "read-only mount";
			continue;
		}
		snprintf(dir, sizeof(dir), "%s/devres-sec-setuid-XXXXXX",
			 cand[i]);
		if (!mkdtemp(dir) || chmod(dir, 0755))
			continue;
		snprintf(suid_copy, sizeof(suid_copy), "%s/suid", dir);
		snprintf(plain_copy, sizeof(plain_copy), "%s/plain", dir);
		if (copy_file(SETUID_CHILD, suid_copy, 04755) == 0 &&
		    copy_file(SETUID_CHILD, plain_copy, 0755) == 0 &&
		    nobody_can_exec(suid_copy))
			return NULL;
		why = "uid 65534 cannot run a copy in any candidate directory";
		unlink(suid_copy);
		unlink(plain_copy);
		rmdir(dir);
		dir[0] = '\0';
	}
	return why;
}

static void remove_copies(void)
{
	if (!dir[0])
		return;
	unlink(suid_copy);
	unlink(plain_copy);
	rmdir(dir);
}

/* Our environment without DEVRES_*, then every knob set. */
static char **hostile_env(void)
{
	static const char *knobs[] = {
		"DEVRES_FAIL_NTH=1",
		"DEVRES_LOG=1",
		"DEVRES_DEBUG=1",
		"DEVRES_WARN_BACKTRACE=0",
	};
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 5, sizeof(*env));
	assert_non_null(env);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "DEVRES_", 7) != 0)
			env[j++] = environ[i];
	for (size_t i = 0; i < 4; i++)
		env[j++] = (char *)knobs[i];
	return env;
}

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

/* @prog run by uid 65534 through setpriv, its stdout and stderr kept. */
static void run_as_nobody(const char *prog, struct run *r)
{
	char *argv[] = { "setpriv",	   "--reuid=65534", "--regid=65534",
			 "--clear-groups", (char *)prog,    NULL };
	int out = memfd_create("out", MFD_CLOEXEC);
	int err = memfd_create("err", MFD_CLOEXEC);
	posix_spawn_file_actions_t fa;
	char **env = hostile_env();
	pid_t pid;

	assert_true(out >= 0 && err >= 0);
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, out, 1), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, err, 2), 0);
	assert_int_equal(posix_spawnp(&pid, "setpriv", &fa, NULL, argv, env),
			 0);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
	print_message("%s:\n%s%s", prog, r->out, r->err);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
}

/* What was printed before the program asked, and after. */
static char *after_api(struct run *r)
{
	char *mark = strstr(r->err, "-- api\n");

	assert_non_null(mark);
	*mark = '\0';
	return mark + strlen("-- api\n");
}

static int count_lines(const char *s, const char *prefix)
{
	int n = 0;

	size_t len = strlen(prefix);

	while (*s) {
		n += strncmp(s, prefix, len) == 0;
		s = strchrnul(s, '\n');
		if (*s)
			s++;
	}
	return n;
}

static void plain_copy_honours_knobs(void **state)
{
	struct run r;
	char *api;

	(void)state;
	run_as_nobody(plain_copy, &r);
	assert_string_equal(r.out, "secure=0 ruid=65534 euid=65534 armed=1 "
				   "first=failed second=ok warns=1\n");
	api = after_api(&r);
	/* DEVRES_LOG: the ADD of the second allocation, addresses and all. */
	assert_int_equal(count_lines(r.err, "device@0x"), 1);
	assert_non_null(strstr(r.err, ": DEVRES ADD 0x"));
	/* DEVRES_DEBUG: the dev_dbg() line. */
	assert_non_null(strstr(r.err, "setuid-dev: a debug line"));
	/* The WARN, and no backtrace: DEVRES_WARN_BACKTRACE=0 is honoured. */
	assert_int_equal(count_lines(r.err, "WARNING: setuid-dev: devm_kfree"),
			 1);
	assert_int_equal(count_lines(r.err, "  "), 0);
	assert_int_equal(count_lines(api, "WARNING: setuid-dev: devm_kfree"),
			 1);
	assert_int_equal(count_lines(api, "  "), 0);
}

static void setuid_copy_ignores_knobs(void **state)
{
	struct run r;
	char *api;

	(void)state;
	run_as_nobody(suid_copy, &r);
	/* AT_SECURE, and the first allocation did not fail. */
	assert_string_equal(r.out, "secure=1 ruid=65534 euid=0 armed=0 "
				   "first=ok second=ok warns=1\n");
	api = after_api(&r);
	/* Nothing at all: no log, no debug line, no WARN (yet counted). */
	assert_string_equal(r.err, "");
	/* The program turned logging on: now the library speaks. */
	assert_int_equal(count_lines(api, "WARNING: setuid-dev: devm_kfree"),
			 1);
	assert_non_null(strstr(api, "setuid-dev: DEVRES ADD"));
#ifndef NDEBUG
	/* DEVRES_WARN_BACKTRACE=0 was ignored too: a debug build's trace. */
	assert_true(count_lines(api, "  ") > 0);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_copy_honours_knobs),
		cmocka_unit_test(setuid_copy_ignores_knobs),
	};
	const char *why = make_copies();
	int ret;

	if (why) {
		remove_copies();
		printf("skipped: %s\n", why);
		return 77;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	remove_copies();
	return ret;
}
