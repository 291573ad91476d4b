// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan */
/*
 * The library's bookkeeping with a fixed bound, each driven to the bound
 * and past it: at the bound the call still works as below it, past it the
 * call is refused with one WARN or reported in one summary line, and
 * nothing is lost without a word (a WARN counted but its line dropped, a
 * resource taken off its device with no WARN).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <devres/device.h>
#include <devres/devres.h>
#include <devres/pci.h>
#include <devres/posix.h>
#include "testlib.h"
#include "pci/pcitest.h"

static int lines, more_lines, zero_more;
static size_t more_n;
static char last_warn[256];

/* Counts WARN lines by themselves, and the summary line of the rest. */
static void sink(void *ctx, int level, const char *line)
{
	const char *m;

	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	lines++;
	snprintf(last_warn, sizeof(last_warn), "%s", line);
	m = strstr(line, " more managed mappings taken off their devices");
	if (m) {
		more_lines++;
		while (m > line && m[-1] != ' ')
			m--;
		more_n = strtoul(m, NULL, 10);
		if (more_n == 0)
			zero_more++;
	}
}

static void reset_sink(void)
{
	lines = more_lines = zero_more = 0;
	more_n = 0;
	devres_set_log_sink(sink, NULL);
}

/*
 * @n managed mappings of a page each, a page apart, in a reserved range
 * of 2 * @n pages at *@ret_base.
 */
static void map_n(struct device *dev, int n, char **ret_base)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *base = mmap(NULL, 2 * (size_t)n * pg, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(base != MAP_FAILED);
	for (int i = 0; i < n; i++) {
		char *want = base + 2 * (size_t)i * pg;
		void *p = devm_mmap(dev, want, pg, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				    0);

		assert_ptr_equal(p, want);
	}
	*ret_base = base;
}

/* What one call over @n managed mappings must say: one line per WARN. */
static void check_warns(int n, int w0)
{
	int want = n <= 16 ? n : 17;

	assert_int_equal(devres_warn_count() - w0, want);
	/* Every WARN counted has its line: none dropped by the log's hold. */
	assert_int_equal(lines, want);
	assert_int_equal(zero_more, 0);
	assert_int_equal(more_lines, n > 16);
	if (n > 16)
		assert_int_equal(more_n, (size_t)n - 16);
}

static const int counts[] = { 1, 3, 4, 15, 16, 17, 20, 64 };

/*
 * A MAP_FIXED mapping over n managed mappings at once: each is taken off
 * its device with its WARN, the 17th and later in one line. Before, a
 * debug build's WARN (a dozen lines with its backtrace) was held with the
 * others' while the table's nodes were taken off, and the log keeps 16
 * held lines: from 4 mappings on, WARNs were counted and their lines
 * dropped; past 16, a WARN said "0 more".
 * limit-cell: src/base/maps.c:dropping.hits
 */
static void test_many_mappings_under_one_call(void **state)
{
	struct device *dev = *state;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int n = counts[c], w0;
		char *base;
		void *p;

		map_n(dev, n, &base);
		reset_sink();
		w0 = devres_warn_count();
		p = mmap(base, 2 * (size_t)n * pg, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		assert_ptr_equal(p, base);
		check_warns(n, w0);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(devres_release_all(dev), 0);
		assert_int_equal(munmap(base, 2 * (size_t)n * pg), 0);
	}
}

/*
 * The same n mappings unmapped by a raw system call, then a new managed
 * mapping made over their range: each is taken off with its WARN, the
 * 17th and later in one line. Before, the 17th and later went with no
 * WARN at all.
 */
static void test_many_mappings_behind_the_back(void **state)
{
	struct device *dev = *state;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int n = counts[c], w0;
		char *base;
		void *p;

		map_n(dev, n, &base);
		assert_int_equal(syscall(SYS_munmap, base, 2 * (size_t)n * pg),
				 0);
		reset_sink();
		w0 = devres_warn_count();
		/* A hint, not MAP_FIXED: Linux gives a free range asked for. */
		p = devm_mmap(dev, base, 2 * (size_t)n * pg, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_ptr_equal(p, base);
		check_warns(n, w0);
		devres_set_log_sink(NULL, NULL);
		assert_int_equal(devres_release_all(dev), 1);
	}
}

/*
 * devm_fopen() modes of every length: each opens when fopen(3) opens with
 * it, close-on-exec, with the character set a ",ccs=" asks for. Before,
 * the "e" went at the end, into the name of the character set ("UTF-8e":
 * EINVAL), and a mode past 14 characters was refused with EINVAL.
 */
/*
 * pci_enable_device() 2^20 times without a disable: the next is refused
 * with one WARN (the count is an int: a leak of enables in a loop would
 * have taken it past INT_MAX), the device stays enabled, and as many
 * disables bring it back to disabled with no WARN.
 */
static void test_pci_enables(void **state)
{
	struct pci_fake_dev d = fake_dev("0000:00:07.0", 0x1af4, 0x70, 1);
	struct pci_dev *p;
	int w0;

	(void)state;
	assert_int_equal(pci_fake_add(ft, &d), 0);
	assert_int_equal(pci_bus_scan(), 1);
	p = pci_get_device(0x1af4, 0x70, NULL);
	assert_non_null(p);
	w0 = devres_warn_count();
	for (int i = 0; i < 1 << 20; i++)
		if (pci_enable_device(p))
			fail_msg("enable %d refused", i);
	assert_int_equal(devres_warn_count(), w0);
	reset_sink();
	assert_int_equal(pci_enable_device(p), -EBUSY);
	devres_set_log_sink(NULL, NULL);
	assert_int_equal(lines, 1);
	assert_string_equal(last_warn, "WARNING: 0000:00:07.0: "
				       "pci_enable_device: enabled "
				       "1048576 times without a disable: "
				       "refused");
	assert_true(pci_is_enabled(p));
	for (int i = 0; i < 1 << 20; i++)
		pci_disable_device(p);
	assert_false(pci_is_enabled(p));
	assert_int_equal(devres_warn_count(), w0 + 1);
	pci_dev_put(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_many_mappings_under_one_call, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(
			test_many_mappings_behind_the_back, dev_setup,
			dev_teardown),
		cmocka_unit_test_setup_teardown(test_pci_enables, pci_setup,
						pci_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
