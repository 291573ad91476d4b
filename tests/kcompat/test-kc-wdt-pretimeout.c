// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * watchdog_notify_pretimeout() once its watchdog is unregistered: as the
 * kernel's, which finds no governor then, it does nothing. The parent is
 * not read (no reference holds it: here its memory is unmapped, so a
 * read is a crash), no line names it, no event is counted, no WARN.
 * Before, the call counted an event and named wdd->parent, read from the
 * unmapped page. Cells: registered by hand and by
 * devm_watchdog_register_device(), each unregistered (by hand, or by the
 * node's release) before the call; and the call while registered, which
 * still counts and names the parent; and (by hand) a log sink that
 * unregisters the watchdog from the pretimeout's own line: the
 * unregister does not wait for the call it runs in. Five cells, each in
 * a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/watchdog.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

#define PAR_BYTES 8192

enum {
	BY_HAND,
	MANAGED
};
enum {
	GONE,
	LIVE,
	SINK_UNREGISTERS
};

static int start_fn(struct watchdog_device *wdd)
{
	(void)wdd;
	return 0;
}

static const struct watchdog_ops ops = { .start = start_fn };
static const struct watchdog_info info = { .identity = "pretimeout" };
static struct watchdog_device *sink_wdd;
static int named_parent;

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (!strstr(line, "wdt-pre-parent"))
		return;
	named_parent++;
	if (sink_wdd && strstr(line, "pretimeout event")) {
		struct watchdog_device *w = sink_wdd;

		sink_wdd = NULL;
		watchdog_unregister_device(w);
	}
}

static void cell(int how, int when, int c)
{
	struct watchdog_device wdd = { .ops = &ops, .info = &info };
	struct device *par = mmap(NULL, PAR_BYTES, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int warns;

	(void)c;
	CHECK(par != MAP_FAILED && sizeof(*par) <= PAR_BYTES);
	CHECK(init_dev(par, "wdt-pre-parent") == 0);
	wdd.parent = par;
	if (how == MANAGED)
		CHECK(devm_watchdog_register_device(par, &wdd) == 0);
	else
		CHECK(watchdog_register_device(&wdd) == 0);
	devres_set_log_sink(sink, NULL);
	if (when == LIVE) {
		warns = devres_warn_count();
		watchdog_notify_pretimeout(&wdd);
		CHECK(devres_warn_count() == warns);
		CHECK(wdd.pretimeout_events == 1 && named_parent == 1);
	} else if (when == SINK_UNREGISTERS) {
		sink_wdd = &wdd;
		watchdog_notify_pretimeout(&wdd);
		CHECK(wdd.pretimeout_events == 1 && !sink_wdd);
		/* Gone now: a second one finds nothing. */
		watchdog_notify_pretimeout(&wdd);
		CHECK(wdd.pretimeout_events == 1);
	}
	devres_set_log_sink(NULL, NULL);
	if (how == MANAGED)
		devres_release_all(par); /* the node's release: an unbind's */
	else if (when != SINK_UNREGISTERS)
		watchdog_unregister_device(&wdd);
	put_device(par);
	CHECK(munmap(par, PAR_BYTES) == 0);
	named_parent = 0;
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	watchdog_notify_pretimeout(&wdd);
	CHECK(devres_warn_count() == warns);
	CHECK(named_parent == 0);
	CHECK(wdd.pretimeout_events == (when == GONE ? 0 : 1));
	devres_set_log_sink(NULL, NULL);
}

static void pretimeout_after_unregister(void **state)
{
	int bad = 0;

	(void)state;
	bad += in_child(cell, BY_HAND, GONE, 0, "by hand, gone");
	bad += in_child(cell, BY_HAND, LIVE, 0, "by hand, live");
	bad += in_child(cell, BY_HAND, SINK_UNREGISTERS, 0, "by hand, sink");
	bad += in_child(cell, MANAGED, GONE, 0, "managed, gone");
	bad += in_child(cell, MANAGED, LIVE, 0, "managed, live");
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pretimeout_after_unregister),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
