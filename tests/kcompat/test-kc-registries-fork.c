// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The frameworks' registries (hwrng, watchdog, rtc: <linux/kcompat_reg.h>)
 * forked from a parent whose threads are inside them, as a table: each
 * framework (a row) times where the parent's threads are at the fork (a
 * column):
 *
 * - "in a method": a thread runs a method of the parent's registration
 *   (an rng's read(), a watchdog's ping(), an rtc's read_time()), parked
 *   in it.
 * - "in a turn": that, and a second thread calls the same method, asleep
 *   waiting for its turn (one call at a time, in the record of waits).
 * - "in a take-back": that, and a second thread takes the registration
 *   back (hwrng_unregister(), watchdog_unregister_device(), the release
 *   of the rtc's device), asleep waiting for the method to return.
 * - "forking from a method": the forking thread is the one in the
 *   method, and a second thread is in the take-back, waiting for it. In
 *   the child the method returns and its call completes (the call and
 *   its record are the parent's: the child lets go of its copy).
 *
 * In the dev build a third thread registers, uses and takes back an
 * object of the same framework in a loop throughout, so that the
 * registries' lock is taken at the moment of the fork (the sanitizers'
 * allocators are not fork-safe with a running thread: there the parent's
 * threads are all parked).
 *
 * Each child, under an alarm (a hang fails the cell): the parent's
 * registration is refused, one WARN a call, and nothing of it runs or is
 * released (its method is not called); the child registers an object of
 * its own of the same framework, calls its methods and takes it back at
 * once, with no WARN: no inherited lock, turn, count of calls or record
 * of waits keeps it waiting. The parent's registration then works on in
 * the parent, and goes once. Each cell runs in a process of its own.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/module.h>
#include <linux/hw_random.h>
#include <linux/rtc.h>
#include <linux/watchdog.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kcompat/kctest.h"
#include "hostile/cell-child.h"
#include "base/fork-park.h"

#define WAIT_MS 5000
#define CHILD_ALARM_S 5

#if defined(T_ASAN) || defined(T_TSAN)
#define FORKS 1
#else
#define FORKS 3
#endif

enum {
	FW_HWRNG,
	FW_WDT,
	FW_RTC,
	NFW
};
enum {
	AT_METHOD,
	AT_TURN,
	AT_TAKEBACK,
	AT_FORKER,
	NAT
};

static const char *const fw_names[NFW] = { "hwrng", "watchdog", "rtc" };
static const char *const at_names[NAT] = { "in a method", "in a turn",
					   "in a take-back",
					   "forking from a method" };

/* The parent's objects (p), the busy thread's (q), the child's (c). */
static struct hwrng prng, qrng, crng;
static struct watchdog_device pwdd, qwdd, cwdd;
static struct rtc_device *prtc;
static struct device pdev, qdev, cdev;

static const void *park_obj; /* the object whose method parks, once */
static sem_t parked, go;
static int calls; /* every method call, __atomic */
static int b_tid;
static bool stop;
static int cell_fw, cell_at;
static bool in_child;
static int fork_bad; /* the cell's failures in forks_from() */

static void forks_from(void);

/*
 * A method of @obj: parks there when it is the one armed, or (the
 * column "forking from a method") forks there.
 */
static void method(const void *obj)
{
	const void *want = obj;

	__atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_compare_exchange_n(&park_obj, &want, NULL, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	if (cell_at == AT_FORKER) {
		forks_from();
		return;
	}
	sem_post(&parked);
	while (sem_wait(&go) < 0)
		;
}

static int rng_read(struct hwrng *rng, void *data, size_t max, bool wait)
{
	(void)wait;
	method(rng);
	memset(data, 7, max < 4 ? max : 4);
	return max < 4 ? (int)max : 4;
}

static int wdt_op(struct watchdog_device *wdd)
{
	method(wdd);
	return 0;
}

static int rtc_read(struct device *dev, struct rtc_time *tm)
{
	method(dev);
	memset(tm, 0, sizeof(*tm));
	tm->tm_mday = 1;
	tm->tm_year = 100;
	return 0;
}

static const struct watchdog_ops wdt_ops = { .start = wdt_op,
					     .stop = wdt_op,
					     .ping = wdt_op };
static const struct watchdog_info wdt_info = { .identity = "regfork" };
static const struct rtc_class_ops rtc_ops = { .read_time = rtc_read };

/* The method of the parent's registration: 0 when it ran. */
static int p_method(void)
{
	struct rtc_time tm;
	u8 b[4];

	switch (cell_fw) {
	case FW_HWRNG:
		return hwrng_read("p", b, sizeof(b), false) == 4 ? 0 : -EIO;
	case FW_WDT:
		return watchdog_dev_ping(&pwdd);
	default:
		return rtc_read_time(prtc, &tm);
	}
}

/* The parent's registration taken back. */
static void p_takeback(void)
{
	switch (cell_fw) {
	case FW_HWRNG:
		hwrng_unregister(&prng);
		break;
	case FW_WDT:
		watchdog_unregister_device(&pwdd);
		break;
	default:
		(void)devres_release_all(&pdev);
		break;
	}
}

static void *a_thread(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)p_method();
}

static void *b_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&b_tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	sem_post(&parked);
	if (cell_at == AT_TURN)
		return (void *)(intptr_t)p_method();
	p_takeback();
	return NULL;
}

/*
 * An object of the framework registered, a method called, taken back:
 * on @dev for an rtc. 0 when all of it worked. @rng, @wdd: the object.
 */
static int own_round(struct hwrng *rng, struct watchdog_device *wdd,
		     struct device *dev)
{
	struct rtc_device *rtc;
	struct rtc_time tm;
	int bad = 0;
	u8 b[4];

	switch (cell_fw) {
	case FW_HWRNG:
		if (hwrng_register(rng))
			return 1;
		bad += hwrng_read(rng->name, b, sizeof(b), false) != 4;
		hwrng_unregister(rng);
		bad += hwrng_read(rng->name, b, sizeof(b), false) != -ENODEV;
		return bad;
	case FW_WDT:
		if (watchdog_register_device(wdd))
			return 1;
		bad += watchdog_dev_start(wdd) != 0;
		bad += watchdog_dev_ping(wdd) != 0;
		bad += watchdog_dev_stop(wdd) != 0;
		watchdog_unregister_device(wdd);
		return bad;
	default:
		rtc = devm_rtc_allocate_device(dev);
		if (IS_ERR(rtc))
			return 1;
		rtc->ops = &rtc_ops;
		bad += devm_rtc_register_device(rtc) != 0;
		bad += rtc_read_time(rtc, &tm) != 0;
		bad += devres_release_all(dev) != 2;
		return bad;
	}
}

/* Methods one own_round() calls. */
static const int round_calls[NFW] = { 1, 3, 1 };

static void *busy_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST))
		if (own_round(&qrng, &qwdd, &qdev))
			return (void *)1;
	return NULL;
}

static void child(void)
{
	int warns = devres_warn_count(), base, want = 0;
	struct rtc_time tm;
	u8 b[4];

	alarm(CHILD_ALARM_S);
	base = __atomic_load_n(&calls, __ATOMIC_SEQ_CST);
	/* The parent's: each call refused with one WARN, nothing run. */
	switch (cell_fw) {
	case FW_HWRNG:
		/* A lookup by name skips it without a word. */
		CHILD_CHECK(hwrng_read("p", b, sizeof(b), false) == -ENODEV);
		hwrng_unregister(&prng);
		want = 1;
		break;
	case FW_WDT:
		CHILD_CHECK(watchdog_dev_ping(&pwdd) == -ENODEV);
		CHILD_CHECK(watchdog_dev_stop(&pwdd) == -ENODEV);
		watchdog_unregister_device(&pwdd);
		want = 3;
		break;
	default:
		CHILD_CHECK(rtc_read_time(prtc, &tm) == -ENODEV);
		CHILD_CHECK(devres_release_all(&pdev) == -ENODEV);
		want = 2;
		break;
	}
	CHILD_CHECK(devres_warn_count() == warns + want);
	CHILD_CHECK(__atomic_load_n(&calls, __ATOMIC_SEQ_CST) == base);
	/* Its own, twice: registered, used and taken back at once. */
	CHILD_CHECK(init_dev(&cdev, "regfork-child") == 0);
	for (int i = 0; i < 2; i++)
		CHILD_CHECK(own_round(&crng, &cwdd, &cdev) == 0);
	CHILD_CHECK(__atomic_load_n(&calls, __ATOMIC_SEQ_CST) ==
		    base + 2 * round_calls[cell_fw]);
	CHILD_CHECK(devres_warn_count() == warns + want);
	_exit(0);
}

#define CELL_CHECK(c)                                                          \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s / %s: line %d: %s\n",              \
				fw_names[cell_fw], at_names[cell_at],          \
				__LINE__, #c);                                 \
			bad++;                                                 \
		}                                                              \
	} while (0)

/* The parent's registration made, its thread parked in its method. */
static int p_register(void)
{
	prng = (struct hwrng){ .name = "p", .read = rng_read };
	pwdd = (struct watchdog_device){ .ops = &wdt_ops, .info = &wdt_info };
	if (init_dev(&pdev, "regfork-parent") || init_dev(&qdev, "regfork-"
								 "busy"))
		return -1;
	switch (cell_fw) {
	case FW_HWRNG:
		park_obj = &prng;
		return hwrng_register(&prng);
	case FW_WDT:
		if (watchdog_register_device(&pwdd) ||
		    watchdog_dev_start(&pwdd))
			return -1;
		park_obj = &pwdd;
		return 0;
	default:
		prtc = devm_rtc_allocate_device(&pdev);
		if (IS_ERR(prtc))
			return -1;
		prtc->ops = &rtc_ops;
		park_obj = &pdev;
		return devm_rtc_register_device(prtc);
	}
}

static pthread_t b_th;

/* Thread b started, and asleep in its turn or in the take-back's wait. */
static int b_start(void)
{
	int waited = 0;

	if (pthread_create(&b_th, NULL, b_thread, NULL))
		return -1;
	if (sem_wait_ms(&parked, WAIT_MS))
		return -1;
	while (!tid_asleep(__atomic_load_n(&b_tid, __ATOMIC_SEQ_CST)))
		if (waited++ > WAIT_MS)
			return -1;
		else
			poll(NULL, 0, 1);
	poll(NULL, 0, 2);
	return 0;
}

/*
 * The forks of a cell, each child's status checked (fork_bad counts the
 * failures). Returns in the child, with in_child set.
 */
static void fork_children(bool busy)
{
	char what[128];

	snprintf(what, sizeof(what), "%s / %s", fw_names[cell_fw],
		 at_names[cell_at]);
	fork_bad += fork_children_checked(FORKS, busy, what, &in_child);
}

static bool cell_busy;

/* The column "forking from a method": the method forks. */
static void forks_from(void)
{
	if (b_start()) {
		fork_bad++;
		return;
	}
	fork_children(cell_busy);
}

static int one_cell(int fw, int at)
{
	pthread_t a = 0, q = 0;
	int bad = 0, warns, ret_p = 0;
	void *ret;

	cell_busy = true;
#if defined(T_ASAN) || defined(T_TSAN)
	cell_busy = false;
#endif
	cell_fw = fw;
	cell_at = at;
	alarm(30);
	qrng = (struct hwrng){ .name = "q", .read = rng_read };
	qwdd = (struct watchdog_device){ .ops = &wdt_ops, .info = &wdt_info };
	crng = (struct hwrng){ .name = "p", .read = rng_read };
	cwdd = (struct watchdog_device){ .ops = &wdt_ops, .info = &wdt_info };
	if (sem_init(&parked, 0, 0) || sem_init(&go, 0, 0) || p_register())
		return 100;
	warns = devres_warn_count();
	if (at != AT_FORKER) {
		if (pthread_create(&a, NULL, a_thread, NULL))
			return 101;
		if (sem_wait_ms(&parked, WAIT_MS))
			return 102;
		if (at != AT_METHOD && b_start())
			return 103;
	}
	if (cell_busy && pthread_create(&q, NULL, busy_thread, NULL))
		return 104;
	if (at == AT_FORKER)
		ret_p = p_method();
	else
		fork_children(cell_busy);
	if (in_child) {
		/* Its copy of the parent's call completed. */
		if (ret_p)
			_exit(99);
		child();
	}
	bad += fork_bad;
	if (cell_busy) {
		__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
		CELL_CHECK(pthread_join(q, &ret) == 0 && !ret);
	}
	/* The parent's own calls go on, and its registration goes once. */
	CELL_CHECK(ret_p == 0);
	if (at != AT_FORKER) {
		sem_post(&go);
		CELL_CHECK(pthread_join(a, &ret) == 0 && !ret);
	}
	if (at != AT_METHOD)
		CELL_CHECK(pthread_join(b_th, &ret) == 0 && !ret);
	if (at == AT_METHOD || at == AT_TURN) {
		CELL_CHECK(p_method() == 0);
		p_takeback();
	}
	/* The rtc went with its device's release. */
	if (fw == FW_HWRNG)
		CELL_CHECK(p_method() == -EIO);
	CELL_CHECK(devres_warn_count() == warns);
	return bad;
}

static void forks_from_busy_registries(void **state)
{
	(void)state;
	run_cells_in_children(one_cell, fw_names, NFW, at_names, NAT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forks_from_busy_registries),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
