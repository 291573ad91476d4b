// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A region (request_region() and the like, managed or not) given to the
 * calls that take any range out of the tree: release_resource() and
 * remove_resource(). Every maker of a region by both calls: the region is
 * no longer claimed (the ledger and the tree agree, the range can be
 * claimed again), a plain one is the caller's to free() as the kernel's
 * release_and_free_resource() does, and nothing the library keeps points
 * into it after; a managed one is released at the call, taken off its
 * device with one WARN, and the device's release does nothing more.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/fault.h>
#include <devres/ioport.h>
#include "testlib.h"

struct maker {
	const char *name;
	struct resource *(*make)(struct device *dev, resource_size_t start);
	bool managed;
	bool mem;
};

static struct resource *plain_io(struct device *dev, resource_size_t start)
{
	(void)dev;
	return request_region(start, 8, "by-hand");
}

static struct resource *plain_mem(struct device *dev, resource_size_t start)
{
	(void)dev;
	return request_mem_region(start, 0x1000, "by-hand");
}

static struct resource *excl_mem(struct device *dev, resource_size_t start)
{
	(void)dev;
	return request_mem_region_exclusive(start, 0x1000, "by-hand");
}

static struct resource *devm_io(struct device *dev, resource_size_t start)
{
	return devm_request_region(dev, start, 8, "by-hand");
}

static struct resource *devm_mem(struct device *dev, resource_size_t start)
{
	return devm_request_mem_region(dev, start, 0x1000, "by-hand");
}

static const struct maker makers[] = {
	{ "request_region", plain_io, false, false },
	{ "request_mem_region", plain_mem, false, true },
	{ "request_mem_region_exclusive", excl_mem, false, true },
	{ "devm_request_region", devm_io, true, false },
	{ "devm_request_mem_region", devm_mem, true, true },
};

struct by_hand {
	const char *name;
	int (*call)(struct resource *old);
};

static const struct by_hand calls[] = {
	{ "release_resource", release_resource },
	{ "remove_resource", remove_resource },
};

static resource_size_t start_of(const struct maker *m)
{
	return m->mem ? 0x7f000000 : 0x340;
}

static resource_size_t len_of(const struct maker *m)
{
	return m->mem ? 0x1000 : 8;
}

static struct resource *claim(const struct maker *m, resource_size_t start)
{
	return m->mem ? request_mem_region(start, len_of(m), "again")
		      : request_region(start, len_of(m), "again");
}

static void unclaim(const struct maker *m, resource_size_t start)
{
	if (m->mem)
		release_mem_region(start, len_of(m));
	else
		release_region(start, len_of(m));
}

static void one_cell(struct device *dev, const struct maker *m,
		     const struct by_hand *c)
{
	struct devres_ledger before, after;
	resource_size_t start = start_of(m);
	struct resource *res, *again;
	char why[96];

	devres_ledger_snapshot(&before);
	res = m->make(dev, start);
	assert_non_null(res);

	start_capture();
	assert_int_equal(c->call(res), 0);
	if (m->managed) {
		snprintf(why, sizeof(why), "a region acquired with %s()",
			 m->name);
		expect_warn(c->name, why);
	} else {
		expect_no_warn();
		/* The caller's now: freed as release_and_free_resource(). */
		free(res);
	}

	/* Free in the tree: claimed and released again with no WARN. */
	start_capture();
	again = claim(m, start);
	assert_non_null(again);
	unclaim(m, start);
	expect_no_warn();

	/* Not claimed any more: the plain release finds nothing. */
	start_capture();
	unclaim(m, start);
	expect_warn_on("(no device)",
		       m->mem ? "release_mem_region" : "release_region",
		       "no busy region");

	/* The device's release has nothing of it left to release. */
	start_capture();
	assert_int_equal(devres_release_all(dev), 0);
	expect_no_warn();

	devres_ledger_snapshot(&after);
	assert_int_equal(devres_ledger_diff(&before, &after, stderr), 0);
}

static void every_region_by_every_call(void **state)
{
	struct device *dev = *state;

	for (size_t i = 0; i < sizeof(makers) / sizeof(makers[0]); i++)
		for (size_t j = 0; j < sizeof(calls) / sizeof(calls[0]); j++) {
			print_message("%s, then %s\n", makers[i].name,
				      calls[j].name);
			one_cell(dev, &makers[i], &calls[j]);
		}
}

/*
 * A region out of the tree is no longer one: a second call finds nothing
 * to take out, and neither call frees what the caller now holds.
 */
static void second_call_finds_nothing(void **state)
{
	struct resource *res;

	(void)state;
	for (size_t j = 0; j < sizeof(calls) / sizeof(calls[0]); j++) {
		res = request_region(0x348, 8, "twice");
		assert_non_null(res);
		assert_int_equal(calls[j].call(res), 0);
		start_capture();
		assert_int_equal(release_resource(res), -EINVAL);
		assert_int_equal(remove_resource(res), -EINVAL);
		expect_no_warn();
		/* Still readable: the library did not free it. */
		assert_int_equal(res->start, 0x348);
		assert_string_equal(res->name, "twice");
		free(res);
	}
}

/* A managed region's node is gone: its release cannot run later. */
static void managed_node_taken_off(void **state)
{
	struct device *dev = *state;
	struct devres_stats st;
	struct resource *res;

	res = devm_request_region(dev, 0x350, 8, "node");
	assert_non_null(res);
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 1);
	start_capture();
	assert_int_equal(release_resource(res), 0);
	expect_warn("release_resource", "use devm_release_region()");
	devres_get_stats(dev, &st);
	assert_int_equal(st.allocs, 0);
	/* The managed release finds nothing either. */
	start_capture();
	devm_release_region(dev, 0x350, 8);
	expect_warn("devm_release_region", "no managed region");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_region_by_every_call,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(second_call_finds_nothing,
						dev_setup, dev_teardown),
		cmocka_unit_test_setup_teardown(managed_node_taken_off,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: expect_warn() counts the lines. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
