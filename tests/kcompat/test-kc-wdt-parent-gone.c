// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A watchdog's parent is the driver's pointer: the registration holds a
 * reference on it while registered, and none after. Unregistered, its
 * parent released and its memory gone, a second
 * watchdog_unregister_device() of the same watchdog (a remove path run
 * twice) WARNs that it is not registered, naming no device: the parent
 * is not read. Before, the WARN named wdd->parent, read from memory no
 * longer there. Cells: the parent's memory unmapped (a read of it is a
 * crash), by hand and after devm_watchdog_register_device()'s release;
 * each in a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/watchdog.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

#define PAR_BYTES 8192

static int start_fn(struct watchdog_device *wdd)
{
	(void)wdd;
	return 0;
}

static const struct watchdog_ops ops = { .start = start_fn };
static const struct watchdog_info info = { .identity = "gone" };
static int named_parent;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strstr(line, "wdt-parent"))
		named_parent++;
}

static void cell(int managed, int b, int c)
{
	struct watchdog_device wdd = { .ops = &ops, .info = &info };
	struct device *par = mmap(NULL, PAR_BYTES, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int warns;

	(void)b;
	(void)c;
	CHECK(par != MAP_FAILED && sizeof(*par) <= PAR_BYTES);
	CHECK(init_dev(par, "wdt-parent") == 0);
	wdd.parent = par;
	if (managed) {
		CHECK(devm_watchdog_register_device(par, &wdd) == 0);
		/* The node's release: an unbind would run it. */
		devres_release_all(par);
	} else {
		CHECK(watchdog_register_device(&wdd) == 0);
		watchdog_unregister_device(&wdd);
	}
	put_device(par);
	CHECK(munmap(par, PAR_BYTES) == 0);
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	watchdog_unregister_device(&wdd);
	CHECK(devres_warn_count() == warns + 1);
	devres_set_log_sink(NULL, NULL);
	CHECK(named_parent == 0);
}

static void second_unregister_reads_no_parent(void **state)
{
	int bad = 0;

	(void)state;
	bad += in_child(cell, 0, 0, 0, "by hand");
	bad += in_child(cell, 1, 0, 0, "managed");
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(second_unregister_reads_no_parent),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
