// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A revocable's release function that ends its thread: it returns (the
 * control), calls pthread_exit(), or reaches a cancellation point with a
 * cancellation pending; run by the binding's release on the thread that
 * releases the device, or queued by a thread that revoked inside its own
 * access and run at that access's end. Every way, the revocation is
 * finished on the way out: the binding's reference is dropped (the
 * caller's last revocable_put() is accepted without a WARN and frees the
 * handle), the ledger no longer counts it, the other revocable of the
 * device is released once, and there is exactly one WARN (the device's
 * release chain's, or the revocation's own when it was queued).
 */
#define _GNU_SOURCE /* pthread_timedjoin_np(), in thread-end.h */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/fault.h>
#include <devres/revocable.h>
#include "testlib.h"
#include "base/thread-end.h"

enum where {
	BINDING,
	QUEUED
};

struct row {
	const char *name;
	enum ending end;
	enum where where;
	const char *dev, *func, *reason; /* the WARN, or NULL for none */
};

static const struct row rows[] = {
	{ "returns, binding", BY_RETURN, BINDING, NULL, NULL, NULL },
	{ "returns, queued", BY_RETURN, QUEUED, NULL, NULL, NULL },
	{ "pthread_exit, binding", BY_EXIT, BINDING, "test-dev",
	  "devres_release_all",
	  "the thread ended inside the release of devm_revocable_create" },
	{ "pthread_exit, queued", BY_EXIT, QUEUED, "(no device)",
	  "revocable_access_end",
	  "the release of a revocation ended its thread" },
	{ "cancelled, binding", BY_CANCEL, BINDING, "test-dev",
	  "devres_release_all",
	  "the thread ended inside the release of devm_revocable_create" },
	{ "cancelled, queued", BY_CANCEL, QUEUED, "(no device)",
	  "revocable_access_end",
	  "the release of a revocation ended its thread" },
};

static int res_bad, res_other;
static int released_bad, released_other;
static struct revocable *bad, *spare;
static const struct row *cur;

static void rel(void *res)
{
	if (res == &res_other) {
		released_other++;
		return;
	}
	released_bad++;
	end_thread_by(cur->end);
}

static void *releaser(void *arg)
{
	(void)arg;
	if (cur->where == BINDING) {
		devres_release_all(&tdev);
		return NULL;
	}
	/* Inside an access of its own: both revocations are queued. */
	assert_ptr_equal(revocable_try_access(bad), &res_bad);
	devres_release_all(&tdev);
	assert_int_equal(released_bad + released_other, 0);
	revocable_access_end(bad);
	return NULL;
}

static void run_row(const struct row *r)
{
	struct devres_ledger before, after;
	pthread_t t;

	cur = r;
	released_bad = released_other = 0;
	devres_ledger_snapshot(&before);
	/*
	 * The ending release runs first either way: the binding's release
	 * goes newest first, the queue of a thread oldest first.
	 */
	if (r->where == BINDING)
		spare = devm_revocable_create(&tdev, &res_other, rel);
	bad = devm_revocable_create(&tdev, &res_bad, rel);
	if (r->where == QUEUED)
		spare = devm_revocable_create(&tdev, &res_other, rel);
	assert_non_null(bad);
	assert_non_null(spare);
	/* The caller's own reference, to put once the binding's is gone. */
	assert_ptr_equal(revocable_get(bad), bad);
	start_capture();
	assert_int_equal(pthread_create(&t, NULL, releaser, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (r->reason)
		expect_warn_on(r->dev, r->func, r->reason);
	else
		expect_no_warn();
	assert_int_equal(released_bad, 1);
	assert_int_equal(released_other, 1);
	/* The binding's reference was dropped: this one is the last. */
	start_capture();
	revocable_put(bad);
	expect_no_warn();
	devres_ledger_snapshot(&after);
	assert_int_equal(after.revocables, before.revocables);
	/* And the handle is gone. */
	start_capture();
	assert_null(revocable_try_access(bad));
	expect_warn_on("(no device)", "revocable_try_access",
		       "is not a live revocable (put for the last time)");
}

static void release_ends_thread(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s\n", rows[i].name);
		run_row(&rows[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(release_ends_thread, dev_setup,
						dev_teardown),
	};

	/* One line a WARN: the backtraces would be captured with them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
