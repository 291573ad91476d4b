// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A thread that ends inside revocable accesses, every way a thread can
 * end: it returns, it calls pthread_exit(), it is cancelled while it
 * waits. Its accesses are ended at its exit with exactly one WARN, so the
 * revocation of the handles by another thread finishes (it used to wait
 * for the dead reader for ever: the alarm fails the test then), and a
 * revocation the thread queued from inside its own access is finished at
 * its exit, the resource released once. A thread that ends with its
 * accesses balanced gets no WARN.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/revocable.h>
#include "testlib.h"

static int released[2];
static int res[2];
static struct revocable *h[2];
static int in_access;

static void rel(void *r)
{
	__atomic_add_fetch(&released[(int *)r - res], 1, __ATOMIC_RELAXED);
}

enum how {
	RETURN,
	EXIT,
	CANCEL,
	BALANCED,
	REVOKE_OWN
};

static void *reader(void *arg)
{
	enum how how = (enum how)(intptr_t)arg;

	/* Three accesses over two handles, nested. */
	assert_ptr_equal(revocable_try_access(h[0]), &res[0]);
	assert_ptr_equal(revocable_try_access(h[1]), &res[1]);
	assert_ptr_equal(revocable_try_access(h[0]), &res[0]);
	if (how == BALANCED) {
		revocable_access_end(h[0]);
		revocable_access_end(h[1]);
		revocable_access_end(h[0]);
		return NULL;
	}
	if (how == REVOKE_OWN) {
		/* Queued: this thread is one of the readers. */
		devres_release_all(&tdev);
		assert_int_equal(released[0] + released[1], 0);
		return NULL;
	}
	__atomic_store_n(&in_access, 1, __ATOMIC_RELEASE);
	if (how == EXIT)
		pthread_exit(NULL);
	if (how == CANCEL)
		for (;;)
			pause(); /* a cancellation point */
	return NULL;
}

static void run(enum how how, int warns)
{
	pthread_t t;

	for (int i = 0; i < 2; i++) {
		h[i] = devm_revocable_create(&tdev, &res[i], rel);
		assert_non_null(h[i]);
		released[i] = 0;
	}
	__atomic_store_n(&in_access, 0, __ATOMIC_RELEASE);
	start_capture();
	assert_int_equal(
		pthread_create(&t, NULL, reader, (void *)(intptr_t)how), 0);
	if (how == CANCEL) {
		while (!__atomic_load_n(&in_access, __ATOMIC_ACQUIRE))
			usleep(1000);
		assert_int_equal(pthread_cancel(t), 0);
	}
	pthread_join(t, NULL);
	if (warns)
		expect_warn_on("(no device)", "revocable_try_access",
			       "a thread ended inside 3 "
			       "accesses");
	else
		expect_no_warn();
	/* Revoked here (or already, REVOKE_OWN): must not wait for the dead. */
	alarm(20);
	devres_release_all(&tdev);
	alarm(0);
	assert_int_equal(released[0], 1);
	assert_int_equal(released[1], 1);
}

static void ends_by_return(void **state)
{
	(void)state;
	run(RETURN, 1);
}

static void ends_by_pthread_exit(void **state)
{
	(void)state;
	run(EXIT, 1);
}

static void ends_by_cancellation(void **state)
{
	(void)state;
	run(CANCEL, 1);
}

static void ends_balanced(void **state)
{
	(void)state;
	run(BALANCED, 0);
}

static void ends_with_own_revocation_queued(void **state)
{
	(void)state;
	run(REVOKE_OWN, 1);
}

/* Many threads end inside accesses while another revokes: TSan's turn. */
static void many_rounds(void **state)
{
	(void)state;
	devres_set_log_sink(NULL, NULL);
	for (int i = 0; i < 50; i++)
		run((enum how)(i % 3), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ends_by_return, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ends_by_pthread_exit, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ends_by_cancellation, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ends_balanced, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(ends_with_own_revocation_queued,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(many_rounds, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
