// SPDX-License-Identifier: MIT
/* ctest-labels: unit fault */
/*
 * Revocable resources in one thread: revocation at release, handles that
 * outlive their device, nesting, misuse, revocations from inside release
 * callbacks and accesses (the nested teardown that deadlocked Rust's
 * Devres in 2025), and a fault sweep of a probe. The whole binary runs
 * again with DEVRES_REVOCABLE=fallback, so both read sides are tested.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/driver.h>
#include <devres/fault.h>
#include <devres/revocable.h>
#include "testlib.h"

#define ALIVE 0x11u
#define GONE 0xddu

/* A resource whose release is counted and leaves a mark. */
struct thing {
	unsigned int state;
	int id;
	int released;
};

/* The order releases ran in, by thing id. */
static int rel_order[16];
static int nrel;

static void thing_init(struct thing *t, int id)
{
	*t = (struct thing){ .state = ALIVE, .id = id };
}

static void thing_release(void *res)
{
	struct thing *t = res;

	assert_int_equal(t->state, ALIVE);
	t->state = GONE;
	t->released++;
	if (nrel < 16)
		rel_order[nrel++] = t->id;
}

static int setup(void **state)
{
	nrel = 0;
	alarm(30); /* a deadlock fails the test instead of hanging */
	return dev_setup(state);
}

static int teardown(void **state)
{
	alarm(0);
	return dev_teardown(state);
}

static int setup2(void **state)
{
	nrel = 0;
	alarm(30);
	return two_dev_setup(state);
}

static long revocables_live(void)
{
	struct devres_ledger l;

	devres_ledger_snapshot(&l);
	return l.revocables - ledger_base.revocables;
}

static void revoked_at_release(void **state)
{
	struct thing t;
	struct revocable *h;

	(void)state;
	thing_init(&t, 1);
	h = devm_revocable_create(&tdev, &t, thing_release);
	assert_non_null(h);
	assert_int_equal(revocables_live(), 1);
	expect_stats(&tdev, 1, sizeof(void *));
	assert_ptr_equal(revocable_try_access(h), &t);
	revocable_access_end(h);
	revocable_get(h);
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(t.released, 1);
	assert_int_equal(revocables_live(), 0);
	assert_null(revocable_try_access(h));
	assert_null(revocable_try_access(h));
	revocable_put(h);
	assert_int_equal(t.released, 1);
}

static void null_release_only_revokes(void **state)
{
	int x = 5;
	struct revocable *h = devm_revocable_create(&tdev, &x, NULL);

	(void)state;
	assert_non_null(h);
	revocable_get(h);
	assert_ptr_equal(revocable_try_access(h), &x);
	revocable_access_end(h);
	devres_release_all(&tdev);
	assert_null(revocable_try_access(h));
	revocable_put(h);
}

/* A release callback sees its own handle revoked and may put it. */
static struct revocable *self_h;

static void self_release(void *res)
{
	assert_null(revocable_try_access(self_h));
	revocable_put(self_h);
	thing_release(res);
}

static void release_puts_own_handle(void **state)
{
	struct thing t;

	(void)state;
	thing_init(&t, 1);
	self_h = revocable_get(devm_revocable_create(&tdev, &t, self_release));
	assert_non_null(self_h);
	start_capture();
	assert_int_equal(devres_release_all(&tdev), 1);
	expect_no_warn();
	assert_int_equal(t.released, 1);
	assert_int_equal(revocables_live(), 0);
}

/* A release callback may access other handles and revoke more. */
static struct revocable *inner_h;
static struct thing inner_t;
static int inner_seen;

static void outer_release(void *res)
{
	struct thing *t = res;
	struct thing *in = revocable_try_access(inner_h);

	thing_release(t);
	/* Its own handle is revoked already. */
	assert_non_null(in);
	assert_int_equal(in->state, ALIVE);
	inner_seen++;
	/* Revoked from inside an access: finished when the access ends. */
	assert_int_equal(devres_release_all(&other), 1);
	assert_int_equal(inner_t.released, 0);
	assert_int_equal(in->state, ALIVE);
	revocable_access_end(inner_h);
	assert_int_equal(inner_t.released, 1);
	assert_null(revocable_try_access(inner_h));
}

static void release_accesses_and_revokes_another(void **state)
{
	struct thing t;
	struct revocable *h;

	(void)state;
	thing_init(&t, 1);
	thing_init(&inner_t, 2);
	inner_seen = 0;
	inner_h = revocable_get(
		devm_revocable_create(&other, &inner_t, thing_release));
	assert_non_null(inner_h);
	h = devm_revocable_create(&tdev, &t, outer_release);
	assert_non_null(h);
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(inner_seen, 1);
	assert_int_equal(t.released, 1);
	assert_int_equal(nrel, 2);
	assert_int_equal(rel_order[0], 1);
	assert_int_equal(rel_order[1], 2);
	assert_int_equal(revocables_live(), 0);
	revocable_put(inner_h);
}

/*
 * Rust-for-Linux, 2025: a devres callback drops the last reference of an
 * object that holds a Devres of the same device; that Devres's drop waited
 * for its own devres callback, which devres_release_all() could not run
 * before the first callback returned. Here the object holds a handle
 * reference: dropping it never waits, whatever the order.
 */
struct registration {
	struct revocable *h;
	int refs;
};

static int reg_freed;

static void reg_put(struct registration *r)
{
	if (--r->refs)
		return;
	/* The object's destructor: drops its handle, may try one access. */
	if (revocable_try_access(r->h))
		revocable_access_end(r->h);
	revocable_put(r->h);
	reg_freed++;
	free(r);
}

static void unregister_action(void *data)
{
	reg_put(data);
}

static void nested_teardown(bool handle_first)
{
	struct registration *r = calloc(1, sizeof(*r));
	struct thing t;

	assert_non_null(r);
	thing_init(&t, 1);
	reg_freed = 0;
	r->refs = 1;
	if (!handle_first)
		assert_int_equal(devm_add_action(&tdev, unregister_action, r),
				 0);
	r->h = revocable_get(devm_revocable_create(&tdev, &t, thing_release));
	assert_non_null(r->h);
	if (handle_first)
		assert_int_equal(devm_add_action(&tdev, unregister_action, r),
				 0);
	assert_int_equal(devres_release_all(&tdev), 2);
	assert_int_equal(reg_freed, 1);
	assert_int_equal(t.released, 1);
	assert_int_equal(revocables_live(), 0);
}

static void put_from_release_callback_handle_first(void **state)
{
	(void)state;
	nested_teardown(true);
}

static void put_from_release_callback_handle_last(void **state)
{
	(void)state;
	nested_teardown(false);
}

/* A revocation inside the thread's own access waits for the access. */
static void revoke_inside_own_access_is_deferred(void **state)
{
	struct thing t1, t2;
	struct revocable *h1, *h2;
	struct thing *p;

	(void)state;
	thing_init(&t1, 1);
	thing_init(&t2, 2);
	h1 = revocable_get(devm_revocable_create(&tdev, &t1, thing_release));
	h2 = revocable_get(devm_revocable_create(&other, &t2, thing_release));
	assert_non_null(h1);
	assert_non_null(h2);
	p = revocable_try_access(h1);
	assert_ptr_equal(p, &t1);
	assert_ptr_equal(revocable_try_access(h2), &t2);
	/* Unbinding both while accessing both: no deadlock, no free. */
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(devres_release_all(&other), 1);
	assert_null(revocable_try_access(h1));
	assert_int_equal(p->state, ALIVE);
	assert_int_equal(t2.state, ALIVE);
	assert_int_equal(revocables_live(), 2);
	revocable_access_end(h2);
	/* Still inside the access of h1: nothing released yet. */
	assert_int_equal(nrel, 0);
	revocable_access_end(h1);
	assert_int_equal(nrel, 2);
	assert_int_equal(t1.released + t2.released, 2);
	assert_int_equal(revocables_live(), 0);
	revocable_put(h1);
	revocable_put(h2);
}

static void nested_accesses_end_in_any_order(void **state)
{
	struct thing t[20];
	struct revocable *h[20];

	(void)state;
	for (int i = 0; i < 20; i++) {
		thing_init(&t[i], i);
		h[i] = devm_revocable_create(&tdev, &t[i], thing_release);
		assert_non_null(h[i]);
	}
	start_capture();
	/* Deeper than the library tracks, and twice on one handle. */
	for (int i = 0; i < 20; i++)
		assert_ptr_equal(revocable_try_access(h[i]), &t[i]);
	assert_ptr_equal(revocable_try_access(h[3]), &t[3]);
	revocable_access_end(h[3]);
	for (int i = 0; i < 20; i += 2)
		revocable_access_end(h[i]);
	for (int i = 19; i > 0; i -= 2)
		revocable_access_end(h[i]);
	expect_no_warn();
	/* Every access ended: a revocation now completes at once. */
	assert_int_equal(devres_release_all(&tdev), 20);
	assert_int_equal(nrel, 16);
}

/*
 * Accesses nest up to 64 deep in one thread. Every one of them is
 * recorded, so an end through a handle never accessed is caught at any
 * depth (it was accepted past 16, and its reader count then made a later
 * revocation wait forever); the access past the limit is refused.
 */
static void nesting_limit_warns_and_refuses(void **state)
{
	enum {
		LIMIT = 64
	};
	static struct thing t[LIMIT + 1];
	static struct revocable *h[LIMIT + 1];
	struct thing stray;
	struct revocable *sh;

	(void)state;
	for (int i = 0; i <= LIMIT; i++) {
		thing_init(&t[i], i);
		h[i] = devm_revocable_create(&tdev, &t[i], thing_release);
		assert_non_null(h[i]);
	}
	thing_init(&stray, 99);
	sh = devm_revocable_create(&other, &stray, thing_release);
	assert_non_null(sh);
	start_capture();
	for (int i = 0; i < LIMIT; i++) {
		assert_ptr_equal(revocable_try_access(h[i]), &t[i]);
		/* Past the old bound of 16, too: the stray end is refused. */
		if (i == 20 || i == LIMIT - 1) {
			revocable_access_end(sh);
			expect_warn_on("(no device)", "revocable_access_end",
				       "not accessed by this thread");
			start_capture();
		}
	}
	expect_no_warn();
	start_capture();
	assert_null(revocable_try_access(h[LIMIT]));
	expect_warn_on("(no device)", "revocable_try_access",
		       "64 accesses nested in this thread: no more");
	start_capture();
	for (int i = LIMIT - 1; i >= 0; i--)
		revocable_access_end(h[i]);
	expect_no_warn();
	/* No reader was left behind: both revocations complete. */
	assert_int_equal(devres_release_all(&other), 1);
	assert_int_equal(stray.released, 1);
	assert_int_equal(devres_release_all(&tdev), LIMIT + 1);
	for (int i = 0; i <= LIMIT; i++)
		assert_int_equal(t[i].released, 1);
}

static void access_end_without_access_warns(void **state)
{
	struct thing t1, t2;
	struct revocable *h1, *h2;

	(void)state;
	thing_init(&t1, 1);
	thing_init(&t2, 2);
	h1 = devm_revocable_create(&tdev, &t1, thing_release);
	h2 = devm_revocable_create(&tdev, &t2, thing_release);
	start_capture();
	revocable_access_end(h1);
	expect_warn_on("(no device)", "revocable_access_end",
		       "no access in progress");
	/* Nor the end of an access through another handle. */
	assert_non_null(revocable_try_access(h1));
	start_capture();
	revocable_access_end(h2);
	expect_warn_on("(no device)", "revocable_access_end",
		       "not accessed by this thread");
	/* The misuse changed nothing: h1's access is still on. */
	revocable_access_end(h1);
	start_capture();
	revocable_access_end(h1);
	expect_warn_on("(no device)", "revocable_access_end",
		       "no access in progress");
	assert_int_equal(devres_release_all(&tdev), 2);
	assert_int_equal(nrel, 2);
}

static void misuse_warns(void **state)
{
	struct thing t;
	struct revocable *h;
	long bad[8] = { 0 };

	(void)state;
	thing_init(&t, 1);
	start_capture();
	assert_null(devm_revocable_create(&tdev, NULL, thing_release));
	expect_warn("devm_revocable_create", "NULL resource");
	start_capture();
	assert_null(devm_revocable_create(NULL, &t, thing_release));
	assert_int_equal(cap.n, 1);
	start_capture();
	assert_null(revocable_try_access(NULL));
	expect_warn_on("(no device)", "revocable_try_access", "NULL handle");
	start_capture();
	assert_null(revocable_try_access((struct revocable *)bad));
	assert_int_equal(cap.n, 1);
	/* get and put of NULL do nothing, as put_device(NULL). */
	start_capture();
	assert_null(revocable_get(NULL));
	revocable_put(NULL);
	expect_no_warn();
	/* One put too many cannot free what the binding holds. */
	h = devm_revocable_create(&tdev, &t, thing_release);
	assert_non_null(h);
	start_capture();
	revocable_put(h);
	assert_int_equal(cap.n, 1);
	assert_non_null(strstr(cap.line[0], "the binding's reference"));
	assert_ptr_equal(revocable_try_access(h), &t);
	revocable_access_end(h);
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(t.released, 1);
}

static void errno_preserved(void **state)
{
	struct thing t;
	struct revocable *h;

	(void)state;
	thing_init(&t, 1);
	h = devm_revocable_create(&tdev, &t, thing_release);
	assert_non_null(h);
	errno = EXDEV;
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(errno, EXDEV);
}

/* Both allocations are fault points; a failure leaves nothing behind. */
static void create_fails_cleanly(void **state)
{
	struct thing t;
	struct devres_ledger before, now;

	(void)state;
	thing_init(&t, 1);
	for (unsigned int n = 1; n <= 2; n++) {
		devres_ledger_snapshot(&before);
		devres_fail_nth(n);
		assert_null(devm_revocable_create(&tdev, &t, thing_release));
		assert_int_equal(devres_fail_nth_get(), 0);
		devres_ledger_snapshot(&now);
		assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
		expect_stats(&tdev, 0, 0);
	}
	devres_fail_nth(3);
	assert_non_null(devm_revocable_create(&tdev, &t, thing_release));
	assert_int_equal(devres_fail_nth_get(), 1);
	devres_fail_nth(0);
	assert_int_equal(t.released, 0);
	assert_int_equal(devres_release_all(&tdev), 1);
	assert_int_equal(t.released, 1);
}

/* The backend is liburcu-bp when the library links it, unless forced. */
static void read_side_as_built(void **state)
{
	const char *env = getenv("DEVRES_REVOCABLE");
	FILE *maps = fopen("/proc/self/maps", "r");
	bool urcu = false;
	char line[512], want[64];
	static int x = 1;

	(void)state;
	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "liburcu-bp"))
			urcu = true;
	fclose(maps);
	if (env && strcmp(env, "fallback") == 0)
		urcu = false;
	start_log_capture();
	devres_set_log(true);
	assert_non_null(devm_revocable_create(&tdev, &x, NULL));
	devres_set_log(false);
	snprintf(want, sizeof(want), "(read side %s)",
		 urcu ? "urcu-bp" : "fallback");
	for (int i = 0; i < cap.n && i < CAP_LINES; i++)
		if (strstr(cap.line[i], "revocable") &&
		    strstr(cap.line[i], want))
			return;
	fail_msg("no log line with \"%s\"", want);
}

/* A handle kept after its device is unbound, deleted and freed. */
static const struct bus_type rbus = { .name = "revbus" };

static struct revocable *kept;
static int probe_fail_after;

static void free_release(void *res)
{
	struct thing *t = res;

	t->state = GONE;
	free(t);
}

static int kept_probe(struct device *dev)
{
	struct thing *t;
	struct revocable *h;

	if (!devm_kzalloc(dev, 32, GFP_KERNEL))
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		t = malloc(sizeof(*t));
		if (!t)
			return -ENOMEM;
		thing_init(t, i);
		h = devm_revocable_create(dev, t, free_release);
		if (!h) {
			free(t);
			return -ENOMEM;
		}
		if (i == 0) {
			revocable_put(kept);
			kept = revocable_get(h);
		}
	}
	if (probe_fail_after)
		return -EIO;
	return 0;
}

static struct device_driver kept_drv = {
	.name = "kept",
	.bus = &rbus,
	.probe = kept_probe,
};

static void handle_outlives_device(void **state)
{
	struct device *dev = heap_dev(&rbus, "kept.0");
	int released = heap_released;
	struct thing *t;

	(void)state;
	kept = NULL;
	assert_int_equal(driver_register(&kept_drv), 0);
	assert_int_equal(device_add(dev), 0);
	assert_true(device_is_bound(dev));
	t = revocable_try_access(kept);
	assert_non_null(t);
	assert_int_equal(t->state, ALIVE);
	revocable_access_end(kept);
	device_del(dev);
	put_device(dev);
	assert_int_equal(heap_released, released + 1);
	/* The device is freed; the handle answers, safely. */
	assert_null(revocable_try_access(kept));
	assert_int_equal(revocables_live(), 0);
	driver_unregister(&kept_drv);
	revocable_put(kept);
	kept = NULL;
}

static void probe_failure_revokes(void **state)
{
	struct device *dev = heap_dev(&rbus, "kept.1");

	(void)state;
	kept = NULL;
	probe_fail_after = 1;
	assert_int_equal(device_add(dev), 0);
	assert_int_equal(device_driver_attach(&kept_drv, dev), -EIO);
	probe_fail_after = 0;
	assert_non_null(kept);
	assert_null(revocable_try_access(kept));
	assert_int_equal(revocables_live(), 0);
	revocable_put(kept);
	kept = NULL;
	device_del(dev);
	put_device(dev);
}

static void probe_sweep_no_leak(void **state)
{
	struct device *dev = heap_dev(&rbus, "kept.2");
	struct devres_sweep_result r = { 99, 99, 99, 99, 99, 99 };
	unsigned int points;

	(void)state;
	kept = NULL;
	assert_int_equal(device_add(dev), 0);
	devres_fail_nth(UINT_MAX);
	assert_int_equal(device_driver_attach(&kept_drv, dev), 0);
	points = UINT_MAX - devres_fail_nth_get();
	devres_fail_nth(0);
	device_release_driver(dev);
	/* kzalloc, then node and handle of each revocable, at least. */
	assert_true(points >= 5);
	start_log_capture();
	assert_int_equal(driver_probe_sweep(&kept_drv, dev, &r), 0);
	assert_int_equal(r.points, points);
	assert_int_equal(r.leaks, 0);
	assert_false(device_is_bound(dev));
	assert_null(revocable_try_access(kept));
	revocable_put(kept);
	kept = NULL;
	assert_int_equal(revocables_live(), 0);
	device_del(dev);
	put_device(dev);
}

/* Every test above, again, on the fallback read side. */
static void fallback_read_side(void **state)
{
	char *err = NULL;
	int status;

	(void)state;
	status = run_self("DEVRES_REVOCABLE=fallback", &err, "--child", NULL);
	if (status)
		fprintf(stderr, "%s", err);
	free(err);
	assert_int_equal(status, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(revoked_at_release, setup,
						teardown),
		cmocka_unit_test_setup_teardown(null_release_only_revokes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(release_puts_own_handle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			release_accesses_and_revokes_another, setup2, teardown),
		cmocka_unit_test_setup_teardown(
			put_from_release_callback_handle_first, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			put_from_release_callback_handle_last, setup, teardown),
		cmocka_unit_test_setup_teardown(
			revoke_inside_own_access_is_deferred, setup2, teardown),
		cmocka_unit_test_setup_teardown(
			nested_accesses_end_in_any_order, setup, teardown),
		cmocka_unit_test_setup_teardown(nesting_limit_warns_and_refuses,
						setup2, teardown),
		cmocka_unit_test_setup_teardown(access_end_without_access_warns,
						setup, teardown),
		cmocka_unit_test_setup_teardown(misuse_warns, setup, teardown),
		cmocka_unit_test_setup_teardown(errno_preserved, setup,
						teardown),
		cmocka_unit_test_setup_teardown(create_fails_cleanly, setup,
						teardown),
		cmocka_unit_test_setup_teardown(read_side_as_built, setup,
						teardown),
		cmocka_unit_test_setup_teardown(handle_outlives_device, setup,
						teardown),
		cmocka_unit_test_setup_teardown(probe_failure_revokes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(probe_sweep_no_leak, setup,
						teardown),
		cmocka_unit_test(fallback_read_side),
	};
	/* The child runs all but the last test. */
	size_t n = sizeof(tests) / sizeof(tests[0]) - (argc > 1);

	(void)argv;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return run_group_on_bus("revocable", tests, n, &rbus);
}
