// SPDX-License-Identifier: MIT
/*
 * The shared test fixture (see testlib.h). Linked into every test binary,
 * so it uses nothing but the public API and cmocka.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"

extern char **environ;

struct device tdev, other;
int tdev_released;
struct devres_ledger ledger_base;
struct capture cap;
int order[ORDER_MAX];
int norder;
int heap_released;

/* How many of tdev and other the setup brought up. */
static int ndevs;
static int warn_base;

static void tdev_release(struct device *dev)
{
	if (dev == &tdev || dev == &other)
		tdev_released++;
}

int init_dev(struct device *dev, const char *name)
{
	memset(dev, 0, sizeof(*dev));
	dev->release = tdev_release;
	device_initialize(dev);
	return dev_set_name(dev, "%s", name);
}

static int setup_devs(void **state, int n)
{
	if (init_dev(&tdev, "test-dev"))
		return -1;
	if (n == 2 && init_dev(&other, "other-dev"))
		return -1;
	ndevs = n;
	tdev_released = 0;
	devres_ledger_snapshot(&ledger_base);
	*state = &tdev;
	return 0;
}

int dev_setup(void **state)
{
	return setup_devs(state, 1);
}

int two_dev_setup(void **state)
{
	return setup_devs(state, 2);
}

int dev_teardown(void **state)
{
	struct devres_ledger now;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	/* A broken list would hang or crash the release: fail here. */
	if (devres_check(&tdev) || (ndevs == 2 && devres_check(&other)))
		return -1;
	devres_release_all(&tdev);
	if (ndevs == 2)
		devres_release_all(&other);
	put_device(&tdev);
	if (ndevs == 2)
		put_device(&other);
	devres_ledger_snapshot(&now);
	if (tdev_released != ndevs ||
	    devres_ledger_diff(&ledger_base, &now, stderr))
		return -1;
	return 0;
}

void heap_release(struct device *dev)
{
	__atomic_add_fetch(&heap_released, 1, __ATOMIC_RELAXED);
	free(dev);
}

struct device *heap_dev(const struct bus_type *bus, const char *fmt, ...)
{
	struct device *dev = calloc(1, sizeof(*dev));
	char name[128];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	assert_in_range(len, 0, sizeof(name) - 1);
	assert_non_null(dev);
	dev->bus = bus;
	dev->release = heap_release;
	device_initialize(dev);
	assert_int_equal(dev_set_name(dev, "%s", name), 0);
	return dev;
}

/* The bus of run_group_on_bus(): cmocka gives a group setup no argument. */
static const struct bus_type *group_bus;

static int bus_group_setup(void **state)
{
	(void)state;
	return bus_register(group_bus);
}

static int bus_group_teardown(void **state)
{
	(void)state;
	bus_unregister(group_bus);
	return 0;
}

int run_group_on_bus(const char *name, const struct CMUnitTest *tests, size_t n,
		     const struct bus_type *bus)
{
	group_bus = bus;
	return _cmocka_run_group_tests(name, tests, n, bus_group_setup,
				       bus_group_teardown);
}

/* ctx is non-NULL when only WARNING lines are wanted. */
static void cap_sink(void *ctx, int level, const char *line)
{
	if (ctx && level != DEVRES_LOG_WARNING)
		return;
	if (cap.n < CAP_LINES) {
		snprintf(cap.line[cap.n], sizeof(cap.line[0]), "%s", line);
		cap.level[cap.n] = level;
	}
	cap.n++;
}

void start_capture(void)
{
	memset(&cap, 0, sizeof(cap));
	warn_base = devres_warn_count();
	devres_set_log_sink(cap_sink, &cap);
}

void start_log_capture(void)
{
	memset(&cap, 0, sizeof(cap));
	warn_base = devres_warn_count();
	devres_set_log_sink(cap_sink, NULL);
}

void expect_warn_on(const char *dev, const char *func, const char *reason)
{
	char head[160];

	devres_set_log_sink(NULL, NULL);
	snprintf(head, sizeof(head), "WARNING: %s: %s: ", dev, func);
	if (cap.n != 1 || strncmp(cap.line[0], head, strlen(head)) ||
	    !strstr(cap.line[0] + strlen(head), reason))
		print_error("want one \"%s...%s\", got %d line(s): \"%s\"\n",
			    head, reason, cap.n, cap.line[0]);
	assert_int_equal(cap.n, 1);
	assert_memory_equal(cap.line[0], head, strlen(head));
	assert_non_null(strstr(cap.line[0] + strlen(head), reason));
	assert_int_equal(devres_warn_count() - warn_base, 1);
}

void expect_warn(const char *func, const char *reason)
{
	expect_warn_on("test-dev", func, reason);
}

void expect_no_warn(void)
{
	devres_set_log_sink(NULL, NULL);
	if (cap.n)
		print_error("want no WARN, got %d line(s): \"%s\"\n", cap.n,
			    cap.line[0]);
	assert_int_equal(cap.n, 0);
	assert_int_equal(devres_warn_count(), warn_base);
}

int line_level(const char *text)
{
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		if (strcmp(cap.line[i], text) == 0)
			return cap.level[i];
	return -1;
}

int count_prefix(const char *prefix)
{
	int n = 0;

	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		n += strncmp(cap.line[i], prefix, strlen(prefix)) == 0;
	return n;
}

void expect_stats(struct device *dev, int allocs, int bytes)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, allocs);
	assert_int_equal(st.total_size, bytes);
}

char *dump_to_string(struct device *dev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	devres_dump(dev, f);
	fclose(f);
	return buf;
}

int count_substr(const char *s, const char *sub)
{
	int n = 0;

	for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
		n++;
	return n;
}

void reset_order(void)
{
	memset(order, 0, sizeof(order));
	norder = 0;
}

void rec_release(struct device *dev, void *res)
{
	(void)dev;
	if (norder < ORDER_MAX)
		order[norder] = *(int *)res;
	norder++;
}

int *add_rec(struct device *dev, int v)
{
	int *p = devres_alloc(rec_release, sizeof(int), GFP_KERNEL);

	assert_non_null(p);
	*p = v;
	devres_add(dev, p);
	return p;
}

/*
 * This test's own path. Under valgrind /proc/self/exe is valgrind's tool,
 * which refuses to run directly; readlink() of it gives the test's path.
 */
static const char *self_exe(void)
{
	static char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0)
		return "/proc/self/exe";
	path[n] = '\0';
	return path;
}

/*
 * The environment with "NAME=value" @var in place of any inherited NAME,
 * or without NAME when @var is a bare "NAME".
 */
static char **env_with(const char *var)
{
	size_t name_len = var ? strcspn(var, "=") : 0;
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	assert_non_null(env);
	for (size_t i = 0; i < n; i++)
		if (!var || strncmp(environ[i], var, name_len) != 0 ||
		    environ[i][name_len] != '=')
			env[j++] = environ[i];
	if (var && var[name_len] == '=')
		env[j++] = (char *)var;
	env[j] = NULL;
	return env;
}

int run_self(const char *var, char **ret_err, const char *arg, ...)
{
	char *argv[8] = { "self", (char *)arg };
	posix_spawn_file_actions_t fa;
	char *out = NULL, buf[512], **env;
	int pipefd[2], status, argc = 2;
	size_t len = 0;
	ssize_t got;
	va_list ap;
	FILE *f;
	pid_t pid;

	va_start(ap, arg);
	while (argc < 7 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	env = env_with(var);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2),
			 0);
	assert_int_equal(posix_spawn(&pid, self_exe(), &fa, NULL, argv, env),
			 0);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(pipefd[1]);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	while ((got = read(pipefd[0], buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)got, f);
	close(pipefd[0]);
	fclose(f);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (ret_err)
		*ret_err = out;
	else
		free(out);
	return WEXITSTATUS(status);
}

/* The close-on-exec scan (tests/security/test-sec-cloexec.c and others). */
#include <dirent.h>
#include <sys/resource.h>

int count_fds_without_cloexec(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct rlimit rl = { 0 };
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	/* valgrind keeps its own fds above the limit it shows its client. */
	getrlimit(RLIMIT_NOFILE, &rl);
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		int fl;

		if (*end || end == e->d_name || fd <= 2 || fd == dirfd(d) ||
		    (rl.rlim_cur != RLIM_INFINITY && (rlim_t)fd >= rl.rlim_cur))
			continue;
		fl = fcntl((int)fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			n++;
	}
	closedir(d);
	return n;
}
