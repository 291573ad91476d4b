// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Events of the whole process, while the library is busy in other
 * threads: the interrupt dispatcher and a threaded handler's thread
 * asleep in their waits, a managed thread asleep in devres_thread_sleep(),
 * a spawned thread, and every kind of descriptor the library opens (a
 * line's eventfd, the dispatcher's epoll and wake eventfd, a managed
 * thread's eventfd, devm_open() with its twin, devm_eventfd(),
 * devm_memfd_create(), devm_timerfd_create(), devm_fopen(), a devm_mmap()
 * of the memfd).
 *
 * exec: a new image, started by each way a program has (execve() from a
 * thread that is not the main one, fork() then execve() from such a
 * thread, posix_spawn() while another thread opens and closes managed
 * descriptors, vfork() then execve()), finds no descriptor open but 0, 1
 * and 2: the new image is this test, run with "--fds", which counts them.
 *
 * end: the main thread ends by pthread_exit() and another thread goes on
 * using the library (its descriptors and maps are still known for the
 * library's own, with no WARN), then exit()s; a thread exit()s while another waits
 * inside the library (a stop of a managed thread that does not stop, a
 * wait for an interrupt whose handler does not return). The process
 * ends with the status exit() gave, with no crash and no hang.
 *
 * stack: a thread with the smallest stack the system allows
 * (PTHREAD_STACK_MIN) runs the library's ways deepest in stack: probe,
 * WARN and log lines, managed descriptors and maps, an interrupt line.
 *
 * Each cell runs in a child with an alarm.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/device.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define ALARM_S 20
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern char **environ;

static char self[PATH_MAX];
/* The descriptors this test was started with, ",3,7,", left to exec. */
static char inherited[512] = ",";
static struct device *busy_dev;
static int line = -1, memfd = -1;
static sem_t spawned_go;

/* Fills inherited[] with what was open at start, as its list. */
static void note_inherited(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t len = 1;

	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d) ||
		    len + 16 > sizeof(inherited))
			continue;
		len += (size_t)snprintf(inherited + len,
					sizeof(inherited) - len, "%d,", fd);
	}
	closedir(d);
}

/*
 * The new image: how many descriptors above 2 it was given, named, but
 * for those the test itself was started with (@list, as inherited[]).
 */
static int count_fds(const char *list)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 100;
	while ((e = readdir(d))) {
		char path[64], to[PATH_MAX];
		int fd = atoi(e->d_name);
		ssize_t len;

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), ",%d,", fd);
		if (strstr(list, path))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, to, sizeof(to) - 1);
		to[len < 0 ? 0 : len] = '\0';
		fprintf(stderr, "fd %d left open across exec: %s\n", fd, to);
		n++;
	}
	closedir(d);
	return n;
}

static irqreturn_t wake_primary(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t thread_fn(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_HANDLED;
}

static int sleeper(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		devres_thread_sleep(1000);
	return 0;
}

/* A managed thread that does not stop for a long time. */
static int stubborn(void *arg)
{
	(void)arg;
	sleep(ALARM_S);
	return 0;
}

static void *spawned(void *arg)
{
	(void)arg;
	while (sem_wait(&spawned_go) < 0 && errno == EINTR)
		;
	return NULL;
}

/* Every kind of thread and descriptor of the library, busy; 0 or a code. */
static int make_busy(void)
{
	void *map;

	busy_dev = heap_dev(NULL, "sec-process");
	if (!busy_dev)
		return 60;
	sem_init(&spawned_go, 0, 0);
	line = irq_line_create("sec-process");
	if (line < 0 ||
	    devm_request_threaded_irq(busy_dev, (unsigned int)line,
				      wake_primary, thread_fn, IRQF_ONESHOT,
				      "sec-process", NULL) ||
	    irq_line_raise_wait(line))
		return 61;
	if (IS_ERR(devm_thread_run(busy_dev, sleeper, NULL, "sec-sleeper")))
		return 62;
	if (devres_thread_spawn(spawned, NULL))
		return 63;
	if (devm_open(busy_dev, "/dev/null", O_RDONLY) < 0 ||
	    devm_eventfd(busy_dev, 0, 0) < 0 ||
	    devm_timerfd_create(busy_dev, CLOCK_MONOTONIC, 0) < 0 ||
	    !devm_fopen(busy_dev, "/dev/null", "r"))
		return 64;
	memfd = devm_memfd_create(busy_dev, "sec-process", 0);
	if (memfd < 0 || ftruncate(memfd, 4096))
		return 65;
	map = devm_mmap(busy_dev, NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED, memfd, 0);
	if (IS_ERR_OR_NULL(map))
		return 66;
	return 0;
}

/* exec ------------------------------------------------------------------ */

static const char *const exec_rows[] = {
	"execve() from a thread",
	"fork() + execve() from a thread",
	"posix_spawn() beside managed opens",
	"vfork() + execve()",
};

static const char *const one_col[] = { "busy library" };

static char *const lister_argv[] = { self, "--fds", inherited, NULL };

static int wait_lister(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 70;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 71;
}

static void *exec_thread(void *arg)
{
	int row = (int)(intptr_t)arg;
	pid_t pid;

	if (row == 0) {
		execve(self, lister_argv, environ);
		_exit(72);
	}
	pid = fork();
	if (pid == 0) {
		execve(self, lister_argv, environ);
		_exit(72);
	}
	return (void *)(intptr_t)wait_lister(pid);
}

static bool churn_stop; /* __atomic */

/* Managed opens and closes: the table of descriptors' lock, taken. */
static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		int fd = devm_open(busy_dev, "/dev/null", O_RDONLY);

		if (fd >= 0)
			devm_close(busy_dev, fd);
	}
	return NULL;
}

static int spawn_rounds(void)
{
	posix_spawn_file_actions_t fa;
	pthread_t t;
	int rc = 0;

	if (pthread_create(&t, NULL, churn, NULL))
		return 73;
	for (int i = 0; i < 20 && !rc; i++) {
		pid_t pid;

		posix_spawn_file_actions_init(&fa);
		/* A managed descriptor closed and one put on 2 in the child. */
		posix_spawn_file_actions_addclose(&fa, memfd);
		posix_spawn_file_actions_adddup2(&fa, 2, 2);
		rc = posix_spawn(&pid, self, &fa, NULL, lister_argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		rc = rc ? 74 : wait_lister(pid);
	}
	__atomic_store_n(&churn_stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return rc;
}

static int exec_cell(int row, int col)
{
	pthread_t t;
	void *ret;
	pid_t pid;
	int rc;

	(void)col;
	alarm(ALARM_S);
	rc = make_busy();
	if (rc)
		return rc;
	switch (row) {
	case 0:
	case 1:
		if (pthread_create(&t, NULL, exec_thread,
				   (void *)(intptr_t)row))
			return 75;
		/* Row 0 does not come back: the lister's status is the cell's. */
		pthread_join(t, &ret);
		rc = (int)(intptr_t)ret;
		break;
	case 2:
		rc = spawn_rounds();
		break;
	default:
		/* The event tested: what a program may still do (docs/fork.md). */
		/* NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.vfork) */
		pid = vfork();
		if (pid == 0) {
			execve(self, lister_argv, environ);
			_exit(72);
		}
		rc = wait_lister(pid);
		break;
	}
	sem_post(&spawned_go);
	return rc;
}

static void test_exec(void **state)
{
	(void)state;
	run_cells_in_children(exec_cell, exec_rows, ARRAY_SIZE(exec_rows),
			      one_col, ARRAY_SIZE(one_col));
}

/* end ------------------------------------------------------------------- */

static const char *const end_rows[] = {
	"main thread pthread_exit()s",
	"exit() beside a stop that waits",
	"exit() beside a wait for a handler",
};

static sem_t in_handler;

static irqreturn_t stuck_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	sem_post(&in_handler);
	sleep(ALARM_S);
	return IRQ_HANDLED;
}

/* Whether the main thread has ended: the process's own task, a zombie. */
static bool main_ended(void)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[2] == 'Z';
}

/* Goes on with the library once the main thread is gone, then exit()s. */
static void *survivor(void *arg)
{
	int irq, warns = devres_warn_count();

	(void)arg;
	/* Not joined: ThreadSanitizer cannot join the main thread. */
	while (!main_ended())
		usleep(1000);
	irq = irq_line_create("sec-survivor");
	if (irq < 0 || irq_line_raise_wait(line) ||
	    devm_request_irq(busy_dev, (unsigned int)irq, thread_fn, 0,
			     "sec-survivor", NULL) < 0)
		exit(81);
	/* What /proc says of the process, read with the main thread gone. */
	if (IS_ERR_OR_NULL(devm_mmap(busy_dev, NULL, 4096, PROT_READ,
				     MAP_SHARED, memfd, 0)))
		exit(87);
	if (devres_release_all(busy_dev) <= 0)
		exit(82);
	/* Nothing was taken for closed or unmapped behind its back. */
	if (devres_warn_count() != warns)
		exit(88);
	sem_post(&spawned_go);
	put_device(busy_dev);
	exit(0);
}

static void *stopper(void *arg)
{
	struct devres_thread *t = arg;

	(void)devm_thread_stop(busy_dev, t);
	return NULL;
}

static void *raiser(void *arg)
{
	(void)arg;
	(void)irq_line_raise_wait(line);
	return NULL;
}

static char *const main_exit_argv[] = { self, "--main-exit", NULL };

/* The main thread of a busy library ends; the survivor exit()s. */
static int main_exit(void)
{
	pthread_t peer;
	int rc;

	alarm(ALARM_S);
	rc = make_busy();
	if (rc)
		return rc;
	if (pthread_create(&peer, NULL, survivor, NULL))
		return 83;
	pthread_exit(NULL);
}

static int end_cell(int row, int col)
{
	struct devres_thread *t;
	pthread_t peer;
	int irq, rc;
	pid_t pid;

	(void)col;
	/*
	 * In a new image: this one's main thread has the test runner's
	 * state on its stack, which a leak checker would no longer find
	 * once the thread is gone.
	 */
	if (row == 0) {
		pid = fork();
		if (pid == 0) {
			execve(self, main_exit_argv, environ);
			_exit(72);
		}
		return wait_lister(pid);
	}
	alarm(ALARM_S);
	rc = make_busy();
	if (rc)
		return rc;
	switch (row) {
	case 1:
		t = devm_thread_run(busy_dev, stubborn, NULL, "sec-stubborn");
		if (IS_ERR(t) || pthread_create(&peer, NULL, stopper, t))
			return 84;
		/* The stop is under way: its wait is inside the library. */
		for (int i = 0; i < 100; i++)
			usleep(1000);
		exit(0);
	default:
		sem_init(&in_handler, 0, 0);
		irq = irq_line_create("sec-stuck");
		if (irq < 0 || request_irq((unsigned int)irq, stuck_handler, 0,
					   "sec-stuck", NULL))
			return 85;
		line = irq;
		if (pthread_create(&peer, NULL, raiser, NULL))
			return 86;
		while (sem_wait(&in_handler) < 0 && errno == EINTR)
			;
		exit(0);
	}
}

static void test_end(void **state)
{
	(void)state;
	run_cells_in_children(end_cell, end_rows, ARRAY_SIZE(end_rows), one_col,
			      ARRAY_SIZE(one_col));
}

/* stack ----------------------------------------------------------------- */

static int probe_fn(struct device *dev)
{
	return devm_kzalloc(dev, 64, GFP_KERNEL) ? 0 : -ENOMEM;
}

static void nop_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void *small_stack_calls(void *arg)
{
	struct device *dev = heap_dev(NULL, "sec-small-stack");
	void *res, *map;
	int irq, fd;
	FILE *null;

	(void)arg;
	if (!dev)
		return (void *)1;
	if (probe_fn(dev))
		return (void *)2;
	dev_info(dev, "a log line from a small stack: %d %s %p", 1, "two",
		 (void *)dev);
	/* A misuse: its WARN, from the small stack too. */
	res = devres_alloc(nop_release, 8, GFP_KERNEL);
	if (!res)
		return (void *)8;
	devres_add(dev, res);
	devres_free(res);
	fd = devm_memfd_create(dev, "sec-small", 0);
	if (fd < 0 || ftruncate(fd, 8192))
		return (void *)3;
	map = devm_mmap(dev, NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			0);
	if (IS_ERR_OR_NULL(map))
		return (void *)4;
	if (!devm_fopen(dev, "/dev/null", "r"))
		return (void *)5;
	irq = irq_line_create("sec-small");
	if (irq < 0 ||
	    devm_request_threaded_irq(dev, (unsigned int)irq, wake_primary,
				      thread_fn, IRQF_ONESHOT, "sec-small",
				      NULL) ||
	    irq_line_raise_wait(irq))
		return (void *)6;
	/*
	 * A buffered stream: fprintf() to an unbuffered one (stderr) puts
	 * BUFSIZ on the stack, in anyone's code.
	 */
	null = fopen("/dev/null", "we");
	if (!null)
		return (void *)9;
	devres_dump(dev, null);
	fclose(null);
	if (devres_release_all(dev) <= 0)
		return (void *)7;
	(void)irq_line_destroy(irq);
	put_device(dev);
	return NULL;
}

static int stack_cell(int row, int col)
{
	pthread_attr_t attr;
	size_t size = PTHREAD_STACK_MIN;
	pthread_t t;
	void *ret;

	(void)row;
	(void)col;
	alarm(ALARM_S);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* Instrumented frames are several times larger. */
	size *= 8;
#endif
	if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, size))
		return 90;
	if (pthread_create(&t, &attr, small_stack_calls, NULL))
		return 91;
	pthread_join(t, &ret);
	return (int)(intptr_t)ret;
}

static const char *const stack_rows[] = { "PTHREAD_STACK_MIN" };

static void test_stack(void **state)
{
	(void)state;
	run_cells_in_children(stack_cell, stack_rows, ARRAY_SIZE(stack_rows),
			      one_col, ARRAY_SIZE(one_col));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_end),
		cmocka_unit_test(test_stack),
	};
	ssize_t len;

	if (argc > 2 && strcmp(argv[1], "--fds") == 0)
		return count_fds(argv[2]);
	if (argc > 1 && strcmp(argv[1], "--main-exit") == 0)
		return main_exit();
	note_inherited();
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = '\0';
	return cmocka_run_group_tests(tests, NULL, NULL);
}
