// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan timeout=120 */
/*
 * The frameworks' registries as one class: a watchdog, an rtc and an
 * hwrng, each through the same rows, one cell a row and a registry, with
 * the return and the WARN count each must give (the table, cells[]).
 *
 *   twice        registered twice by hand: refused, one WARN; the first
 *                registration stays, and goes once
 *   devm_twice   the same with the devm_ form
 *   never        unregistered by hand, never registered: one WARN,
 *                nothing done (the kernel oopses), and it registers after
 *   devm_never   devm_hwrng_unregister() of an rng with no node: one WARN
 *   unreg_twice  unregistered by hand twice: the second one WARN
 *   race         a call of the driver's method parked in the method while
 *                another thread unregisters by hand: the unregister waits
 *                for it, a call made meanwhile is refused (-ENODEV)
 *                without running the method, no method begins after the
 *                unregister returned, no WARN
 *   devm_race    the same, with the devm_ registration released by the
 *                device's release (devres_release_all())
 *   own          a method that takes its own registration back (by hand;
 *                an rtc's parent released): one WARN, the call returns,
 *                the record released when it does (the last put), the
 *                calls after refused
 *   fork         fork() while another thread holds the registries' lock:
 *                the child (under an alarm) registers its own object,
 *                calls it and takes it back; a call on the parent's
 *                registration WARNs once and does nothing
 *
 * An rtc has no unregister but its parent's release (the kernel's), so
 * the rows by hand have no rtc cell; devm_never exists for the hwrng only.
 * Before the registries shared their lock and put: an hwrng registered
 * twice was refused with no WARN, and an unregister by hand of what was
 * not registered (never, or a second time) said nothing: 7 cells failed.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include "kcompat/kctest.h"
#include "gate.h"

#define CHILD_ALARM_S 10
#define RNG_NAME "reg-rng"

enum cls {
	C_WDT,
	C_RTC,
	C_RNG
};

static const char *const cls_names[] = { "watchdog", "rtc", "hwrng" };

enum row {
	R_TWICE,
	R_DEVM_TWICE,
	R_NEVER,
	R_DEVM_NEVER,
	R_UNREG_TWICE,
	R_RACE,
	R_DEVM_RACE,
	R_OWN,
	R_FORK
};

static const char *const row_names[] = { "twice",      "devm_twice",  "never",
					 "devm_never", "unreg_twice", "race",
					 "devm_race",  "own",	      "fork" };

/* A cell: the row's key call returns @ret, and the row sees @warns. */
struct cell {
	enum row row;
	enum cls cls;
	int ret;
	int warns;
};

/* clang-format off */
static const struct cell cells[] = {
	{ R_TWICE,       C_WDT, -EBUSY,  1 },
	{ R_TWICE,       C_RTC, -EBUSY,  1 },
	{ R_TWICE,       C_RNG, -EEXIST, 1 },
	{ R_DEVM_TWICE,  C_WDT, -EBUSY,  1 },
	{ R_DEVM_TWICE,  C_RTC, -EBUSY,  1 },
	{ R_DEVM_TWICE,  C_RNG, -EEXIST, 1 },
	{ R_NEVER,       C_WDT, 0,       1 },
	{ R_NEVER,       C_RNG, 0,       1 },
	{ R_DEVM_NEVER,  C_RNG, 0,       1 },
	{ R_UNREG_TWICE, C_WDT, 0,       1 },
	{ R_UNREG_TWICE, C_RNG, 0,       1 },
	{ R_RACE,        C_WDT, 0,       0 },
	{ R_RACE,        C_RNG, 0,       0 },
	{ R_DEVM_RACE,   C_WDT, 0,       0 },
	{ R_DEVM_RACE,   C_RTC, 0,       0 },
	{ R_DEVM_RACE,   C_RNG, 0,       0 },
	{ R_OWN,         C_WDT, 0,       1 },
	{ R_OWN,         C_RTC, 0,       1 },
	{ R_OWN,         C_RNG, 0,       1 },
	{ R_FORK,        C_WDT, 0,       1 },
	{ R_FORK,        C_RTC, 0,       1 },
	{ R_FORK,        C_RNG, 0,       1 },
};
/* clang-format on */

/* ---- The driver: one method each, counted, parked at the gate ---- */

static bool park;     /* __atomic: the next method waits at the gate */
static bool back_in;  /* the next method takes its registration back */
static int methods;   /* __atomic: methods begun */
static bool taken;    /* __atomic: the take-back returned */
static int ran_after; /* __atomic: methods begun after it returned */

static void take_back_cur(void);

static int method(void)
{
	__atomic_add_fetch(&methods, 1, __ATOMIC_ACQ_REL);
	if (back_in) {
		back_in = false;
		take_back_cur();
	}
	if (__atomic_load_n(&taken, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&ran_after, 1, __ATOMIC_ACQ_REL);
	if (__atomic_exchange_n(&park, false, __ATOMIC_ACQ_REL))
		gate_wait();
	return 0;
}

static int wdt_start(struct watchdog_device *w)
{
	(void)w;
	return 0;
}

static int wdt_stop(struct watchdog_device *w)
{
	(void)w;
	return method();
}

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	(void)dev;
	rtc_time64_to_tm(RTC_TIMESTAMP_BEGIN_2000, tm);
	return method();
}

static int rng_read(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)r;
	(void)wait;
	size_t n = max < 4 ? max : 4;
	int ret;

	memset(data, 0x5a, n);
	ret = method();
	return ret ? ret : (int)n;
}

static const struct watchdog_info wdt_info = { .identity = "registries" };
static const struct watchdog_ops wdt_ops = { .start = wdt_start,
					     .stop = wdt_stop };
static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read };

/* The objects: the parent's, and (in a child of fork()) the child's. */
static struct watchdog_device wdd, wdd2;
static struct rtc_device rtcd, rtcd2;
static struct hwrng rng, rng2;
static struct device cdev;

/* ---- Each registry's calls, one table ---- */

struct cls_ops {
	int (*reg)(void);      /* by hand; an rtc's only form is devm_ */
	int (*devm_reg)(void); /* on tdev (an rtc's parent) */
	void (*unreg)(void);   /* by hand; NULL for an rtc */
	int (*call)(void);     /* 0 when the method ran, else the error */
	int (*child)(void);    /* in a child: its own registered, called */
	int (*foreign)(void);  /* in a child: the parent's called */
};

static void fresh(void)
{
	memset(&wdd, 0, sizeof(wdd));
	wdd.parent = &tdev;
	wdd.info = &wdt_info;
	wdd.ops = &wdt_ops;
	memset(&rtcd, 0, sizeof(rtcd));
	rtcd.parent = &tdev;
	rtcd.ops = &rtc_ops;
	memset(&rng, 0, sizeof(rng));
	rng.name = RNG_NAME;
	rng.read = rng_read;
	wdd2 = wdd;
	rtcd2 = rtcd;
	rtcd2.parent = &cdev;
	rng2 = rng;
	methods = ran_after = 0;
	park = taken = back_in = false;
}

static int wdt_reg(void)
{
	return watchdog_register_device(&wdd);
}

static int wdt_devm_reg(void)
{
	return devm_watchdog_register_device(&tdev, &wdd);
}

static void wdt_unreg(void)
{
	watchdog_unregister_device(&wdd);
}

static int wdt_call(void)
{
	return watchdog_dev_stop(&wdd);
}

static int wdt_child(void)
{
	int ret = watchdog_register_device(&wdd2);

	if (ret)
		return ret;
	ret = watchdog_dev_stop(&wdd2);
	watchdog_unregister_device(&wdd2);
	if (ret)
		return ret;
	return watchdog_dev_stop(&wdd2) == -ENODEV ? 0 : -EIO;
}

static int rtc_reg(void)
{
	return devm_rtc_register_device(&rtcd);
}

static int rtc_call(void)
{
	struct rtc_time tm = { 0 };

	return rtc_read_time(&rtcd, &tm);
}

static int rtc_child(void)
{
	struct rtc_time tm = { 0 };
	int ret;

	if (init_dev(&cdev, "child-dev"))
		return -EIO;
	ret = devm_rtc_register_device(&rtcd2);
	if (ret)
		return ret;
	ret = rtc_read_time(&rtcd2, &tm);
	(void)devres_release_all(&cdev);
	if (ret)
		return ret;
	return rtc_read_time(&rtcd2, &tm) == -ENODEV ? 0 : -EIO;
}

static int rng_reg(void)
{
	return hwrng_register(&rng);
}

static int rng_devm_reg(void)
{
	return devm_hwrng_register(&tdev, &rng);
}

static void rng_unreg(void)
{
	hwrng_unregister(&rng);
}

static int rng_call(void)
{
	char b[4] = { 0 };
	int ret = hwrng_read(RNG_NAME, b, sizeof(b), true);

	return ret == (int)sizeof(b) ? 0 : ret;
}

/* The child's rng has the parent's name: a lookup finds the child's. */
static int rng_child(void)
{
	int ret = hwrng_register(&rng2);

	if (ret)
		return ret;
	ret = rng_call();
	hwrng_unregister(&rng2);
	if (ret)
		return ret;
	return rng_call() == -ENODEV ? 0 : -EIO;
}

/* The parent's: refused (an hwrng's call by name finds the child's). */
static int wdt_foreign(void)
{
	return wdt_call();
}

static int rtc_foreign(void)
{
	return rtc_call();
}

static int rng_foreign(void)
{
	hwrng_unregister(&rng);
	return -ENODEV;
}

static const struct cls_ops ops[] = {
	[C_WDT] = { wdt_reg, wdt_devm_reg, wdt_unreg, wdt_call, wdt_child,
		    wdt_foreign },
	[C_RTC] = { rtc_reg, rtc_reg, NULL, rtc_call, rtc_child, rtc_foreign },
	[C_RNG] = { rng_reg, rng_devm_reg, rng_unreg, rng_call, rng_child,
		    rng_foreign },
};

/* ---- The rows ---- */

static int w0;

static int warns(void)
{
	return devres_warn_count() - w0;
}

/* Whether the cell saw what its row of the table says; if not, why. */
static bool report(const struct cell *c, int ret, int w, bool rest,
		   const char *what)
{
	if (ret == c->ret && w == c->warns && rest)
		return true;
	print_message("%s, %s: returned %d (want %d), %d WARNs (want %d)%s%s\n",
		      row_names[c->row], cls_names[c->cls], ret, c->ret, w,
		      c->warns, rest ? "" : ": ", rest ? "" : what);
	return false;
}

/* Takes back what a cell left registered, by hand or on tdev. */
static void take_back(const struct cell *c, bool devm)
{
	if (devm || !ops[c->cls].unreg)
		(void)devres_release_all(&tdev);
	else
		ops[c->cls].unreg();
}

static bool row_twice(const struct cell *c, bool devm)
{
	const struct cls_ops *o = &ops[c->cls];
	int (*reg)(void) = devm ? o->devm_reg : o->reg;
	int ret, w, first, after;

	if (reg())
		return report(c, 0, 0, false, "the first registration failed");
	w0 = devres_warn_count();
	ret = reg();
	w = warns();
	first = o->call();
	take_back(c, devm);
	after = o->call();
	return report(c, ret, w, first == 0 && after == -ENODEV,
		      "the first registration did not stay, or did not go");
}

static bool row_never(const struct cell *c)
{
	const struct cls_ops *o = &ops[c->cls];
	int w, again;

	w0 = devres_warn_count();
	if (c->row == R_DEVM_NEVER)
		devm_hwrng_unregister(&tdev, &rng);
	else
		o->unreg();
	w = warns();
	again = o->reg();
	if (!again)
		again = o->call();
	o->unreg();
	return report(c, 0, w, again == 0, "it did not register and run after");
}

static bool row_unreg_twice(const struct cell *c)
{
	const struct cls_ops *o = &ops[c->cls];
	int w;

	if (o->reg())
		return report(c, 0, 0, false, "the registration failed");
	o->unreg();
	w0 = devres_warn_count();
	o->unreg();
	w = warns();
	return report(c, 0, w, o->call() == -ENODEV, "a call ran after");
}

static const struct cell *cur;
static bool cur_devm;
static int call_ret, tb_tid;

static void take_back_cur(void)
{
	take_back(cur, cur_devm);
}

static bool row_own(const struct cell *c)
{
	const struct cls_ops *o = &ops[c->cls];
	int ret, w, after;

	if (o->reg())
		return report(c, 0, 0, false, "the registration failed");
	cur = c;
	cur_devm = false;
	w0 = devres_warn_count();
	back_in = true;
	ret = o->call();
	w = warns();
	after = o->call();
	return report(c, ret, w, after == -ENODEV && methods == 1,
		      "a call ran after");
}

static void *run_call(void *arg)
{
	(void)arg;
	call_ret = ops[cur->cls].call();
	return NULL;
}

static void *run_take_back(void *arg)
{
	(void)arg;
	__atomic_store_n(&tb_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	take_back(cur, cur_devm);
	__atomic_store_n(&taken, true, __ATOMIC_RELEASE);
	return NULL;
}

static bool row_race(const struct cell *c, bool devm)
{
	const struct cls_ops *o = &ops[c->cls];
	pthread_t caller, taker;
	int meanwhile, after, w;
	long waited = 0;
	bool early;

	if ((devm ? o->devm_reg : o->reg)())
		return report(c, 0, 0, false, "the registration failed");
	cur = c;
	cur_devm = devm;
	tb_tid = 0;
	w0 = devres_warn_count();
	gate_reset();
	park = true;
	assert_int_equal(pthread_create(&caller, NULL, run_call, NULL), 0);
	gate_until_reached();
	assert_int_equal(pthread_create(&taker, NULL, run_take_back, NULL), 0);
	/* Asleep waiting for the method, or (wrongly) through already. */
	while (!__atomic_load_n(&taken, __ATOMIC_ACQUIRE) &&
	       !tid_asleep(__atomic_load_n(&tb_tid, __ATOMIC_ACQUIRE))) {
		assert_true(waited++ < 10000);
		usleep(1000);
	}
	usleep(20000);
	early = __atomic_load_n(&taken, __ATOMIC_ACQUIRE);
	meanwhile = o->call();
	gate_release();
	pthread_join(caller, NULL);
	pthread_join(taker, NULL);
	after = o->call();
	w = warns();
	if (!early && meanwhile == -ENODEV && after == -ENODEV &&
	    methods == 1 && !ran_after)
		return report(c, call_ret, w, true, "");
	print_message("%s, %s: the take-back returned %s the method ended; "
		      "a call meanwhile returned %d, after %d; %d methods, %d "
		      "after the take-back\n",
		      row_names[c->row], cls_names[c->cls],
		      early ? "before" : "after", meanwhile, after, methods,
		      ran_after);
	return report(c, call_ret, w, false, "see above");
}

/* ---- fork() while a thread holds the registries' lock ---- */

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool held, forked;

/* Holds the lock 50 ms, then parks (allocating nothing) until the fork. */
static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&kcompat_reg_lock);
	pthread_mutex_lock(&hold_lock);
	held = true;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
	usleep(50000);
	pthread_mutex_unlock(&kcompat_reg_lock);
	pthread_mutex_lock(&hold_lock);
	while (!forked)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	return NULL;
}

/* The child's exit: 0, or which check failed. */
static int in_child(const struct cls_ops *o)
{
	int w;

	alarm(CHILD_ALARM_S);
	if (o->child())
		return 1;
	w = devres_warn_count();
	if (o->foreign() != -ENODEV)
		return 2;
	return devres_warn_count() == w + 1 ? 0 : 3;
}

static bool row_fork(const struct cell *c)
{
	const struct cls_ops *o = &ops[c->cls];
	int status = 0, code, after;
	pthread_t t;
	pid_t pid;

	if (o->reg())
		return report(c, 0, 0, false, "the registration failed");
	held = forked = false;
	assert_int_equal(pthread_create(&t, NULL, holder, NULL), 0);
	pthread_mutex_lock(&hold_lock);
	while (!held)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(in_child(o));
	pthread_mutex_lock(&hold_lock);
	forked = true;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
	pthread_join(t, NULL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* The child's one WARN is the child's: the parent's works on. */
	after = o->call();
	take_back(c, false);
	if (code)
		print_message("%s, %s: the child exited %d\n",
			      row_names[c->row], cls_names[c->cls], code);
	/* The child counted its WARN: exit 3 when it was not one. */
	return report(c, code, code == 3 ? -1 : c->warns, after == 0,
		      "the parent's registration did not work on");
}

static bool run_cell(const struct cell *c)
{
	fresh();
	switch (c->row) {
	case R_TWICE:
	case R_DEVM_TWICE:
		return row_twice(c, c->row == R_DEVM_TWICE);
	case R_NEVER:
	case R_DEVM_NEVER:
		return row_never(c);
	case R_UNREG_TWICE:
		return row_unreg_twice(c);
	case R_RACE:
	case R_DEVM_RACE:
		return row_race(c, c->row == R_DEVM_RACE);
	case R_OWN:
		return row_own(c);
	default:
		return row_fork(c);
	}
}

static void every_registry(void **state)
{
	size_t n = sizeof(cells) / sizeof(cells[0]);
	int bad = 0;

	(void)state;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	for (size_t i = 0; i < n; i++) {
		bad += !run_cell(&cells[i]);
		(void)devres_release_all(&tdev);
	}
	print_message("%zu cells, %d failed\n", n, bad);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_registry, dev_setup,
						dev_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
