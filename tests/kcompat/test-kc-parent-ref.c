// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * A registration's parent device released by its driver while the
 * registration lives: the kernel's registration holds its parent (its
 * device_add() takes a reference), so the parent's release comes with the
 * unregister. Each registration that names a parent other than the device
 * its devres node is on (a watchdog by hand, or managed on another
 * device), times:
 *
 * live: the driver's last put of the parent releases nothing; a WARN
 * about the watchdog then (a second register) names the parent, read
 * alive (ASan: no use after free), and the unregister releases it.
 * same-memory: a device allocated while the registration lives is never
 * in the parent's memory, and the WARN names the parent, not it.
 *
 * Control: a managed registration on its parent itself holds no
 * reference (its node goes with the parent): the parent's last put
 * releases both. Each cell in a child under an alarm (kc-cell.h).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/watchdog.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"
#include "kcompat/kc-check.h"

enum how {
	H_BY_HAND,
	H_DEVM_OTHER,
	H_DEVM_SELF,
	H_NR
};
enum state {
	S_LIVE,
	S_SAME_MEMORY,
	S_NR
};

static const char *const how_name[] = { "by-hand", "devm-other", "devm-self" };
static const char *const state_name[] = { "live", "same-memory" };

struct holder {
	struct device dev;
};

static int released;

static void holder_release(struct device *dev)
{
	released++;
	free(container_of(dev, struct holder, dev));
}

static struct device *new_dev(const char *name)
{
	struct holder *h = calloc(1, sizeof(*h));

	CHECK(h);
	device_initialize(&h->dev);
	h->dev.release = holder_release;
	CHECK(!dev_set_name(&h->dev, "%s", name));
	return &h->dev;
}

static int wdt_start(struct watchdog_device *wdd)
{
	(void)wdd;
	return 0;
}

static const struct watchdog_info wdt_info = { .identity = "parent-ref" };
static const struct watchdog_ops wdt_ops = { .start = wdt_start };

/* A second register of @wdd: -EBUSY, one WARN naming @name. */
static void second_register(struct watchdog_device *wdd, const char *name)
{
	int warns = devres_warn_count();

	start_capture();
	CHECK(watchdog_register_device(wdd) == -EBUSY);
	devres_set_log_sink(NULL, NULL);
	CHECK(devres_warn_count() == warns + 1);
	CHECK(count_prefix("WARNING: ") == 1);
	if (!strstr(cap.line[0], name))
		fprintf(stderr, "heard: %s\n", cap.line[0]);
	CHECK(strstr(cap.line[0], name));
	CHECK(strstr(cap.line[0], "registered already"));
}

static void cell(int h, int s, int unused)
{
	struct watchdog_device *wdd = calloc(1, sizeof(*wdd));
	struct device *parent = new_dev("wdt-parent");
	struct device *owner = h == H_DEVM_OTHER ? new_dev("wdt-owner")
						 : parent;
	struct device *later = NULL;

	(void)unused;
	CHECK(wdd);
	wdd->info = &wdt_info;
	wdd->ops = &wdt_ops;
	wdd->parent = parent;
	if (h == H_BY_HAND)
		CHECK(!watchdog_register_device(wdd));
	else
		CHECK(!devm_watchdog_register_device(owner, wdd));
	put_device(parent);
	if (h == H_DEVM_SELF) {
		/* Its node went with it: nothing held, nothing left. */
		CHECK(released == 1);
		CHECK(!wdd->reg);
		free(wdd);
		return;
	}
	/* Held by the registration: not released yet. */
	CHECK(released == 0);
	if (s == S_SAME_MEMORY) {
		later = new_dev("wdt-later");
		CHECK(later != parent);
	}
	second_register(wdd, "wdt-parent");
	if (h == H_BY_HAND)
		watchdog_unregister_device(wdd);
	else
		put_device(owner); /* its node unregisters */
	CHECK(!wdd->reg);
	CHECK(released == (h == H_BY_HAND ? 1 : 2));
	put_device(later);
	free(wdd);
}

static void parent_released_live(void **state)
{
	char name[64];
	int bad = 0;

	(void)state;
	for (int h = 0; h < H_NR; h++)
		for (int s = 0; s < S_NR; s++) {
			snprintf(name, sizeof(name), "%s/%s", how_name[h],
				 state_name[s]);
			bad += in_child(cell, h, s, 0, name);
		}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parent_released_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
