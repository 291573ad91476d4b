// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/*
 * krtc, a kernel-style RTC driver, on its board: time read and set
 * through its seconds register and the rtc framework, its alarm
 * interrupt counted, and a clean sweep, deferral included.
 */
#define _GNU_SOURCE
#ifndef KC_TWIN
#define KC_TWIN 0
#endif
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/krtc.c"
#include "kcompat/kctest.h"

KC_FIXTURE("krtc", "kc,krtc")

static int sweep(struct devres_sweep_result *r)
{
	return driver_probe_sweep(&krtc_driver.driver, &board.pdev->dev, r);
}

#if !KC_TWIN
static void reads_and_sets_time(void **state)
{
	struct rtc_time tm;
	struct krtc *k;

	(void)state;
	assert_int_equal(krtc_driver_init(), 0);
	k = platform_get_drvdata(board.pdev);
	assert_non_null(k);
	assert_int_equal(board.regs[KRTC_CTRL / 4], KRTC_CTRL_EN);
	board.regs[KRTC_SECONDS / 4] = 1000000000u; /* 2001-09-09 01:46:40 */
	assert_int_equal(rtc_read_time(k->rtc, &tm), 0);
	assert_int_equal(tm.tm_year, 101);
	assert_int_equal(tm.tm_mon, 8);
	assert_int_equal(tm.tm_mday, 9);
	assert_int_equal(tm.tm_min, 46);
	tm.tm_year = 124; /* 2024 */
	assert_int_equal(rtc_set_time(k->rtc, &tm), 0);
	assert_int_equal(board.regs[KRTC_SECONDS / 4],
			 (u32)rtc_tm_to_time64(&tm));
	tm.tm_year = 90; /* before its range */
	assert_int_equal(rtc_set_time(k->rtc, &tm), -EINVAL);
	board.regs[KRTC_ALARM_STATUS / 4] = 1;
	assert_int_equal(irq_line_raise(board.irq), 0);
	for (int i = 0; i < 1000 && board.regs[KRTC_ALARM_STATUS / 4]; i++)
		usleep(1000);
	for (int i = 0; i < 1000 &&
			!__atomic_load_n(&k->rtc->irq_events, __ATOMIC_RELAXED);
	     i++)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&k->rtc->irq_events, __ATOMIC_RELAXED),
			 1);
	krtc_driver_exit();
}

static void sweeps_clean(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = sweep(&r);
	if (ret)
		kc_print_report();
	assert_int_equal(ret, 0);
	assert_true(r.points >= 6);
	assert_int_equal(r.leaks + r.warns + r.findings, 0);
	assert_int_equal(r.defer_points, 1);
	assert_int_equal(r.defer_failures, 0);
}
#else
/* It turns platform_get_irq()'s -EPROBE_DEFER into -ENODEV. */
static void twin_changed_deferral_fails_the_sweep(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = sweep(&r);
	kc_print_report();
	assert_int_equal(ret, 1);
	assert_int_equal(r.leaks + r.warns, 0);
	assert_int_equal(r.defer_failures, 1);
	assert_true(kc_said("FAIL: platform_get_irq returned -EPROBE_DEFER "
			    "and the probe returned -ENODEV: the deferral was "
			    "turned into an error and is never retried"));
	/* The lookup that deferred, by the driver's line. */
	assert_true(
		kc_site_names("it failed at ", "krtc.c", "platform_get_irq("));
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if !KC_TWIN
		cmocka_unit_test_setup_teardown(reads_and_sets_time, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sweeps_clean, setup, teardown),
#else
		cmocka_unit_test_setup_teardown(
			twin_changed_deferral_fails_the_sweep, setup, teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
