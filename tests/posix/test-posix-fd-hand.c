// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A managed descriptor closed by hand, across fork() and across threads,
 * the calls that close nothing, and the close of a twin's number.
 *
 * fork: a worker thread keeps acquiring managed descriptors and closing
 * them by hand (each close takes the table's lock and WARNs) while the
 * main thread forks again and again. Each child, under alarm(), closes
 * its copies of the parent's managed descriptor and stream: no WARN (they
 * are the parent's, and the child's copy of the table is empty); then it
 * acquires a descriptor and a stream of its own on a device of its own
 * and closes them by hand: one WARN each and no node left, so the table
 * works in the child and its lock was not left held by the worker. The
 * parent's descriptor and stream are still managed afterwards: its
 * devm_close() and devm_fclose() find them, with no WARN.
 *
 * threads: close(2) of a managed descriptor on one thread, the device's
 * release on another, many rounds, either started first: the node is
 * dropped once (by the close, with its WARN, or by the release), the
 * ledger is back at its baseline after every round (the twin closed once,
 * the count dropped once), and at most one WARN a round (the close's,
 * when it came first; one that comes during the release waits for it).
 * TSan watches the table.
 *
 * calls that close nothing: dup2() from a closed descriptor, dup2() and
 * dup3() of the number onto itself, dup3() with a flag it refuses,
 * close_range() with its bounds reversed or a flag it does not know,
 * close(-1): each fails (or does nothing) as libc's does, with no WARN,
 * and the descriptor is still open and still managed.
 *
 * a twin's number closed by hand (a program closing numbers it did not
 * open): the twin is moved first, no WARN, and the managed descriptor is
 * still told from a reused number and closed by devm_close() with no
 * WARN; in a child, close_range() from the twin's number to the top
 * leaves no room for it: the node falls back to the file's identity and
 * is still closed cleanly, the ledger back.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/kcmp.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"
#include "posix/hand-close.h"

/* The parent has a worker at each fork; its children start no thread. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

/*
 * The sanitizers' allocators (GCC 12) are not held across fork(): a child
 * forked while the worker allocates would hang in its first malloc(). So
 * under them the worker parks while the main thread forks (docs/fork.md);
 * the dev build forks from a busy worker.
 */
#if defined(T_ASAN) || defined(T_TSAN)
#define PARK 1
#else
#define PARK 0
#endif

#define FORKS 20
#define CHILD_ALARM_S 20
#define RACE_ROUNDS 400

static int stop, park, parked, worker_rounds;

/* The nodes @dev holds. */
static int nodes_of(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return (int)st.allocs;
}

static int load(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void quiet(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

/* On @other: acquire, close by hand, acquire, close managed, again. */
static void *worker(void *arg)
{
	(void)arg;
	while (!load(&stop)) {
		int a = devm_open(&other, "/dev/null", O_RDONLY);
		int b = devm_eventfd(&other, 0, 0);

		if (a >= 0)
			close(a); /* caught: the table's lock, a WARN */
		if (b >= 0)
			devm_close(&other, b);
		__atomic_add_fetch(&worker_rounds, 1, __ATOMIC_RELAXED);
		if (PARK && load(&park)) {
			store(&parked, 1);
			while (load(&park))
				sched_yield();
			store(&parked, 0);
		}
	}
	return NULL;
}

/* The child's side: exits 0 only if every check held. */
static void child(int fd, FILE *f)
{
	struct device mine;
	long warns = devres_warn_count();
	int own;
	FILE *g;

	alarm(CHILD_ALARM_S);
	/* The parent's: closed as any descriptor of the child's. */
	if (close(fd) || fclose(f) || devres_warn_count() != warns)
		_exit(1);
	if (init_dev(&mine, "child-dev"))
		_exit(2);
	own = devm_open(&mine, "/dev/null", O_RDONLY);
	g = devm_fopen(&mine, "/dev/null", "r");
	if (own < 0 || !g)
		_exit(3);
	if (close(own) || devres_warn_count() != warns + 1)
		_exit(4);
	if (fclose(g) || devres_warn_count() != warns + 2)
		_exit(5);
	if (devres_release_all(&mine) != 0)
		_exit(6);
	put_device(&mine);
	_exit(0);
}

static void fork_closes_parents_copy(void **state)
{
	pthread_t t;
	int fd, status;
	long warns;
	FILE *f;

	(void)state;
	fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	f = devm_fopen(&tdev, "/dev/null", "r");
	assert_non_null(f);
	devres_set_log_sink(quiet, NULL);
	store(&stop, 0);
	assert_int_equal(pthread_create(&t, NULL, worker, NULL), 0);
	for (int i = 0; i < FORKS; i++) {
		pid_t pid;

		if (PARK) {
			store(&park, 1);
			while (!load(&parked))
				sched_yield();
		}
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child(fd, f);
		if (PARK)
			store(&park, 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			print_error("child %d: status 0x%x\n", i, status);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	store(&stop, 1);
	pthread_join(t, NULL);
	devres_set_log_sink(NULL, NULL);
	print_message("worker rounds: %d\n", load(&worker_rounds));
	/* Still the parent's, still managed. */
	warns = devres_warn_count();
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(devres_release_all(&other), 0);
	devm_close(&tdev, fd);
	assert_int_equal(devm_fclose(&tdev, f), 0);
	assert_int_equal(devres_warn_count(), warns);
	assert_true(fcntl(fd, F_GETFD) < 0);
}

static int go, ready, race_fd;

static void race_side(bool hand)
{
	if (hand)
		hand_close(race_fd);
	else
		devres_release_all(&tdev);
}

static void *race_other(void *arg)
{
	__atomic_add_fetch(&ready, 1, __ATOMIC_RELEASE);
	while (!load(&go))
		sched_yield();
	race_side(arg != NULL);
	return NULL;
}

static int caught;

static void count_caught(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	if (strstr(text, "close: fd") && strstr(text, "taken off the device"))
		__atomic_add_fetch(&caught, 1, __ATOMIC_RELAXED);
}

static void close_races_release(void **state)
{
	struct devres_ledger before, after;

	(void)state;
	store(&caught, 0);
	devres_set_log_sink(count_caught, NULL);
	for (int i = 0; i < RACE_ROUNDS; i++) {
		bool hand_here = i % 2;
		long warns;
		pthread_t t;

		devres_ledger_snapshot(&before);
		race_fd = devm_open(&tdev, "/dev/null", O_RDONLY);
		assert_true(race_fd >= 0);
		warns = devres_warn_count();
		store(&go, 0);
		store(&ready, 0);
		assert_int_equal(pthread_create(&t, NULL, race_other,
						hand_here ? NULL : &go),
				 0);
		while (!load(&ready))
			sched_yield();
		store(&go, 1);
		race_side(hand_here);
		pthread_join(t, NULL);
		assert_in_range(devres_warn_count() - warns, 0, 1);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
		assert_true(fcntl(race_fd, F_GETFD) < 0);
	}
	devres_set_log_sink(NULL, NULL);
	print_message("the close came first and was caught in %d of %d "
		      "rounds\n",
		      load(&caught), RACE_ROUNDS);
}

static void calls_that_close_nothing(void **state)
{
	int fd, src;
	long warns;

	(void)state;
	fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	src = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(src >= 0);
	warns = devres_warn_count();
	errno = 0;
	assert_int_equal(dup2(900, fd), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(dup2(fd, fd), fd);
	errno = 0;
	assert_int_equal(dup3(fd, fd, 0), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(dup3(src, fd, 0x40000000), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(close_range(fd + 1, fd, 0), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(close_range(fd, fd, 0x40000000), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(close(-1), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(devres_warn_count(), warns);
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(nodes_of(&tdev), 1);
	close(src);
	devm_close(&tdev, fd);
	assert_int_equal(devres_warn_count(), warns);
	assert_true(fcntl(fd, F_GETFD) < 0);
}

static void closing_a_twin(void **state)
{
	int fd, twin, moved;
	long warns;

	(void)state;
	fd = devm_open(&tdev, "/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	twin = twin_of(fd);
	if (twin < 0)
		skip(); /* kcmp() refused here: no twin to move */
	warns = devres_warn_count();
	assert_int_equal(close(twin), 0);
	moved = twin_of(fd);
	assert_true(moved >= 0 && moved != twin);
	assert_int_equal(close_range(moved, moved, 0), 0);
	assert_true(twin_of(fd) >= 0);
	assert_int_equal(devres_warn_count(), warns);
	devm_close(&tdev, fd);
	assert_int_equal(devres_warn_count(), warns);
	assert_true(fcntl(fd, F_GETFD) < 0);
}

/* In a child: close_range() from the twin up, no room left for it. */
static void closing_every_twin(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct devres_ledger before, after;
		struct device mine;
		long warns;
		int fd, twin;

		alarm(CHILD_ALARM_S);
		if (init_dev(&mine, "child-dev"))
			_exit(1);
		devres_ledger_snapshot(&before);
		fd = devm_open(&mine, "/dev/null", O_RDONLY);
		twin = twin_of(fd);
		if (fd < 0 || twin <= fd)
			_exit(twin < 0
				      ? 0
				      : 2); /* no twin, or below: nothing to do */
		warns = devres_warn_count();
		if (close_range(twin, ~0U, 0) || fcntl(twin, F_GETFD) >= 0 ||
		    twin_of(fd) >= 0)
			_exit(3);
		devm_close(&mine, fd);
		devres_ledger_snapshot(&after);
		if (devres_warn_count() != warns || fcntl(fd, F_GETFD) >= 0 ||
		    devres_ledger_diff(&before, &after, stderr))
			_exit(4);
		put_device(&mine);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(calls_that_close_nothing,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(closing_a_twin, dev_setup,
						dev_teardown),
		cmocka_unit_test(closing_every_twin),
		cmocka_unit_test_setup_teardown(fork_closes_parents_copy,
						two_dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(close_races_release, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
