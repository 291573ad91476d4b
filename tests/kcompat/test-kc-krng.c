// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat tsan */
/*
 * krng, a kernel-style RNG driver with an interrupt, on its board: it
 * binds through the of_match_table, hwrng reads work through its
 * interrupt, and its probe sweep (failure points and deferrals) is clean.
 */
#define _GNU_SOURCE
#ifndef KC_TWIN
#define KC_TWIN 0
#endif
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/krng.c"
#include "kcompat/kctest.h"

KC_FIXTURE("krng", "kc,krng-v2")

#if !KC_TWIN
static void binds_and_reads(void **state)
{
	unsigned char buf[8];

	(void)state;
	assert_int_equal(krng_driver_init(), 0);
	assert_ptr_equal(board.pdev->dev.driver, &krng_driver.driver);
	assert_int_equal(board.regs[KRNG_CTRL / 4],
			 KRNG_CTRL_EN | KRNG_CTRL_IRQ_EN);
	/* Nothing ready: a read that may not wait gets nothing. */
	assert_int_equal(hwrng_read("krng", buf, sizeof(buf), false), 0);
	/*
	 * The model makes four bytes ready and raises the line, and waits
	 * until the handler has read the status: the register model is
	 * plain memory, and the read path's write of the status must come
	 * after the handler's read, as the device's bus orders them.
	 */
	board.regs[KRNG_DATA / 4] = 0x04030201;
	board.regs[KRNG_STATUS / 4] = KRNG_STATUS_READY | 4u << 4;
	assert_int_equal(irq_line_raise_wait(board.irq), 0);
	assert_int_equal(hwrng_read("krng", buf, sizeof(buf), true), 4);
	assert_int_equal(buf[0], 1);
	assert_int_equal(buf[3], 4);
	krng_driver_exit();
	/* Unbound: disabled by the managed action, unregistered. */
	assert_int_equal(board.regs[KRNG_CTRL / 4], 0);
	assert_int_equal(hwrng_read("krng", buf, sizeof(buf), false), -ENODEV);
}

/* Every failure point and deferral of the probe: clean. */
static void sweeps_clean(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = driver_probe_sweep(&krng_driver.driver, &board.pdev->dev, &r);
	if (ret)
		kc_print_report();
	assert_int_equal(ret, 0);
	/* ioremap, clock, irq, actions, hwrng and the heap: 18 points. */
	assert_int_equal(r.points, 18);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(r.warns, 0);
	assert_int_equal(r.findings, 0);
	/* platform_get_irq() and devm_clk_get_enabled() each deferred once. */
	assert_int_equal(r.defer_points, 2);
	assert_int_equal(r.defer_failures, 0);
}
#else
/*
 * free_irq() of a managed interrupt is caught at the call: one WARN there,
 * naming the device and devm_free_irq(), and the handler's node goes with
 * it, so the managed release that follows has nothing left to free and
 * says nothing.
 */
static void twin_free_irq_warns_at_the_call(void **state)
{
	struct devres_ledger before, after;
	int warns;

	(void)state;
	assert_int_equal(krng_driver_init(), 0);
	assert_ptr_equal(board.pdev->dev.driver, &krng_driver.driver);
	devres_ledger_snapshot(&before);
	warns = devres_warn_count();
	krng_driver_exit();
	assert_int_equal(devres_warn_count() - warns, 1);
	assert_true(kc_said("WARNING: krng: free_irq: a handler acquired with "
			    "devm_request_irq(): use devm_free_irq()"));
	assert_false(kc_said("devm_irq_release"));
	/* Unbound: every handler and node of the device is gone. */
	devres_ledger_snapshot(&after);
	assert_int_equal(after.irq_handlers, before.irq_handlers - 1);
	assert_true(after.nodes < before.nodes);
	assert_int_equal(board.regs[KRNG_CTRL / 4], 0);
}

/* Every bound run of the sweep WARNs, so the sweep fails. */
static void twin_free_irq_fails_the_sweep(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = driver_probe_sweep(&krng_driver.driver, &board.pdev->dev, &r);
	kc_print_report();
	assert_true(ret > 0);
	assert_true(r.warns > 0);
	assert_int_equal(r.leaks, 0);
	assert_true(kc_said("FAIL: 1 WARN during the probe and its release"));
	assert_true(kc_said("use devm_free_irq()"));
	assert_false(kc_said("devm_irq_release"));
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if !KC_TWIN
		cmocka_unit_test_setup_teardown(binds_and_reads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sweeps_clean, setup, teardown),
#else
		cmocka_unit_test_setup_teardown(twin_free_irq_warns_at_the_call,
						setup, teardown),
		cmocka_unit_test_setup_teardown(twin_free_irq_fails_the_sweep,
						setup, teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
