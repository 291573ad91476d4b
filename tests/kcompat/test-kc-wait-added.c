// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat hostile tsan white-box timeout=60 */
/*
 * A take-back by hand that finds a devm_ registration being added waits
 * until its node is on the device: mutex_destroy() of a mutex
 * devm_mutex_init() is making, hwrng_unregister() of a
 * devm_hwrng_register() and watchdog_unregister_device() of a
 * devm_watchdog_register_device() in progress. The adding thread runs
 * the application's log sink (the ADD line of its devres_add()); a sink
 * that waits for the thread taking back (it stops, with
 * devm_thread_stop(), the managed thread making the take-back) closes a
 * loop. Both waits are on the record of waits, and the later one is
 * refused with one WARN: the take-back's (nothing taken back; the node
 * takes it back at unbind), or the stop's (-EDEADLK; the take-back then
 * goes on, with its own WARN for a managed registration taken back by
 * hand). In the control the sink returns once the take-back waits, and
 * nothing is refused (the take-back's own WARN).
 *
 * Each cell in a child under an alarm: before the take-back's wait was
 * recorded, every cell hung until it.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/mutex.h>
#include <linux/watchdog.h>
#include <devres/posix.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kcompat/kctest.h"
#include "hostile/cell-child.h"
#include "base/waits.h"

#define CELL_ALARM_S 10
#define RET 7

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

enum cell {
	TAKE_BACK_LAST,
	STOP_LAST,
	CONTROL
};

static const char *const cell_names[] = { "take-back last", "stop last",
					  "control" };

static struct device odev, sdev;
static struct mutex m;
static struct hwrng rng;
static struct watchdog_device wdd;

static int rng_read(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)r;
	(void)wait;
	memset(data, 0x5a, max);
	return (int)max;
}

static int wdt_start(struct watchdog_device *w)
{
	(void)w;
	return 0;
}

static const struct watchdog_info wdt_info = { .identity = "wa" };
static const struct watchdog_ops wdt_ops = { .start = wdt_start };

static int mutex_acquire(void)
{
	return devm_mutex_init(&odev, &m);
}

static void mutex_hand(void)
{
	mutex_destroy(&m);
}

/* Its device's still: its node destroys it at unbind. */
static bool mutex_live(void)
{
	return m.dev != NULL;
}

static int rng_acquire(void)
{
	rng.name = "wa";
	rng.read = rng_read;
	return devm_hwrng_register(&odev, &rng);
}

static void rng_hand(void)
{
	hwrng_unregister(&rng);
}

static bool rng_live(void)
{
	char b[4] = { 0 };

	return hwrng_read("wa", b, sizeof(b), false) == (int)sizeof(b);
}

static int wdt_acquire(void)
{
	wdd.parent = &odev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
	return devm_watchdog_register_device(&odev, &wdd);
}

static void wdt_hand(void)
{
	watchdog_unregister_device(&wdd);
}

static bool wdt_live(void)
{
	return watchdog_dev_start(&wdd) == 0;
}

/*
 * The managed call, its take-back by hand, whether it is registered, and
 * its node's release as the ADD line names it.
 */
static const struct kind {
	const char *name;
	int (*acquire)(void);
	void (*hand)(void);
	bool (*live)(void);
	const char *node;
	bool release; /* taken back by its node's release, not by hand */
} kinds[] = {
	{ "devm_mutex_init", mutex_acquire, mutex_hand, mutex_live,
	  "kcompat_mutex_destroy", false },
	{ "devm_hwrng_register", rng_acquire, rng_hand, rng_live,
	  "kcompat_hwrng_release", false },
	{ "devm_watchdog_register_device", wdt_acquire, wdt_hand, wdt_live,
	  "kcompat_wdt_release", false },
	{ "devm_hwrng_register, its release", rng_acquire, rng_hand, rng_live,
	  "kcompat_hwrng_release", true },
	{ "devm_watchdog_register_device, its release", wdt_acquire, wdt_hand,
	  wdt_live, "kcompat_wdt_release", true },
};

#define NKINDS (int)(sizeof(kinds) / sizeof(kinds[0]))

static const struct kind *kind;
static struct devres_thread *taker;
static enum cell which;
static uint64_t adder_wid, taker_wid;
static int in_sink, taker_done;
static long stop_ret = RET;

static void odev_release(struct device *dev)
{
	(void)dev;
}

/* The managed thread that takes the registration back by hand. */
static int take_fn(void *arg)
{
	(void)arg;
	STORE(taker_wid, devres_wait_self());
	while (!LOAD(in_sink))
		usleep(1000);
	/* Last: once the sink's stop of this thread waits. */
	if (which == TAKE_BACK_LAST)
		while (!devres__wait_records(LOAD(adder_wid)))
			usleep(1000);
	if (kind->release)
		(void)devres_release_all(&odev);
	else
		kind->hand();
	STORE(taker_done, 1);
	return RET;
}

/* The ADD line of the registration's node, on the adding thread, once. */
static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (devres_wait_self() != LOAD(adder_wid) || LOAD(in_sink) ||
	    !strstr(line, "DEVRES ADD") || !strstr(line, kind->node))
		return;
	STORE(in_sink, 1);
	/* Last, or the control: once the take-back waits for this thread. */
	if (which != TAKE_BACK_LAST)
		while (!devres__wait_records(LOAD(taker_wid)) &&
		       !LOAD(taker_done))
			usleep(1000);
	if (which != CONTROL)
		stop_ret = devm_thread_stop(&sdev, taker);
}

static int cell(int k, enum cell c)
{
	/* Refused take-back: 1; else the take-back by hand's, and a stop's. */
	int want = c == STOP_LAST ? 2 : 1;
	/* A release: its WARN when it does not wait, and not the hand's. */
	bool live = c == TAKE_BACK_LAST && !kinds[k].release;
	int w0, w;

	alarm(CELL_ALARM_S);
	kind = &kinds[k];
	which = c;
	if (kind->release)
		want = c == CONTROL ? 0 : 1;
	device_initialize(&odev);
	device_initialize(&sdev);
	odev.release = odev_release;
	sdev.release = odev_release;
	if (dev_set_name(&odev, "wa") || dev_set_name(&sdev, "wa-t"))
		return 2;
	STORE(adder_wid, devres_wait_self());
	taker = devm_thread_run(&sdev, take_fn, NULL, "wa");
	if (IS_ERR(taker))
		return 3;
	w0 = devres_warn_count();
	devres_set_log_sink(sink, NULL);
	devres_set_log(true);
	if (kind->acquire())
		return 4;
	devres_set_log(false);
	devres_set_log_sink(NULL, NULL);
	(void)devres_release_all(&sdev);
	w = devres_warn_count() - w0;
	if (w != want || stop_ret != (c == STOP_LAST ? -EDEADLK : RET) ||
	    !LOAD(taker_done) || kind->live() != live) {
		fprintf(stderr, "%s, %s: %d WARNs, stop %ld, live %d\n",
			kind->name, cell_names[c], w, stop_ret,
			(int)kind->live());
		return 5;
	}
	/* Not taken back: its node takes it back, silently. */
	(void)devres_release_all(&odev);
	if (devres_warn_count() - w0 != want || kind->live())
		return 6;
	put_device(&odev);
	put_device(&sdev);
	return 0;
}

/* A cell in a child of its own (cell-child.h). */
static int one(int k, int c)
{
	return cell(k, (enum cell)c);
}

static void add_and_take_back(void **state)
{
	const char *rows[NKINDS];

	(void)state;
	for (int k = 0; k < NKINDS; k++)
		rows[k] = kinds[k].name;
	run_cells_in_children(one, rows, NKINDS, cell_names, CONTROL + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(add_and_take_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
