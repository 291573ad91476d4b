// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan timeout=240 */
/*
 * Signal handlers that take and give back nodes, by class: every family
 * of the thread's own calls against every family of the handler's. A
 * thread loops on one family of calls whose nodes come from its node
 * cache (floating devres_alloc() and devres_free(), named resources added
 * and released, actions, managed memory of the cache's sizes and beyond,
 * and the calls that allocate elsewhere: small managed memory, groups)
 * while another thread sends it SIGUSR1 as fast as it can. Each handler
 * gives back what the previous one took and takes one of its own: so a
 * handler that lands in the middle of the thread's cache changes what the
 * thread is changing. Each chunk is filled with a pattern of its taker's
 * and checked before it goes back: a chunk handed out twice is seen.
 *
 * Each cell runs in a child of its own, under an alarm: a hang (a handler
 * waiting for a lock its thread holds, a loop in a broken list) is the
 * alarm's SIGALRM. The child checks the patterns, that every WARN is a
 * refusal of the handler's (one WARN, its failure value), the lists and
 * the ledger at its baseline once the last handler's node is given back.
 *
 * The second test takes fault injection's per-thread counts and call
 * sites the same way (fault_counts_against_handlers()).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include "testlib.h"
#include "rounds.h"

/*
 * How long a cell's thread loops: 300 ms, a handler every 10 to 40 us;
 * 100 ms under ASan or TSan, whose checks are on every handler's calls
 * from the first (there 180 to 3400 handlers in each cell under ASan at
 * load 17). SIGNODES_CELL_MS sets it (make soak: 3 s). The alarm comes
 * 10 s after the loop's end.
 */
#if defined(T_ASAN) || defined(T_TSAN)
#define CELL_MS 100
#else
#define CELL_MS 300
#endif
static long cell_ns;
#define CELL_ALARM ((unsigned int)(cell_ns / 1000000000L) + 10)
/* Data bytes of a node: both sides take this size class. */
#define SIZE 40
#define BIG 300

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Chunks seen with another taker's pattern. */
static int corrupt;

static void fill(void *p, size_t len, unsigned char pat)
{
	memset(p, pat, len);
}

static bool intact(const void *p, size_t len, unsigned char pat)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		if (c[i] != pat) {
			__atomic_add_fetch(&corrupt, 1, __ATOMIC_RELAXED);
			return false;
		}
	return true;
}

/* ---- The thread's families, on tdev: each 0, or -1 when a call failed ---- */

static unsigned char wpat = 1;

static unsigned char next_wpat(void)
{
	wpat = (unsigned char)(wpat % 0x7f + 1); /* 0x01 .. 0x7f */
	return wpat;
}

static void w_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void w_action(void *p)
{
	(void)p;
}

/* Three floating nodes, given back out of order. */
static int w_float(void)
{
	static const int back[3] = { 1, 0, 2 };
	unsigned char pat[3];
	void *p[3];

	for (int i = 0; i < 3; i++) {
		p[i] = devres_alloc(w_release, SIZE, 0);
		if (!p[i])
			return -1;
		pat[i] = next_wpat();
		fill(p[i], SIZE, pat[i]);
	}
	for (int i = 0; i < 3; i++) {
		intact(p[back[i]], SIZE, pat[back[i]]);
		devres_free(p[back[i]]);
	}
	return 0;
}

static int w_add(void)
{
	unsigned char pat = next_wpat();
	void *p = devres_alloc(w_release, SIZE, 0);

	if (!p)
		return -1;
	fill(p, SIZE, pat);
	devres_add(&tdev, p);
	if (devres_find(&tdev, w_release, NULL, NULL) != p)
		return -1;
	intact(p, SIZE, pat);
	return devres_release(&tdev, w_release, NULL, NULL) ? -1 : 0;
}

static int w_actions(void)
{
	static int tok;

	if (devm_add_action(&tdev, w_action, &tok))
		return -1;
	devm_remove_action(&tdev, w_action, &tok);
	return 0;
}

static int w_kmalloc(size_t len)
{
	unsigned char pat = next_wpat();
	void *p = devm_kmalloc(&tdev, len, 0);

	if (!p)
		return -1;
	fill(p, len, pat);
	intact(p, len, pat);
	devm_kfree(&tdev, p);
	return 0;
}

static int w_big(void)
{
	return w_kmalloc(BIG);
}

static int w_small(void)
{
	return w_kmalloc(32);
}

/*
 * Removed, not released: a handler's node added to tdev while the group
 * is open joins it, and stays the handler's to give back.
 */
static int w_group(void)
{
	void *g = devres_open_group(&tdev, NULL, 0);

	if (!g)
		return -1;
	devres_remove_group(&tdev, g);
	return 0;
}

/* A family of calls: its name, and one round of it (0, or -1). */
struct family {
	const char *name;
	int (*fn)(void);
};

static const struct family works[] = {
	{ "devres_alloc/devres_free", w_float },
	{ "devres_alloc/add/release", w_add },
	{ "devm_add/remove_action", w_actions },
	{ "devm_kmalloc(300)/kfree", w_big },
	{ "devm_kmalloc(32)/kfree", w_small },
	{ "devres_open/remove_group", w_group },
};
#define NWORKS (sizeof(works) / sizeof(works[0]))

/*
 * ---- The handler's families ----
 *
 * Each gives back what the previous handler took (checked first) and
 * takes one: 0 when both worked, 1 when the taking was refused (its
 * failure value and, counted by the caller, one WARN), -1 otherwise.
 * finish() gives back the last one, from the thread, once the storm is
 * over.
 */
static void *hkeep;
static unsigned char hpat = 0x80;

static unsigned char next_hpat(void)
{
	hpat = (unsigned char)(hpat == 0xfe ? 0x80 : hpat + 1);
	return hpat;
}

static void h_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static int match_ptr(struct device *dev, void *res, void *data)
{
	(void)dev;
	return res == data;
}

/* The pattern of the kept chunk, in its first byte's place of record. */
static unsigned char hkeep_pat;

/*
 * Each takes its new node before it gives back the old one: the cache's
 * list then has another head than before the handler, and a thread that
 * was taking a chunk from it when the handler came takes the one the
 * handler took, unless the cache tells them apart.
 */
static int h_float(bool take)
{
	void *p = NULL;

	if (take) {
		p = devres_alloc(h_release, SIZE, 0);
		if (!p)
			return 1;
	}
	if (hkeep) {
		intact(hkeep, SIZE, hkeep_pat);
		devres_free(hkeep);
	}
	hkeep = p;
	if (p) {
		hkeep_pat = next_hpat();
		fill(p, SIZE, hkeep_pat);
	}
	return 0;
}

static int h_added(struct device *dev, bool take)
{
	int w = devres_warn_count();
	unsigned char pat = next_hpat();
	void *p = NULL;

	if (take) {
		p = devres_alloc(h_release, SIZE, 0);
		if (!p)
			return 1;
		fill(p, SIZE, pat);
		devres_add(dev, p);
		if (devres_warn_count() != w) {
			/* Refused (its thread holds the lock): ours to free. */
			devres_free(p);
			return 1;
		}
	}
	/* Listed before the new one: the lookup finds the old one. */
	if (hkeep) {
		intact(hkeep, SIZE, hkeep_pat);
		if (devres_release(dev, h_release, match_ptr, hkeep))
			return -1;
	}
	hkeep = p;
	hkeep_pat = pat;
	return 0;
}

static int h_other(bool take)
{
	return h_added(&other, take);
}

static int h_same(bool take)
{
	return h_added(&tdev, take);
}

static const struct {
	const char *name;
	int (*fn)(bool take);
} hands[] = {
	{ "devres_alloc/devres_free", h_float },
	{ "devres_alloc/add/release, other", h_other },
	{ "devres_alloc/add/release, same", h_same },
};
#define NHANDS (sizeof(hands) / sizeof(hands[0]))

/* ---- One cell, in a child ---- */

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/*
 * The storm: a timer of the thread's own, armed again by each handler as
 * it ends, so that the thread runs STORM_NS between two handlers whatever
 * the handlers cost (a timer of a fixed period left it none in a dev
 * build: a handler as long as the period, the next one pending). No
 * sending thread: on a loaded machine it seldom had a CPU.
 */
#define STORM_NS 10000L

static timer_t storm;
static bool storming;
static unsigned int storm_seed = 1;

/* STORM_NS to 4 * STORM_NS: where a handler lands in a loop varies. */
static void storm_arm(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, STORM_NS } };

	storm_seed = storm_seed * 1103515245u + 12345u;
	its.it_value.tv_nsec += (long)((storm_seed >> 8) % (3 * STORM_NS));
	if (__atomic_load_n(&storming, __ATOMIC_RELAXED))
		timer_settime(storm, 0, &its, NULL);
}

static int storm_start(void)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &storm))
		return -1;
	storming = true;
	storm_arm();
	return 0;
}

static void storm_end(void)
{
	__atomic_store_n(&storming, false, __ATOMIC_RELAXED);
	timer_delete(storm);
}

static int hfam;
/* Handler outcomes: worked, refused with one WARN, anything else. */
static int h_ok, h_refused, h_wrong;

static void on_signal(int sig)
{
	int saved = errno, w0 = devres_warn_count(), r, d;

	(void)sig;
	r = hands[hfam].fn(true);
	d = devres_warn_count() - w0;
	if (r == 0 && d == 0)
		h_ok++;
	else if (r == 1 && d == 1)
		h_refused++;
	else
		h_wrong++;
	storm_arm();
	errno = saved;
}

/*
 * Chunks of both sizes in the cache first, so that a handler finds one
 * wherever its thread is: a handler that must go to malloc() while its
 * thread is in malloc() elsewhere (not for the cache) is outside what
 * the library can make safe.
 */
static void warm(void)
{
	enum {
		N = 256
	};
	static void *p[N], *q[N];

	for (int i = 0; i < N; i++) {
		p[i] = devres_alloc(w_release, SIZE, 0);
		q[i] = devres_alloc(w_release, sizeof(void *), 0);
	}
	for (int i = 0; i < N; i++) {
		devres_free(p[i]);
		devres_free(q[i]);
	}
}

/* What went wrong in a child, as its exit status's bits. */
#define BAD_CALL 1	/* a call of the thread's failed */
#define BAD_CHUNK 2	/* a chunk handed out twice */
#define BAD_HANDLER 4	/* a handler's call neither worked nor refused */
#define BAD_WARNS 8	/* a WARN that is no refusal of the handler's */
#define BAD_LISTS 16	/* devres_check() */
#define BAD_LEDGER 32	/* not at its baseline */
#define BAD_NONE_RAN 64 /* no handler's call worked */
#define BAD_COUNT 128	/* a count of fault injection or call sites */

static int run_cell(size_t wi)
{
	struct devres_ledger base, now;
	struct sigaction sa;
	int w0, bad = 0;
	long t0;

	alarm(CELL_ALARM);
	/* A device belongs to the process that made it: this child's own. */
	if (init_dev(&tdev, "test-dev") || init_dev(&other, "other-dev"))
		return BAD_CALL;
	warm();
	devres_ledger_snapshot(&base);
	w0 = devres_warn_count();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	if (storm_start())
		return BAD_CALL;
	t0 = now_ns();
	while (now_ns() - t0 < cell_ns)
		if (works[wi].fn())
			bad |= BAD_CALL;
	storm_end();
	signal(SIGUSR1, SIG_IGN);
	if (hands[hfam].fn(false))
		bad |= BAD_HANDLER;
	devres_ledger_snapshot(&now);
	if (corrupt)
		bad |= BAD_CHUNK;
	if (h_wrong)
		bad |= BAD_HANDLER;
	if (devres_warn_count() - w0 != h_refused)
		bad |= BAD_WARNS;
	if (devres_check(&tdev) || devres_check(&other))
		bad |= BAD_LISTS;
	if (devres_ledger_diff(&base, &now, stderr))
		bad |= BAD_LEDGER;
#ifndef T_TSAN
	/*
	 * ThreadSanitizer holds a signal back until its thread enters one
	 * of its interceptors: handlers run, but seldom, and may all be
	 * refused.
	 */
	if (!h_ok)
		bad |= BAD_NONE_RAN;
#endif
	fprintf(stderr,
		"  %-28s <- %-32s handler %6d worked, %5d refused, "
		"%d wrong, %d chunks twice\n",
		works[wi].name, hands[hfam].name, h_ok, h_refused, h_wrong,
		corrupt);
	return bad;
}

/*
 * ---- Fault injection's counts, by class ----
 *
 * fail-nth and defer-nth count this thread's calls down, and a handler's
 * calls are its thread's: a thread loops on one family of calls with
 * both counts armed far from 0 while its handlers make calls of another;
 * every call of either side takes its share, none is lost. The share of
 * each family (its fault points, its deferral points) is measured before
 * the storm, one call at a time. Call sites nest the same way: none is
 * left entered once the storm is over.
 */
#define NTH_FAR (1u << 30)

static int t_alloc(void)
{
	void *p = devres_alloc(w_release, SIZE, 0);

	if (!p)
		return -1;
	devres_free(p);
	return 0;
}

static int t_defer(void)
{
	return devres_should_defer(&tdev, "t_defer") ? -1 : 0;
}

/* An allocation inside a call site of its own, as the compat headers make. */
static int t_site(void)
{
	int r;

	devres_call_site_enter(__FILE__, __LINE__, "t_site");
	r = t_alloc();
	devres_call_site_leave();
	return r;
}

static const struct family counters[] = {
	{ "devres_alloc/devres_free", t_alloc },
	{ "devm_kmalloc(32)/kfree", w_small },
	{ "devres_should_defer", t_defer },
	{ "call site: devres_alloc", t_site },
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static const struct family counter_hands[] = {
	{ "devres_alloc/devres_free", t_alloc },
	{ "devres_should_defer", t_defer },
	{ "call site: devres_alloc", t_site },
};
#define NCOUNTER_HANDS (sizeof(counter_hands) / sizeof(counter_hands[0]))

static unsigned long h_calls;

/*
 * A handler's allocation refused with one WARN (U14: its thread in the
 * heap for the node cache, every size in an AddressSanitizer build) took
 * its share all the same: the fault point comes first. Its release was
 * registered before the storm (warm()), so no refusal comes before it.
 */
static void on_signal_count(int sig)
{
	int saved = errno, w0 = devres_warn_count(), r, d;

	(void)sig;
	r = counter_hands[hfam].fn();
	d = devres_warn_count() - w0;
	if (r == 0 && d == 0) {
		h_calls++;
	} else if (r && d == 1) {
		h_calls++;
		h_refused++;
	} else {
		h_wrong++;
	}
	storm_arm();
	errno = saved;
}

/* What one call of @fn takes from fail-nth (*@fail) and defer-nth. */
static void share(int (*fn)(void), unsigned int *fail, unsigned int *defer)
{
	devres_fail_nth(NTH_FAR);
	devres_defer_nth(NTH_FAR);
	fn();
	*fail = NTH_FAR - devres_fail_nth_get();
	*defer = NTH_FAR - devres_defer_nth_get();
}

static int run_counter_cell(size_t ci)
{
	unsigned int tf, td, hf, hd, fail, defer;
	unsigned long t_calls = 0, want_f, want_d;
	struct sigaction sa;
	int w0, bad = 0;
	long t0;

	alarm(CELL_ALARM);
	if (init_dev(&tdev, "test-dev"))
		return BAD_CALL;
	warm();
	share(counters[ci].fn, &tf, &td);
	share(counter_hands[hfam].fn, &hf, &hd);
	if (!(tf + td) || !(hf + hd))
		return BAD_CALL; /* a family that counts nothing proves nothing */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal_count;
	devres_fail_nth(NTH_FAR);
	devres_defer_nth(NTH_FAR);
	sigaction(SIGUSR1, &sa, NULL);
	if (storm_start())
		return BAD_CALL;
	t0 = now_ns();
	while (now_ns() - t0 < cell_ns) {
		if (counters[ci].fn())
			bad |= BAD_CALL;
		t_calls++;
	}
	storm_end();
	signal(SIGUSR1, SIG_IGN);
	fail = devres_fail_nth_get();
	defer = devres_defer_nth_get();
	devres_fail_nth(0);
	devres_defer_nth(0);
	/* No call site left entered: one more leave is refused. */
	w0 = devres_warn_count();
	devres_call_site_leave();
	if (devres_warn_count() - w0 != 1)
		bad |= BAD_COUNT;
	want_f = NTH_FAR - t_calls * tf - h_calls * hf;
	want_d = NTH_FAR - t_calls * td - h_calls * hd;
	if (h_wrong)
		bad |= BAD_HANDLER;
	if (fail != want_f || defer != want_d)
		bad |= BAD_COUNT;
#ifndef T_TSAN
	if (!h_calls)
		bad |= BAD_NONE_RAN;
#endif
	fprintf(stderr,
		"  %-28s <- %-26s %8lu calls, handler %6lu (%d refused); "
		"fail-nth %ld off, defer-nth %ld off\n",
		counters[ci].name, counter_hands[hfam].name, t_calls, h_calls,
		h_refused, (long)fail - (long)want_f,
		(long)defer - (long)want_d);
	return bad;
}

/*
 * A table of families, each a struct whose first member is its name: so
 * the thread's and the handler's, whatever their calls' types.
 */
struct table {
	const void *at;
	size_t n, size;
};
#define TABLE(t)                                                               \
	((struct table){ (t), sizeof(t) / sizeof((t)[0]), sizeof((t)[0]) })

static const char *name_of(struct table t, size_t i)
{
	return *(const char *const *)((const char *)t.at + i * t.size);
}

/*
 * Every family of the thread's (@w) against every family of the
 * handler's (@h), each cell in a child running @cell.
 */
static void grid(struct table w, struct table h, int (*cell)(size_t wi))
{
	int failed = 0, hung = 0;

	/* SIGNODES_WORK=k: the k-th family of the thread's only. */
	const char *only = getenv("SIGNODES_WORK");

	for (size_t wi = 0; wi < w.n; wi++)
		for (size_t hi = 0; hi < h.n; hi++) {
			int status;
			pid_t pid;

			if (only && strtoul(only, NULL, 10) != wi)
				continue;
			fflush(stderr);
			pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				hfam = (int)hi;
				_exit(cell(wi));
			}
			assert_int_equal(waitpid(pid, &status, 0), pid);
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				continue;
			failed++;
			if (WIFSIGNALED(status) &&
			    WTERMSIG(status) == SIGALRM) {
				hung++;
				print_message("%s <- %s: hung\n",
					      name_of(w, wi), name_of(h, hi));
			} else if (WIFSIGNALED(status)) {
				print_message("%s <- %s: signal %d\n",
					      name_of(w, wi), name_of(h, hi),
					      WTERMSIG(status));
			} else {
				print_message("%s <- %s: failed, 0x%x\n",
					      name_of(w, wi), name_of(h, hi),
					      WEXITSTATUS(status));
			}
		}
	print_message("%d of %zu cells failed, %d of them hung\n", failed,
		      w.n * h.n, hung);
	assert_int_equal(failed, 0);
}

static void every_family_against_every_family(void **state)
{
	(void)state;
	grid(TABLE(works), TABLE(hands), run_cell);
}

static void fault_counts_against_handlers(void **state)
{
	(void)state;
	grid(TABLE(counters), TABLE(counter_hands), run_counter_cell);
}

#ifdef T_TSAN
/*
 * ThreadSanitizer reports every malloc() and free() in a signal handler:
 * the handler's node comes from the heap when its thread is changing the
 * cache's lists (its thread is not in the heap then, which the report
 * cannot know). Symbolizing that report in a child that interposes
 * mmap() looped in ThreadSanitizer's own allocator.
 */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "report_signal_unsafe=0";
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_family_against_every_family),
		cmocka_unit_test(fault_counts_against_handlers),
	};

	cell_ns = test_rounds("SIGNODES_CELL_MS", CELL_MS) * 1000000L;
	/* A backtrace allocates: a handler's WARN must not. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
