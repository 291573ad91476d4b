// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan white-box */
/*
 * A release of the devres lock whose wake finds nobody asleep leaves
 * PARKED clear, even when another thread takes the lock while the wake is
 * in the kernel (src/base/lock.c). A lock that cleared PARKED only if the
 * word was still as the release left it kept it set then, and every later
 * release paid a FUTEX_WAKE for nobody until one came back to an unchanged
 * word: with two threads taking turns on a quiet machine, most of them.
 *
 * The interleaving is made, not waited for: this binary puts its own
 * syscall() in front of libc's (the executable comes first in symbol
 * lookup, and the white-box build links the library into it), and at the
 * armed FUTEX_WAKE it takes the word as another thread would, then makes
 * the real call. A waiter on its way to sleep is stood in for by setting
 * PARKED while this thread holds the lock: what such a waiter's
 * compare-and-swap leaves before its FUTEX_WAIT finds the word changed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include "testlib.h"
#include "../src/base/node.h"

/* Armed: the word, and the thread whose FUTEX_WAKEs on it are counted. */
static unsigned int *armed_word;
static pthread_t armed_thread;
static int take_at_wake; /* take the word at the next wake, once */
static int wakes;	 /* FUTEX_WAKEs on the armed word */
static int taken;	 /* the word was free and taken at the wake */

long syscall(long nr, ...)
{
	static long (*real_syscall)(long, ...);
	long a[6];
	va_list ap;

	if (!real_syscall)
		*(void **)&real_syscall = dlsym(RTLD_NEXT, "syscall");
	/* As libc's syscall(): six arguments, whatever the call uses. */
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_futex && armed_word &&
	    (unsigned int *)a[0] == armed_word &&
	    (a[1] & FUTEX_CMD_MASK) == FUTEX_WAKE &&
	    pthread_equal(pthread_self(), armed_thread)) {
		unsigned int v = __atomic_load_n(armed_word, __ATOMIC_RELAXED);

		wakes++;
		if (take_at_wake) {
			take_at_wake = 0;
			taken = !(v & DR_LOCKED) &&
				__atomic_compare_exchange_n(
					armed_word, &v, v | DR_LOCKED, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		}
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void rec(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

static void *first_taker(void *arg)
{
	devres_add(arg, devres_alloc(rec, 8, GFP_KERNEL));
	return NULL;
}

/* With the lock held: a waiter set PARKED and is on its way to sleep. */
static void waiter_on_its_way(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	__atomic_or_fetch(lock_word(dev), DR_PARKED, __ATOMIC_RELAXED);
}

static void nothing(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
}

static void test_wake_for_nobody_leaves_parked_clear(void **state)
{
	struct device *dev = *state;
	unsigned int *l = lock_word(dev), v;
	pthread_t t;

	/* The bias goes to another thread and is revoked: the word is used. */
	assert_int_equal(pthread_create(&t, NULL, first_taker, dev), 0);
	pthread_join(t, NULL);
	assert_int_equal(__atomic_load_n(l, __ATOMIC_RELAXED), 0);

	armed_thread = pthread_self();
	__atomic_store_n(&armed_word, l, __ATOMIC_RELEASE);
	take_at_wake = 1;
	devres_for_each_res(dev, rec, NULL, NULL, waiter_on_its_way, NULL);
	v = __atomic_load_n(l, __ATOMIC_RELAXED);
	/* The other taker lets go (before any assertion: the teardown locks). */
	__atomic_and_fetch(l, ~DR_LOCKED, __ATOMIC_RELEASE);
	/* The release woke (nobody), and the word was taken meanwhile. */
	assert_int_equal(wakes, 1);
	assert_int_equal(taken, 1);
	assert_int_equal(v, DR_LOCKED);

	/* Nobody set PARKED since: this release makes no system call. */
	devres_for_each_res(dev, rec, NULL, NULL, nothing, NULL);
	assert_int_equal(wakes, 1);
	__atomic_store_n(&armed_word, NULL, __ATOMIC_RELEASE);
	assert_int_equal(__atomic_load_n(l, __ATOMIC_RELAXED), 0);
	assert_int_equal(devres_check(dev), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_wake_for_nobody_leaves_parked_clear, dev_setup,
			dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
