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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/platform.h>
#include <pthread.h>
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
	/* Before the devices: the ledger counts them from their init. */
	devres_ledger_snapshot(&ledger_base);
	if (init_dev(&tdev, "test-dev"))
		return -1;
	if (n == 2 && init_dev(&other, "other-dev"))
		return -1;
	ndevs = n;
	tdev_released = 0;
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
	bool broken;

	(void)state;
	devres_set_log_sink(NULL, NULL);
	/* A broken list would hang or crash the release: fail here. */
	broken = devres_check(&tdev) || (ndevs == 2 && devres_check(&other));
	t_undo_all();
	if (broken)
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

/*
 * The registry of what a test registered, oldest first. Entries are few
 * (a test registers a handful of things), so a small array will do.
 */
enum reg_kind {
	REG_BUS,
	REG_DRIVER,
	REG_PDRIVER,
	REG_DEVICE
};

struct reg_entry {
	enum reg_kind kind;
	const void *obj;
};

#define REG_MAX 1024
static struct reg_entry reg[REG_MAX];
static int nreg;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static void reg_add(enum reg_kind kind, const void *obj)
{
	bool added = false;

	pthread_mutex_lock(&reg_lock);
	if (nreg < REG_MAX) {
		reg[nreg++] = (struct reg_entry){ kind, obj };
		added = true;
	}
	pthread_mutex_unlock(&reg_lock);
	if (added && kind == REG_DEVICE)
		get_device((struct device *)obj);
}

/* Takes @obj out of the registry; false when it was not there. */
static bool reg_take(const void *obj, enum reg_kind *ret_kind)
{
	bool found = false;

	pthread_mutex_lock(&reg_lock);
	for (int i = nreg - 1; i >= 0; i--) {
		if (reg[i].obj != obj)
			continue;
		*ret_kind = reg[i].kind;
		memmove(&reg[i], &reg[i + 1],
			(size_t)(nreg - i - 1) * sizeof(reg[0]));
		nreg--;
		found = true;
		break;
	}
	pthread_mutex_unlock(&reg_lock);
	return found;
}

int t_bus_register(const struct bus_type *bus)
{
	int ret = bus_register(bus);

	if (!ret)
		reg_add(REG_BUS, bus);
	return ret;
}

void t_bus_unregister(const struct bus_type *bus)
{
	t_forget(bus);
	bus_unregister(bus);
}

int t_driver_register(struct device_driver *drv)
{
	int ret = driver_register(drv);

	if (!ret)
		reg_add(REG_DRIVER, drv);
	return ret;
}

void t_driver_unregister(struct device_driver *drv)
{
	t_forget(drv);
	driver_unregister(drv);
}

int t_platform_driver_register(struct platform_driver *drv)
{
	int ret = platform_driver_register(drv);

	if (!ret)
		reg_add(REG_PDRIVER, drv);
	return ret;
}

void t_platform_driver_unregister(struct platform_driver *drv)
{
	t_forget(drv);
	platform_driver_unregister(drv);
}

int t_device_add(struct device *dev)
{
	int ret = device_add(dev);

	if (!ret)
		reg_add(REG_DEVICE, dev);
	return ret;
}

/* Undoes the registration first, then drops the registry's reference. */
void t_device_del(struct device *dev)
{
	enum reg_kind kind;
	bool tracked = reg_take(dev, &kind);

	device_del(dev);
	if (tracked)
		put_device(dev);
}

void t_device_unregister(struct device *dev)
{
	enum reg_kind kind;
	bool tracked = reg_take(dev, &kind);

	device_unregister(dev);
	if (tracked)
		put_device(dev);
}

void t_forget(const void *obj)
{
	enum reg_kind kind;

	if (reg_take(obj, &kind) && kind == REG_DEVICE)
		put_device((struct device *)obj);
}

static void undo(const struct reg_entry *e)
{
	switch (e->kind) {
	case REG_BUS:
		bus_unregister(e->obj);
		break;
	case REG_DRIVER:
		driver_unregister((struct device_driver *)e->obj);
		break;
	case REG_PDRIVER:
		platform_driver_unregister((struct platform_driver *)e->obj);
		break;
	case REG_DEVICE:
		device_del((struct device *)e->obj);
		put_device((struct device *)e->obj);
		break;
	}
}

void t_undo_all(void)
{
	struct reg_entry e;

	for (;;) {
		pthread_mutex_lock(&reg_lock);
		if (!nreg) {
			pthread_mutex_unlock(&reg_lock);
			return;
		}
		e = reg[--nreg];
		pthread_mutex_unlock(&reg_lock);
		undo(&e);
	}
}

int reg_teardown(void **state)
{
	(void)state;
	t_undo_all();
	return 0;
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

/* Tests without a teardown get reg_teardown(): nothing outlives a test. */
int run_group_tracked(const char *name, const struct CMUnitTest *tests,
		      size_t n, int (*group_setup)(void **),
		      int (*group_teardown)(void **))
{
	struct CMUnitTest *t = calloc(n, sizeof(*t));
	int ret;

	assert_non_null(t);
	memcpy(t, tests, n * sizeof(*t));
	for (size_t i = 0; i < n; i++)
		if (!t[i].teardown_func)
			t[i].teardown_func = reg_teardown;
	/* TEST_FILTER=name runs one test: how a regression is checked alone. */
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	ret = _cmocka_run_group_tests(name, t, n, group_setup, group_teardown);
	free(t);
	return ret;
}

int run_group_on_bus(const char *name, const struct CMUnitTest *tests, size_t n,
		     const struct bus_type *bus)
{
	group_bus = bus;
	return run_group_tracked(name, tests, n, bus_group_setup,
				 bus_group_teardown);
}

/* ctx is non-NULL when only WARNING lines are wanted. */
/*
 * The library calls a sink from any thread, several at once: each line
 * takes its slot with one atomic increment, so that none is lost or
 * written over (four threads WARNing at once lost 5 of 160).
 */
static void cap_sink(void *ctx, int level, const char *line)
{
	int i;

	if (ctx && level != DEVRES_LOG_WARNING)
		return;
	i = __atomic_fetch_add(&cap.n, 1, __ATOMIC_RELAXED);
	if (i < CAP_LINES) {
		snprintf(cap.line[i], sizeof(cap.line[0]), "%s", line);
		cap.level[i] = level;
	}
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

void cell_fill(struct CMUnitTest *test, void *cell, char *name, size_t len,
	       void (*run)(void **), int (*setup)(void **),
	       int (*teardown)(void **), const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, len, fmt, ap);
	va_end(ap);
	*test = (struct CMUnitTest){
		.name = name,
		.test_func = run,
		.setup_func = setup,
		.teardown_func = teardown,
		.initial_state = cell,
	};
}

bool under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
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

int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

bool tid_asleep(int tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	/*
	 * Raw calls: the library's close(2) and fclose(3) may wait for the
	 * descriptor table's lock, which the thread looked at may hold; and
	 * ThreadSanitizer, which would see an open and not a raw close,
	 * would take the library's next descriptor of the same number for
	 * this one, used by two threads.
	 */
	if (!tid)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	(void)syscall(SYS_close, fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static void *run_asleep_call(void *arg)
{
	struct asleep_call *c = arg;

	__atomic_store_n(&c->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	c->ret = c->fn();
	return NULL;
}

void start_until_asleep(struct asleep_call *c)
{
	long waited = 0;

	c->tid = 0;
	assert_int_equal(pthread_create(&c->t, NULL, run_asleep_call, c), 0);
	while (!tid_asleep(__atomic_load_n(&c->tid, __ATOMIC_ACQUIRE))) {
		assert_true(waited++ < 10000);
		usleep(1000);
	}
	/* Asleep on the lock, not just on the way: settle. */
	usleep(2000);
}

int count_open_fds(void)
{
	/* The listing's own descriptor is not the caller's. */
	return count_entries("/proc/self/fd") - 1;
}

bool asan_reports(void (*access)(void *arg), void *arg, ...)
{
	char buf[8192];
	size_t len = 0;
	ssize_t n;
	int fds[2], status;
	bool named = false;
	const char *kind;
	va_list ap;
	pid_t pid;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		access(arg);
		_exit(0); /* not reached when ASan reports */
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1 &&
	       (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	va_start(ap, arg);
	while ((kind = va_arg(ap, const char *)))
		named = named || strstr(buf, kind);
	va_end(ap);
	/* The report alone is not enough: ASan must also have ended it. */
	return named && WIFEXITED(status) && WEXITSTATUS(status) != 0;
}
