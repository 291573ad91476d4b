// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/*
 * kled's sweep names the driver's lines: clean for the correct driver;
 * for its twin, each finding says at which line the acquisition failed
 * and where the probe returned (its dev_err_probe()) or went on (the
 * next call it made), and strict mode fails on them.
 */
#define _GNU_SOURCE
#ifndef KC_TWIN
#define KC_TWIN 0
#endif
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/kled.c"
#include "kcompat/kctest.h"

KC_FIXTURE("kled", NULL)

static int sweep(struct devres_sweep_result *r)
{
	return driver_probe_sweep(&kled_driver.driver, &board.pdev->dev, r);
}

#if !KC_TWIN
static void sweeps_clean(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	devres_sweep_set_strict(true);
	if (sweep(&r))
		kc_print_report();
	assert_int_equal(r.findings + r.leaks + r.warns, 0);
	assert_true(r.points >= 5);
}
#else
static void findings_name_the_lines(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	assert_int_equal(sweep(&r), 0);
	kc_print_report();
	assert_int_equal(r.findings, 2);
	assert_int_equal(r.leaks + r.warns, 0);
	/* -EIO for the failed devm_kcalloc(), from its dev_err_probe(). */
	assert_true(kc_said("finding: devm_kcalloc fails with -ENOMEM, but the "
			    "probe returned -EIO"));
	assert_true(kc_site_names("it failed at ", "kled.c", "devm_kcalloc("));
	assert_true(kc_site_names("returned at ", "kled.c",
				  "dev_err_probe(dev, -EIO"));
	/* The failed action, ignored: the probe went on to its mutex. */
	assert_true(kc_said("finding: the probe returned 0 although kled_off "
			    "failed"));
	assert_true(kc_site_names("it failed at ", "kled.c",
				  "devm_add_action_or_reset("));
	assert_true(kc_site_names("went on at ", "kled.c", "devm_mutex_init("));
	assert_true(kc_said("(devm_mutex_init)"));
	/* Strict: the findings fail the sweep. */
	cap.n = 0;
	devres_sweep_set_strict(true);
	assert_int_equal(sweep(&r), 2);
	assert_true(kc_said("2 findings (strict)"));
}
#endif

/* The call-site calls themselves: nesting, and a leave with no enter. */
static void call_sites_nest(void **state)
{
	int warns = devres_warn_count();

	(void)state;
	devres_call_site_enter("a/outer.c", 1, "outer");
	devres_call_site_enter("b/inner.c", 2, "inner");
	devres_call_site_leave();
	devres_call_site_leave();
	assert_int_equal(devres_warn_count(), warns);
	devres_call_site_leave();
	assert_int_equal(devres_warn_count(), warns + 1);
	assert_true(kc_said("devres_call_site_leave: no call site entered"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#if !KC_TWIN
		cmocka_unit_test_setup_teardown(sweeps_clean, setup, teardown),
#else
		cmocka_unit_test_setup_teardown(findings_name_the_lines, setup,
						teardown),
#endif
		cmocka_unit_test_setup_teardown(call_sites_nest, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
