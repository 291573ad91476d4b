// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/*
 * kwdt, a kernel-style watchdog driver, on its board: it registers with
 * the watchdog framework, starts, pings and stops through its registers,
 * is stopped when unbound, takes its pretimeout interrupt, and sweeps
 * clean, deferral included.
 */
#define _GNU_SOURCE
#ifndef KC_TWIN
#define KC_TWIN 0
#endif
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/kwdt.c"
#include "kcompat/kctest.h"

KC_FIXTURE("kwdt", "kc,kwdt")

#if !KC_TWIN
static void registers_starts_pings_stops(void **state)
{
	struct kwdt *w;

	(void)state;
	assert_int_equal(kwdt_driver_init(), 0);
	w = platform_get_drvdata(board.pdev);
	assert_non_null(w);
	assert_int_equal(watchdog_dev_start(&w->wdd), 0);
	assert_int_equal(board.regs[KWDT_LOAD / 4], 30 * KWDT_TICKS_PER_SEC);
	assert_int_equal(board.regs[KWDT_CTRL / 4],
			 KWDT_CTRL_EN | KWDT_CTRL_PRE_IRQ);
	assert_int_equal(watchdog_dev_ping(&w->wdd), 0);
	assert_int_equal(board.regs[KWDT_KICK / 4], KWDT_KICK_MAGIC);
	board.regs[KWDT_COUNT / 4] = 12 * KWDT_TICKS_PER_SEC;
	assert_int_equal(w->wdd.ops->get_timeleft(&w->wdd), 12);
	assert_int_equal(irq_line_raise(board.irq), 0);
	for (int i = 0; i < 1000 && !atomic_read(&w->pretimeouts); i++)
		usleep(1000);
	assert_int_equal(atomic_read(&w->pretimeouts), 1);
	/* Unbound while running: stopped on unregister. */
	kwdt_driver_exit();
	assert_int_equal(board.regs[KWDT_CTRL / 4], 0);
}

static void sweeps_clean(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = driver_probe_sweep(&kwdt_driver.driver, &board.pdev->dev, &r);
	if (ret)
		kc_print_report();
	assert_int_equal(ret, 0);
	assert_true(r.points >= 5);
	assert_int_equal(r.leaks + r.warns + r.findings, 0);
	assert_int_equal(r.defer_points, 1);
	assert_int_equal(r.defer_failures, 0);
}
#else
/* It swallows -EPROBE_DEFER from platform_get_irq_optional(). */
static void twin_swallowed_deferral_fails_the_sweep(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = driver_probe_sweep(&kwdt_driver.driver, &board.pdev->dev, &r);
	kc_print_report();
	assert_int_equal(ret, 1);
	assert_int_equal(r.leaks + r.warns, 0);
	assert_int_equal(r.defer_points, 1);
	assert_int_equal(r.defer_failures, 1);
	assert_true(kc_said("FAIL: platform_get_irq returned -EPROBE_DEFER "
			    "and the probe returned 0: the deferral was "
			    "swallowed"));
	/* The deferral's line, and the line the probe went on at after it. */
	assert_true(kc_site_names("it failed at ", "kwdt.c",
				  "platform_get_irq_optional("));
	assert_true(kc_site_names("went on at ", "kwdt.c",
				  "devm_watchdog_register_device("));
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if !KC_TWIN
		cmocka_unit_test_setup_teardown(registers_starts_pings_stops,
						setup, teardown),
		cmocka_unit_test_setup_teardown(sweeps_clean, setup, teardown),
#else
		cmocka_unit_test_setup_teardown(
			twin_swallowed_deferral_fails_the_sweep, setup,
			teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
