// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * Managed mappings across fork(): the child's copies of the parent's
 * managed mappings are not the child's to drop. The parent forks while
 * another of its threads keeps taking the table's lock (munmap() of
 * memory of its own, with a managed mapping live, so every call looks the
 * table up); the child must not wait on that lock. There munmap() of the
 * copy of a parent's managed mapping WARNs nothing; a managed mapping the
 * child makes on a device of its own and unmaps by hand WARNs once. The
 * parent's node is still on its device afterwards and its release unmaps
 * the parent's mapping, quietly.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/posix.h>
#include "testlib.h"

#define LEN 0x2000u
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

static int stop;

static void *unmapper(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		void *p = mmap(NULL, 4096, PROT_READ, ANON, -1, 0);

		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	return NULL;
}

static int nodes(struct device *dev)
{
	struct devres_stats st;

	devres_get_stats(dev, &st);
	return (int)st.allocs;
}

static void quiet(void *ctx, int level, const char *text)
{
	(void)ctx;
	(void)level;
	(void)text;
}

/* The child's checks; its exit status says which failed first. */
static int child(char *theirs)
{
	static struct device mine;
	long base = devres_warn_count();
	char *p;

	devres_set_log_sink(quiet, NULL);
	if (munmap(theirs, LEN))
		return 10;
	if (devres_warn_count() != base)
		return 11;
	if (init_dev(&mine, "child-dev"))
		return 12;
	p = devm_mmap(&mine, NULL, LEN, PROT_READ | PROT_WRITE, ANON, -1, 0);
	if (IS_ERR(p))
		return 13;
	if (munmap(p, LEN) || devres_warn_count() != base + 1)
		return 14;
	if (nodes(&mine))
		return 15;
	if (devres_release_all(&mine) != 0 || devres_warn_count() != base + 1)
		return 16;
	return 0;
}

#define ROUNDS 20

static void fork_with_busy_table(void **state)
{
	pthread_t t;
	char *p;

	(void)state;
	p = devm_mmap(&tdev, NULL, LEN, PROT_READ | PROT_WRITE, ANON, -1, 0);
	assert_false(IS_ERR(p));
	memset(p, 0x5a, LEN);
	__atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, unmapper, NULL), 0);
	for (int i = 0; i < ROUNDS; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child(p));
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			print_error("child: status %#x\n", status);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	/* The parent's mapping and node are untouched. */
	assert_int_equal(p[LEN - 1], 0x5a);
	assert_int_equal(nodes(&tdev), 1);
	start_capture();
	assert_int_equal(devres_release_all(&tdev), 1);
	expect_no_warn();
	assert_ptr_equal(
		mmap(p, LEN, PROT_NONE, ANON | MAP_FIXED_NOREPLACE, -1, 0), p);
	assert_int_equal(munmap(p, LEN), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fork_with_busy_table, dev_setup,
						dev_teardown),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests_name("posix-mmap-fork", tests, NULL,
					   NULL);
}
