// SPDX-License-Identifier: MIT
/* ctest-labels: stress tsan white-box timeout=300 */
/*
 * The devres lock under contention (src/base/lock.c): mutual exclusion
 * with threads that sleep on the lock word, no thread left behind, a
 * waiter that gets the lock while another thread takes it again and
 * again, a release that does not hold the lock for a starving thread
 * asleep, a child of fork() using devices of its own while the parent's lock is
 * held, and the reaper-vs-allocator pattern (one thread looping on
 * devres_release_all() while another allocates). No timing is asserted:
 * only counts.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "../src/base/node.h"

/* TSan lets no thread start in a child of a threaded fork(). */
#ifdef T_TSAN
#define CHILD_THREADS 0
#else
#define CHILD_THREADS 2
#endif

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Runs with the device's devres lock held: a lost update shows. */
static int window = 50;

static void bump(struct device *dev, void *res, void *data)
{
	volatile long *c = data;
	long v = *c;

	(void)dev;
	(void)res;
	for (volatile int i = 0; i < window; i++)
		;
	*c = v + 1;
}

enum {
	THREADS = 8,
	EACH = 3000
};

struct racer {
	pthread_t t;
	struct device *dev;
	long *counter;
	long done;
};

static pthread_barrier_t start;

static void *race(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < EACH; i++) {
		void *p = devm_kmalloc(r->dev, 64, GFP_KERNEL);

		devres_for_each_res(r->dev, rec, NULL, NULL, bump, r->counter);
		devm_kfree(r->dev, p);
		r->done++;
	}
	return NULL;
}

/*
 * Eight threads on one device, more than the CPUs: threads sleep on the
 * word and are woken; every one finishes its share and no increment made
 * under the lock is lost.
 */
static void test_threads_sleep_and_wake(void **state)
{
	struct device *dev = *state;
	struct racer r[THREADS];
	unsigned long parks =
		__atomic_load_n(&devres__lock_parks, __ATOMIC_RELAXED);
	long counter = 0;

	devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL));
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		r[i] = (struct racer){ .dev = dev, .counter = &counter };
		assert_int_equal(pthread_create(&r[i].t, NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(r[i].t, NULL);
		assert_int_equal(r[i].done, EACH);
	}
	pthread_barrier_destroy(&start);
	assert_int_equal(counter, THREADS * EACH);
	assert_int_equal(devres_check(dev), 0);
	expect_stats(dev, 1, 8);
	print_message("slept on the word: %lu times\n",
		      __atomic_load_n(&devres__lock_parks, __ATOMIC_RELAXED) -
			      parks);
	assert_int_equal(__atomic_load_n(lock_word(dev), __ATOMIC_RELAXED) &
				 (DR_LOCKED | DR_HANDOFF),
			 0);
}

/*
 * A hog takes the lock again as soon as it lets it go, holding it for a
 * while each time; a waiter must still get it while the hog goes on. With
 * barging alone, the waiter (woken at each release) finds the lock taken
 * again every time it runs; the hand-over bounds its wait.
 */
enum {
	HOG_MAX = 20000
};
static long hogged;
static int waiter_got;

static void hold(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	for (volatile int i = 0; i < 20000; i++)
		;
}

static void *hog(void *arg)
{
	struct device *dev = arg;

	while (!__atomic_load_n(&waiter_got, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&hogged, __ATOMIC_RELAXED) < HOG_MAX) {
		devres_for_each_res(dev, rec, NULL, NULL, hold, NULL);
		__atomic_add_fetch(&hogged, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_waiter_not_starved_by_hog(void **state)
{
	struct device *dev = *state;
	unsigned long handoffs =
		__atomic_load_n(&devres__lock_handoffs, __ATOMIC_RELAXED);
	pthread_t t;
	long before;

	hogged = 0;
	waiter_got = 0;
	devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL));
	assert_int_equal(pthread_create(&t, NULL, hog, dev), 0);
	while (__atomic_load_n(&hogged, __ATOMIC_RELAXED) < 10)
		sched_yield();
	before = __atomic_load_n(&hogged, __ATOMIC_RELAXED);
	devres_for_each_res(dev, rec, NULL, NULL, hold, NULL);
	__atomic_store_n(&waiter_got, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	print_message("hog: %ld acquisitions while the waiter waited; "
		      "hand-overs: %lu\n",
		      hogged - before,
		      __atomic_load_n(&devres__lock_handoffs,
				      __ATOMIC_RELAXED) -
			      handoffs);
	assert_true(hogged < HOG_MAX);
	assert_int_equal(devres_check(dev), 0);
}

/*
 * A release never holds the lock for a thread that is not on a CPU: a
 * waiter sleeps on the word while this thread holds the lock, STARVING is
 * set as a starving waiter sets it, and the release, finding nobody to
 * take its hand-over (the sleeper is asleep), takes the lock back and lets
 * it go, so that this thread, taking the lock again at once, comes first.
 * A release that handed the lock to the sleeper kept every thread waiting
 * until the sleeper was woken and scheduled: this thread came second.
 */
static int seq;
static int waiter_seq;
static int waiter_in;

static void take_seq(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	*(int *)data = ++seq;
}

static void *sleeper(void *arg)
{
	__atomic_store_n(&waiter_in, 1, __ATOMIC_RELEASE);
	devres_for_each_res(arg, rec, NULL, NULL, take_seq, &waiter_seq);
	return NULL;
}

static void *first_taker(void *arg)
{
	devres_add(arg, devres_alloc(rec, 8, GFP_KERNEL));
	return NULL;
}

static pthread_t sleeper_t;

/* With the lock held: start the sleeper, wait until it sleeps, starve. */
static void start_sleeper(struct device *dev, void *res, void *data)
{
	unsigned int *l = lock_word(dev);

	(void)res;
	(void)data;
	waiter_in = 0;
	assert_int_equal(pthread_create(&sleeper_t, NULL, sleeper, dev), 0);
	while (!(__atomic_load_n(l, __ATOMIC_ACQUIRE) & DR_PARKED))
		usleep(100);
	usleep(2000); /* past the starving time, asleep in FUTEX_WAIT */
	__atomic_or_fetch(l, DR_STARVING, __ATOMIC_RELAXED);
}

static void test_release_not_held_for_sleeping_starver(void **state)
{
	struct device *dev = *state;
	pthread_t t;
	int mine = 0;

	/* The bias goes to another thread and is revoked: the word is used. */
	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
	/*
	 * This thread, preempted between the release and its next take,
	 * may let the woken sleeper come first (most tries under
	 * ThreadSanitizer on a loaded machine): up to 100 tries. Handing the
	 * lock to the sleeper let this thread come first in none.
	 */
	for (int i = 0; i < 100 && mine != 1; i++) {
		seq = waiter_seq = mine = 0;
		devres_for_each_res(dev, rec, NULL, NULL, start_sleeper, NULL);
		devres_for_each_res(dev, rec, NULL, NULL, take_seq, &mine);
		pthread_join(sleeper_t, NULL);
	}
	assert_int_equal(mine, 1);
	assert_int_equal(waiter_seq, 2);
	/* No hand-over left pending, no STARVING left set. */
	assert_int_equal(__atomic_load_n(lock_word(dev), __ATOMIC_RELAXED) &
				 (DR_LOCKED | DR_HANDOFF | DR_STARVING),
			 0);
}

/*
 * fork() while another thread holds a device's lock: the child's own new
 * devices work, from three threads at once (the child's lock words, its
 * futex waits and the bias it grants are its own; from one thread under
 * TSan, which lets no thread start in such a child).
 */
static int fork_held;
static int fork_done;

static void hold_until_forked(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	__atomic_store_n(&fork_held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&fork_done, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void *holder(void *arg)
{
	devres_for_each_res(arg, rec, NULL, NULL, hold_until_forked, NULL);
	return NULL;
}

static void *child_racer(void *arg)
{
	struct racer *r = arg;

	for (int i = 0; i < EACH; i++) {
		void *p = devm_kmalloc(r->dev, 64, GFP_KERNEL);

		devres_for_each_res(r->dev, rec, NULL, NULL, bump, r->counter);
		devm_kfree(r->dev, p);
		r->done++;
	}
	return NULL;
}

static int child_uses_own_devices(void)
{
	struct device *dev = heap_dev(NULL, "child");
	struct racer r[CHILD_THREADS + 1];
	long counter = 0;
	int ok;

	if (!dev || !devm_kmalloc(dev, 16, GFP_KERNEL)) /* bias: us */
		return 1;
	devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL));
	for (int i = 0; i < CHILD_THREADS; i++) {
		r[i] = (struct racer){ .dev = dev, .counter = &counter };
		if (pthread_create(&r[i].t, NULL, child_racer, &r[i]))
			return 1;
	}
	r[CHILD_THREADS] = (struct racer){ .dev = dev, .counter = &counter };
	child_racer(&r[CHILD_THREADS]);
	for (int i = 0; i < CHILD_THREADS; i++)
		pthread_join(r[i].t, NULL);
	ok = counter == (CHILD_THREADS + 1) * EACH && devres_check(dev) == 0 &&
	     devres_release_all(dev) == 2;
	put_device(dev);
	return ok ? 0 : 1;
}

static void test_fork_while_locked(void **state)
{
	struct device *dev = *state;
	pthread_t t;
	pid_t pid;
	int status;

	fork_held = fork_done = 0;
	devres_add(dev, devres_alloc(rec, 8, GFP_KERNEL));
	assert_int_equal(pthread_create(&t, NULL, holder, dev), 0);
	while (!__atomic_load_n(&fork_held, __ATOMIC_ACQUIRE))
		usleep(1000);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60); /* a deadlock ends the child, not the suite */
		_exit(child_uses_own_devices());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	__atomic_store_n(&fork_done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(devres_check(dev), 0);
}

/*
 * The reaper and the allocator: one thread loops on devres_release_all()
 * while this one allocates (as test-devres's test_fill_races_release_all,
 * with more rounds). DEVRES_LOCK_ROUNDS sets the rounds, and then the
 * test prints its wall-clock and CPU time and the load average (the
 * figure in docs/PERFORMANCE.md is 200 000 under ASan).
 */
static int reaping_done;

static void discard_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static double reaper_cpu;
static struct rusage reaper_ru;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *reaper(void *arg)
{
	long n = 0;

	while (!__atomic_load_n(&reaping_done, __ATOMIC_ACQUIRE)) {
		devres_release_all(arg);
		n++;
	}
	reaper_cpu = thread_cpu();
	getrusage(RUSAGE_THREAD, &reaper_ru);
	return (void *)n;
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static double tv_secs(struct timeval a, struct timeval b)
{
	return (double)(b.tv_sec - a.tv_sec) +
	       (double)(b.tv_usec - a.tv_usec) / 1e6;
}

/*
 * A thread's user and system time, its page faults (fresh memory, each
 * faulted in) and its context switches: voluntary ones are sleeps on the
 * lock word, involuntary ones the scheduler's preemptions on a loaded
 * machine. The thread's usage between @a and @b.
 */
static void print_ru(const char *who, const struct rusage *a,
		     const struct rusage *b)
{
	printf("  %s: user %.2f s, system %.2f s, %ld minor faults, "
	       "%ld voluntary and %ld involuntary context switches\n",
	       who, tv_secs(a->ru_utime, b->ru_utime),
	       tv_secs(a->ru_stime, b->ru_stime), b->ru_minflt - a->ru_minflt,
	       b->ru_nvcsw - a->ru_nvcsw, b->ru_nivcsw - a->ru_nivcsw);
}

static void test_reaper_vs_allocator(void **state)
{
	struct device *dev = *state;
	const char *env = getenv("DEVRES_LOCK_ROUNDS");
	long rounds = env ? atol(env) : 20000;
	struct timespec w0, w1, c0, c1;
	double load[3] = { -1, -1, -1 }, cpu0 = thread_cpu();
	unsigned long parks =
		__atomic_load_n(&devres__lock_parks, __ATOMIC_RELAXED);
	unsigned long handoffs =
		__atomic_load_n(&devres__lock_handoffs, __ATOMIC_RELAXED);
	struct rusage ru0, ru1, none = { 0 };
	void *reaped;
	pthread_t t;

	getrusage(RUSAGE_THREAD, &ru0);
	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	reaping_done = 0;
	devres_set_log_sink(discard_sink, NULL);
	assert_int_equal(pthread_create(&t, NULL, reaper, dev), 0);
	for (long i = 0; i < rounds; i++) {
		void *p = devm_kmalloc(dev, 8, GFP_KERNEL);

		devm_kstrdup(dev, "reaped", GFP_KERNEL);
		devm_kasprintf(dev, GFP_KERNEL, "reaped %ld", i);
		/* WARNs when the reaper freed p first. */
		devm_krealloc(dev, p, 200, GFP_KERNEL | __GFP_ZERO);
		devm_get_free_pages(dev, GFP_KERNEL | __GFP_ZERO, 0);
	}
	__atomic_store_n(&reaping_done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, &reaped), 0);
	devres_set_log_sink(NULL, NULL);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	getrusage(RUSAGE_THREAD, &ru1);
	if (env && getloadavg(load, 3) >= 0)
		printf("reaper vs allocator: %ld rounds, %ld releases: %.2f s, "
		       "CPU %.2f s, load average %.2f %.2f %.2f\n",
		       rounds, (long)reaped, secs(&w0, &w1), secs(&c0, &c1),
		       load[0], load[1], load[2]);
	if (env)
		printf("  CPU: allocator %.2f s, reaper %.2f s; slept on the "
		       "word %lu times, took it handed over %lu times\n",
		       thread_cpu() - cpu0, reaper_cpu,
		       __atomic_load_n(&devres__lock_parks, __ATOMIC_RELAXED) -
			       parks,
		       __atomic_load_n(&devres__lock_handoffs,
				       __ATOMIC_RELAXED) -
			       handoffs);
	if (env) {
		print_ru("allocator", &ru0, &ru1);
		print_ru("reaper", &none, &reaper_ru);
	}
	assert_true((long)reaped > 0);
	devres_release_all(dev);
	assert_int_equal(devres_check(dev), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_threads_sleep_and_wake),
		T(test_waiter_not_starved_by_hog),
		T(test_release_not_held_for_sleeping_starver),
		T(test_fork_while_locked),
		T(test_reaper_vs_allocator),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
