// SPDX-License-Identifier: MIT
/* ctest-labels: tsan */
/*
 * Managed threads: devm_thread_run, devm_thread_stop, the stop flag, the
 * sleeps a stop interrupts, the stop timeout, and the hostile cases: a
 * thread that releases its own device, a release from another thread while
 * the thread sleeps, a thread that never looks at its stop flag.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/posix.h>
#include "testlib.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long ledger_threads(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.threads;
}

/* Set by a thread function with release order, read with acquire. */
static int flag_get(const int *f)
{
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static void flag_set(int *f, int v)
{
	__atomic_store_n(f, v, __ATOMIC_RELEASE);
}

/* Waits up to 5 s for *f to become non-zero; true if it did. */
static bool wait_flag(const int *f)
{
	for (int i = 0; i < 5000 && !flag_get(f); i++)
		devres_thread_sleep(1);
	return flag_get(f) != 0;
}

struct sleeper {
	int started;
	int loops;
	int sleep_ret;
	char name[16];
};

static int sleeper_fn(void *arg)
{
	struct sleeper *s = arg;

	pthread_getname_np(pthread_self(), s->name, sizeof(s->name));
	flag_set(&s->started, 1);
	while (!devres_thread_should_stop()) {
		s->sleep_ret = devres_thread_sleep(60000);
		s->loops++;
	}
	return 7;
}

static void test_run_and_release(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct sleeper s = { 0 };
	struct devres_thread *t;
	double t0;
	char *dump;

	t = devm_thread_run(dev, sleeper_fn, &s, "a-long-worker-name");
	assert_false(IS_ERR_OR_NULL(t));
	assert_true(wait_flag(&s.started));
	assert_int_equal(ledger_threads(), threads + 1);
	dump = dump_to_string(dev);
	assert_int_equal(count_substr(dump, "devm_thread_run"), 1);
	free(dump);
	/* The stop wakes a 60 s sleep at once. */
	t0 = now_s();
	assert_int_equal(devres_release_all(dev), 1);
	assert_true(now_s() - t0 < 2.0);
	assert_int_equal(ledger_threads(), threads);
	assert_string_equal(s.name, "a-long-worker-n");
	assert_int_equal(s.loops, 1);
	assert_int_equal(s.sleep_ret, -EINTR);
}

static void test_stop_returns_fn_value(void **state)
{
	struct device *dev = *state;
	struct sleeper s = { 0 };
	struct devres_thread *t;

	t = devm_thread_run(dev, sleeper_fn, &s, NULL);
	assert_false(IS_ERR(t));
	assert_int_equal(devm_thread_stop(dev, t), 7);
	expect_stats(dev, 0, 0);
	/* Gone: a second stop is a misuse. */
	start_capture();
	assert_int_equal(devm_thread_stop(dev, t), -EINVAL);
	expect_warn("devm_thread_stop", "is not managed by this device");
}

static int quick_fn(void *arg)
{
	return *(int *)arg;
}

static void test_stop_after_fn_returned(void **state)
{
	struct device *dev = *state;
	struct devres_thread *t;
	int v = 5;

	t = devm_thread_run(dev, quick_fn, &v, "quick");
	assert_false(IS_ERR(t));
	devres_thread_sleep(20);
	assert_int_equal(devm_thread_stop(dev, t), 5);
}

struct waiter {
	int efd;
	int ready;
	int events;
	int last;
};

/* Counts the events of an eventfd until asked to stop. */
static int waiter_fn(void *arg)
{
	struct waiter *w = arg;
	uint64_t v;
	int ret;

	flag_set(&w->ready, 1);
	while ((ret = devres_thread_wait_fd(w->efd, POLLIN, -1)) > 0) {
		if (read(w->efd, &v, sizeof(v)) == sizeof(v))
			__atomic_add_fetch(&w->events, (int)v,
					   __ATOMIC_RELEASE);
	}
	w->last = ret;
	return 0;
}

static void test_wait_fd(void **state)
{
	struct device *dev = *state;
	struct waiter w = { 0 };
	uint64_t one = 1;

	w.efd = devm_eventfd(dev, 0, EFD_NONBLOCK);
	assert_true(w.efd >= 0);
	assert_false(IS_ERR(devm_thread_run(dev, waiter_fn, &w, "waiter")));
	assert_true(wait_flag(&w.ready));
	assert_int_equal(write(w.efd, &one, sizeof(one)), sizeof(one));
	for (int i = 0; i < 5000 && !flag_get(&w.events); i++)
		devres_thread_sleep(1);
	assert_int_equal(flag_get(&w.events), 1);
	/* The thread goes first (it was added last), then its eventfd. */
	assert_int_equal(devres_release_all(dev), 2);
	assert_int_equal(w.last, -EINTR);
}

static void test_waits_outside_a_managed_thread(void **state)
{
	uint64_t one = 1;
	int efd;

	(void)state;
	assert_false(devres_thread_should_stop());
	assert_int_equal(devres_thread_sleep(1), 0);
	assert_int_equal(devres_thread_sleep(0), 0);
	efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	assert_int_equal(devres_thread_wait_fd(efd, POLLIN, 0), 0);
	assert_int_equal(devres_thread_wait_fd(efd, POLLIN, 5), 0);
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	assert_int_equal(devres_thread_wait_fd(efd, POLLIN, -1), POLLIN);
	close(efd);
	assert_int_equal(devres_thread_wait_fd(-1, POLLIN, 0), -EBADF);
	/* A closed descriptor: poll says POLLNVAL, which is -EBADF. */
	assert_int_equal(devres_thread_wait_fd(efd, POLLIN, 0), -EBADF);
}

static void test_run_bad_input_and_faults(void **state)
{
	struct device *dev = *state;
	static const long want[] = { -ENOMEM, -ENOMEM, -EMFILE, -ENOMEM,
				     -EAGAIN };
	struct devres_ledger before, after;
	struct sleeper s = { 0 };
	struct devres_thread *t;

	start_capture();
	assert_ptr_equal(devm_thread_run(dev, NULL, NULL, "x"),
			 ERR_PTR(-EINVAL));
	expect_warn("devm_thread_run", "NULL thread function");
	start_capture();
	assert_ptr_equal(devm_thread_run(NULL, quick_fn, NULL, "x"),
			 ERR_PTR(-EINVAL));
	expect_warn_on("(no device)", "devm_thread_run", "NULL device");
	start_capture();
	devres_thread_set_stop_timeout(NULL, 1);
	expect_warn_on("(no device)", "devres_thread_set_stop_timeout",
		       "NULL thread");
	start_capture();
	devres_thread_set_stop_timeout(ERR_PTR(-ENOMEM), 1);
	expect_warn_on("(no device)", "devres_thread_set_stop_timeout",
		       "thread is ERR_PTR(-12)");
	start_capture();
	assert_int_equal(devm_thread_stop(dev, NULL), -EINVAL);
	expect_warn("devm_thread_stop", "is not managed by this device");

	/*
	 * Each of the five acquisitions fails as the real one would, the
	 * record of a hand join's check (the fourth) before the thread
	 * starts: nothing is left, no thread, no descriptor, no node.
	 */
	devres_ledger_snapshot(&before);
	for (unsigned int n = 1; n <= 5; n++) {
		devres_fail_nth(n);
		t = devm_thread_run(dev, sleeper_fn, &s, "faulty");
		assert_int_equal(devres_fail_nth_get(), 0);
		assert_int_equal(PTR_ERR(t), want[n - 1]);
		devres_ledger_snapshot(&after);
		assert_int_equal(devres_ledger_diff(&before, &after, stderr),
				 0);
	}
	devres_fail_nth(6);
	t = devm_thread_run(dev, sleeper_fn, &s, "faulty");
	devres_fail_nth(0);
	assert_false(IS_ERR(t));
	expect_stats(dev, 1, (int)sizeof(void *));
	/* Stopped here: it writes to @s, which ends with this function. */
	assert_int_equal(devm_thread_stop(dev, t), 7);
}

struct self_release {
	struct device *dev;
	struct devres_thread *self;
	int published;
	int fd;
	int stop_ret;
	int released;
	int done;
	int should_stop;
};

/* Releases its own device, itself included. */
static int self_release_fn(void *arg)
{
	struct self_release *s = arg;

	if (!wait_flag(&s->published))
		return -1;
	s->stop_ret = devm_thread_stop(s->dev, s->self) == -EDEADLK;
	s->released = devres_release_all(s->dev);
	s->should_stop = devres_thread_should_stop();
	flag_set(&s->done, 1);
	return 0;
}

static void test_thread_releases_its_own_device(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct self_release s = { .dev = dev };
	struct devres_thread *t;

	s.fd = devm_eventfd(dev, 0, 0);
	assert_true(s.fd >= 0);
	start_capture();
	t = devm_thread_run(dev, self_release_fn, &s, "self");
	assert_false(IS_ERR(t));
	s.self = t;
	flag_set(&s.published, 1);
	assert_true(wait_flag(&s.done));
	/* Refused with a WARN each, no deadlock; the rest was released. */
	assert_int_equal(count_prefix("WARNING: test-dev: devm_thread_stop: "
				      "thread 'self' cannot stop itself"),
			 1);
	assert_int_equal(count_prefix("WARNING: test-dev: devm_thread_run: "
				      "thread 'self' releases its own device's "
				      "resources"),
			 1);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(s.stop_ret, 1);
	assert_int_equal(s.released, 2);
	assert_true(s.should_stop);
	assert_true(fcntl(s.fd, F_GETFD) < 0);
	expect_stats(dev, 0, 0);
	/* Once its function returned, the thread gave back what it held. */
	for (int i = 0; i < 5000 && ledger_threads() != threads; i++)
		devres_thread_sleep(1);
	assert_int_equal(ledger_threads(), threads);
}

struct releaser {
	struct device *dev;
	double took;
	int ret;
};

static void *release_from_elsewhere(void *arg)
{
	struct releaser *r = arg;
	double t0 = now_s();

	r->ret = devres_release_all(r->dev);
	r->took = now_s() - t0;
	return NULL;
}

static void test_release_from_another_thread_while_sleeping(void **state)
{
	struct device *dev = *state;
	struct releaser r[2] = { { .dev = dev }, { .dev = dev } };
	struct sleeper s[3] = { { 0 } };
	pthread_t tid[2];

	for (int i = 0; i < 3; i++) {
		assert_false(IS_ERR(
			devm_thread_run(dev, sleeper_fn, &s[i], "sleeper")));
		assert_true(wait_flag(&s[i].started));
	}
	/* Two releases race: every thread is joined once, by one of them. */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&tid[i], NULL,
						release_from_elsewhere, &r[i]),
				 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(tid[i], NULL), 0);
	assert_int_equal(r[0].ret + r[1].ret, 3);
	assert_true(r[0].took < 2.0 && r[1].took < 2.0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(s[i].sleep_ret, -EINTR);
}

/* Never looks at its stop flag: works 300 ms, then returns. */
static int deaf_fn(void *arg)
{
	struct timespec ts = { 0, 300 * 1000000L };

	flag_set(arg, 1);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return 3;
}

static void test_stop_timeout_warns_then_joins(void **state)
{
	struct device *dev = *state;
	struct devres_thread *t;
	int started = 0;
	double t0;

	t = devm_thread_run(dev, deaf_fn, &started, "deaf");
	assert_false(IS_ERR(t));
	devres_thread_set_stop_timeout(t, 50);
	assert_true(wait_flag(&started));
	start_capture();
	t0 = now_s();
	assert_int_equal(devm_thread_stop(dev, t), 3);
	expect_warn("devm_thread_stop", "thread 'deaf' did not stop within 50 "
					"ms: waiting on");
	/* Joined, not abandoned: the stop took the thread's whole 300 ms. */
	assert_true(now_s() - t0 >= 0.2);

	/* The same through a release. */
	started = 0;
	t = devm_thread_run(dev, deaf_fn, &started, "deaf");
	assert_false(IS_ERR(t));
	devres_thread_set_stop_timeout(t, 10);
	assert_true(wait_flag(&started));
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_warn("devm_thread_run", "did not stop within 10 ms");
}

struct user {
	int *buf;
	int started;
};

/* Writes into a managed buffer until stopped: must never outlive it. */
static int user_fn(void *arg)
{
	struct user *u = arg;

	flag_set(&u->started, 1);
	while (!devres_thread_should_stop()) {
		u->buf[0]++;
		devres_thread_sleep(1);
	}
	u->buf[1] = 1;
	return 0;
}

static void test_thread_stops_before_older_resources(void **state)
{
	struct device *dev = *state;
	struct user u = { 0 };

	u.buf = devm_kcalloc(dev, 2, sizeof(int), GFP_KERNEL);
	assert_non_null(u.buf);
	assert_false(IS_ERR(devm_thread_run(dev, user_fn, &u, "user")));
	assert_true(wait_flag(&u.started));
	/* ASan and TSan see any write into the buffer after it is freed. */
	assert_int_equal(devres_release_all(dev), 2);
}

#define NRACE 8

struct race {
	struct device *dev;
	int fd[NRACE];
	void *map[NRACE];
	struct devres_thread *t;
	int go;
	int stop_ret;
};

/* Gives each resource back by hand while the owner releases them all. */
static void *close_by_hand(void *arg)
{
	struct race *r = arg;

	while (!flag_get(&r->go))
		;
	for (int i = 0; i < NRACE; i++) {
		devm_close(r->dev, r->fd[i]);
		devm_munmap(r->dev, r->map[i], 4096);
	}
	r->stop_ret = devm_thread_stop(r->dev, r->t);
	return NULL;
}

static void count_line(void *ctx, int level, const char *line)
{
	(void)level;
	/* Only a lost race's WARN may appear: one per resource at most. */
	if (strstr(line, "is not managed by this device") ||
	    strstr(line, "is not mapped by this device"))
		__atomic_add_fetch((int *)ctx, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch((int *)ctx, 1000, __ATOMIC_RELAXED);
}

/*
 * devm_close, devm_munmap and devm_thread_stop race devres_release_all:
 * each resource is given back once, by one of them, whoever wins.
 */
static void test_explicit_release_races_release_all(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct sleeper s = { 0 };
	int warns = 0;

	for (int round = 0; round < 50; round++) {
		struct race r = { .dev = dev };
		pthread_t tid;
		int released;

		for (int i = 0; i < NRACE; i++) {
			r.fd[i] = devm_eventfd(dev, 0, 0);
			assert_true(r.fd[i] >= 0);
			r.map[i] = devm_mmap(dev, NULL, 4096, PROT_READ,
					     MAP_PRIVATE | MAP_ANONYMOUS, -1,
					     0);
			assert_false(IS_ERR(r.map[i]));
		}
		r.t = devm_thread_run(dev, sleeper_fn, &s, "racer");
		assert_false(IS_ERR(r.t));
		warns = 0;
		devres_set_log_sink(count_line, &warns);
		assert_int_equal(pthread_create(&tid, NULL, close_by_hand, &r),
				 0);
		flag_set(&r.go, 1);
		released = devres_release_all(dev);
		assert_int_equal(pthread_join(tid, NULL), 0);
		devres_set_log_sink(NULL, NULL);
		/*
		 * Each resource release_all took is one the other thread
		 * WARNs about, and there is no other WARN (no double close).
		 */
		assert_int_equal(warns, released);
		assert_true(r.stop_ret == 7 || r.stop_ret == -EINVAL);
		expect_stats(dev, 0, 0);
	}
	assert_int_equal(ledger_threads(), threads);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)
		T(test_run_and_release),
		T(test_stop_returns_fn_value),
		T(test_stop_after_fn_returned),
		T(test_wait_fd),
		T(test_waits_outside_a_managed_thread),
		T(test_run_bad_input_and_faults),
		T(test_thread_releases_its_own_device),
		T(test_release_from_another_thread_while_sleeping),
		T(test_stop_timeout_warns_then_joins),
		T(test_thread_stops_before_older_resources),
		T(test_explicit_release_races_release_all),
#undef T
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
