// SPDX-License-Identifier: MIT
/* ctest-labels: tsan tsan-only timeout=120 */
/*
 * A program's own data race, reported by ThreadSanitizer while the
 * library holds managed resources: the report is printed and the program
 * goes on. The report's symbolizer maps, unmaps and closes the files it
 * reads, through the library's munmap() and close(), with the runtime's
 * interceptors switched off: a lock the library takes there, or a table
 * it reads, must not look like a race of its own, since a race found
 * inside a report waits for the report's lock for ever.
 *
 * Each cell runs in a child of its own (the first report of a process is
 * the one that starts the symbolizer), under an alarm. Thread A writes a
 * counter; the main thread then fills one table the calls of the
 * symbolizer read (managed mappings, descriptors, streams, threads with
 * the library's own descriptors, all four) with no order ThreadSanitizer sees between that and
 * thread B, which writes the counter too: the race, and its report. The
 * child must end by itself with exactly one report, the counter's.
 *
 * Built in the ThreadSanitizer build only.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/posix.h>
#include "testlib.h"

/*
 * A report does not end the program, nor change its exit status. The
 * runtime's name for its hook, reserved as it is.
 */
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
const char *__tsan_default_options(void);
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
const char *__tsan_default_options(void)
{
	return "halt_on_error=0 exitcode=0 atexit_sleep_ms=0";
}

enum table {
	T_MAPS,
	T_FDS,
	T_STREAMS,
	T_THREADS,
	T_ALL,
	T_NR
};

static const char *const names[T_NR] = {
	"managed mappings", "managed descriptors", "managed streams",
	"managed threads and the library's own descriptors", "all four"
};

static long counter;
/* Relaxed: no order ThreadSanitizer would see between the threads. */
static int a_wrote, tables_filled;

static void *thread_a(void *arg)
{
	counter = 1;
	__atomic_store_n(&a_wrote, 1, __ATOMIC_RELAXED);
	return arg;
}

static void *thread_b(void *arg)
{
	while (!__atomic_load_n(&tables_filled, __ATOMIC_RELAXED))
		sched_yield();
	counter++; /* the race: its report starts the symbolizer */
	return arg;
}

static int idle(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		(void)devres_thread_sleep(10);
	return 0;
}

static void fill(struct device *dev, enum table t)
{
	if (t == T_MAPS || t == T_ALL)
		if (devm_mmap(dev, NULL, 4096, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			_exit(3);
	if (t == T_FDS || t == T_ALL)
		if (devm_eventfd(dev, 0, 0) < 0)
			_exit(4);
	if (t == T_STREAMS || t == T_ALL)
		if (!devm_fopen(dev, "/dev/null", "r"))
			_exit(5);
	/* Its wake eventfd is one of the library's own descriptors. */
	if (t == T_THREADS || t == T_ALL)
		if (IS_ERR_OR_NULL(devm_thread_run(dev, idle, NULL, "idle")))
			_exit(6);
}

/* The child: 0 when its report was made and it ended by itself. */
static int cell(enum table t, int out)
{
	struct device dev;
	pthread_t a, b;

	alarm(20);
	if (dup2(out, STDERR_FILENO) < 0)
		return 2;
	if (init_dev(&dev, "tsan-report"))
		return 2;
	if (pthread_create(&a, NULL, thread_a, NULL) ||
	    pthread_create(&b, NULL, thread_b, NULL))
		return 2;
	while (!__atomic_load_n(&a_wrote, __ATOMIC_RELAXED))
		sched_yield();
	fill(&dev, t);
	__atomic_store_n(&tables_filled, 1, __ATOMIC_RELAXED);
	pthread_join(b, NULL);
	pthread_join(a, NULL);
	devres_release_all(&dev);
	put_device(&dev);
	return 0;
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void one(enum table t)
{
	char path[] = "/tmp/devres-tsan-report-XXXXXX";
	const char *dir = getenv("TMPDIR");
	char buf[65536], where[512];
	int out, st = 0;
	ssize_t len;
	pid_t pid;

	if (dir) {
		(void)snprintf(where, sizeof(where),
			       "%s/devres-tsan-report-XXXXXX", dir);
		out = mkostemp(where, O_CLOEXEC);
	} else {
		out = mkostemp(path, O_CLOEXEC);
		(void)snprintf(where, sizeof(where), "%s", path);
	}
	assert_true(out >= 0);
	unlink(where);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(cell(t, out));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	len = pread(out, buf, sizeof(buf) - 1, 0);
	close(out);
	assert_true(len >= 0);
	buf[len] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) ||
	    count(buf, "WARNING: ThreadSanitizer") != 1 ||
	    !strstr(buf, "thread_b") || !strstr(buf, "thread_a")) {
		fprintf(stderr, "%s\n", buf);
		fail_msg("%s: the child %s %d, with %d reports", names[t],
			 WIFSIGNALED(st) ? "was killed by signal" : "exited",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
			 count(buf, "WARNING: ThreadSanitizer"));
	}
}

static void maps(void **state)
{
	(void)state;
	one(T_MAPS);
}

static void fds(void **state)
{
	(void)state;
	one(T_FDS);
}

static void streams(void **state)
{
	(void)state;
	one(T_STREAMS);
}

static void threads(void **state)
{
	(void)state;
	one(T_THREADS);
}

static void all(void **state)
{
	(void)state;
	one(T_ALL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(maps),	   cmocka_unit_test(fds),
		cmocka_unit_test(streams), cmocka_unit_test(threads),
		cmocka_unit_test(all),
	};

	return cmocka_run_group_tests_name("posix-tsan-report", tests, NULL,
					   NULL);
}
