// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=120 */
/*
 * The frameworks' registries (a watchdog, an hwrng, an rtc) from two
 * threads at once: every pair of calls on one registration, in every
 * state it can be in, many rounds (tests/pairs.h), each pair of a
 * framework a cell in a child of its own under an alarm (kc-cell.h).
 *
 * The calls: reg (by hand), unreg (by hand), devm (the devm_ form on the
 * device), release (the device's devres_release_all()), call (a method
 * through the framework: a watchdog's ping, an hwrng's read, an rtc's
 * read_time()). The states: none, hand (registered by hand), devm
 * (registered by the devm_ form); a watchdog registered is started, and
 * stopped by its unregister. A register while the registration is
 * taken back on the other thread is the re-register: reg with unreg in
 * hand, reg or devm with release in devm. An rtc has no form by hand:
 * its calls are devm, release and call, in none and devm.
 *
 * Each round must end as one of the two orders of the pair made one after
 * the other: the same returns, WARNs, and what the end of the round finds
 * (the registration there or not, the node on the device, the methods
 * run). The driver counts what the kernel's framework never lets happen:
 * two of its methods running at once on the object, an hwrng read or a
 * registration with the rng's init() not in effect (its cleanup() run
 * after a new registration's init()), a cleanup() without its init().
 *
 * The serialization cells: two threads reading one rng whose read()
 * sees an overlap (the kernel's core reads under its reading_mutex); and
 * for each framework, two objects whose methods call the other's from two
 * threads at once, a loop of waits: one of the inner calls is refused
 * (-EDEADLK) with one WARN, the other runs, and nothing hangs. And a
 * take-back's own method (an rng's cleanup(), a watchdog's stop on
 * unregister) that registers the object again: refused (-EBUSY), one
 * WARN, as it would wait for the take-back that runs it.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <pthread.h>
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"
#include "kc-cell.h"
#include "pairs.h"

#define RNG_NAME "pairs-rng"
#define RNG_B_NAME "pairs-rng-b"
#define ROUNDS 40

enum fw {
	F_WDT,
	F_RNG,
	F_RTC
};

static const char *const fw_names[] = { "watchdog", "hwrng", "rtc" };

enum call {
	P_REG,
	P_UNREG,
	P_DEVM,
	P_RELEASE,
	P_CALL
};

enum state {
	S_NONE,
	S_HAND,
	S_DEVM
};

static const char *const call_names[] = { "reg", "unreg", "devm", "release",
					  "call" };
static const char *const state_names[] = { "none", "hand", "devm" };
/* An rtc's calls and states, by their numbers above. */
static const char *const rtc_call_names[] = { "devm", "release", "call" };
static const unsigned int rtc_calls[] = { P_DEVM, P_RELEASE, P_CALL };
static const char *const rtc_state_names[] = { "none", "devm" };
static const unsigned int rtc_states[] = { S_NONE, S_DEVM };

static enum fw fw;

/* ---- The driver: its methods counted, an overlap seen ---- */

static int inside;	/* __atomic: methods running on the object */
static int bugs;	/* __atomic: what the kernel never lets happen */
static int methods;	/* __atomic: methods begun */
static int inited;	/* __atomic: the rng's init() in effect */
static bool slow_reads; /* the serialization cell's: reads that take long */

/*
 * A method begins; @slow: one a take-back runs (an rng's cleanup(), a
 * watchdog's stop()), given the time a new registration's init() or
 * call on the other thread needs to come in, if it may.
 */
static void enter_slow(bool slow)
{
	__atomic_add_fetch(&methods, 1, __ATOMIC_ACQ_REL);
	if (__atomic_add_fetch(&inside, 1, __ATOMIC_ACQ_REL) > 1)
		__atomic_add_fetch(&bugs, 1, __ATOMIC_ACQ_REL);
	if (slow)
		usleep(30);
	for (int i = 0; i < 2000; i++)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void enter(void)
{
	enter_slow(false);
}

static void leave(void)
{
	__atomic_sub_fetch(&inside, 1, __ATOMIC_ACQ_REL);
}

static int wdt_method(struct watchdog_device *w)
{
	(void)w;
	enter();
	leave();
	return 0;
}

static int wdt_stop(struct watchdog_device *w)
{
	(void)w;
	enter_slow(true);
	leave();
	return 0;
}

static int rng_init(struct hwrng *r)
{
	(void)r;
	enter();
	if (__atomic_exchange_n(&inited, 1, __ATOMIC_ACQ_REL))
		__atomic_add_fetch(&bugs, 1, __ATOMIC_ACQ_REL);
	leave();
	return 0;
}

static void rng_cleanup(struct hwrng *r)
{
	(void)r;
	enter_slow(true);
	if (!__atomic_exchange_n(&inited, 0, __ATOMIC_ACQ_REL))
		__atomic_add_fetch(&bugs, 1, __ATOMIC_ACQ_REL);
	leave();
}

static int rng_read(struct hwrng *r, void *data, size_t max, bool wait)
{
	size_t n = max < 4 ? max : 4;

	(void)r;
	(void)wait;
	enter_slow(slow_reads);
	if (!__atomic_load_n(&inited, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&bugs, 1, __ATOMIC_ACQ_REL);
	memset(data, 0x5a, n);
	leave();
	return (int)n;
}

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	enter();
	rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000, tm);
	leave();
	return 0;
}

static const struct watchdog_info wdt_info = { .identity = "pairs" };
static const struct watchdog_ops wdt_ops = { .start = wdt_method,
					     .stop = wdt_stop,
					     .ping = wdt_method };
static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read };

static struct watchdog_device wdd;
static struct hwrng rng;
static struct rtc_device rtcd;
/* The device of a cell, made in its child (a parent's is the parent's). */
static struct device cdev;

static void fresh(void)
{
	memset(&wdd, 0, sizeof(wdd));
	wdd.parent = &cdev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
	watchdog_stop_on_unregister(&wdd);
	memset(&rng, 0, sizeof(rng));
	rng.name = RNG_NAME;
	rng.init = rng_init;
	rng.cleanup = rng_cleanup;
	rng.read = rng_read;
	memset(&rtcd, 0, sizeof(rtcd));
	rtcd.parent = &cdev;
	rtcd.ops = &rtc_ops;
	__atomic_store_n(&bugs, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&methods, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&inited, 0, __ATOMIC_RELEASE);
}

/* ---- The calls ---- */

static int do_call(enum call c)
{
	struct rtc_time tm;
	char b[4];

	switch (c) {
	case P_REG:
		return fw == F_WDT ? watchdog_register_device(&wdd)
				   : hwrng_register(&rng);
	case P_UNREG:
		if (fw == F_WDT)
			watchdog_unregister_device(&wdd);
		else
			hwrng_unregister(&rng);
		return 0;
	case P_DEVM:
		if (fw == F_WDT)
			return devm_watchdog_register_device(&cdev, &wdd);
		if (fw == F_RNG)
			return devm_hwrng_register(&cdev, &rng);
		return devm_rtc_register_device(&rtcd);
	case P_RELEASE:
		return devres_release_all(&cdev);
	default:
		if (fw == F_WDT)
			return watchdog_dev_ping(&wdd);
		if (fw == F_RNG)
			return hwrng_read(RNG_NAME, b, sizeof(b), true);
		return rtc_read_time(&rtcd, &tm);
	}
}

/* Whether the registration is there: a call the framework refuses. */
static int probe(void)
{
	return fw == F_WDT ? watchdog_dev_stop(&wdd) : do_call(P_CALL);
}

static int table_call(unsigned int c)
{
	return do_call(fw == F_RTC ? rtc_calls[c] : c);
}

static void table_reach(unsigned int s)
{
	fresh();
	if (fw == F_RTC)
		s = rtc_states[s];
	if (s == S_HAND)
		assert_int_equal(do_call(P_REG), 0);
	else if (s == S_DEVM)
		assert_int_equal(do_call(P_DEVM), 0);
	/* Started: its unregister stops it (WDOG_STOP_ON_UNREGISTER). */
	if (fw == F_WDT && s != S_NONE)
		assert_int_equal(watchdog_dev_start(&wdd), 0);
}

/*
 * What the round left: the registration there or not, the nodes on the
 * device, whether one by hand was left, what the driver saw go wrong (an
 * rng left with its init() in effect too), the methods run.
 */
static void table_undo(struct pairs_outcome *o)
{
	o->after[0] = probe();
	o->after[1] = devres_release_all(&cdev);
	o->after[2] = fw != F_RTC && probe() != -ENODEV;
	if (o->after[2])
		(void)do_call(P_UNREG);
	o->after[3] = __atomic_load_n(&bugs, __ATOMIC_ACQUIRE) +
		      __atomic_load_n(&inited, __ATOMIC_ACQUIRE);
	o->after[4] = __atomic_load_n(&methods, __ATOMIC_ACQUIRE);
}

/* The pair (@a, @b) of framework @f, in each state, in this child. */
static void pair_cell(int f, int a, int b)
{
	struct pairs_table t = {
		PAIRS_NAMES(state_names, call_names),
		.reach = table_reach,
		.call = table_call,
		.undo = table_undo,
		.rounds = test_race_rounds("DEVRES_PAIRS_ROUNDS", ROUNDS),
	};
	struct devres_ledger base, now;
	int failed = 0;
	long third = 0;
	pthread_t th[2];
	bool ordered;

	fw = (enum fw)f;
	assert_int_equal(init_dev(&cdev, "pairs-dev"), 0);
	if (fw == F_RTC) {
		t.nr_calls = 3;
		t.nr_states = 2;
		t.call_name = rtc_call_names;
		t.state_name = rtc_state_names;
	}
	/* The compat heap's device, made at the first kmalloc(): made now. */
	kfree(kmalloc(1, GFP_KERNEL));
	devres_ledger_snapshot(&base);
	pairs_start(&t, th);
	for (unsigned int s = 0; s < t.nr_states; s++)
		failed += pairs_one(&t, s, (unsigned int)a, (unsigned int)b,
				    &ordered, &third);
	pairs_stop(&t, th);
	devres_ledger_snapshot(&now);
	if (devres_ledger_diff(&base, &now, stderr)) {
		print_message("%s: the ledger is not at its baseline\n",
			      fw_names[f]);
		failed++;
	}
	if (failed)
		_exit(1);
}

static void every_pair(void **state)
{
	int failed = 0, cells = 0;
	char name[64];

	(void)state;
	for (int f = F_WDT; f <= F_RTC; f++) {
		int n = f == F_RTC ? 3 : 5;

		for (int a = 0; a < n; a++) {
			for (int b = a; b < n; b++) {
				snprintf(name, sizeof(name), "%s %s+%s",
					 fw_names[f],
					 f == F_RTC ? rtc_call_names[a]
						    : call_names[a],
					 f == F_RTC ? rtc_call_names[b]
						    : call_names[b]);
				cells++;
				failed += in_child(pair_cell, f, a, b, name);
			}
		}
	}
	print_message("%d pair cells, %d failed\n", cells, failed);
	assert_int_equal(failed, 0);
}

/* ---- One rng read from two threads: one read at a time ---- */

#define SERIAL_READS 100

static void *reader(void *arg)
{
	char b[4];

	(void)arg;
	for (int i = 0; i < SERIAL_READS; i++)
		if (hwrng_read(RNG_NAME, b, sizeof(b), true) != 4)
			__atomic_add_fetch(&bugs, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

static void serial_cell(int a, int b, int c)
{
	pthread_t t[2];

	(void)a;
	(void)b;
	(void)c;
	fw = F_RNG;
	assert_int_equal(init_dev(&cdev, "pairs-dev"), 0);
	fresh();
	slow_reads = true;
	assert_int_equal(hwrng_register(&rng), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, NULL), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	hwrng_unregister(&rng);
	if (bugs) {
		print_message("hwrng: %d reads overlapped or failed\n", bugs);
		_exit(1);
	}
}

/* ---- Two objects whose methods call each other's: a loop of waits ---- */

static struct watchdog_device wdd_b;
static struct hwrng rng_b;
static struct rtc_device rtcd_b;
static struct device dev_b;
static int in_a, in_b;	  /* __atomic: a thread is in A's, B's method */
static int inner[2];	  /* what each method's inner call returned */
static int loop_calls[2]; /* __atomic: methods begun, of A and of B */

/* Both threads in their methods before either calls the other's. */
static void meet(int *mine, const int *theirs)
{
	__atomic_store_n(mine, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2000 && !__atomic_load_n(theirs, __ATOMIC_ACQUIRE);
	     i++)
		usleep(500);
}

/* The method of A (@me 0) or B (1): the first one calls the other's. */
static int loop_method(int me)
{
	struct rtc_time tm;
	char b[4];
	int ret;

	if (__atomic_add_fetch(&loop_calls[me], 1, __ATOMIC_ACQ_REL) > 1)
		return 0;
	meet(me ? &in_b : &in_a, me ? &in_a : &in_b);
	if (fw == F_WDT)
		ret = watchdog_dev_ping(me ? &wdd : &wdd_b);
	else if (fw == F_RNG)
		ret = hwrng_read(me ? RNG_NAME : RNG_B_NAME, b, sizeof(b),
				 true);
	else
		ret = rtc_read_time(me ? &rtcd : &rtcd_b, &tm);
	inner[me] = ret;
	return 0;
}

static int wdt_loop(struct watchdog_device *w)
{
	return loop_method(w == &wdd_b);
}

static int rng_loop(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)wait;
	memset(data, 0x5a, max < 4 ? max : 4);
	(void)loop_method(r == &rng_b);
	return max < 4 ? (int)max : 4;
}

static int rtc_loop(struct device *dev, struct rtc_time *tm)
{
	rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000, tm);
	return loop_method(dev == &dev_b);
}

static const struct watchdog_ops wdt_loop_ops = { .start = wdt_loop,
						  .ping = wdt_loop };
static const struct rtc_class_ops rtc_loop_ops = { .read_time = rtc_loop };

static void *outer_call(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct rtc_time tm;
	char b[4];

	if (fw == F_WDT)
		(void)watchdog_dev_start(me ? &wdd_b : &wdd);
	else if (fw == F_RNG)
		(void)hwrng_read(me ? RNG_B_NAME : RNG_NAME, b, sizeof(b),
				 true);
	else
		(void)rtc_read_time(me ? &rtcd_b : &rtcd, &tm);
	return NULL;
}

static void loop_cell(int f, int b, int c)
{
	pthread_t t[2];
	int w0, w, refused, ran;

	(void)b;
	(void)c;
	fw = (enum fw)f;
	assert_int_equal(init_dev(&cdev, "pairs-dev"), 0);
	assert_int_equal(init_dev(&dev_b, "pairs-b"), 0);
	fresh();
	wdd.ops = &wdt_loop_ops;
	rng.init = NULL;
	rng.cleanup = NULL;
	rng.read = rng_loop;
	rtcd.ops = &rtc_loop_ops;
	wdd_b = wdd;
	rng_b = rng;
	rng_b.name = RNG_B_NAME;
	rtcd_b = rtcd;
	rtcd_b.parent = &dev_b;
	if (fw == F_WDT) {
		assert_int_equal(watchdog_register_device(&wdd), 0);
		assert_int_equal(watchdog_register_device(&wdd_b), 0);
	} else if (fw == F_RNG) {
		assert_int_equal(hwrng_register(&rng), 0);
		assert_int_equal(hwrng_register(&rng_b), 0);
	} else {
		assert_int_equal(devm_rtc_register_device(&rtcd), 0);
		assert_int_equal(devm_rtc_register_device(&rtcd_b), 0);
	}
	w0 = devres_warn_count();
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, outer_call,
						(void *)(intptr_t)i),
				 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	w = devres_warn_count() - w0;
	refused = (inner[0] == -EDEADLK) + (inner[1] == -EDEADLK);
	ran = (inner[0] == 0 || inner[0] == 4) +
	      (inner[1] == 0 || inner[1] == 4);
	if (fw == F_WDT) {
		watchdog_unregister_device(&wdd);
		watchdog_unregister_device(&wdd_b);
	} else if (fw == F_RNG) {
		hwrng_unregister(&rng);
		hwrng_unregister(&rng_b);
	}
	(void)devres_release_all(&cdev);
	(void)devres_release_all(&dev_b);
	if (refused != 1 || ran != 1 || w != 1) {
		print_message("%s: inner calls returned %d and %d, %d WARNs "
			      "(want one -EDEADLK, one run, one WARN)\n",
			      fw_names[f], inner[0], inner[1], w);
		_exit(1);
	}
}

/* ---- A take-back's own method registers its object again ---- */

static int again_ret = 1;

static void rng_cleanup_again(struct hwrng *r)
{
	again_ret = hwrng_register(r);
}

static int wdt_stop_again(struct watchdog_device *w)
{
	again_ret = watchdog_register_device(w);
	return 0;
}

static const struct watchdog_ops wdt_again_ops = { .start = wdt_method,
						   .stop = wdt_stop_again };

/*
 * An rng's cleanup(), a watchdog's stop on unregister, registering the
 * object its take-back is taking back: refused (-EBUSY) with one WARN,
 * as the register would wait for the take-back that runs it; the object
 * registers again after.
 */
static void again_cell(int f, int b, int c)
{
	int w0, w, after;

	(void)b;
	(void)c;
	fw = (enum fw)f;
	assert_int_equal(init_dev(&cdev, "pairs-dev"), 0);
	fresh();
	rng.cleanup = rng_cleanup_again;
	wdd.ops = &wdt_again_ops;
	assert_int_equal(do_call(P_REG), 0);
	if (fw == F_WDT)
		assert_int_equal(watchdog_dev_start(&wdd), 0);
	w0 = devres_warn_count();
	(void)do_call(P_UNREG);
	w = devres_warn_count() - w0;
	rng.cleanup = NULL;
	wdd.ops = &wdt_ops;
	after = do_call(P_REG);
	if (!after)
		(void)do_call(P_UNREG);
	if (again_ret != -EBUSY || w != 1 || after) {
		print_message("%s: the register from the take-back returned "
			      "%d, %d WARNs (want -EBUSY, 1); after: %d\n",
			      fw_names[f], again_ret, w, after);
		_exit(1);
	}
}

/* ---- A method's call on its own object; a register after an orphan ---- */

static int own_ret = 1;

static int wdt_ping_own(struct watchdog_device *w)
{
	static int depth;

	if (depth++ == 0)
		own_ret = watchdog_dev_ping(w);
	depth--;
	return 0;
}

static const struct watchdog_ops wdt_own_ops = { .start = wdt_method,
						 .ping = wdt_ping_own };

/*
 * A watchdog's ping() that pings its own watchdog: the kernel's waits for
 * the wd_data->lock its caller holds, for ever. Refused (-EDEADLK) with
 * one WARN; the outer ping returns.
 */
static void own_call_cell(int a, int b, int c)
{
	int w0, w, outer;

	(void)a;
	(void)b;
	(void)c;
	fw = F_WDT;
	assert_int_equal(init_dev(&cdev, "pairs-dev"), 0);
	fresh();
	wdd.ops = &wdt_own_ops;
	assert_int_equal(watchdog_register_device(&wdd), 0);
	assert_int_equal(watchdog_dev_start(&wdd), 0);
	w0 = devres_warn_count();
	outer = watchdog_dev_ping(&wdd);
	w = devres_warn_count() - w0;
	watchdog_unregister_device(&wdd);
	if (outer || own_ret != -EDEADLK || w != 1) {
		print_message("watchdog own ping: outer %d, inner %d, %d WARNs "
			      "(want 0, -EDEADLK, 1)\n",
			      outer, own_ret, w);
		_exit(1);
	}
}

static int unreg_done; /* __atomic: the read took its rng back */

/* A read that takes its own rng back, then lingers before it returns. */
static int rng_read_unreg(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)wait;
	hwrng_unregister(r);
	__atomic_store_n(&unreg_done, 1, __ATOMIC_RELEASE);
	usleep(100000);
	memset(data, 0x5a, max < 4 ? max : 4);
	return max < 4 ? (int)max : 4;
}

static void *orphan_reader(void *arg)
{
	char b[4];

	(void)arg;
	(void)hwrng_read(RNG_NAME, b, sizeof(b), true);
	return NULL;
}

/*
 * An rng taken back from its own read on one thread (its cleanup() runs
 * when the read returns), registered again on another meanwhile: the
 * register waits for that cleanup(), so the new init() runs after it,
 * with no WARN but the take-back's own.
 */
static void orphan_cell(int a, int b, int c)
{
	pthread_t t;
	int w0, w, ret;

	(void)a;
	(void)b;
	(void)c;
	fw = F_RNG;
	assert_int_equal(init_dev(&cdev, "pairs-dev"), 0);
	fresh();
	rng.read = rng_read_unreg;
	assert_int_equal(hwrng_register(&rng), 0);
	w0 = devres_warn_count();
	assert_int_equal(pthread_create(&t, NULL, orphan_reader, NULL), 0);
	while (!__atomic_load_n(&unreg_done, __ATOMIC_ACQUIRE))
		usleep(1000);
	rng.read = rng_read;
	ret = hwrng_register(&rng);
	pthread_join(t, NULL);
	w = devres_warn_count() - w0;
	if (!ret)
		hwrng_unregister(&rng);
	if (ret || w != 1 || __atomic_load_n(&bugs, __ATOMIC_ACQUIRE)) {
		print_message("hwrng orphan: register %d, %d WARNs, %d "
			      "overlaps (want 0, 1, 0)\n",
			      ret, w, __atomic_load_n(&bugs, __ATOMIC_ACQUIRE));
		_exit(1);
	}
}

static void one_read_at_a_time(void **state)
{
	int failed;

	(void)state;
	failed = in_child(serial_cell, 0, 0, 0, "hwrng serial");
	for (int f = F_WDT; f <= F_RTC; f++) {
		char name[32];

		snprintf(name, sizeof(name), "%s loop", fw_names[f]);
		failed += in_child(loop_cell, f, 0, 0, name);
		if (f == F_RTC)
			continue;
		snprintf(name, sizeof(name), "%s again", fw_names[f]);
		failed += in_child(again_cell, f, 0, 0, name);
	}
	failed += in_child(own_call_cell, 0, 0, 0, "watchdog own call");
	failed += in_child(orphan_cell, 0, 0, 0, "hwrng orphan");
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_read_at_a_time),
		cmocka_unit_test(every_pair),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
