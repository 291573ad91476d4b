// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan timeout=30 */
/*
 * A match or for-each callback that ends its thread: pthread_exit(), or a
 * cancellation it asked for and meets at a cancellation point. Every call
 * that runs one under the device's lock (devres_find(), devres_get(),
 * devres_remove(), devres_destroy(), devres_release(), and
 * devres_for_each_res() through its match and through its function), by
 * both ends. Each is one WARN naming the call; the device's lock is free
 * again (another thread's devm_kmalloc() returns, where it waited for
 * ever), the list is whole and still holds every node (the match never
 * answered), devres_get()'s new node is freed, and the ledger is back at
 * its start once the device is released. And a release callback that
 * ends its thread, in devres_release_all(), devres_release_group() of a
 * closed and of an open group, and devres_release(): the rest of the
 * chain is released on the way out, nothing leaks.
 */
/* pthread_timedjoin_np() */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include "testlib.h"
#include "base/thread-end.h"

enum caller {
	FIND,
	GET,
	REMOVE,
	DESTROY,
	RELEASE,
	FOR_EACH_MATCH,
	FOR_EACH_FN,
	NR_CALLER
};

static const char *const caller_func[] = {
	"devres_find",	       "devres_get",	 "devres_remove",
	"devres_destroy",      "devres_release", "devres_for_each_res",
	"devres_for_each_res",
};

static enum ending ending;
static enum caller caller;
static int released;

static void rel(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	released++;
}

static void end_thread(void)
{
	end_thread_by(ending);
	fail_msg("the cancellation was not acted on");
}

static int ending_match(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	end_thread();
	return 0;
}

static int match_any(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	return 1;
}

static void ending_fn(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	end_thread();
}

static void *call_thread(void *arg)
{
	struct device *dev = arg;
	void *new_res;

	switch (caller) {
	case FIND:
		devres_find(dev, rel, ending_match, NULL);
		break;
	case GET:
		new_res = devres_alloc(rel, 24, GFP_KERNEL);
		devres_get(dev, new_res, ending_match, NULL);
		break;
	case REMOVE:
		devres_remove(dev, rel, ending_match, NULL);
		break;
	case DESTROY:
		devres_destroy(dev, rel, ending_match, NULL);
		break;
	case RELEASE:
		devres_release(dev, rel, ending_match, NULL);
		break;
	case FOR_EACH_MATCH:
		devres_for_each_res(dev, rel, ending_match, NULL, ending_fn,
				    NULL);
		break;
	case FOR_EACH_FN:
		devres_for_each_res(dev, rel, match_any, NULL, ending_fn, NULL);
		break;
	default:
		break;
	}
	return (void *)1; /* never reached: the callback ends the thread */
}

static void *alloc_thread(void *arg)
{
	return devm_kmalloc(arg, 32, GFP_KERNEL);
}

/* Joins @t, failing (not hanging) when it has not ended within 2 s. */
static void *joined(pthread_t t)
{
	return join_within(t, "the device's lock is still held");
}

static void one_cell(struct device *dev, enum caller c, enum ending e)
{
	struct devres_ledger before, after;
	struct devres_stats st;
	pthread_t t;
	void *ret;

	devres_ledger_snapshot(&before);
	caller = c;
	ending = e;
	released = 0;
	devres_add(dev, devres_alloc(rel, 16, GFP_KERNEL));
	devres_add(dev, devres_alloc(rel, 16, GFP_KERNEL));

	start_capture();
	assert_int_equal(pthread_create(&t, NULL, call_thread, dev), 0);
	ret = joined(t);
	assert_true(ret == NULL || ret == PTHREAD_CANCELED);
	expect_warn(caller_func[c], "the thread ended inside a match or "
				    "for-each callback");

	/* The lock is free: another thread allocates on the device. */
	assert_int_equal(pthread_create(&t, NULL, alloc_thread, dev), 0);
	assert_non_null(joined(t));

	assert_int_equal(devres_check(dev), 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 3);
	assert_int_equal(released, 0);
	assert_int_equal(devres_release_all(dev), 3);
	assert_int_equal(released, 2);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void every_call_every_end(void **state)
{
	struct device *dev = *state;

	for (int c = 0; c < NR_CALLER; c++)
		for (int e = BY_EXIT; e < NR_ENDING; e++) {
			print_message("%s, %s\n", caller_func[c],
				      ending_name[e]);
			one_cell(dev, (enum caller)c, (enum ending)e);
		}
}

/*
 * A release callback that ends its thread, in each call that releases:
 * the thread's unwinding finishes what the call was doing. The resources
 * after it in the chain are released, its own node is freed, the device
 * is empty and usable, the ledger back at its start.
 */
enum releaser {
	REL_ALL,
	REL_GROUP_CLOSED,
	REL_GROUP_OPEN,
	REL_ONE,
	NR_REL
};

static const char *const releaser_func[] = { "devres_release_all",
					     "devres_release_group",
					     "devres_release_group",
					     "devres_release" };

static enum releaser releaser;
static void *group_id;

static void ending_rel(struct device *dev, void *res)
{
	(void)dev;
	(void)res;
	end_thread();
}

static int match_first(struct device *dev, void *res, void *data)
{
	(void)dev;
	(void)res;
	(void)data;
	return 1;
}

static void *release_thread(void *arg)
{
	struct device *dev = arg;

	switch (releaser) {
	case REL_ALL:
		devres_release_all(dev);
		break;
	case REL_GROUP_CLOSED:
	case REL_GROUP_OPEN:
		devres_release_group(dev, group_id);
		break;
	case REL_ONE:
		devres_release(dev, ending_rel, match_first, NULL);
		break;
	default:
		break;
	}
	return (void *)1;
}

static void one_release_cell(struct device *dev, enum releaser r, enum ending e)
{
	struct devres_ledger before, after;
	struct devres_stats st;
	pthread_t t;
	void *ret;

	devres_ledger_snapshot(&before);
	releaser = r;
	ending = e;
	released = 0;
	group_id = NULL;
	if (r == REL_GROUP_CLOSED || r == REL_GROUP_OPEN)
		group_id = devres_open_group(dev, NULL, GFP_KERNEL);
	if (r != REL_ONE)
		devres_add(dev, devres_alloc(rel, 16, GFP_KERNEL));
	devres_add(dev, devres_alloc(ending_rel, 16, GFP_KERNEL));
	if (r != REL_ONE)
		devres_add(dev, devres_alloc(rel, 16, GFP_KERNEL));
	if (r == REL_GROUP_CLOSED)
		devres_close_group(dev, group_id);

	start_capture();
	assert_int_equal(pthread_create(&t, NULL, release_thread, dev), 0);
	ret = joined(t);
	assert_true(ret == NULL || ret == PTHREAD_CANCELED);
	expect_warn(releaser_func[r], "the thread ended inside the release "
				      "of ending_rel");
	/* The one before it and the one after it, both released. */
	assert_int_equal(released, r == REL_ONE ? 0 : 2);

	assert_int_equal(pthread_create(&t, NULL, alloc_thread, dev), 0);
	assert_non_null(joined(t));
	assert_int_equal(devres_check(dev), 0);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	assert_int_equal(devres_release_all(dev), 1);
	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void every_release_every_end(void **state)
{
	struct device *dev = *state;

	for (int r = 0; r < NR_REL; r++)
		for (int e = BY_EXIT; e < NR_ENDING; e++) {
			print_message("%s (%d), %s\n", releaser_func[r], r,
				      ending_name[e]);
			one_release_cell(dev, (enum releaser)r, (enum ending)e);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_call_every_end, dev_setup,
						dev_teardown),
		cmocka_unit_test_setup_teardown(every_release_every_end,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: expect_warn() counts the lines. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
