// SPDX-License-Identifier: MIT
/* ctest-labels: unit */
/*
 * Misuse of the core: each misuse gives exactly one WARN line naming the
 * device, the function and the reason, counts in devres_warn_count(), and
 * leaves no crash, no corruption and no leak (the teardown checks the
 * ledger; ASan checks the rest).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include "testlib.h"

static int nrel;

static void count_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	nrel++;
}

static int *add_counted(struct device *dev)
{
	int *p = devres_alloc(count_release, sizeof(int), GFP_KERNEL);

	assert_non_null(p);
	devres_add(dev, p);
	return p;
}

static int nact;

static void act(void *data)
{
	(void)data;
	nact++;
}

static void test_double_add(void **state)
{
	struct device *dev = *state;
	int *p;

	nrel = 0;
	p = add_counted(dev);
	start_capture();
	devres_add(dev, p);
	expect_warn("devres_add", "already added");
	/* Added elsewhere: same misuse, the first device keeps it. */
	start_capture();
	devres_add(&other, p);
	expect_warn_on("other-dev", "devres_add", "already added");
	expect_stats(dev, 1, sizeof(int));
	expect_stats(&other, 0, 0);
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(nrel, 1);
}

static void test_get_added_node(void **state)
{
	struct device *dev = *state;
	int *p;

	p = add_counted(dev);
	start_capture();
	assert_null(devres_get(&other, p, NULL, NULL));
	expect_warn_on("other-dev", "devres_get", "already added");
	expect_stats(dev, 1, sizeof(int));
	expect_stats(&other, 0, 0);
}

static void test_free_added_node(void **state)
{
	struct device *dev = *state;
	int *p;

	nrel = 0;
	p = add_counted(dev);
	*p = 1234;
	start_capture();
	devres_free(p);
	/* The node does not know its device; the line says so. */
	expect_warn_on("(no device)", "devres_free", "still on a device");
	/* Not freed: still readable, still listed, released once. */
	assert_int_equal(*p, 1234);
	expect_stats(dev, 1, sizeof(int));
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(nrel, 1);
}

static void test_kfree_foreign(void **state)
{
	struct device *dev = *state;
	char *theirs, local[8];

	theirs = devm_kmalloc(&other, 8, GFP_KERNEL);
	assert_non_null(theirs);
	start_capture();
	devm_kfree(dev, theirs);
	expect_warn("devm_kfree", "not a managed allocation of this device");
	start_capture();
	devm_kfree(dev, local);
	expect_warn("devm_kfree", "not a managed allocation of this device");
	expect_stats(&other, 1, 8);
	memset(theirs, 0, 8);
	/* A devres_alloc() node is not devm_kmalloc() memory. */
	add_counted(dev);
	start_capture();
	devm_kfree(dev, devres_find(dev, count_release, NULL, NULL));
	expect_warn("devm_kfree", "not a managed allocation of this device");
	start_capture();
	assert_null(devm_krealloc(dev,
				  devres_find(dev, count_release, NULL, NULL),
				  64, GFP_KERNEL));
	expect_warn("devm_krealloc", "not a managed allocation of this device");
	expect_stats(dev, 1, sizeof(int));
}

static void test_kfree_twice(void **state)
{
	struct device *dev = *state;
	void *p;

	p = devm_kmalloc(dev, 8, GFP_KERNEL);
	assert_non_null(devm_kmalloc(dev, 8, GFP_KERNEL));
	start_capture();
	devm_kfree(dev, p);
	expect_no_warn();
	start_capture();
	devm_kfree(dev, p);
	expect_warn("devm_kfree", "not a managed allocation of this device");
	expect_stats(dev, 1, 8);
}

static void test_unknown_group(void **state)
{
	struct device *dev = *state;
	static int unknown;
	void *g;

	nrel = 0;
	add_counted(dev);
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	add_counted(dev);
	start_capture();
	devres_close_group(dev, &unknown);
	expect_warn("devres_close_group", "no group");
	start_capture();
	devres_remove_group(dev, &unknown);
	expect_warn("devres_remove_group", "no group");
	start_capture();
	assert_int_equal(devres_release_group(dev, &unknown), 0);
	expect_warn("devres_release_group", "no group");
	/* The real group is intact and still open. */
	assert_int_equal(nrel, 0);
	assert_int_equal(devres_release_group(dev, NULL), 1);
	assert_int_equal(nrel, 1);
	(void)g;
}

static void test_close_closed_group(void **state)
{
	struct device *dev = *state;
	void *g;

	nrel = 0;
	g = devres_open_group(dev, NULL, GFP_KERNEL);
	add_counted(dev);
	devres_close_group(dev, g);
	add_counted(dev);
	start_capture();
	devres_close_group(dev, g);
	expect_warn("devres_close_group", "already closed");
	/* The group still ends where it was first closed. */
	assert_int_equal(devres_release_group(dev, g), 1);
	assert_int_equal(nrel, 1);
	expect_stats(dev, 1, sizeof(int));
}

static void test_release_all_uninitialized(void **state)
{
	static struct device never;
	struct device garbage;
	char label[40];

	(void)state;
	memset(&never, 0, sizeof(never));
	snprintf(label, sizeof(label), "device@%p", (void *)&never);
	start_capture();
	assert_int_equal(devres_release_all(&never), -ENODEV);
	expect_warn_on(label, "devres_release_all", "not initialized");

	memset(&garbage, 0xa5, sizeof(garbage));
	snprintf(label, sizeof(label), "device@%p", (void *)&garbage);
	start_capture();
	assert_int_equal(devres_release_all(&garbage), -ENODEV);
	expect_warn_on(label, "devres_release_all", "not initialized");

	snprintf(label, sizeof(label), "device@%p", (void *)&never);
	start_capture();
	assert_null(devm_kmalloc(&never, 8, GFP_KERNEL));
	expect_warn_on(label, "devm_kmalloc", "not initialized");
}

static void test_null_device(void **state)
{
	struct devres_stats st;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int *p;

	(void)state;
	p = devres_alloc(count_release, sizeof(int), GFP_KERNEL);
	assert_non_null(p);

#define NULL_DEV(func, call)                                                   \
	do {                                                                   \
		start_capture();                                               \
		call;                                                          \
		expect_warn_on("(no device)", func, "NULL device");            \
	} while (0)

	NULL_DEV("devres_add", devres_add(NULL, p));
	NULL_DEV("devres_find",
		 assert_null(devres_find(NULL, count_release, NULL, NULL)));
	NULL_DEV("devres_get", assert_null(devres_get(NULL, p, NULL, NULL)));
	NULL_DEV("devres_remove",
		 assert_null(devres_remove(NULL, count_release, NULL, NULL)));
	NULL_DEV("devres_destroy",
		 assert_int_equal(devres_destroy(NULL, count_release, NULL,
						 NULL),
				  -ENOENT));
	NULL_DEV("devres_release",
		 assert_int_equal(devres_release(NULL, count_release, NULL,
						 NULL),
				  -ENOENT));
	NULL_DEV("devres_for_each_res",
		 devres_for_each_res(NULL, count_release, NULL, NULL, NULL,
				     NULL));
	NULL_DEV("devres_release_all",
		 assert_int_equal(devres_release_all(NULL), -ENODEV));
	NULL_DEV("devres_open_group",
		 assert_null(devres_open_group(NULL, NULL, GFP_KERNEL)));
	NULL_DEV("devres_close_group", devres_close_group(NULL, NULL));
	NULL_DEV("devres_remove_group", devres_remove_group(NULL, NULL));
	NULL_DEV("devres_release_group",
		 assert_int_equal(devres_release_group(NULL, NULL), 0));
	NULL_DEV("devm_add_action_named",
		 assert_int_equal(devm_add_action(NULL, act, NULL), -EINVAL));
	NULL_DEV("devm_remove_action", devm_remove_action(NULL, act, NULL));
	NULL_DEV("devm_release_action", devm_release_action(NULL, act, NULL));
	NULL_DEV("devm_is_action_added",
		 assert_false(devm_is_action_added(NULL, act, NULL)));
	NULL_DEV("devm_kmalloc", assert_null(devm_kmalloc(NULL, 8, 0)));
	NULL_DEV("devm_kfree", devm_kfree(NULL, p));
	NULL_DEV("devm_krealloc", assert_null(devm_krealloc(NULL, p, 8, 0)));
	NULL_DEV("devm_get_free_pages",
		 assert_int_equal(devm_get_free_pages(NULL, 0, 0), 0));
	NULL_DEV("devm_free_pages", devm_free_pages(NULL, 4096));
	NULL_DEV("devres_get_stats", devres_get_stats(NULL, &st));
	assert_int_equal(st.allocs, 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	NULL_DEV("devres_dump", devres_dump(NULL, f));
	fclose(f);
	assert_int_equal(len, 0);
	free(buf);
#undef NULL_DEV

	/* The node was never taken: the caller still owns it. */
	devres_free(p);
	assert_int_equal(nact, 0);
}

static void test_or_reset_null_device(void **state)
{
	(void)state;
	nact = 0;
	start_capture();
	assert_int_equal(devm_add_action_or_reset(NULL, act, NULL), -EINVAL);
	expect_warn_on("(no device)", "devm_add_action_or_reset_named",
		       "NULL device");
	/* Recording failed, so the action ran: nothing for the caller. */
	assert_int_equal(nact, 1);
}

static void test_null_action(void **state)
{
	struct device *dev = *state;

	start_capture();
	assert_int_equal(devm_add_action(dev, NULL, NULL), -EINVAL);
	expect_warn("devm_add_action_named", "NULL action");
	start_capture();
	assert_int_equal(devm_add_action_or_reset(dev, NULL, NULL), -EINVAL);
	expect_warn("devm_add_action_or_reset_named", "NULL action");
	expect_stats(dev, 0, 0);
}

/* Re-entry from callbacks that run with the device's lock held. */
static struct device *cb_dev;
static int cb_calls;
static int cb_ret;

static int match_allocates(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	cb_calls++;
	if (devm_kmalloc(dev, 8, GFP_KERNEL))
		cb_ret = 1;
	return 1;
}

static int match_finds(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	cb_calls++;
	if (devres_find(dev, count_release, NULL, NULL))
		cb_ret = 1;
	return 1;
}

static void fn_release_all(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	cb_calls++;
	cb_ret = devres_release_all(dev);
}

static void fn_adds(struct device *dev, void *res, void *data)
{
	(void)res;
	cb_calls++;
	devres_add(dev, data);
}

static void fn_opens_group(struct device *dev, void *res, void *data)
{
	(void)res;
	(void)data;
	cb_calls++;
	if (devres_open_group(dev, NULL, GFP_KERNEL))
		cb_ret = 1;
}

static void fn_other_device(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	cb_calls++;
	if (!devm_kmalloc(&other, 8, GFP_KERNEL))
		cb_ret = 1;
}

static void test_reentry_from_match(void **state)
{
	struct device *dev = *state;
	int *p;

	cb_dev = dev;
	p = add_counted(dev);
	cb_calls = cb_ret = 0;
	start_capture();
	assert_ptr_equal(devres_find(dev, count_release, match_allocates, NULL),
			 p);
	expect_warn("devm_kmalloc", "from a match or for-each callback");
	assert_int_equal(cb_calls, 1);
	assert_int_equal(cb_ret, 0);

	cb_calls = 0;
	start_capture();
	assert_ptr_equal(devres_remove(dev, count_release, match_finds, NULL),
			 p);
	expect_warn("devres_find", "from a match or for-each callback");
	assert_int_equal(cb_calls, 1);
	assert_int_equal(cb_ret, 0);
	devres_free(p);
	expect_stats(dev, 0, 0);
}

static void test_reentry_from_for_each(void **state)
{
	struct device *dev = *state;
	struct devres_ledger l;
	int *extra;

	nrel = 0;
	add_counted(dev);
	cb_calls = cb_ret = 0;
	start_capture();
	devres_for_each_res(dev, count_release, NULL, NULL, fn_release_all,
			    NULL);
	expect_warn("devres_release_all", "from a match or for-each callback");
	assert_int_equal(cb_ret, -EDEADLK);
	assert_int_equal(nrel, 0);

	extra = devres_alloc(count_release, sizeof(int), GFP_KERNEL);
	assert_non_null(extra);
	start_capture();
	devres_for_each_res(dev, count_release, NULL, NULL, fn_adds, extra);
	expect_warn("devres_add", "from a match or for-each callback");
	devres_free(extra);

	cb_ret = 0;
	start_capture();
	devres_for_each_res(dev, count_release, NULL, NULL, fn_opens_group,
			    NULL);
	expect_warn("devres_open_group", "from a match or for-each callback");
	assert_int_equal(cb_ret, 0);
	devres_ledger_snapshot(&l);
	assert_int_equal(l.groups, ledger_base.groups);

	/* Another device is fine. */
	cb_ret = 0;
	start_capture();
	devres_for_each_res(dev, count_release, NULL, NULL, fn_other_device,
			    NULL);
	expect_no_warn();
	assert_int_equal(cb_ret, 0);
	expect_stats(&other, 1, 8);
	assert_int_equal(cb_calls, 4);
	/* Nothing was corrupted: the device still works. */
	expect_stats(dev, 1, sizeof(int));
	assert_int_equal(devres_release_all(dev), 1);
	assert_int_equal(nrel, 1);
}

static void test_absent_action(void **state)
{
	struct device *dev = *state;
	int data;

	nact = 0;
	assert_int_equal(devm_add_action(dev, act, &data), 0);
	start_capture();
	devm_remove_action(dev, act, NULL);
	expect_warn("devm_remove_action", "not recorded");
	start_capture();
	devm_release_action(dev, act, NULL);
	expect_warn("devm_release_action", "not recorded");
	assert_int_equal(nact, 0);
	/* Removed once: the second removal is a misuse. */
	devm_remove_action(dev, act, &data);
	start_capture();
	devm_remove_action(dev, act, &data);
	expect_warn("devm_remove_action", "not recorded");
	assert_int_equal(nact, 0);
	expect_stats(dev, 0, 0);
}

static void test_free_pages_foreign(void **state)
{
	struct device *dev = *state;
	unsigned long theirs, mine;
	char local[64];

	theirs = devm_get_free_pages(&other, GFP_KERNEL, 0);
	assert_int_not_equal(theirs, 0);
	start_capture();
	devm_free_pages(dev, theirs);
	expect_warn("devm_free_pages", "not a managed page allocation");
	mine = devm_get_free_pages(dev, GFP_KERNEL, 0);
	assert_int_not_equal(mine, 0);
	start_capture();
	devm_free_pages(dev, (unsigned long)(uintptr_t)local);
	expect_warn("devm_free_pages", "not a managed page allocation");
	start_capture();
	devm_free_pages(dev, mine + 1);
	expect_warn("devm_free_pages", "not a managed page allocation");
	expect_stats(dev, 1, (int)(2 * sizeof(long)));
	expect_stats(&other, 1, (int)(2 * sizeof(long)));
	/* Freed once: the second free is a misuse. */
	devm_free_pages(dev, mine);
	start_capture();
	devm_free_pages(dev, mine);
	expect_warn("devm_free_pages", "not a managed page allocation");
}

static void test_release_unknown_group_empty_silent(void **state)
{
	struct device *dev = *state;
	static int unknown;

	start_capture();
	assert_int_equal(devres_release_group(dev, &unknown), 0);
	assert_int_equal(devres_release_group(dev, NULL), 0);
	expect_no_warn();
	/* Not silent once the list holds anything. */
	add_counted(dev);
	start_capture();
	assert_int_equal(devres_release_group(dev, &unknown), 0);
	expect_warn("devres_release_group", "no group");
}

/* The case the kernel 6.16 rule exists for: a release undoing its group. */
static void *dying_group;

static void releases_group(struct device *dev, void *res)
{
	(void)res;
	cb_ret = devres_release_group(dev, dying_group);
}

static void test_release_group_during_release_all(void **state)
{
	struct device *dev = *state;
	void *r;

	dying_group = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(dying_group);
	r = devres_alloc(releases_group, 1, GFP_KERNEL);
	assert_non_null(r);
	devres_add(dev, r);
	devres_close_group(dev, dying_group);
	cb_ret = -1;
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_no_warn();
	assert_int_equal(cb_ret, 0);
}

static void test_for_each_null_fn(void **state)
{
	struct device *dev = *state;

	add_counted(dev);
	start_capture();
	devres_for_each_res(dev, count_release, NULL, NULL, NULL, NULL);
	expect_warn("devres_for_each_res", "NULL callback");
	expect_stats(dev, 1, sizeof(int));
}

static int nself;

static void self_free_release(struct device *dev, void *res)
{
	(void)dev;
	nself++;
	devres_free(res);
}

/*
 * A release that frees its own node: a WARN, not a double free, both when
 * the device releases everything and when the node is released alone.
 */
static void test_free_self_in_release(void **state)
{
	struct device *dev = *state;
	void *p;

	nself = 0;
	devres_add(dev, devres_alloc(self_free_release, 8, GFP_KERNEL));
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_warn_on("(no device)", "devres_free", "still on a device");
	assert_int_equal(nself, 1);

	p = devres_alloc(self_free_release, 8, GFP_KERNEL);
	assert_non_null(p);
	devres_add(dev, p);
	start_capture();
	assert_int_equal(devres_release(dev, self_free_release, NULL, NULL), 0);
	expect_warn_on("(no device)", "devres_free", "still on a device");
	assert_int_equal(nself, 2);
	expect_stats(dev, 0, 0);
}

/*
 * Release callbacks that reach into the chain being released: the nodes
 * still to be released are off the device's list, so the device does not
 * know them (one WARN each), and each is released exactly once.
 */
static char *sibling;
static void *sibling_group;

static void kfrees_sibling(struct device *dev, void *res)
{
	(void)res;
	nself++;
	devm_kfree(dev, sibling);
}

static void removes_sibling_group(struct device *dev, void *res)
{
	(void)res;
	nself++;
	devres_remove_group(dev, sibling_group);
}

static void readds_itself(struct device *dev, void *res)
{
	nself++;
	devres_add(dev, res);
}

static void test_release_reaches_into_its_chain(void **state)
{
	struct device *dev = *state;

	nself = 0;
	sibling = devm_kmalloc(dev, 8, GFP_KERNEL);
	assert_non_null(sibling);
	devres_add(dev, devres_alloc(kfrees_sibling, 1, GFP_KERNEL));
	start_capture();
	assert_int_equal(devres_release_all(dev), 2);
	expect_warn("devm_kfree", "not a managed allocation");

	sibling_group = devres_open_group(dev, NULL, GFP_KERNEL);
	assert_non_null(sibling_group);
	devres_close_group(dev, sibling_group);
	devres_add(dev, devres_alloc(removes_sibling_group, 1, GFP_KERNEL));
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_warn("devres_remove_group", "no group");

	/* Re-adding itself would link a node that is about to be freed. */
	devres_add(dev, devres_alloc(readds_itself, 1, GFP_KERNEL));
	start_capture();
	assert_int_equal(devres_release_all(dev), 1);
	expect_warn("devres_add", "already added");
	assert_int_equal(nself, 3);
	expect_stats(dev, 0, 0);
	assert_int_equal(devres_check(dev), 0);
}

/* A group of one device named on another, and ids shared by two groups. */
static void test_group_of_another_device(void **state)
{
	struct device *dev = *state;
	void *g = devres_open_group(&other, NULL, GFP_KERNEL);

	assert_non_null(g);
	start_capture();
	devres_close_group(dev, g);
	expect_warn("devres_close_group", "no group");
	add_counted(dev);
	start_capture();
	assert_int_equal(devres_release_group(dev, g), 0);
	expect_warn("devres_release_group", "no group");
	start_capture();
	devres_remove_group(dev, g);
	expect_warn("devres_remove_group", "no group");
	assert_int_equal(devres_check(&other), 0);
	assert_int_equal(devres_check(dev), 0);
	devres_remove_group(&other, g);
}

static void test_groups_sharing_an_id(void **state)
{
	struct device *dev = *state;
	static int id;

	nrel = 0;
	assert_ptr_equal(devres_open_group(dev, &id, GFP_KERNEL), &id);
	add_counted(dev);
	assert_ptr_equal(devres_open_group(dev, &id, GFP_KERNEL), &id);
	add_counted(dev);
	devres_close_group(dev, &id);
	devres_close_group(dev, &id);
	assert_int_equal(devres_check(dev), 0);
	/* The newest group of that id goes first, then the other. */
	assert_int_equal(devres_release_group(dev, &id), 1);
	assert_int_equal(devres_check(dev), 0);
	assert_int_equal(devres_release_group(dev, &id), 1);
	assert_int_equal(nrel, 2);
	expect_stats(dev, 0, 0);
}

/*
 * fork() while other threads hold the library's global locks: the child
 * has only the forking thread, so a lock held by another one at fork would
 * never be released there, and the child's first WARN, ledger snapshot or
 * new release function would hang.
 */
static int forking_done;

static void quiet_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	(void)line;
}

static void *hold_global_locks(void *arg)
{
	struct devres_ledger l;

	(void)arg;
	while (!__atomic_load_n(&forking_done, __ATOMIC_ACQUIRE)) {
		devres_ledger_snapshot(&l);
		devres_set_log_sink(quiet_sink, NULL);
	}
	return NULL;
}

static void child_release(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
}

/* Returns true when the child said it is done within 10 s. */
static bool child_finished(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	return poll(&pfd, 1, 10000) == 1 && read(fd, &c, 1) == 1;
}

/* A fork costs about a second under valgrind: fewer rounds there. */
static int fork_rounds(void)
{
	return under_valgrind() ? 10 : 100;
}

static void test_fork_while_threads_hold_locks(void **state)
{
	int hung = 0, status, pipefd[2], rounds = fork_rounds();
	pthread_t t;

	(void)state;
	forking_done = 0;
	assert_int_equal(pthread_create(&t, NULL, hold_global_locks, NULL), 0);
	for (int i = 0; i < rounds && !hung; i++) {
		struct devres_ledger l;
		pid_t pid;

		assert_int_equal(pipe(pipefd), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			devres_ledger_snapshot(&l);
			devres_get_stats(NULL, NULL); /* a WARN: the sink */
			/* A new kind: the kind table's lock. */
			devres_free(devres_alloc(child_release, 1, 0));
			(void)!write(pipefd[1], "x", 1);
			_exit(0);
		}
		close(pipefd[1]);
		if (!child_finished(pipefd[0])) {
			hung++;
			kill(pid, SIGKILL);
		}
		close(pipefd[0]);
		assert_int_equal(waitpid(pid, &status, 0), pid);
	}
	__atomic_store_n(&forking_done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(hung, 0);
}

/*
 * Every core entry point on a device whose last reference is gone (its
 * memory still valid, as when a driver keeps a stale pointer): one WARN
 * each, nothing touched.
 */
static void dead_release(struct device *dev)
{
	(void)dev;
}

static void test_released_device(void **state)
{
	struct device dead;
	struct devres_stats st;
	FILE *f = fopen("/dev/null", "w");
	char label[64];
	int *p;

	(void)state;
	assert_non_null(f);
	memset(&dead, 0, sizeof(dead));
	dead.release = dead_release;
	device_initialize(&dead);
	assert_int_equal(dev_set_name(&dead, "dead"), 0);
	put_device(&dead);
	/* A released device is no longer asked for its name. */
	snprintf(label, sizeof(label), "device@%p", (void *)&dead);
	p = devres_alloc(count_release, sizeof(int), GFP_KERNEL);
	assert_non_null(p);

#define DEAD(func, call)                                                       \
	do {                                                                   \
		start_capture();                                               \
		call;                                                          \
		expect_warn_on(label, func, "already released");               \
	} while (0)

	DEAD("devres_add", devres_add(&dead, p));
	DEAD("devres_find",
	     assert_null(devres_find(&dead, count_release, NULL, NULL)));
	DEAD("devres_get", assert_null(devres_get(&dead, p, NULL, NULL)));
	DEAD("devres_release",
	     assert_int_equal(devres_release(&dead, count_release, NULL, NULL),
			      -ENOENT));
	DEAD("devres_release_all",
	     assert_int_equal(devres_release_all(&dead), -ENODEV));
	DEAD("devres_open_group",
	     assert_null(devres_open_group(&dead, NULL, GFP_KERNEL)));
	DEAD("devres_release_group",
	     assert_int_equal(devres_release_group(&dead, NULL), 0));
	DEAD("devm_add_action_named",
	     assert_int_equal(devm_add_action(&dead, act, NULL), -EINVAL));
	DEAD("devm_is_action_added",
	     assert_false(devm_is_action_added(&dead, act, NULL)));
	DEAD("devm_kmalloc", assert_null(devm_kmalloc(&dead, 8, 0)));
	DEAD("devm_kmemdup", assert_null(devm_kmemdup(&dead, p, 4, 0)));
	DEAD("devm_kasprintf", assert_null(devm_kasprintf(&dead, 0, "x")));
	DEAD("devm_get_free_pages",
	     assert_int_equal(devm_get_free_pages(&dead, 0, 0), 0));
	DEAD("devres_get_stats", devres_get_stats(&dead, &st));
	DEAD("devres_dump", devres_dump(&dead, f));
	DEAD("devres_check", assert_int_equal(devres_check(&dead), -EINVAL));
	DEAD("devres_remove",
	     assert_null(devres_remove(&dead, count_release, NULL, NULL)));
	DEAD("devres_destroy",
	     assert_int_equal(devres_destroy(&dead, count_release, NULL, NULL),
			      -ENOENT));
	DEAD("devres_for_each_res",
	     devres_for_each_res(&dead, count_release, NULL, NULL, NULL, NULL));
	DEAD("devres_close_group", devres_close_group(&dead, NULL));
	DEAD("devres_remove_group", devres_remove_group(&dead, NULL));
	DEAD("devm_remove_action", devm_remove_action(&dead, act, NULL));
	DEAD("devm_release_action", devm_release_action(&dead, act, NULL));
	DEAD("devm_kfree", devm_kfree(&dead, p));
	DEAD("devm_krealloc", assert_null(devm_krealloc(&dead, p, 8, 0)));
	DEAD("devm_free_pages", devm_free_pages(&dead, 4096));
#undef DEAD
	fclose(f);
	devres_free(p);
	assert_int_equal(nact, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, two_dev_setup, dev_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_double_add),
		T(test_get_added_node),
		T(test_free_added_node),
		T(test_kfree_foreign),
		T(test_kfree_twice),
		T(test_unknown_group),
		T(test_close_closed_group),
		T(test_release_all_uninitialized),
		T(test_null_device),
		T(test_or_reset_null_device),
		T(test_null_action),
		T(test_reentry_from_match),
		T(test_reentry_from_for_each),
		T(test_absent_action),
		T(test_free_pages_foreign),
		T(test_release_unknown_group_empty_silent),
		T(test_release_group_during_release_all),
		T(test_for_each_null_fn),
		T(test_free_self_in_release),
		T(test_release_reaches_into_its_chain),
		T(test_group_of_another_device),
		T(test_groups_sharing_an_id),
		T(test_fork_while_threads_hold_locks),
		T(test_released_device),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
