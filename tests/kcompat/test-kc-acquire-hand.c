// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=60 */
/*
 * A compat framework's managed registration on one thread, and on another
 * the plain call that takes it back (docs/misuse.md, SP16), held at the
 * window between the two: devm_hwrng_register() with hwrng_unregister(),
 * devm_watchdog_register_device() with watchdog_unregister_device(), and
 * devm_mutex_init() with mutex_destroy().
 * A thread holds the device's
 * devres lock (devres_for_each_res() with a callback that waits at a
 * gate), the managed call runs until it sleeps on that lock, putting its
 * node on the device, then the gate opens and the holder, as soon as it
 * lets the lock go, makes the plain call (the lock is not handed to the
 * thread it wakes: the holder, on its CPU, is first). The registration
 * was findable, and owned by the device, before its node was on it: the
 * plain call took it back, found no node to drop, and the node, added
 * after, stayed on the device for a registration no longer there (whose
 * release would take back a later registration of the same object; a
 * mutex destroyed by hand left a node that destroys nothing). Now the
 * plain call finds the node, or nothing to take back: each round leaves
 * a node only with the object registered (a mutex: still its device's).
 *
 * released_when_added: the device's resources released in the log sink
 * of each ADD line (docs/misuse.md, SP17), on the registering thread,
 * right after the node is on the device: the release takes the
 * registration back, and the devm_ call, which waits for nothing of its
 * own, touches neither its node nor the record after. The compat calls
 * whose node has no record beside it are the neighbours.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <linux/device.h>
#include <linux/clk.h>
#include <linux/hw_random.h>
#include <linux/mutex.h>
#include <linux/sysfs.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"
#include "gate.h"
#include "pairs.h"
#include "release-on-add.h"

#define HOLD_ROUNDS 20

static struct hwrng rng;
static struct watchdog_device wdd;
static struct mutex mx;
static const struct attribute_group grp = { .name = "hold" };

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

static const struct watchdog_info wdt_info = { .identity = "hold" };
static const struct watchdog_ops wdt_ops = { .start = wdt_start };

/* The managed call, the plain take-back, and whether it is registered. */
struct kind {
	const char *name;
	void (*fresh)(void);
	int (*acquire)(void);
	void (*hand)(void);
	bool (*live)(void);
};

static void rng_fresh(void)
{
	memset(&rng, 0, sizeof(rng));
	rng.name = "hold";
	rng.read = rng_read;
}

static int rng_acquire(void)
{
	return devm_hwrng_register(&tdev, &rng);
}

static void rng_hand(void)
{
	hwrng_unregister(&rng);
}

static bool rng_live(void)
{
	char b[4] = { 0 };

	return hwrng_read("hold", b, sizeof(b), false) == (int)sizeof(b);
}

static void wdt_fresh(void)
{
	memset(&wdd, 0, sizeof(wdd));
	wdd.parent = &tdev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
}

static int wdt_acquire(void)
{
	return devm_watchdog_register_device(&tdev, &wdd);
}

static void wdt_hand(void)
{
	watchdog_unregister_device(&wdd);
}

static bool wdt_live(void)
{
	return watchdog_dev_start(&wdd) == 0;
}

static void mutex_fresh(void)
{
	memset(&mx, 0, sizeof(mx));
}

static int mutex_acquire(void)
{
	return devm_mutex_init(&tdev, &mx);
}

static void mutex_hand(void)
{
	mutex_destroy(&mx);
}

/* Its device's still: its node destroys it at unbind. */
static bool mutex_live(void)
{
	return mx.dev != NULL;
}

static const struct kind kinds[] = {
	{ "devm_hwrng_register, hwrng_unregister()", rng_fresh, rng_acquire,
	  rng_hand, rng_live },
	{ "devm_watchdog_register_device, watchdog_unregister_device()",
	  wdt_fresh, wdt_acquire, wdt_hand, wdt_live },
	{ "devm_mutex_init, mutex_destroy()", mutex_fresh, mutex_acquire,
	  mutex_hand, mutex_live },
};

static const struct kind *kind;

static int nodes(void)
{
	struct devres_stats st;

	devres_get_stats(&tdev, &st);
	return (int)st.allocs;
}

static void *hold_then_hand(void *arg)
{
	(void)arg;
	gate_hold_devres(&tdev);
	kind->hand();
	return NULL;
}

/* Whether the round left a node only with the object registered. */
static bool hold_round(void)
{
	struct asleep_call a = { .fn = kind->acquire };
	pthread_t holder;
	void *sentinel;
	bool live;
	int n0, n;

	kind->fresh();
	devres_set_log_sink(pairs_sink, NULL);
	sentinel = devres_alloc(gate_held, 1, GFP_KERNEL);
	assert_non_null(sentinel);
	devres_add(&tdev, sentinel);
	n0 = nodes();
	gate_reset();
	assert_int_equal(pthread_create(&holder, NULL, hold_then_hand, NULL),
			 0);
	gate_until_reached();
	start_until_asleep(&a);
	gate_release();
	pthread_join(holder, NULL);
	pthread_join(a.t, NULL);
	assert_int_equal(a.ret, 0);
	n = nodes() - n0;
	live = kind->live();
	(void)devres_release_all(&tdev);
	/* What the round left registered with no node: taken back here. */
	if (live && !n)
		kind->hand();
	devres_set_log_sink(NULL, NULL);
	if ((n > 0) == live && n <= 1)
		return true;
	print_message("%s: a round left %d node(s), %s\n", kind->name, n,
		      live ? "registered" : "not registered");
	return false;
}

static void hold_each(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		kind = &kinds[k];
		for (int r = 0; r < HOLD_ROUNDS; r++)
			bad += !hold_round();
	}
	assert_int_equal(bad, 0);
}

static int clk_acquire(void)
{
	return IS_ERR(devm_clk_get(&tdev, NULL)) ? -ENOMEM : 0;
}

static int group_acquire(void)
{
	return devm_device_add_group(&tdev, &grp);
}

static bool none_live(void)
{
	return false;
}

static void none_fresh(void)
{
}

static const struct kind added_kinds[] = {
	{ "devm_hwrng_register", rng_fresh, rng_acquire, NULL, rng_live },
	{ "devm_watchdog_register_device", wdt_fresh, wdt_acquire, NULL,
	  wdt_live },
	{ "devm_clk_get", none_fresh, clk_acquire, NULL, none_live },
	{ "devm_device_add_group", none_fresh, group_acquire, NULL, none_live },
	{ "devm_mutex_init", mutex_fresh, mutex_acquire, NULL, none_live },
};

static void released_when_added(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(added_kinds) / sizeof(added_kinds[0]);
	     k++) {
		struct devres_ledger before, after;
		bool live;
		int ret, w0;

		kind = &added_kinds[k];
		kind->fresh();
		devres_ledger_snapshot(&before);
		w0 = devres_warn_count();
		release_on_add_count = 0;
		devres_set_log_sink(release_on_add, &tdev);
		devres_set_log(true);
		ret = kind->acquire();
		devres_set_log(false);
		devres_set_log_sink(NULL, NULL);
		live = kind->live();
		(void)devres_release_all(&tdev);
		devres_ledger_snapshot(&after);
		if (!ret && release_on_add_count && !live && nodes() == 0 &&
		    after.nodes == before.nodes && devres_warn_count() == w0)
			continue;
		bad++;
		print_message("%s: returned %d, %d releases, %s, %d node(s), "
			      "%ld nodes more in the ledger, %d WARNs\n",
			      kind->name, ret, release_on_add_count,
			      live ? "registered" : "not registered", nodes(),
			      after.nodes - before.nodes,
			      devres_warn_count() - w0);
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(hold_each, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(released_when_added, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
