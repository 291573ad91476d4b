// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile kcompat tsan timeout=120 */
/*
 * Process-wide state that another thread of the parent holds at fork(),
 * one cell each: the parent's thread is inside the call that holds it
 * when the parent forks, and the child, under an alarm, makes the same
 * call on objects of its own and must get its result, not a refusal and
 * not a wait for a thread it does not have (docs/fork.md).
 *
 * A "held" cell's thread stops inside the call (its operation or probe
 * waits on a pipe) and stays there across the fork: the state is held
 * at the fork every time. A "race" cell's thread loops over calls that
 * hold a lock for a moment, and the parent forks while it runs (the
 * cell's count of forks): a lock left held in a child makes it wait
 * until its alarm. A lock held for one add in a loop of a register and
 * an unregister was caught at the 1st to 70th fork (6 runs), so most
 * runs, not all, catch such a lock; the loops that take theirs more
 * often fork fewer times.
 * Under the sanitizers, whose allocators are not held across fork(), the
 * race cells' threads park between two calls while the parent forks
 * (base/fork-park.h): there they check the child's calls, not the race.
 */
#define _GNU_SOURCE
#include <linux/device.h>
#include <linux/err.h>
#include <linux/hw_random.h>
#include <linux/watchdog.h>
#include <linux/workqueue.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include "testlib.h"
#include "base/fork-park.h"

#define CHILD_ALARM_S 10
#define RACERS 1
/* Under the sanitizers a race cell forks this many times at most. */
#define PARKED_FORKS 10

/* ---- Devices, a bus and drivers, the parent's and the child's ---- */

static void nop_release(struct device *dev)
{
	(void)dev;
}

static int bus_match(struct device *dev, const struct device_driver *drv)
{
	(void)dev;
	(void)drv;
	return 1;
}

static const struct bus_type held_bus = { .name = "fork-held",
					  .match = bus_match };
static const struct bus_type child_bus = { .name = "fork-held-child",
					   .match = bus_match };

static int add_dev(struct device *dev, const struct bus_type *bus,
		   const char *name)
{
	memset(dev, 0, sizeof(*dev));
	device_initialize(dev);
	dev->release = nop_release;
	dev->bus = bus;
	if (dev_set_name(dev, "%s", name))
		return -ENOMEM;
	return device_add(dev);
}

/* ---- The parent's thread stopped inside a call ---- */

static int gate[2] = { -1, -1 };   /* the stopped call waits on its read end */
static int inside[2] = { -1, -1 }; /* it says it is inside on this one */

/* Called inside the held call, once: says so and waits to be let go. */
static void stop_here(void)
{
	char c = 1;

	if (write(inside[1], &c, 1) != 1 || read(gate[0], &c, 1) != 1)
		abort();
}

static int held_first; /* the first run of the held operation stops */

static int held_op(void *ctx)
{
	(void)ctx;
	if (__atomic_exchange_n(&held_first, 0, __ATOMIC_ACQ_REL))
		stop_here();
	return devres_should_fail(NULL, "fork-held op") ? -ENOMEM : 0;
}

static void *sweep_held(void *arg)
{
	struct devres_sweep_result r;

	(void)arg;
	return (void *)(intptr_t)devres_sweep(held_op, NULL, NULL, &r);
}

static int held_probe(struct device *dev)
{
	if (__atomic_exchange_n(&held_first, 0, __ATOMIC_ACQ_REL))
		stop_here();
	return devm_kmalloc(dev, 16, 0) ? 0 : -ENOMEM;
}

static struct device_driver held_drv = { .name = "fork-held",
					 .probe = held_probe };
static struct device held_dev;

static void *probe_sweep_held(void *arg)
{
	struct devres_sweep_result r;

	(void)arg;
	return (void *)(intptr_t)driver_probe_sweep(&held_drv, &held_dev, &r);
}

static int probe_sweep_setup(void)
{
	int ret = bus_register(&held_bus);

	return ret ? ret : add_dev(&held_dev, &held_bus, "fork-held");
}

static void probe_sweep_teardown(void)
{
	device_unregister(&held_dev);
	bus_unregister(&held_bus);
}

/* ---- The parent's threads looping over calls that hold a lock ---- */

static int race_stop;

static int wdt_op(struct watchdog_device *wdd)
{
	(void)wdd;
	return 0;
}

static const struct watchdog_ops wdt_ops = { .start = wdt_op };
static const struct watchdog_info wdt_info = { .identity = "fork-held" };
static struct watchdog_device wdds[RACERS + 1];

static void *wdt_racer(void *arg)
{
	struct watchdog_device *wdd = arg;

	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE)) {
		fork_park_point();
		if (watchdog_register_device(wdd))
			return (void *)1;
		watchdog_unregister_device(wdd);
	}
	return NULL;
}

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)rng;
	(void)wait;
	memset(data, 7, max);
	return (int)max;
}

static struct hwrng rngs[RACERS + 1];
static char rng_names[RACERS + 1][24]; /* the last the child's */

static void *rng_racer(void *arg)
{
	struct hwrng *rng = arg;
	u8 b[4];

	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE)) {
		fork_park_point();
		if (hwrng_register(rng))
			return (void *)1;
		if (hwrng_read(rng->name, b, sizeof(b), false) != sizeof(b))
			return (void *)2;
		hwrng_unregister(rng);
	}
	return NULL;
}

static void *wq_racer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&race_stop, __ATOMIC_ACQUIRE)) {
		struct workqueue_struct *wq;

		fork_park_point();
		wq = alloc_workqueue("fork-held", 0, 0);
		if (!wq)
			return (void *)1;
		destroy_workqueue(wq);
	}
	return NULL;
}

/* ---- What each child does: 0 when it got its result ---- */

static int child_sweep_op(void *ctx)
{
	(void)ctx;
	return devres_should_fail(NULL, "fork-held child op") ? -ENOMEM : 0;
}

static int child_sweep(void)
{
	struct devres_sweep_result r;

	CHILD_CHECK(devres_sweep(child_sweep_op, NULL, NULL, &r) == 0);
	CHILD_CHECK(r.points == 1 && r.leaks == 0);
	return 0;
}

static int child_probe(struct device *dev)
{
	return devm_kmalloc(dev, 16, 0) ? 0 : -ENOMEM;
}

static struct device_driver child_drv = { .name = "fork-held-child",
					  .probe = child_probe };

static int child_probe_sweep(void)
{
	struct devres_sweep_result r;
	struct device dev;

	CHILD_CHECK(bus_register(&child_bus) == 0);
	CHILD_CHECK(add_dev(&dev, &child_bus, "fork-held-child") == 0);
	CHILD_CHECK(driver_probe_sweep(&child_drv, &dev, &r) == 0);
	CHILD_CHECK(r.points >= 1 && r.leaks == 0);
	device_unregister(&dev);
	bus_unregister(&child_bus);
	return 0;
}

static int child_wdt(void)
{
	struct watchdog_device *wdd = &wdds[RACERS];

	CHILD_CHECK(watchdog_register_device(wdd) == 0);
	watchdog_unregister_device(wdd);
	return 0;
}

static int child_rng(void)
{
	struct hwrng *rng = &rngs[RACERS];
	u8 b[4];

	CHILD_CHECK(hwrng_register(rng) == 0);
	CHILD_CHECK(hwrng_read(rng->name, b, sizeof(b), false) == sizeof(b));
	hwrng_unregister(rng);
	return 0;
}

static int child_wq(void)
{
	struct workqueue_struct *wq = alloc_workqueue("fork-held-child", 0, 0);

	CHILD_CHECK(wq != NULL);
	destroy_workqueue(wq);
	return 0;
}

/* ---- The table ---- */

struct cell {
	const char *what;
	/* A held cell: set up, then the thread that stops inside the call. */
	int (*setup)(void);
	void *(*held)(void *arg);
	void (*teardown)(void);
	/* A race cell: RACERS threads, each given its own object. */
	void *(*racer)(void *arg);
	void *(*racer_arg)(int i);
	int forks;
	int (*child)(void);
};

static void *wdt_arg(int i)
{
	return &wdds[i];
}

static void *rng_arg(int i)
{
	return &rngs[i];
}

static void *no_arg(int i)
{
	(void)i;
	return NULL;
}

static const struct cell cells[] = {
	{ .what = "devres_sweep() under way in another thread",
	  .held = sweep_held,
	  .child = child_sweep },
	{ .what = "driver_probe_sweep() under way in another thread",
	  .setup = probe_sweep_setup,
	  .held = probe_sweep_held,
	  .teardown = probe_sweep_teardown,
	  .child = child_probe_sweep },
	{ .what = "watchdog_register_device() and unregister in other threads",
	  .racer = wdt_racer,
	  .racer_arg = wdt_arg,
	  .forks = 100,
	  .child = child_wdt },
	{ .what = "hwrng_register(), read and unregister in other threads",
	  .racer = rng_racer,
	  .racer_arg = rng_arg,
	  .forks = 40,
	  .child = child_rng },
	{ .what = "alloc_workqueue() and destroy_workqueue() in other threads",
	  .racer = wq_racer,
	  .racer_arg = no_arg,
	  .forks = 40,
	  .child = child_wq },
};

/* Forks once: the child runs @c's call; true when it exited 0. */
static bool fork_one(const struct cell *c)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		alarm(CHILD_ALARM_S);
		_exit(c->child());
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	print_message("%s: child %s %d\n", c->what,
		      WIFSIGNALED(status) ? "killed by signal" : "exited",
		      WIFSIGNALED(status) ? WTERMSIG(status)
					  : WEXITSTATUS(status));
	return false;
}

static int run_held(const struct cell *c)
{
	pthread_t t;
	void *ret;
	char ch;
	int bad = 0;

	assert_int_equal(pipe2(gate, O_CLOEXEC), 0);
	assert_int_equal(pipe2(inside, O_CLOEXEC), 0);
	if (c->setup)
		assert_int_equal(c->setup(), 0);
	__atomic_store_n(&held_first, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, c->held, NULL), 0);
	assert_int_equal(read(inside[0], &ch, 1), 1);
	/*
	 * Asleep in its read: not in an allocator the fork could catch. The
	 * threads counted then (a sanitizer's own among them) are the ones
	 * the fork waits for to sleep.
	 */
	assert_true(fork_park_settle(count_entries("/proc/self/task")));
	bad += !fork_one(c);
	ch = 0;
	assert_int_equal(write(gate[1], &ch, 1), 1);
	assert_int_equal(pthread_join(t, &ret), 0);
	/* The parent's call finishes as if nothing had happened. */
	assert_int_equal((intptr_t)ret, 0);
	if (c->teardown)
		c->teardown();
	for (int i = 0; i < 2; i++) {
		close(gate[i]);
		close(inside[i]);
	}
	return bad;
}

static int run_race(const struct cell *c)
{
	pthread_t t[RACERS];
	int bad = 0, steady, forks = FORK_PARK ? PARKED_FORKS : c->forks;

	__atomic_store_n(&race_stop, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, c->racer,
						c->racer_arg(i)),
				 0);
	/* A sanitizer's own thread among them. */
	steady = count_entries("/proc/self/task");
	for (int n = 0; n < forks && !bad; n++) {
		fork_park_all(RACERS);
		assert_true(fork_park_settle(steady));
		if (!fork_one(c)) {
			print_message("%s: fork %d of %d\n", c->what, n + 1,
				      forks);
			bad++;
		}
		fork_park_release();
	}
	__atomic_store_n(&race_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < RACERS; i++) {
		void *ret;

		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	return bad;
}

static void fork_while_held(void **state)
{
	int w0 = devres_warn_count(), failed = 0;

	(void)state;
	for (int i = 0; i < RACERS + 1; i++) {
		wdds[i] = (struct watchdog_device){ .ops = &wdt_ops,
						    .info = &wdt_info };
		snprintf(rng_names[i], sizeof(rng_names[i]), "fork-held-%d", i);
		rngs[i] = (struct hwrng){ .name = rng_names[i],
					  .read = rng_read };
	}
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		const struct cell *c = &cells[i];
		int bad = c->held ? run_held(c) : run_race(c);

		print_message("%s: %s\n", c->what, bad ? "FAILED" : "ok");
		failed += bad != 0;
	}
	assert_int_equal(failed, 0);
	assert_int_equal(devres_warn_count(), w0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fork_while_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
