// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * A device's register mappings and busy regions across device_del().
 * The deletion releases them: devm_iounmap() and
 * devm_release_mem_region() of them after it WARN once and touch
 * nothing. A mapping and a region acquired after the
 * deletion hold the window until the device's last put releases them,
 * and the ledger is back. The device's memory is reached through the
 * late mapping while it lives.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include <devres/ioport.h>
#include "io/iotest.h"
#include "testlib.h"

#define WIN 0x94000000ull
#define WIN_SIZE 0x4000u

static struct io_window win;

static void mappings_across_device_del(void **state)
{
	struct devres_ledger before, now;
	struct resource *r;
	struct device *dev;
	void *p, *late;
	int released;

	(void)state;
	devres_ledger_snapshot(&before);
	assert_int_equal(io_window_add(&win, WIN, WIN_SIZE, "del-window"), 0);
	released = __atomic_load_n(&heap_released, __ATOMIC_ACQUIRE);
	dev = heap_dev(NULL, "deleted");
	assert_non_null(dev);
	assert_int_equal(device_add(dev), 0);
	p = devm_ioremap(dev, WIN + 0x1000, 0x1000);
	assert_non_null(p);
	r = devm_request_mem_region(dev, WIN + 0x2000, 0x100, "regs");
	assert_non_null(r);
	device_del(dev);
	start_capture();
	devm_iounmap(dev, p);
	expect_warn_on("deleted", "devm_iounmap", "is not a managed mapping");
	start_capture();
	devm_release_mem_region(dev, WIN + 0x2000, 0x100);
	expect_warn_on("deleted", "devm_release_mem_region",
		       "no managed region");
	/* Acquired after the deletion: the window is held until the put. */
	late = devm_ioremap(dev, WIN + 0x1000, 0x1000);
	assert_non_null(late);
	r = devm_request_mem_region(dev, WIN + 0x2000, 0x100, "late");
	assert_non_null(r);
	win.devside[0x1000] = 0x5a;
	assert_int_equal(readb(late), 0x5a);
	start_capture();
	assert_int_equal(iomem_window_remove(WIN), -EBUSY);
	expect_warn_on("(no device)", "iomem_window_remove", "in use");
	put_device(dev);
	assert_int_equal(__atomic_load_n(&heap_released, __ATOMIC_ACQUIRE),
			 released + 1);
	assert_int_equal(io_window_remove(&win, WIN, WIN_SIZE), 0);
	devres_ledger_snapshot(&now);
	assert_int_equal(devres_ledger_diff(&before, &now, stderr), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(mappings_across_device_del,
						dev_setup, dev_teardown),
	};

	/* One line a WARN: the backtraces would be captured with them. */
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
