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
 *
 * With liburcu-bp as the read side (a build with DEVRES_WITH_URCU, the
 * asan preset) the accesses of a dead thread are forgotten by liburcu-bp's
 * own thread-exit hook, not by the library: the first test checks which
 * read side the handles use, so that these cases are known to cover that
 * hook there; the same binary runs again with DEVRES_REVOCABLE=fallback
 * in such a build (tests/CMakeLists.txt), so both read sides meet every
 * case in one build.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * The read side is liburcu-bp when the library links it (it is mapped in
 * the process) unless DEVRES_REVOCABLE=fallback: the handle's log line
 * says which serves it.
 */
static void read_side_is_known(void **state)
{
	const char *env = getenv("DEVRES_REVOCABLE");
	FILE *maps = fopen("/proc/self/maps", "re");
	bool urcu = false, found = false;
	char line[512], want[40];
	struct revocable *r;

	(void)state;
	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps))
		urcu |= strstr(line, "liburcu-bp") != NULL;
	fclose(maps);
	if (env && strcmp(env, "fallback") == 0)
		urcu = false;
	snprintf(want, sizeof(want), "(read side %s)",
		 urcu ? "urcu-bp" : "fallback");
	start_log_capture();
	devres_set_log(true);
	r = devm_revocable_create(&tdev, &res[0], NULL);
	devres_set_log(false);
	assert_non_null(r);
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		found |= strstr(cap.line[i], want) != NULL;
	print_message("read side: %s\n", urcu ? "urcu-bp" : "fallback");
	assert_true(found);
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
		cmocka_unit_test_setup_teardown(read_side_is_known, dev_setup,
						dev_teardown),
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
