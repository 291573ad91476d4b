// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat */
/*
 * kdma, a kernel-style DMA engine with sixteen channels, on its board:
 * it programs every channel's ring, counts completions from its
 * interrupt, stops every channel when unbound, and sweeps clean even in
 * strict mode.
 */
#define _GNU_SOURCE
#ifndef KC_TWIN
#define KC_TWIN 0
#endif
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/kdma.c"
#include "kcompat/kctest.h"

KC_FIXTURE("kdma", "kc,kdma")

static int sweep(struct devres_sweep_result *r)
{
	return driver_probe_sweep(&kdma_driver.driver, &board.pdev->dev, r);
}

#if KC_TWIN == 0
static void programs_channels(void **state)
{
	struct kdma *d;

	(void)state;
	assert_int_equal(kdma_driver_init(), 0);
	d = platform_get_drvdata(board.pdev);
	assert_non_null(d);
	for (int i = 0; i < KDMA_NR_CHANS; i++) {
		assert_int_equal(board.regs[KDMA_CHAN_CTRL(i) / 4],
				 KDMA_CHAN_CTRL_EN);
		assert_int_equal(board.regs[KDMA_CHAN_RING_LO(i) / 4],
				 lower_32_bits(d->chans[i].ring_dma));
		/* The model reaches each ring through its bus address. */
		assert_ptr_equal(dma_iova_to_virt(&board.pdev->dev,
						  d->chans[i].ring_dma,
						  KDMA_RING_SIZE),
				 d->chans[i].ring);
	}
	board.regs[KDMA_IRQ_STATUS / 4] = 0x5;
	assert_int_equal(irq_line_raise(board.irq), 0);
	/* Read under the driver's lock, as its own code would. */
	for (int i = 0; i < 1000; i++) {
		unsigned long n;

		spin_lock(&d->lock);
		n = d->completions;
		spin_unlock(&d->lock);
		if (n == 2)
			break;
		usleep(1000);
	}
	spin_lock(&d->lock);
	assert_int_equal(d->completions, 2);
	spin_unlock(&d->lock);
	kdma_driver_exit();
	for (int i = 0; i < KDMA_NR_CHANS; i++)
		assert_int_equal(board.regs[KDMA_CHAN_CTRL(i) / 4], 0);
}

static void sweeps_clean_strict(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	devres_sweep_set_strict(true);
	ret = sweep(&r);
	if (ret)
		kc_print_report();
	assert_int_equal(ret, 0);
	/* 16 rings, the pool, the table, the irq, the actions... */
	assert_true(r.points >= 22);
	assert_int_equal(r.leaks + r.warns + r.findings, 0);
	assert_int_equal(r.defer_points, 1);
	assert_int_equal(r.defer_failures, 0);
}
#elif KC_TWIN == 1
/* -EINVAL for a failed allocation: a finding, failing in strict mode. */
static void twin_wrong_errno_is_a_finding(void **state)
{
	struct devres_sweep_result r;

	(void)state;
	assert_int_equal(sweep(&r), 0);
	assert_int_equal(r.findings, 1);
	assert_true(kc_said("finding: devm_kcalloc fails with -ENOMEM, but "
			    "the probe returned -EINVAL"));
	/* The finding names the driver's line, and that nothing came after. */
	assert_true(kc_site_names("it failed at ", "kdma.c", "devm_kcalloc("));
	assert_true(kc_said("and the probe called nothing after it"));
	cap.n = 0;
	devres_sweep_set_strict(true);
	assert_int_equal(sweep(&r), 1);
	kc_print_report();
	assert_true(kc_said(": devm_kcalloc fails, probe returned -EINVAL"));
	assert_true(kc_said("1 findings (strict)"));
}
#else
/* The unmanaged table leaks at every failure point after it. */
static void twin_leaked_kcalloc_fails_the_sweep(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = sweep(&r);
	kc_print_report();
	assert_true(ret > 0);
	assert_true(r.leaks > 0);
	assert_true(kc_said("leak at failure point"));
	assert_true(kc_said("nodes: "));
	/* Each leaking point names the acquisition that failed. */
	assert_true(kc_said("failure point 6: devm_ioremap fails, probe "
			    "returned -ENOMEM"));
	/* The leaked tables are blocks of the kmalloc heap: give them back. */
	devres_release_all(kcompat_heap_dev());
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#if KC_TWIN == 0
		cmocka_unit_test_setup_teardown(programs_channels, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sweeps_clean_strict, setup,
						teardown),
#elif KC_TWIN == 1
		cmocka_unit_test_setup_teardown(twin_wrong_errno_is_a_finding,
						setup, teardown),
#else
		cmocka_unit_test_setup_teardown(
			twin_leaked_kcalloc_fails_the_sweep, setup, teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
