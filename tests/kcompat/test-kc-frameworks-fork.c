// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The frameworks' registrations and the completions in a child of fork()
 * (docs/fork.md): a parent with an rng, a started watchdog, an rtc
 * registered and a completion forks. In
 * each child, every call that would run a driver's method on a parent's
 * registration, or take it back, WARNs once and does nothing (each ran
 * the parent's driver on the parent's device, and a parent's thread
 * holding the hwrng lock at the fork left it held in the child); a
 * lookup by name skips the parent's rng without a word, and the child
 * registers, reads and unregisters an rng of its own under the same name.
 * Each completion call on the parent's completion WARNs and does nothing
 * (a wait returns at once, timed out): a parent's thread may have held
 * its lock at the fork, and what would complete it is in the parent;
 * init_completion() makes it the child's.
 * In the dev build a thread reads the parent's rng throughout, so that
 * the hwrng lock is taken at the moment of the fork (the sanitizers'
 * allocators are not fork-safe with a running thread: there the parent
 * forks alone). A child that does not finish in 10 s fails the test.
 * The parent's registrations work on, and go once.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/completion.h>
#include <linux/hw_random.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kcompat/kctest.h"

#define CHILDREN 4
#define CHILD_ALARM_S 10

static int method_calls; /* __atomic: every driver method counts */

static int count(void)
{
	return __atomic_add_fetch(&method_calls, 1, __ATOMIC_SEQ_CST);
}

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)rng;
	(void)wait;
	count();
	memset(data, 7, max < 4 ? max : 4);
	return max < 4 ? (int)max : 4;
}

static int wdt_op(struct watchdog_device *wdd)
{
	(void)wdd;
	count();
	return 0;
}

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	count();
	memset(tm, 0, sizeof(*tm));
	tm->tm_mday = 1;
	tm->tm_year = 100;
	return 0;
}

static int rtc_set(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	(void)tm;
	count();
	return 0;
}

static const struct watchdog_ops wdt_ops = { .start = wdt_op,
					     .stop = wdt_op,
					     .ping = wdt_op };
static const struct watchdog_info wdt_info = { .identity = "fork" };
static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read,
					      .set_time = rtc_set };

static struct hwrng prng = { .name = "pf", .read = rng_read };
static struct hwrng crng = { .name = "pf", .read = rng_read };
static struct watchdog_device wdd = { .ops = &wdt_ops, .info = &wdt_info };
static struct rtc_device *rtc;
static struct completion pc;
static bool stop;

static void *reader(void *arg)
{
	u8 b[4];

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		(void)hwrng_read("pf", b, sizeof(b), false);
		complete(&pc);
		(void)try_wait_for_completion(&pc);
	}
	return NULL;
}

/* In the child: no cmocka, the failing line is the exit status. */
#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c))                                                      \
			_exit(__LINE__ & 0xff ? __LINE__ & 0xff : 1);          \
	} while (0)

static void child(void)
{
	int warns = devres_warn_count(), calls;
	struct rtc_time tm = { .tm_mday = 1, .tm_year = 100 };
	u8 b[4];

	alarm(CHILD_ALARM_S);
	calls = __atomic_load_n(&method_calls, __ATOMIC_SEQ_CST);
	/* A lookup: the parent's rng is not found, without a word. */
	CHECK(hwrng_read("pf", b, sizeof(b), false) == -ENODEV);
	CHECK(devres_warn_count() == warns);
	hwrng_unregister(&prng);
	CHECK(watchdog_dev_start(&wdd) == -ENODEV);
	CHECK(watchdog_dev_ping(&wdd) == -ENODEV);
	CHECK(watchdog_dev_stop(&wdd) == -ENODEV);
	watchdog_unregister_device(&wdd);
	CHECK(watchdog_register_device(&wdd) == -EBUSY);
	CHECK(rtc_read_time(rtc, &tm) == -ENODEV);
	CHECK(rtc_set_time(rtc, &tm) == -ENODEV);
	/* Its node's device is the parent's: that device's WARN first. */
	CHECK(devm_rtc_register_device(rtc) == -EINVAL);
	CHECK(devres_warn_count() == warns + 9);
	CHECK(__atomic_load_n(&method_calls, __ATOMIC_SEQ_CST) == calls);
	/* The parent's completion: each call refused, a wait at once. */
	complete(&pc);
	complete_all(&pc);
	reinit_completion(&pc);
	wait_for_completion(&pc);
	CHECK(wait_for_completion_timeout(&pc, MAX_SCHEDULE_TIMEOUT) == 0);
	CHECK(!completion_done(&pc));
	CHECK(!try_wait_for_completion(&pc));
	CHECK(devres_warn_count() == warns + 16);
	/* Made the child's by init_completion(). */
	init_completion(&pc);
	complete(&pc);
	wait_for_completion(&pc);
	CHECK(!completion_done(&pc));
	/* The child's own rng, under the same name. */
	CHECK(hwrng_register(&crng) == 0);
	CHECK(hwrng_read("pf", b, sizeof(b), false) == 4);
	hwrng_unregister(&crng);
	CHECK(hwrng_read("pf", b, sizeof(b), false) == -ENODEV);
	CHECK(devres_warn_count() == warns + 16);
	_exit(0);
}

static void children_refuse_the_parents(void **state)
{
	struct device *dev = *state;
	struct rtc_time tm;
	pthread_t t;
	u8 b[4];
	bool hammer = true;

#if defined(T_ASAN) || defined(T_TSAN)
	hammer = false;
#endif
	assert_int_equal(hwrng_register(&prng), 0);
	assert_int_equal(watchdog_register_device(&wdd), 0);
	assert_int_equal(watchdog_dev_start(&wdd), 0);
	rtc = devm_rtc_allocate_device(dev);
	assert_false(IS_ERR(rtc));
	rtc->ops = &rtc_ops;
	assert_int_equal(devm_rtc_register_device(rtc), 0);
	init_completion(&pc);
	if (hammer)
		assert_int_equal(pthread_create(&t, NULL, reader, NULL), 0);
	for (int i = 0; i < CHILDREN; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)
			child();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			print_error("child: %s %d\n",
				    WIFEXITED(status) ? "line (mod 256)"
						      : "signal",
				    WIFEXITED(status) ? WEXITSTATUS(status)
						      : WTERMSIG(status));
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	if (hammer) {
		__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	/* The parent's work on, and go once. */
	assert_int_equal(hwrng_read("pf", b, sizeof(b), false), 4);
	assert_int_equal(watchdog_dev_ping(&wdd), 0);
	assert_int_equal(rtc_read_time(rtc, &tm), 0);
	complete(&pc);
	assert_int_equal(wait_for_completion_timeout(&pc, 1000) >= 1, 1);
	hwrng_unregister(&prng);
	assert_int_equal(watchdog_dev_stop(&wdd), 0);
	watchdog_unregister_device(&wdd);
	assert_int_equal(devres_release_all(dev), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(children_refuse_the_parents,
						dev_setup, dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
