// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The file behind a register window is the authority on its size: a
 * memfd shrunk after iomem_window_add() checked it. ioremap(),
 * ioremap_wc() and devm_ioremap() of a range the file no longer holds
 * mapped it all the same, and the first access past the file's end was a
 * SIGBUS; now each is NULL with ERANGE, and nothing is acquired (the
 * fixture's ledger). A range the file still holds maps, and once the file
 * grows back the whole window maps again.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <devres/devres.h>
#include <devres/io.h>
#include "testlib.h"
#include "iotest.h"

#define WIN 0x90000000ull
#define PAGE 0x1000u
#define WIN_SIZE (4 * PAGE)

static struct io_window win;

static int win_setup(void **state)
{
	if (io_window_add(&win, WIN, WIN_SIZE, "shrunk-window"))
		return -1;
	return dev_setup(state);
}

static int win_teardown(void **state)
{
	int ret = dev_teardown(state);

	if (ftruncate(win.memfd, WIN_SIZE) ||
	    io_window_remove(&win, WIN, WIN_SIZE))
		ret = -1;
	return ret;
}

static void refused(void *p)
{
	assert_null(p);
	assert_int_equal(errno, ERANGE);
}

static void shrunk_file_is_not_mapped_past_its_end(void **state)
{
	struct device *dev = *state;
	void *p;

	assert_int_equal(ftruncate(win.memfd, 2 * PAGE), 0);
	refused(ioremap(WIN + 2 * PAGE, 16));
	refused(ioremap_wc(WIN + 3 * PAGE, PAGE));
	refused(ioremap(WIN + PAGE, 2 * PAGE));
	refused(ioremap(WIN, WIN_SIZE));
	refused(devm_ioremap(dev, WIN + 2 * PAGE, 4));
	/* What the file still holds: to its last byte. */
	p = ioremap(WIN + 2 * PAGE - 4, 4);
	assert_non_null(p);
	win.devside[2 * PAGE - 4] = 0x5a;
	assert_int_equal(readb(p), 0x5a);
	iounmap(p);
	p = devm_ioremap(dev, WIN, 2 * PAGE);
	assert_non_null(p);
	assert_int_equal(readb((char *)p + 2 * PAGE - 4), 0x5a);
	/* Grown back: the whole window. */
	assert_int_equal(ftruncate(win.memfd, WIN_SIZE), 0);
	p = ioremap(WIN, WIN_SIZE);
	assert_non_null(p);
	writel(0x11223344, (char *)p + 3 * PAGE);
	assert_int_equal(readl((char *)p + 3 * PAGE), 0x11223344);
	iounmap(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			shrunk_file_is_not_mapped_past_its_end, win_setup,
			win_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
