// SPDX-License-Identifier: MIT
/* ctest-labels: unit kcompat tsan */
/*
 * The compat calls that take a managed record back by hand, from a match
 * or for-each callback of the device that holds it (devres_find(),
 * devres_get(), devres_for_each_res()), where the device's devres lock is
 * held up the stack and the kernel's call would wait for it for ever:
 * device_remove_group(), device_remove_groups() (of groups added by hand
 * or by a devm_ call), devm_hwrng_unregister(). Each is refused whole
 * with one WARN naming the call: the groups stay, the rng stays
 * registered, its node on the device, and the device's release takes
 * them back once. Before, the core's refusal WARNed in its own name and
 * the compat call WARNed again ("not added", "no node"): two WARNs for
 * one misuse. Each cell in a child under an alarm (kc-cell.h), the
 * ledger back where it was once the device is put.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <linux/device.h>
#include <linux/hw_random.h>
#include <linux/sysfs.h>
#include <stdlib.h>
#include "kcompat/kctest.h"
#include "kcompat/kc-cell.h"

enum call {
	C_REMOVE_GROUP,
	C_REMOVE_GROUPS,
	C_REMOVE_GROUP_MANAGED,
	C_REMOVE_GROUPS_MANAGED,
	C_DEVM_HWRNG_UNREGISTER,
	C_NR,
};

static const char *const call_name[C_NR] = {
	"device_remove_group",	      "device_remove_groups",
	"device_remove_group (devm)", "device_remove_groups (devm)",
	"devm_hwrng_unregister",
};

static const char *const call_func[C_NR] = {
	"device_remove_group",	"device_remove_groups",	 "device_remove_group",
	"device_remove_groups", "devm_hwrng_unregister",
};

enum ctx {
	X_FIND_MATCH,
	X_GET_MATCH,
	X_FOR_EACH,
	X_NR
};

static const char *const ctx_name[X_NR] = {
	"devres_find match",
	"devres_get match",
	"devres_for_each_res",
};

static struct device dev;
static enum call the_call;
static bool in_callback;
static bool called;
static struct hwrng rng;
static struct attribute *no_attrs[] = { NULL };
static const struct attribute_group grp = { .name = "t", .attrs = no_attrs };
static const struct attribute_group *grps[] = { &grp, NULL };
static char warn_line[256];
static int warn_lines;

static int rng_read(struct hwrng *r, void *data, size_t max, bool wait)
{
	(void)r;
	(void)wait;
	memset(data, 0, max);
	return (int)max;
}

static void sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "WARNING: ", 9) != 0)
		return;
	if (!warn_lines++)
		snprintf(warn_line, sizeof(warn_line), "%s", line);
}

static void call_once(void)
{
	if (!in_callback || called)
		return;
	called = true;
	switch (the_call) {
	case C_REMOVE_GROUP:
	case C_REMOVE_GROUP_MANAGED:
		device_remove_group(&dev, &grp);
		break;
	case C_REMOVE_GROUPS:
	case C_REMOVE_GROUPS_MANAGED:
		device_remove_groups(&dev, grps);
		break;
	case C_DEVM_HWRNG_UNREGISTER:
		devm_hwrng_unregister(&dev, &rng);
		break;
	default:
		break;
	}
}

static void mark_release(struct device *d, void *res)
{
	(void)d;
	(void)res;
}

static int in_match(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
	call_once();
	return 0;
}

static void in_each(struct device *d, void *res, void *data)
{
	(void)d;
	(void)res;
	(void)data;
	call_once();
}

static int acquire(void)
{
	switch (the_call) {
	case C_REMOVE_GROUP:
		return device_add_group(&dev, &grp);
	case C_REMOVE_GROUPS:
		return device_add_groups(&dev, grps);
	case C_REMOVE_GROUP_MANAGED:
		return devm_device_add_group(&dev, &grp);
	case C_REMOVE_GROUPS_MANAGED:
		return devm_device_add_groups(&dev, grps);
	case C_DEVM_HWRNG_UNREGISTER:
		return devm_hwrng_register(&dev, &rng);
	default:
		return -1;
	}
}

/* Whether what acquire() made is still there, on the device. */
static bool still_there(void)
{
	if (the_call == C_DEVM_HWRNG_UNREGISTER)
		return rng.reg != NULL;
	return devres_find(&dev, kcompat_groups_release, NULL, NULL) != NULL;
}

static void cell(int c, int x, int unused)
{
	struct devres_ledger before, after;
	char want[80];
	void *mark, *extra;
	int warns, end_warns;

	(void)unused;
	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	kfree(kmalloc(1, GFP_KERNEL)); /* the compat heap's device, made */
	devres_ledger_snapshot(&before);
	the_call = (enum call)c;
	rng.name = "tb-rng";
	rng.read = rng_read;
	CHECK(init_dev(&dev, "tb-dev") == 0);
	CHECK(acquire() == 0);
	mark = devres_alloc(mark_release, 8, GFP_KERNEL);
	CHECK(mark);
	devres_add(&dev, mark);
	devres_set_log_sink(sink, NULL);
	warns = devres_warn_count();
	in_callback = true;
	if (x == X_FIND_MATCH) {
		CHECK(devres_find(&dev, mark_release, in_match, NULL) == NULL);
	} else if (x == X_GET_MATCH) {
		extra = devres_alloc(mark_release, 8, GFP_KERNEL);
		CHECK(extra);
		CHECK(devres_get(&dev, extra, in_match, NULL) == extra);
	} else {
		devres_for_each_res(&dev, mark_release, NULL, NULL, in_each,
				    NULL);
	}
	in_callback = false;
	devres_set_log_sink(NULL, NULL);
	CHECK(called);
	if (devres_warn_count() != warns + 1 || warn_lines != 1)
		fprintf(stderr, "  %d WARN(s), the first: %s\n",
			devres_warn_count() - warns, warn_line);
	CHECK(devres_warn_count() == warns + 1 && warn_lines == 1);
	snprintf(want, sizeof(want), ": %s: ", call_func[c]);
	CHECK(strstr(warn_line, want));
	CHECK(still_there());
	/* The device's release takes it back, once, without a word. */
	end_warns = devres_warn_count();
	devres_release_all(&dev);
	CHECK(!still_there() && rng.reg == NULL);
	put_device(&dev);
	CHECK(devres_warn_count() ==
	      end_warns + (c == C_REMOVE_GROUP || c == C_REMOVE_GROUPS));
	devres_ledger_snapshot(&after);
	CHECK(!devres_ledger_diff(&before, &after, stderr));
}

static void every_takeback_every_callback(void **state)
{
	char name[96];
	int bad = 0;

	(void)state;
	for (int c = 0; c < C_NR; c++)
		for (int x = 0; x < X_NR; x++) {
			snprintf(name, sizeof(name), "%s / %s", call_name[c],
				 ctx_name[x]);
			bad += in_child(cell, c, x, 0, name);
		}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_takeback_every_callback),
	};

	setenv("DEVRES_WARN_BACKTRACE", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
