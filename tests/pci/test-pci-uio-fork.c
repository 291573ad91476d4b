// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * fork() while another thread is inside the UIO backend's configuration
 * (pci_uio_enable(), which a scan's attach and a device's last put also
 * lock): the child must be able to configure the backend and scan with
 * it. The lock used to be left out of the library's fork handlers: a
 * child forked while another thread held it waited for it for ever.
 *
 * Each child runs under an alarm, so a deadlock is a failure, not a hang
 * (the first one ends the test). Before the fix a child hung within the
 * first few dozen forks of the 300. The child starts no thread (a child of a parent with
 * threads may not, under ThreadSanitizer).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/uio.h>
#include "testlib.h"

#define FORKS 300

static int stop;
static unsigned long calls;

static void *configure(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		/*
		 * Takes the lock and allocates nothing: a child forked while
		 * this thread is in malloc() could find the allocator's own
		 * lock held (AddressSanitizer's is not given back at fork).
		 */
		if (pci_uio_enable(NULL, 0))
			abort();
		__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int child(void)
{
	alarm(3);
	if (pci_uio_enable("/dev", 0) || pci_uio_enable(NULL, 0))
		return 2;
	/* An unknown flag is refused before the lock, a known one after. */
	if (pci_uio_enable(NULL, 0x80) != -EINVAL)
		return 3;
	return 0;
}

static void test_fork_while_configuring(void **state)
{
	pthread_t t;
	int hung = 0, failed = 0;

	(void)state;
	assert_int_equal(pci_uio_enable(NULL, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, configure, NULL), 0);
	while (__atomic_load_n(&calls, __ATOMIC_RELAXED) < 10)
		sched_yield();
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child());
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
			hung++;
			break;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (hung || failed)
		print_error("%d of %d children hung, %d failed\n", hung, FORKS,
			    failed);
	assert_int_equal(hung, 0);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_while_configuring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
