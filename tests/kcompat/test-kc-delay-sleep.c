// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A delayed item asleep until its time is woken by nothing else, on a
 * driver's queue as on the system's: its thread's voluntary context
 * switches (/proc/self/task/<tid>/status), counted over a while of its
 * delay, stay at none but a spurious one (an item that woke every 50 ms
 * to see whether a drain waited for it counts ten). Yet a drain of its
 * queue still wakes it at once: it runs, and the drain returns, well
 * before its time. Cells: a long delay on a driver's queue (then a
 * drain, or a destroy), on the system's queue (then a cancel), and a
 * short delay on a driver's queue, which runs at its time and not
 * before; and one due within the drain's grace, which the drain waits
 * for, without a WARN. Each cell in a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/jiffies.h>
#include <linux/workqueue.h>
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "kcompat/kc-check.h"

enum kind {
	K_LONG_QUEUE,
	K_LONG_DESTROY,
	K_LONG_SYSTEM,
	K_SHORT_QUEUE,
	K_NR
};

static const char *const kind_name[] = { "long/queue", "long/destroy",
					 "long/system", "short/queue" };

#define MAX_TIDS 64
#define WATCH_MS 500
#define SHORT_MS 700

static struct delayed_work dw;
static long ran_at_ms; /* atomic; 0: not run */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void fn(struct work_struct *w)
{
	(void)w;
	__atomic_store_n(&ran_at_ms, now_ms(), __ATOMIC_RELEASE);
}

static long ran(void)
{
	return __atomic_load_n(&ran_at_ms, __ATOMIC_ACQUIRE);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* The threads of this process now, in @tids: how many. */
static int threads(int *tids)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	CHECK(d);
	while ((e = readdir(d)) && n < MAX_TIDS)
		if (e->d_name[0] != '.')
			tids[n++] = atoi(e->d_name);
	closedir(d);
	return n;
}

/* The voluntary context switches of thread @tid so far. */
static long switches(int tid)
{
	char path[64], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "re");
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	CHECK(n >= 0);
	return n;
}

/* The thread in @after and not in @before: the item's. */
static int new_thread(const int *before, int nb, const int *after, int na)
{
	int found = 0;

	for (int i = 0; i < na; i++) {
		bool old = false;

		for (int j = 0; j < nb; j++)
			old = old || after[i] == before[j];
		if (!old) {
			CHECK(!found);
			found = after[i];
		}
	}
	CHECK(found);
	return found;
}

static void *nothing(void *arg)
{
	return arg;
}

/*
 * A thread made and joined first: a runtime that starts a thread of its
 * own at the first pthread_create() (TSan's) has it then, before the
 * count of the item's.
 */
static void first_thread(void)
{
	pthread_t t;

	CHECK(!pthread_create(&t, NULL, nothing, NULL));
	CHECK(!pthread_join(t, NULL));
}

static void cell(int k, int unused1, int unused2)
{
	struct workqueue_struct *wq = alloc_workqueue("sleep", 0, 0);
	struct workqueue_struct *on = k == K_LONG_SYSTEM ? system_wq : wq;
	unsigned long delay = k == K_SHORT_QUEUE ? msecs_to_jiffies(SHORT_MS)
						 : 60000;
	int before[MAX_TIDS], after[MAX_TIDS], nb, na, tid;
	long t0, s0, s1;

	(void)unused1;
	(void)unused2;
	CHECK(wq);
	first_thread();
	nb = threads(before);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	INIT_DELAYED_WORK(&dw, fn);
	t0 = now_ms();
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	CHECK(queue_delayed_work(on, &dw, delay));
	/* Its thread asleep. */
	sleep_ms(100);
	na = threads(after);
	tid = new_thread(before, nb, after, na);
	s0 = switches(tid);
	sleep_ms(WATCH_MS);
	s1 = switches(tid);
	if (s1 - s0 > 1)
		fprintf(stderr, "woken %ld times in %d ms\n", s1 - s0,
			WATCH_MS);
	CHECK(s1 - s0 <= 1);
	CHECK(!ran());
	if (k == K_SHORT_QUEUE) {
		/* At its time, not before. */
		for (int i = 0; i < 300 && !ran(); i++)
			sleep_ms(10);
		CHECK(ran() && ran() - t0 >= SHORT_MS - 20);
	} else if (k == K_LONG_SYSTEM) {
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
		CHECK(cancel_delayed_work_sync(&dw));
		CHECK(!ran());
	} else {
		/* The drain wakes it: it runs now (one WARN), not in 60 s. */
		start_capture();
		t0 = now_ms();
		if (k == K_LONG_DESTROY)
			destroy_workqueue(wq);
		else
			drain_workqueue(wq);
		devres_set_log_sink(NULL, NULL);
		CHECK(ran() && now_ms() - t0 < 2000);
		CHECK(count_prefix("WARNING: ") == 1);
		if (k == K_LONG_DESTROY)
			return;
	}
	destroy_workqueue(wq);
}

/*
 * Due within KCOMPAT_WQ_DRAIN_GRACE_MS of a drain: the drain waits for
 * its time, and it runs then, without a word.
 */
static void near_cell(int unused0, int unused1, int unused2)
{
	struct workqueue_struct *wq = alloc_workqueue("near", 0, 0);
	long t0;

	(void)unused0;
	(void)unused1;
	(void)unused2;
	CHECK(wq);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	INIT_DELAYED_WORK(&dw, fn);
	t0 = now_ms();
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): the macro's */
	CHECK(queue_delayed_work(wq, &dw, msecs_to_jiffies(30)));
	start_capture();
	drain_workqueue(wq);
	devres_set_log_sink(NULL, NULL);
	CHECK(ran() && ran() - t0 >= 25);
	CHECK(!count_prefix("WARNING: "));
	destroy_workqueue(wq);
}

static void asleep_until_due(void **state)
{
	int bad = 0;

	(void)state;
	for (int k = 0; k < K_NR; k++)
		bad += in_child(cell, k, 0, 0, kind_name[k]);
	bad += in_child(near_cell, 0, 0, 0, "near/drain");
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(asleep_until_due),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
