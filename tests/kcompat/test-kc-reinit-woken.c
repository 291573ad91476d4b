// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * reinit_completion() while waiters that complete() or complete_all()
 * woke have not yet returned from their wait (the kernel's documented
 * misuse: every waiter must have woken and finished before the reinit).
 * The reset took back the wake-up they were owed: each went back to
 * sleep, for ever for wait_for_completion(), until its timeout for
 * wait_for_completion_timeout(), which then said it timed out.
 *
 * The table: the signal (complete(), complete_all()) x the wait
 * (wait_for_completion(), wait_for_completion_timeout() of a minute) x
 * one or two waiters. Each waiter is held in a signal handler inside its
 * wait (woken, not yet returned) while the test signals and reinits.
 * Then one WARN naming reinit_completion(), the waiters the signal woke
 * return as completed (a timed one with time left), the others (complete()
 * of two) go on waiting until the next complete(), and the completion is
 * reset for the next round. Two controls say nothing: a reinit with
 * waiters nothing woke (they wait on), and one with no waiter.
 * Each cell runs in a child under an alarm (kc-cell.h): a lost wake-up
 * hangs it and fails it alone.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/completion.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "kcompat/kc-check.h"

#define WAITERS_MAX 2
#define TIMEOUT_MS 60000UL

enum sig {
	S_COMPLETE,
	S_COMPLETE_ALL,
	S_NONE
};
enum wait {
	W_WAIT,
	W_TIMEOUT
};

static const char *const sig_name[] = { "complete", "complete_all", "none" };
static const char *const wait_name[] = { "wait", "timeout" };

static struct completion c;
static sem_t parked, release;
static int returned;			/* atomic */
static unsigned long left[WAITERS_MAX]; /* each waiter's return */

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Held here, inside the wait, until the test lets it go. */
static void park(int sig)
{
	int e = errno;

	(void)sig;
	sem_post(&parked);
	while (sem_wait(&release) < 0)
		;
	errno = e;
}

struct waiter {
	enum wait w;
	int i;
};

static void *waiter_main(void *arg)
{
	struct waiter *wt = arg;

	if (wt->w == W_WAIT) {
		wait_for_completion(&c);
		left[wt->i] = 1;
	} else {
		left[wt->i] = wait_for_completion_timeout(&c, TIMEOUT_MS);
	}
	__atomic_add_fetch(&returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int returned_now(void)
{
	return __atomic_load_n(&returned, __ATOMIC_ACQUIRE);
}

/* Whether @n waiters have returned within @ms. */
static bool returned_within(int n, int ms)
{
	for (int i = 0; i < ms && returned_now() < n; i++)
		sleep_ms(1);
	return returned_now() >= n;
}

/*
 * Each of the @n waiters held in park(), asleep in its wait: none holds
 * the completion's lock (a signal taken before its condition wait would
 * hold it: let go and try again).
 */
static void park_all(pthread_t *t, int n)
{
	for (;;) {
		while (__atomic_load_n(&c.waiters, __ATOMIC_RELAXED) <
		       (unsigned int)n)
			sleep_ms(1);
		sleep_ms(5);
		for (int i = 0; i < n; i++)
			CHECK(!pthread_kill(t[i], SIGUSR1));
		for (int i = 0; i < n; i++)
			while (sem_wait(&parked) < 0)
				;
		if (!pthread_mutex_trylock(&c.lock)) {
			pthread_mutex_unlock(&c.lock);
			return;
		}
		for (int i = 0; i < n; i++)
			sem_post(&release);
	}
}

static void cell(int s, int w, int n)
{
	struct sigaction sa = { .sa_handler = park };
	struct waiter wt[WAITERS_MAX];
	pthread_t t[WAITERS_MAX];
	int woken = s == S_COMPLETE_ALL ? n : s == S_COMPLETE ? 1 : 0;

	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	CHECK(!sem_init(&parked, 0, 0) && !sem_init(&release, 0, 0));
	init_completion(&c);
	for (int i = 0; i < n; i++) {
		wt[i] = (struct waiter){ (enum wait)w, i };
		CHECK(!pthread_create(&t[i], NULL, waiter_main, &wt[i]));
	}
	park_all(t, n);
	listen();
	if (s == S_COMPLETE)
		complete(&c);
	else if (s == S_COMPLETE_ALL)
		complete_all(&c);
	reinit_completion(&c);
	heard(woken ? "reinit_completion" : NULL, "woken and not yet returned");
	for (int i = 0; i < n; i++)
		sem_post(&release);
	/* The woken return; the others still wait. */
	CHECK(returned_within(woken, 5000));
	sleep_ms(50);
	CHECK(returned_now() == woken);
	CHECK(!completion_done(&c));
	listen();
	for (int i = woken; i < n; i++)
		complete(&c);
	CHECK(returned_within(n, 5000));
	for (int i = 0; i < n; i++) {
		CHECK(!pthread_join(t[i], NULL));
		CHECK(left[i] > 0 && left[i] <= TIMEOUT_MS);
	}
	/* Reset: nothing left over for the next wait. */
	CHECK(!completion_done(&c));
	CHECK(!try_wait_for_completion(&c));
	complete(&c);
	CHECK(try_wait_for_completion(&c));
	CHECK(wait_for_completion_timeout(&c, 1) == 0);
	heard(NULL, NULL);
}

/* A reinit after a complete() with no waiter: reset, no WARN. */
static void cell_no_waiter(int s, int w, int n)
{
	(void)w;
	(void)n;
	init_completion(&c);
	listen();
	if (s == S_COMPLETE)
		complete(&c);
	else
		complete_all(&c);
	reinit_completion(&c);
	CHECK(!completion_done(&c));
	CHECK(wait_for_completion_timeout(&c, 1) == 0);
	heard(NULL, NULL);
}

static void woken_waiters(void **state)
{
	char name[64];
	int bad = 0;

	(void)state;
	for (int s = S_COMPLETE; s <= S_NONE; s++)
		for (int w = W_WAIT; w <= W_TIMEOUT; w++)
			for (int n = 1; n <= WAITERS_MAX; n++) {
				snprintf(name, sizeof(name), "%s/%s/%d",
					 sig_name[s], wait_name[w], n);
				bad += in_child(cell, s, w, n, name);
			}
	for (int s = S_COMPLETE; s <= S_COMPLETE_ALL; s++) {
		snprintf(name, sizeof(name), "%s/no-waiter", sig_name[s]);
		bad += in_child(cell_no_waiter, s, 0, 0, name);
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(woken_waiters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
