// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * A log sink whose call does not return: it leaves by longjmp(), ends
 * its thread with pthread_exit(), or is cancelled. Once, a call left by
 * longjmp() stayed counted as running for ever: the next
 * devres_set_log_sink() from any thread waited for it without end, and
 * the thread's own later lines were taken for lines of its sink (dropped,
 * their WARNs not sent); a pthread_exit() of that thread, later and far
 * from the sink, unwound to the sink's dead frame.
 *
 * Cells, each in a child under an alarm (a hang or a crash fails the
 * cell alone):
 * - jump/other: a thread's sink call jumps out and the thread waits;
 *   another thread's devres_set_log_sink() returns, within the bound, with
 *   one WARN naming itself; the jumped thread's next WARN is sent.
 * - jump/self: the sink jumps out on the main thread; its next WARN is
 *   sent and counted, with one WARN for the lost call; a replacement from
 *   another thread does not wait.
 * - jump/line: the same from a log line (ADD), and the same call again.
 * - jump/exit: the sink jumps out, and the thread calls pthread_exit()
 *   later: it ends cleanly, and a replacement does not wait.
 * - exit, cancel: the sink ends its thread; a replacement does not wait.
 * - nested: a line made from inside the sink is still dropped, not sent
 *   to the sink again.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include "testlib.h"
#include "kcompat/kc-cell.h"

enum how {
	JUMP,
	EXIT,
	CANCEL,
	NESTED
};

static struct device dev;
static int not_managed;
static __thread jmp_buf jb;
static __thread bool jump_set;
static enum how how;
static int heard, in_sink_now, cancel_sent, lines_from_sink;
static int armed; /* the sink leaves on its next call */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void bad_free(void)
{
	devm_kfree(&dev, &not_managed);
}

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	__atomic_add_fetch(&heard, 1, __ATOMIC_RELEASE);
	if (strstr(line, "from the sink"))
		lines_from_sink++;
	if (!__atomic_exchange_n(&armed, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_store_n(&in_sink_now, 1, __ATOMIC_RELEASE);
	switch (how) {
	case JUMP:
		if (jump_set)
			longjmp(jb, 1);
		break;
	case EXIT:
		pthread_exit(NULL);
	case CANCEL:
		for (;;) {
			if (__atomic_load_n(&cancel_sent, __ATOMIC_ACQUIRE))
				pthread_testcancel();
			sched_yield();
		}
	case NESTED:
		devres_warn(&dev, "nested", "from the sink");
		break;
	}
}

static int go_on; /* the thread's next step may start */

static void wait_step(int n)
{
	while (__atomic_load_n(&go_on, __ATOMIC_ACQUIRE) < n)
		sched_yield();
}

/* Its sink call jumps out; then, at the main thread's word, a WARN. */
static void *jumper(void *arg)
{
	int then_exit = (int)(intptr_t)arg;

	if (!setjmp(jb)) {
		jump_set = true;
		__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
		bad_free();
		return (void *)1; /* the sink returned: not this test */
	}
	jump_set = false;
	if (then_exit)
		pthread_exit((void *)2);
	wait_step(1);
	bad_free();
	return NULL;
}

static void *ender(void *arg)
{
	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
	bad_free();
	return (void *)1;
}

/* A replacement from another thread: returns, in how long (ms). */
static void *replace(void *arg)
{
	long t0 = now_ms();

	(void)arg;
	devres_set_log_sink(sink, NULL);
	return (void *)(intptr_t)(now_ms() - t0);
}

static long replace_elsewhere(void)
{
	pthread_t t;
	void *ms;

	CHECK(pthread_create(&t, NULL, replace, NULL) == 0);
	CHECK(pthread_join(t, &ms) == 0);
	return (long)(intptr_t)ms;
}

static void setup(void)
{
	CHECK(init_dev(&dev, "sinkdev") == 0);
	devres_set_log_sink(sink, NULL);
}

static void jump_other(int a, int b, int c)
{
	pthread_t t;
	void *ret;
	int w0;
	long ms;

	(void)a;
	(void)b;
	(void)c;
	setup();
	w0 = devres_warn_count();
	CHECK(pthread_create(&t, NULL, jumper, NULL) == 0);
	while (!__atomic_load_n(&in_sink_now, __ATOMIC_ACQUIRE))
		sched_yield();
	/* The thread left its sink call and waits: it makes no line. */
	heard = 0;
	ms = replace_elsewhere();
	CHECK(ms >= 1000 && ms < 5000);
	/* The misuse, and the replacement's WARN for the lost call. */
	CHECK(devres_warn_count() - w0 == 2);
	CHECK(heard == 1);
	/* The thread's next WARN is its own, sent and counted once. */
	__atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
	CHECK(pthread_join(t, &ret) == 0 && ret == NULL);
	CHECK(devres_warn_count() - w0 == 3);
	CHECK(heard == 2);
	CHECK(replace_elsewhere() < 1000);
}

static void jump_self(int a, int b, int c)
{
	int w0;

	(void)a;
	(void)b;
	(void)c;
	setup();
	w0 = devres_warn_count();
	if (!setjmp(jb)) {
		jump_set = true;
		armed = 1;
		bad_free();
		CHECK(!"the sink returned");
	}
	jump_set = false;
	CHECK(devres_warn_count() - w0 == 1);
	CHECK(heard == 1);
	/* Sent, and counted: with it, one WARN for the lost call. */
	bad_free();
	CHECK(heard == 2);
	CHECK(devres_warn_count() - w0 == 3);
	CHECK(replace_elsewhere() < 1000);
}

/* The same, from a log line rather than a WARN: the same path again. */
static void jump_line(int a, int b, int c)
{
	int w0;

	(void)a;
	(void)b;
	(void)c;
	setup();
	devres_set_log(true);
	w0 = devres_warn_count();
	if (!setjmp(jb)) {
		jump_set = true;
		armed = 1;
		CHECK(devm_kmalloc(&dev, 8, GFP_KERNEL));
		CHECK(!"the sink returned");
	}
	jump_set = false;
	CHECK(heard == 1);
	CHECK(devres_warn_count() == w0);
	CHECK(devm_kmalloc(&dev, 8, GFP_KERNEL));
	CHECK(heard == 2);
	CHECK(devres_warn_count() - w0 == 1);
	devres_set_log(false);
	CHECK(replace_elsewhere() < 1000);
}

static void jump_exit(int a, int b, int c)
{
	pthread_t t;
	void *ret;
	int w0;

	(void)a;
	(void)b;
	(void)c;
	setup();
	w0 = devres_warn_count();
	CHECK(pthread_create(&t, NULL, jumper, (void *)1) == 0);
	CHECK(pthread_join(t, &ret) == 0 && ret == (void *)2);
	CHECK(devres_warn_count() - w0 == 2);
	CHECK(replace_elsewhere() < 1000);
	CHECK(devres_warn_count() - w0 == 2);
}

static void ends_thread(int cancel, int b, int c)
{
	pthread_t t;
	void *ret;
	int w0;

	(void)b;
	(void)c;
	how = cancel ? CANCEL : EXIT;
	setup();
	w0 = devres_warn_count();
	CHECK(pthread_create(&t, NULL, ender, NULL) == 0);
	if (cancel) {
		while (!__atomic_load_n(&in_sink_now, __ATOMIC_ACQUIRE))
			sched_yield();
		CHECK(pthread_cancel(t) == 0);
		__atomic_store_n(&cancel_sent, 1, __ATOMIC_RELEASE);
	}
	CHECK(pthread_join(t, &ret) == 0);
	CHECK(ret == (cancel ? PTHREAD_CANCELED : NULL));
	CHECK(devres_warn_count() - w0 == 2);
	CHECK(replace_elsewhere() < 1000);
	/* The next WARN reaches the sink. */
	heard = 0;
	bad_free();
	CHECK(heard == 1);
}

static void nested(int a, int b, int c)
{
	int w0;

	(void)a;
	(void)b;
	(void)c;
	how = NESTED;
	setup();
	w0 = devres_warn_count();
	armed = 1;
	bad_free();
	CHECK(heard == 1);
	CHECK(lines_from_sink == 0);
	CHECK(devres_warn_count() - w0 == 2);
	CHECK(replace_elsewhere() < 1000);
}

static void sink_calls_not_returned(void **state)
{
	int bad = 0;

	(void)state;
	bad += in_child(jump_other, 0, 0, 0, "jump/other");
	bad += in_child(jump_self, 0, 0, 0, "jump/self");
	bad += in_child(jump_line, 0, 0, 0, "jump/line");
	bad += in_child(jump_exit, 0, 0, 0, "jump/exit");
	bad += in_child(ends_thread, 0, 0, 0, "exit");
	bad += in_child(ends_thread, 1, 0, 0, "cancel");
	bad += in_child(nested, 0, 0, 0, "nested");
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sink_calls_not_returned),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
