// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=120 */
/*
 * The library's blocking waits under signals and under cancellation.
 *
 * Signals: a thread blocked in each wait of the library (a managed
 * thread's sleep and descriptor wait, synchronize_irq(),
 * irq_line_raise_wait(), the stop and join of a managed thread, the
 * revocation's wait for its readers, the devres lock, the wait of
 * driver_unregister() for a probe) receives SIGUSR1 every 50 us from a
 * handler installed without SA_RESTART, while another thread keeps the
 * wait busy for 100 ms. Each wait must return only after that, with its
 * documented result: no early return, no lost wake-up.
 *
 * Cancellation: a managed thread is cancelled while it waits in the
 * library (synchronize_irq(), the release of another managed thread, a
 * probe that sleeps under its device's lock). No library call is a
 * cancellation point: the wait completes, the thread ends at its next
 * cancellation point with -ECANCELED, and the locks it passed through are
 * free (the calls after it do not hang; alarm() fails the test if one
 * does). The fixture's teardown checks that nothing leaked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/driver.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include <devres/revocable.h>
#include "testlib.h"

#define BUSY_MS 100

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000L;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- The signal storm ---- */

static int signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	__atomic_add_fetch(&signals_seen, 1, __ATOMIC_RELAXED);
}

static pthread_t storm_target;
static int storm_stop;

static void *storm(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&storm_stop, __ATOMIC_ACQUIRE)) {
		pthread_kill(storm_target, SIGUSR1);
		usleep(50);
	}
	return NULL;
}

static pthread_t storm_thread;

static void storm_on(pthread_t target)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = 0; /* no SA_RESTART: every wait sees EINTR */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	storm_target = target;
	__atomic_store_n(&storm_stop, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&storm_thread, NULL, storm, NULL), 0);
}

static void storm_off(void)
{
	__atomic_store_n(&storm_stop, 1, __ATOMIC_RELEASE);
	pthread_join(storm_thread, NULL);
}

/*
 * The thing that keeps a wait busy: it starts, holds for BUSY_MS, notes
 * when it let go, and lets go.
 */
static long busy_until; /* when the holder let go, in us */
static int holder_started;
static int holder_go;

static void holder_begin(void)
{
	__atomic_store_n(&holder_started, 1, __ATOMIC_RELEASE);
	sleep_ms(BUSY_MS);
	__atomic_store_n(&busy_until, now_us(), __ATOMIC_RELEASE);
}

static void wait_holder_started(void)
{
	while (!__atomic_load_n(&holder_started, __ATOMIC_ACQUIRE))
		sleep_ms(1);
}

static void reset(void)
{
	holder_started = 0;
	holder_go = 0;
	busy_until = 0;
	signals_seen = 0;
}

/* The wait returned after the holder let go, with signals delivered. */
static void assert_not_early(long returned)
{
	long until = __atomic_load_n(&busy_until, __ATOMIC_ACQUIRE);

	assert_true(until != 0);
	assert_true(returned >= until);
	assert_true(__atomic_load_n(&signals_seen, __ATOMIC_RELAXED) > 0);
}

/*
 * Runs @fn in a managed thread of tdev under the storm, waits until it is
 * done, then stops it (its result is @fn's).
 */
static int done;

struct job {
	void (*fn)(void);
};

static int job_thread(void *arg)
{
	struct job *j = arg;

	storm_on(pthread_self());
	j->fn();
	storm_off();
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return 0;
}

static void run_stormed(void (*fn)(void))
{
	struct job j = { fn };
	struct devres_thread *t;

	done = 0;
	t = devm_thread_run(&tdev, job_thread, &j, "stormed");
	assert_false(IS_ERR(t));
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	assert_int_equal(devm_thread_stop(&tdev, t), 0);
}

/* ---- Sleeps and descriptor waits of a managed thread ---- */

static int wait_ret;
static long wait_took;

static void do_sleep(void)
{
	long t0 = now_us();

	wait_ret = devres_thread_sleep(BUSY_MS);
	wait_took = now_us() - t0;
}

static void thread_sleep_is_whole(void **state)
{
	(void)state;
	reset();
	run_stormed(do_sleep);
	assert_int_equal(wait_ret, 0);
	assert_true(wait_took >= BUSY_MS * 1000L);
	assert_true(signals_seen > 0);
}

static int efd = -1;

static void do_wait_fd(void)
{
	long t0 = now_us();

	wait_ret = devres_thread_wait_fd(efd, POLLIN, BUSY_MS);
	wait_took = now_us() - t0;
}

static void *late_writer(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	holder_begin();
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));
	return NULL;
}

static void thread_wait_fd_is_whole(void **state)
{
	pthread_t w;

	(void)state;
	reset();
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	/* Nothing comes: the whole timeout, then 0. */
	run_stormed(do_wait_fd);
	assert_int_equal(wait_ret, 0);
	assert_true(wait_took >= BUSY_MS * 1000L);
	/* Something comes after BUSY_MS: POLLIN then, not before. */
	reset();
	assert_int_equal(pthread_create(&w, NULL, late_writer, NULL), 0);
	wait_holder_started();
	/* Here outside a managed thread: the plain wait. */
	storm_on(pthread_self());
	wait_ret = devres_thread_wait_fd(efd, POLLIN, 10 * BUSY_MS);
	storm_off();
	assert_not_early(now_us());
	pthread_join(w, NULL);
	assert_int_equal(wait_ret, POLLIN);
	close(efd);
}

/* ---- Interrupts: a handler that runs BUSY_MS ---- */

static int irq_no = -1;
static int handled;

static irqreturn_t slow_handler(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	holder_begin();
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELEASE);
	return IRQ_HANDLED;
}

static void irq_up(void)
{
	irq_no = irq_line_create("waits");
	assert_true(irq_no > 0);
	handled = 0;
	assert_int_equal(request_irq((unsigned int)irq_no, slow_handler, 0,
				     "slow", &handled),
			 0);
}

static void irq_down(void)
{
	assert_ptr_equal(free_irq((unsigned int)irq_no, &handled), "slow");
	assert_int_equal(irq_line_destroy(irq_no), 0);
}

static long returned_at;

static void do_synchronize(void)
{
	assert_int_equal(irq_line_raise(irq_no), 0);
	wait_holder_started();
	synchronize_irq((unsigned int)irq_no);
	returned_at = now_us();
}

static void synchronize_irq_waits_whole(void **state)
{
	(void)state;
	reset();
	irq_up();
	run_stormed(do_synchronize);
	assert_not_early(returned_at);
	assert_int_equal(__atomic_load_n(&handled, __ATOMIC_ACQUIRE), 1);
	irq_down();
}

static void do_raise_wait(void)
{
	wait_ret = irq_line_raise_wait(irq_no);
	returned_at = now_us();
}

static void raise_wait_waits_whole(void **state)
{
	(void)state;
	reset();
	irq_up();
	run_stormed(do_raise_wait);
	assert_int_equal(wait_ret, 0);
	assert_not_early(returned_at);
	assert_int_equal(handled, 1);
	irq_down();
}

/* ---- The stop and join of a managed thread ---- */

static int slow_to_stop(void *arg)
{
	(void)arg;
	while (!devres_thread_should_stop())
		sleep_ms(1);
	/* Asked: it takes BUSY_MS more, ignoring signals it never gets. */
	holder_begin();
	return 7;
}

static struct device *other_dev;

static void do_stop(void)
{
	struct devres_thread *t =
		devm_thread_run(other_dev, slow_to_stop, NULL, "slow");

	assert_false(IS_ERR(t));
	wait_ret = devm_thread_stop(other_dev, t);
	returned_at = now_us();
}

static void thread_stop_waits_whole(void **state)
{
	(void)state;
	reset();
	other_dev = heap_dev(NULL, "waits-other");
	run_stormed(do_stop);
	assert_int_equal(wait_ret, 7);
	assert_not_early(returned_at);
	put_device(other_dev);
}

/* ---- The revocation's wait for its readers ---- */

static struct revocable *rev;
static int rev_released;
static int thing;

static void rev_release(void *res)
{
	assert_ptr_equal(res, &thing);
	/* After the last reader: the reader let go before this. */
	assert_true(__atomic_load_n(&busy_until, __ATOMIC_ACQUIRE) != 0);
	rev_released++;
}

static void *reader(void *arg)
{
	(void)arg;
	assert_ptr_equal(revocable_try_access(rev), &thing);
	holder_begin();
	revocable_access_end(rev);
	return NULL;
}

static void do_revoke(void)
{
	devres_release_all(other_dev);
	returned_at = now_us();
}

static void revoke_waits_whole(void **state)
{
	pthread_t r;

	(void)state;
	reset();
	rev_released = 0;
	other_dev = heap_dev(NULL, "waits-rev");
	rev = devm_revocable_create(other_dev, &thing, rev_release);
	assert_non_null(rev);
	assert_int_equal(pthread_create(&r, NULL, reader, NULL), 0);
	wait_holder_started();
	run_stormed(do_revoke);
	pthread_join(r, NULL);
	assert_not_early(returned_at);
	assert_int_equal(rev_released, 1);
	put_device(other_dev);
}

/* ---- The devres lock, held by a for-each callback ---- */

static void mark(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void hold_in_walk(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	holder_begin();
}

static void *walker(void *arg)
{
	(void)arg;
	devres_for_each_res(other_dev, mark, NULL, NULL, hold_in_walk, NULL);
	return NULL;
}

static void *allocated;

static void do_alloc(void)
{
	allocated = devm_kmalloc(other_dev, 32, GFP_KERNEL);
	returned_at = now_us();
}

static void devres_lock_waits_whole(void **state)
{
	pthread_t w;
	void *m;

	(void)state;
	reset();
	other_dev = heap_dev(NULL, "waits-lock");
	m = devres_alloc(mark, 8, GFP_KERNEL);
	assert_non_null(m);
	devres_add(other_dev, m);
	assert_int_equal(pthread_create(&w, NULL, walker, NULL), 0);
	wait_holder_started();
	run_stormed(do_alloc);
	pthread_join(w, NULL);
	assert_non_null(allocated);
	assert_not_early(returned_at);
	put_device(other_dev);
}

/* ---- driver_unregister() waiting for a probe ---- */

static const struct bus_type bus = { .name = "waitsbus" };
static int probes, removes;

static int slow_probe(struct device *dev)
{
	(void)dev;
	holder_begin();
	probes++;
	return 0;
}

static void count_remove(struct device *dev)
{
	(void)dev;
	removes++;
}

static struct device_driver slow_drv = {
	.name = "slow",
	.bus = &bus,
	.probe = slow_probe,
	.remove = count_remove,
};

static void *adder(void *arg)
{
	assert_int_equal(device_add(arg), 0);
	return NULL;
}

static void do_driver_unregister(void)
{
	driver_unregister(&slow_drv);
	returned_at = now_us();
}

static void driver_unregister_waits_whole(void **state)
{
	struct device *dev = heap_dev(&bus, "waits-bound");
	pthread_t a;

	(void)state;
	reset();
	probes = removes = 0;
	assert_int_equal(driver_register(&slow_drv), 0);
	assert_int_equal(pthread_create(&a, NULL, adder, dev), 0);
	wait_holder_started();
	run_stormed(do_driver_unregister);
	pthread_join(a, NULL);
	assert_not_early(returned_at);
	/* The probe it waited for was undone: bound once, unbound once. */
	assert_int_equal(probes, 1);
	assert_int_equal(removes, 1);
	assert_null(dev->driver);
	device_unregister(dev);
}

/* ---- Cancellation of a managed thread inside a library wait ---- */

static pthread_t victim;
static pid_t victim_tid;
/* Set by the victim just before its wait: no cancellation point between. */
static int entering;
static int after_wait;

static int cancelled_fn(void *arg)
{
	void (*fn)(void) = (void (*)(void))arg;

	__atomic_store_n(&victim_tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&victim, pthread_self(), __ATOMIC_RELEASE);
	fn();
	__atomic_store_n(&after_wait, 1, __ATOMIC_RELEASE);
	/* Its first cancellation point after the library call. */
	pthread_testcancel();
	return 0;
}

/*
 * Until thread @tid blocks in futex() (a condition variable, a lock, a
 * join: the library's waits) or a sleep (a probe's). The victim says
 * when it enters its library call, and nothing between may block: so a
 * block seen after is inside the call. A fixed 10 ms was too short at
 * load 17: the thread, not yet in the call, was cancelled in a sleep
 * before it.
 */
static void wait_blocked(pid_t tid)
{
	const long blocking[] = { SYS_futex, SYS_nanosleep,
				  SYS_clock_nanosleep };
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (;;) {
		FILE *f = fopen(path, "r");
		long nr = -1;

		assert_non_null(f);
		if (fscanf(f, "%ld", &nr) != 1)
			nr = -1;
		fclose(f);
		for (size_t i = 0; i < sizeof(blocking) / sizeof(blocking[0]);
		     i++)
			if (nr == blocking[i])
				return;
		sleep_ms(1);
	}
}

/* Cancels the managed thread running @fn once it is in its wait. */
static void cancel_in_wait(void (*fn)(void))
{
	struct devres_thread *t;

	after_wait = 0;
	victim_tid = 0;
	entering = 0;
	t = devm_thread_run(&tdev, cancelled_fn, (void *)fn, "victim");
	assert_false(IS_ERR(t));
	wait_holder_started();
	while (!__atomic_load_n(&entering, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	wait_blocked(__atomic_load_n(&victim_tid, __ATOMIC_ACQUIRE));
	assert_int_equal(
		pthread_cancel(__atomic_load_n(&victim, __ATOMIC_ACQUIRE)), 0);
	assert_int_equal(devm_thread_stop(&tdev, t), -ECANCELED);
	/* The wait finished before the cancellation took effect. */
	assert_int_equal(__atomic_load_n(&after_wait, __ATOMIC_ACQUIRE), 1);
}

static void sync_for_cancel(void)
{
	assert_int_equal(irq_line_raise(irq_no), 0);
	wait_holder_started();
	__atomic_store_n(&entering, 1, __ATOMIC_RELEASE);
	synchronize_irq((unsigned int)irq_no);
}

static void cancel_in_synchronize_irq(void **state)
{
	(void)state;
	reset();
	alarm(20);
	irq_up();
	cancel_in_wait(sync_for_cancel);
	/* The line's lock is free: these would hang. */
	assert_int_equal(irq_line_raise_wait(irq_no), 0);
	assert_int_equal(handled, 2);
	irq_down();
	alarm(0);
}

static void stop_for_cancel(void)
{
	struct devres_thread *t =
		devm_thread_run(other_dev, slow_to_stop, NULL, "slow");

	assert_false(IS_ERR(t));
	__atomic_store_n(&entering, 1, __ATOMIC_RELEASE);
	assert_int_equal(devm_thread_stop(other_dev, t), 7);
}

static void cancel_in_thread_stop(void **state)
{
	(void)state;
	reset();
	alarm(20);
	other_dev = heap_dev(NULL, "waits-cancel-stop");
	cancel_in_wait(stop_for_cancel);
	put_device(other_dev);
	alarm(0);
}

static int sleepy_probe(struct device *dev)
{
	(void)dev;
	holder_begin(); /* nanosleep: a cancellation point */
	probes++;
	return 0;
}

static struct device_driver sleepy_drv = {
	.name = "sleepy",
	.bus = &bus,
	.probe = sleepy_probe,
	.remove = count_remove,
};

static struct device *probed;

static void register_for_cancel(void)
{
	/* Binds probed: its probe sleeps under the device's lock. */
	__atomic_store_n(&entering, 1, __ATOMIC_RELEASE);
	assert_int_equal(driver_register(&sleepy_drv), 0);
}

static void cancel_in_probe(void **state)
{
	(void)state;
	reset();
	alarm(20);
	probes = removes = 0;
	probed = heap_dev(&bus, "waits-probed");
	assert_int_equal(device_add(probed), 0);
	cancel_in_wait(register_for_cancel);
	/* The bind completed and the device's lock is free. */
	assert_int_equal(probes, 1);
	assert_ptr_equal(probed->driver, &sleepy_drv);
	device_release_driver(probed);
	assert_int_equal(removes, 1);
	driver_unregister(&sleepy_drv);
	device_unregister(probed);
	alarm(0);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup_teardown(thread_sleep_is_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(thread_wait_fd_is_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(synchronize_irq_waits_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(raise_wait_waits_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(thread_stop_waits_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(revoke_waits_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(devres_lock_waits_whole, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(driver_unregister_waits_whole,
					dev_setup, dev_teardown),
	cmocka_unit_test_setup_teardown(cancel_in_synchronize_irq, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(cancel_in_thread_stop, dev_setup,
					dev_teardown),
	cmocka_unit_test_setup_teardown(cancel_in_probe, dev_setup,
					dev_teardown),
};

int main(void)
{
	return run_tests_on_bus(tests, &bus);
}
