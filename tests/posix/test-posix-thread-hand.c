// SPDX-License-Identifier: MIT
/* ctest-labels: tsan */
/*
 * A managed thread given to libc's join or detach calls by hand: every
 * call (pthread_join, pthread_tryjoin_np, pthread_timedjoin_np,
 * pthread_clockjoin_np, pthread_detach, and C11's thrd_join and
 * thrd_detach, which glibc makes with its own join and detach inside:
 * those were let through) from every place (the thread
 * itself, another thread, a child of fork() for its own thread), with the
 * thread running or ended, is refused with EINVAL (thrd_error) and one
 * WARN, and the
 * release still stops and joins it once. Before the library defined these
 * names, the release joined a thread joined or detached by hand a second
 * time, which POSIX leaves undefined.
 * Threads the library does not manage are joined and detached as ever,
 * also when one takes an identifier a stopped managed thread had.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

/*
 * The child of fork() starts threads; the parent's one thread sleeps in
 * ppoll() meanwhile, holding no allocator lock.
 */
/* NOLINTBEGIN(bugprone-reserved-identifier): the sanitizer's name. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
/* NOLINTEND(bugprone-reserved-identifier) */

enum hand_call {
	H_JOIN,
	H_TRYJOIN,
	H_TIMEDJOIN,
	H_CLOCKJOIN,
	H_DETACH,
	H_THRD_JOIN,
	H_THRD_DETACH,
	H_NR,
};

static const char *const call_name[H_NR] = {
	"pthread_join",		"pthread_tryjoin_np", "pthread_timedjoin_np",
	"pthread_clockjoin_np", "pthread_detach",     "thrd_join",
	"thrd_detach",
};

/*
 * ThreadSanitizer's pthread_join() and pthread_detach() interceptors
 * forget the thread before the call, and remember it again only when the
 * call succeeds: after a refused one, the release's own join makes it
 * abort ("tid < kMaxTid"). Its build leaves those two calls to the others
 * (dev, ASan), and tests the timed and trying joins, which it restores.
 */
static bool tsan_forgets(int c)
{
#ifdef T_TSAN
	return c == H_JOIN || c == H_DETACH || c == H_THRD_JOIN ||
	       c == H_THRD_DETACH;
#else
	(void)c;
	return false;
#endif
}

/* ThreadSanitizer has no pthread_clockjoin_np() interceptor, nor any for
 * the C11 calls: a thread joined with one stays registered there, and the
 * next thread given its identifier aborts the run. */
static bool tsan_unseen(int c)
{
#ifdef T_TSAN
	return c == H_CLOCKJOIN || c == H_THRD_JOIN || c == H_THRD_DETACH;
#else
	(void)c;
	return false;
#endif
}

/* A C11 call's result as the pthread calls give theirs. */
static int thrd_err(int r)
{
	return r == thrd_success ? 0 : r == thrd_error ? EINVAL : -1;
}

static int hand(enum hand_call c, pthread_t tid)
{
	struct timespec ts;
	void *ret;
	int res;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	switch (c) {
	case H_JOIN:
		return pthread_join(tid, &ret);
	case H_TRYJOIN:
		return pthread_tryjoin_np(tid, &ret);
	case H_TIMEDJOIN:
		return pthread_timedjoin_np(tid, &ret, &ts);
	case H_CLOCKJOIN:
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		return pthread_clockjoin_np(tid, &ret, CLOCK_MONOTONIC, &ts);
	case H_THRD_JOIN:
		return thrd_err(thrd_join((thrd_t)tid, &res));
	case H_THRD_DETACH:
		return thrd_err(thrd_detach((thrd_t)tid));
	default:
		return pthread_detach(tid);
	}
}

static long ledger_threads(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.threads;
}

struct worker {
	pthread_t self;
	int started;
	int call; /* -1: none; else a hand_call made by the thread itself */
	int err;
	int end; /* 0: wait for the stop; 1: return at once */
};

static int worker_fn(void *arg)
{
	struct worker *w = arg;

	w->self = pthread_self();
	if (w->call >= 0)
		w->err = hand((enum hand_call)w->call, pthread_self());
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	while (!w->end && !devres_thread_should_stop())
		devres_thread_sleep(60000);
	return 7;
}

static void wait_started(struct worker *w)
{
	while (!__atomic_load_n(&w->started, __ATOMIC_ACQUIRE))
		usleep(100);
}

/* A plain thread, joined by hand: never refused, never WARNed. */
static void *plain_fn(void *arg)
{
	return arg;
}

static void plain_thread_joins(enum hand_call c)
{
	pthread_t tid;
	void *ret = NULL;

	if (tsan_unseen(c))
		c = H_JOIN;
	assert_int_equal(pthread_create(&tid, NULL, plain_fn, &ret), 0);
	if (c == H_DETACH || c == H_THRD_DETACH) {
		assert_int_equal(hand(c, tid), 0);
		return;
	}
	if (c == H_TRYJOIN) {
		/* Busy until it ended; then joined. */
		int err;

		while ((err = hand(c, tid)) == EBUSY)
			usleep(100);
		assert_int_equal(err, 0);
		return;
	}
	assert_int_equal(hand(c, tid), 0);
}

/*
 * Each call on the managed thread, from the test's thread (another
 * thread), with the thread running, then with it ended (returned, not yet
 * joined): refused, one WARN each; the release joins it, and its value
 * is the function's.
 */
static void from_another_thread(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();

	for (int c = 0; c < H_NR; c++) {
		if (tsan_forgets(c))
			continue;
		for (int end = 0; end < 2; end++) {
			struct worker w = { .call = -1, .end = end };
			struct devres_thread *t;

			t = devm_thread_run(dev, worker_fn, &w, "hand");
			assert_false(IS_ERR(t));
			wait_started(&w);
			if (end)
				usleep(2000);
			start_capture();
			assert_int_equal(hand((enum hand_call)c, w.self),
					 EINVAL);
			expect_warn(call_name[c], "thread 'hand' started with "
						  "devm_thread_run(): use "
						  "devm_thread_stop(); "
						  "refused, the thread stays "
						  "managed");
			start_capture();
			assert_int_equal(devm_thread_stop(dev, t), 7);
			expect_no_warn();
			assert_int_equal(ledger_threads(), threads);
		}
	}
}

/* The thread detaching or joining itself: refused the same way. */
static void from_the_thread_itself(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();

	for (int c = 0; c < H_NR; c++) {
		struct worker w = { .call = c };

		if (tsan_forgets(c))
			continue;

		start_capture();
		assert_false(
			IS_ERR(devm_thread_run(dev, worker_fn, &w, "hand")));
		wait_started(&w);
		assert_int_equal(w.err, EINVAL);
		expect_warn(call_name[c], "thread 'hand' started with "
					  "devm_thread_run(): "
					  "use devm_thread_stop(); refused, "
					  "the thread "
					  "stays managed");
		start_capture();
		assert_int_equal(devres_release_all(dev), 1);
		expect_no_warn();
		assert_int_equal(ledger_threads(), threads);
	}
}

/*
 * Once stopped, a thread is no longer the library's: plain threads made
 * after it (glibc hands their identifiers out again) join and detach
 * without a WARN, with every call.
 */
static void stopped_thread_is_forgotten(void **state)
{
	struct device *dev = *state;

	for (int round = 0; round < 50; round++) {
		struct worker w = { .call = -1, .end = 1 };
		struct devres_thread *t;

		t = devm_thread_run(dev, worker_fn, &w, "gone");
		assert_false(IS_ERR(t));
		wait_started(&w);
		assert_int_equal(devm_thread_stop(dev, t), 7);
		start_capture();
		for (int c = 0; c < H_NR; c++)
			plain_thread_joins((enum hand_call)c);
		expect_no_warn();
	}
}

/*
 * A thread that releases its own device is let go by the library (it
 * detaches it): that detach is the library's own, and not refused.
 */
static int self_release_fn(void *arg)
{
	struct device *dev = arg;

	devres_release_all(dev);
	return 0;
}

static void self_release_detach_is_not_refused(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();

	for (int i = 0; i < 20; i++) {
		start_capture();
		assert_false(IS_ERR(
			devm_thread_run(dev, self_release_fn, dev, "self")));
		for (int j = 0; j < 5000 && ledger_threads() != threads; j++)
			usleep(1000);
		assert_int_equal(ledger_threads(), threads);
		/* The one WARN is the self-release's, not a refusal. */
		assert_int_equal(count_prefix("WARNING: test-dev: "
					      "devm_thread_run:"),
				 1);
		assert_int_equal(count_prefix("WARNING: test-dev: pthread_"),
				 0);
		assert_int_equal(count_prefix("WARNING: test-dev: thrd_"), 0);
	}
}

/* Several threads trying every call at once on one managed thread. */
struct attacker {
	pthread_t tid;
	int refused;
};

static void *attack_fn(void *arg)
{
	struct attacker *a = arg;

	for (int i = 0; i < 40; i++) {
		int c = i % H_NR;

		/*
		 * Concurrent joins race inside ThreadSanitizer's own record
		 * of the thread: its build attacks with the one call it does
		 * not intercept.
		 */
#ifdef T_TSAN
		c = H_CLOCKJOIN;
#endif
		a->refused += hand((enum hand_call)c, a->tid) == EINVAL;
	}
	return NULL;
}

static void concurrent_hand_calls(void **state)
{
	struct device *dev = *state;
	long threads = ledger_threads();
	struct worker w = { .call = -1 };
	struct attacker a[4];
	pthread_t at[4];

	assert_false(IS_ERR(devm_thread_run(dev, worker_fn, &w, "busy")));
	wait_started(&w);
	start_capture();
	for (int i = 0; i < 4; i++) {
		a[i] = (struct attacker){ .tid = w.self };
		assert_int_equal(pthread_create(&at[i], NULL, attack_fn, &a[i]),
				 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(at[i], NULL), 0);
		assert_int_equal(a[i].refused, 40);
	}
	assert_int_equal(cap.n, 160);
	assert_int_equal(count_prefix("WARNING: test-dev: pthread_") +
				 count_prefix("WARNING: test-dev: thrd_"),
			 160);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(ledger_threads(), threads);
}

/*
 * A child of fork() manages threads of its own: its hand calls on them are
 * refused as in any process; its plain threads join as ever.
 */
static void in_a_child_of_fork(void **state)
{
	struct device *dev = *state;
	struct worker pw = { .call = -1 };
	pid_t pid;
	int status;

	/*
	 * ThreadSanitizer keeps the parent's threads in the child and aborts
	 * when a child's thread gets one's identifier: dev and ASan only.
	 */
#ifdef T_TSAN
	skip();
#endif

	assert_false(IS_ERR(devm_thread_run(dev, worker_fn, &pw, "parent")));
	wait_started(&pw);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct device *own = heap_dev(NULL, "child-dev");
		struct worker w = { .call = -1 };
		int bad = 0;

		if (!own || IS_ERR(devm_thread_run(own, worker_fn, &w, "kid")))
			_exit(10);
		wait_started(&w);
		for (int c = 0; c < H_NR; c++)
			if (!tsan_forgets(c))
				bad += hand((enum hand_call)c, w.self) !=
				       EINVAL;
		for (int c = 0; c < H_NR; c++)
			plain_thread_joins((enum hand_call)c);
		if (devres_release_all(own) != 1)
			bad++;
		_exit(bad ? 11 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_no_warn();
}

static int setup(void **state)
{
	alarm(120);
	return dev_setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(from_another_thread, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(from_the_thread_itself, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(stopped_thread_is_forgotten,
						setup, dev_teardown),
		cmocka_unit_test_setup_teardown(
			self_release_detach_is_not_refused, setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(concurrent_hand_calls, setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(in_a_child_of_fork, setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
