// SPDX-License-Identifier: MIT
/* ctest-labels: fault kcompat tsan */
/*
 * ksensor on its board: platform data reaches the driver, its attributes
 * read and write through the registry (dev_groups, a named group added
 * in probe, one hidden by is_visible) and go with the binding, its
 * interrupt hands work to a work item, its delayed work polls and stops,
 * unbinding cancels both, and its probe sweeps clean.
 */
#define _GNU_SOURCE
/* Kernel code does arithmetic on void pointers (a GNU C extension). */
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "kcompat/ksensor.c"
#include "kcompat/kctest.h"

static struct ksensor_pdata pdata = { .offset = 500, .debug = false };

static int setup(void **state)
{
	(void)state;
	kc_setup("ksensor", NULL);
	board.pdev->dev.platform_data = &pdata;
	pdata.debug = false;
	board.regs[KSENSOR_TEMP / 4] = 41000;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return kc_teardown();
}

static struct ksensor *bound(void)
{
	assert_int_equal(ksensor_driver_init(), 0);
	assert_ptr_equal(board.pdev->dev.driver, &ksensor_driver.driver);
	return platform_get_drvdata(board.pdev);
}

/* "last" until it says @alerts alerts (or 2 s pass); what it said. */
static void wait_last(unsigned int alerts, char *buf)
{
	unsigned int a = 0;

	for (int i = 0; i < 2000; i++) {
		int last;
		unsigned int polls;

		assert_true(kcompat_attr_show(&board.pdev->dev, "last", buf) >
			    0);
		assert_int_equal(sscanf(buf, "%d %u %u", &last, &a, &polls), 3);
		if (a >= alerts)
			return;
		usleep(1000);
	}
	fail_msg("%u alerts, not %u", a, alerts);
}

static void attributes_read_and_write(void **state)
{
	char buf[PAGE_SIZE];
	struct device *dev = &board.pdev->dev;

	(void)state;
	/* Not bound: nothing shows. */
	assert_int_equal(kcompat_attr_show(dev, "temp", buf), -ENOENT);
	(void)bound();
	/* The board's offset is added: 41000 + 500. */
	assert_int_equal(kcompat_attr_show(dev, "temp", buf), 6);
	assert_string_equal(buf, "41500\n");
	assert_int_equal(kcompat_attr_store(dev, "threshold", "45000\n", 6), 6);
	assert_int_equal(board.regs[KSENSOR_THRESHOLD / 4], 45000);
	assert_int_equal(kcompat_attr_show(dev, "threshold", buf), 6);
	assert_string_equal(buf, "45000\n");
	assert_int_equal(kcompat_attr_store(dev, "threshold", "0x10", 4), 4);
	assert_int_equal(board.regs[KSENSOR_THRESHOLD / 4], 16);
	/* What the driver's kstrtouint() refuses, and what is not there. */
	assert_int_equal(kcompat_attr_store(dev, "threshold", "12x", 3),
			 -EINVAL);
	assert_int_equal(kcompat_attr_store(dev, "threshold", "-1", 2),
			 -EINVAL);
	assert_int_equal(kcompat_attr_store(dev, "threshold", "99999999999",
					    11),
			 -ERANGE);
	assert_int_equal(board.regs[KSENSOR_THRESHOLD / 4], 16);
	assert_int_equal(kcompat_attr_store(dev, "temp", "1", 1), -EACCES);
	assert_int_equal(kcompat_attr_show(dev, "nonesuch", buf), -ENOENT);
	/* debug/raw is hidden by is_visible while the board says so. */
	assert_int_equal(kcompat_attr_show(dev, "debug/raw", buf), -ENOENT);
	pdata.debug = true;
	assert_int_equal(kcompat_attr_show(dev, "debug/raw", buf), 11);
	assert_string_equal(buf, "0x0000a028\n");
	assert_int_equal(kcompat_attr_show(dev, "raw", buf), -ENOENT);
	ksensor_driver_exit();
	/* Unbound: the probe's group went with the binding. */
	assert_int_equal(kcompat_attr_show(dev, "debug/raw", buf), -ENOENT);
	assert_int_equal(kcompat_attr_show(dev, "temp", buf), -ENOENT);
}

static void interrupt_hands_work_over(void **state)
{
	char buf[PAGE_SIZE];

	(void)state;
	(void)bound();
	board.regs[KSENSOR_TEMP / 4] = 47000;
	assert_int_equal(irq_line_raise(board.irq), 0);
	wait_last(1, buf);
	assert_string_equal(buf, "47500 1 0\n");
	board.regs[KSENSOR_TEMP / 4] = 48000;
	assert_int_equal(irq_line_raise(board.irq), 0);
	wait_last(2, buf);
	assert_string_equal(buf, "48500 2 0\n");
	ksensor_driver_exit();
}

static unsigned int polls(void)
{
	char buf[PAGE_SIZE];
	int last;
	unsigned int a, p;

	assert_true(kcompat_attr_show(&board.pdev->dev, "last", buf) > 0);
	assert_int_equal(sscanf(buf, "%d %u %u", &last, &a, &p), 3);
	return p;
}

static void delayed_work_polls_and_stops(void **state)
{
	struct device *dev = &board.pdev->dev;
	unsigned int p;

	(void)state;
	(void)bound();
	assert_int_equal(polls(), 0);
	assert_int_equal(kcompat_attr_store(dev, "poll_ms", "5", 1), 1);
	for (int i = 0; i < 2000 && polls() < 3; i++)
		usleep(1000);
	assert_true(polls() >= 3);
	/* Stopped: cancel_delayed_work_sync() waited, nothing runs after. */
	assert_int_equal(kcompat_attr_store(dev, "poll_ms", "0", 1), 1);
	p = polls();
	usleep(30000);
	assert_int_equal(polls(), p);
	/* A long period, then unbound: the pending poll never runs. */
	assert_int_equal(kcompat_attr_store(dev, "poll_ms", "100000", 6), 6);
	assert_true(delayed_work_pending(
		&((struct ksensor *)platform_get_drvdata(board.pdev))
			 ->poll_work));
	ksensor_driver_exit();
}

/* The work API itself, off any driver. */
static atomic_t runs;

static void count_run(struct work_struct *w)
{
	(void)w;
	atomic_inc(&runs);
}

static void work_api(void **state)
{
	struct delayed_work dw;
	DECLARE_WORK(w, count_run);

	(void)state;
	atomic_set(&runs, 0);
	assert_true(schedule_work(&w));
	flush_work(&w);
	assert_int_equal(atomic_read(&runs), 1);
	INIT_DELAYED_WORK(&dw, count_run);
	assert_true(schedule_delayed_work(&dw, 100000));
	/* Pending: queueing again says so and changes nothing. */
	assert_false(schedule_delayed_work(&dw, 1));
	assert_true(delayed_work_pending(&dw));
	/* Cancelled before it was due: it never runs. */
	assert_true(cancel_delayed_work_sync(&dw));
	assert_false(delayed_work_pending(&dw));
	assert_int_equal(atomic_read(&runs), 1);
	assert_false(cancel_delayed_work_sync(&dw));
	/* flush_delayed_work() runs a pending one now, without its delay. */
	assert_true(schedule_delayed_work(&dw, 100000));
	assert_true(flush_delayed_work(&dw));
	assert_int_equal(atomic_read(&runs), 2);
}

static void kstrto_parses_as_the_kernel(void **state)
{
	unsigned int u;
	int i;
	u8 b;
	bool on;

	(void)state;
	assert_int_equal(kstrtouint("42\n", 10, &u), 0);
	assert_int_equal(u, 42);
	assert_int_equal(kstrtouint("0x2a", 0, &u), 0);
	assert_int_equal(u, 42);
	assert_int_equal(kstrtouint("052", 0, &u), 0);
	assert_int_equal(u, 42);
	assert_int_equal(kstrtouint(" 42", 10, &u), -EINVAL);
	assert_int_equal(kstrtouint("42\n\n", 10, &u), -EINVAL);
	assert_int_equal(kstrtouint("", 10, &u), -EINVAL);
	assert_int_equal(kstrtouint("4294967296", 10, &u), -ERANGE);
	assert_int_equal(kstrtoint("-2147483648", 10, &i), 0);
	assert_int_equal(i, INT_MIN);
	assert_int_equal(kstrtoint("2147483648", 10, &i), -ERANGE);
	assert_int_equal(kstrtou8("256", 10, &b), -ERANGE);
	assert_int_equal(kstrtobool("on", &on), 0);
	assert_true(on);
	assert_int_equal(kstrtobool("N", &on), 0);
	assert_false(on);
	assert_int_equal(kstrtobool("x", &on), -EINVAL);
}

static void sweeps_clean(void **state)
{
	struct devres_sweep_result r;
	int ret;

	(void)state;
	ret = driver_probe_sweep(&ksensor_driver.driver, &board.pdev->dev, &r);
	if (ret)
		kc_print_report();
	assert_int_equal(ret, 0);
	/*
	 * kzalloc, ioremap (region, mapping, node), mutex, two works, the
	 * interrupt, the group: every one a failure point.
	 */
	assert_true(r.points >= 8);
	assert_int_equal(r.leaks, 0);
	assert_int_equal(r.warns, 0);
	assert_int_equal(r.findings, 0);
	assert_int_equal(r.defer_points, 1);
	assert_int_equal(r.defer_failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(attributes_read_and_write,
						setup, teardown),
		cmocka_unit_test_setup_teardown(interrupt_hands_work_over,
						setup, teardown),
		cmocka_unit_test_setup_teardown(delayed_work_polls_and_stops,
						setup, teardown),
		cmocka_unit_test(work_api),
		cmocka_unit_test(kstrto_parses_as_the_kernel),
		cmocka_unit_test_setup_teardown(sweeps_clean, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
